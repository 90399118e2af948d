"""Write a run's cost ledger as ledger.parquet, next to the other run files (which are written atomically
as a whole by their callers: experiment/output.py and experiment/store.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.cost.ledger import LedgerRows, ledger_columns, ledger_rows
from fleetlab.model.arrow_arrays import arrow_table, string_scalar
from fleetlab.model.cluster import NodePool
from fleetlab.sim.result import SimulationResult

LEDGER_FILE = "ledger.parquet"
#: Rows of one Parquet row group: Arrow's default for ``write_table``, so a ledger written a row group at
#: a time has the very bytes of the whole table written at once.
ROW_GROUP = 1024 * 1024


def run_id_of(result: SimulationResult, label: str) -> str:
    """The ledger's run id: scenario / policy label / seed."""
    return f"{result.scenario}/{label}/seed-{result.seed}"


def ledger_table(
    pools: Sequence[NodePool],
    result: SimulationResult,
    run_id: str,
    variant: str | None = None,
    rows: LedgerRows | None = None,
    start: int = 0,
    stop: int | None = None,
) -> pa.Table:
    """The run's ledger as Arrow (a ``variant`` column in front for experiment runs); rows ``start`` to
    ``stop`` of ``rows`` where given."""
    table = arrow_table(ledger_columns(pools, result, run_id, rows, start, stop))
    if variant is not None:
        table = table.add_column(0, "variant", pa.repeat(string_scalar(variant, pa.string()), table.num_rows))
    return table


def write_ledger(
    pools: Sequence[NodePool], result: SimulationResult, run_id: str, folder: Path, variant: str | None = None
) -> tuple[int, float]:
    """Write ``folder/ledger.parquet`` (a ``variant`` column in front for experiment runs); returns
    (rows, total dollars). A ledger longer than a row group is built and written a row group at a time
    (a gang-heavy replay has millions of rows: the whole table would be the run's peak of memory)."""
    rows = ledger_rows(pools, result)
    if rows.count <= ROW_GROUP or _has_list_column(pools, result, run_id, rows):
        table = ledger_table(pools, result, run_id, variant, rows)
        pq.write_table(table, folder / LEDGER_FILE, compression="zstd")
        return table.num_rows, float(sum(table.column("cost_usd").to_pylist()))
    dollars: list[pa.ChunkedArray] = []
    schema = ledger_table(pools, result, run_id, variant, rows, 0, 0).schema
    with pq.ParquetWriter(folder / LEDGER_FILE, schema, compression="zstd") as writer:
        for start in range(0, rows.count, ROW_GROUP):
            part = ledger_table(pools, result, run_id, variant, rows, start, start + ROW_GROUP)
            writer.write_table(part, row_group_size=ROW_GROUP)
            dollars.append(part.column("cost_usd"))
            del part
    # summed in row order as Python floats, as the whole table's column is
    return rows.count, float(sum(pa.chunked_array(dollars).to_pylist()))


def _has_list_column(
    pools: Sequence[NodePool], result: SimulationResult, run_id: str, rows: LedgerRows
) -> bool:
    """Whether a string column is built from a Python list (a None among its values): its Arrow type is
    then inferred from the rows at hand, so row groups built apart could disagree."""
    return any(isinstance(v, list) for v in ledger_columns(pools, result, run_id, rows, 0, 1).values())
