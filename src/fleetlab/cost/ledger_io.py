"""Write a run's cost ledger as ledger.parquet, next to the other run files (which are written atomically
as a whole by their callers: experiment/output.py and experiment/store.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.cost.ledger import ledger_columns
from fleetlab.model.cluster import NodePool
from fleetlab.sim.result import SimulationResult

LEDGER_FILE = "ledger.parquet"


def run_id_of(result: SimulationResult, label: str) -> str:
    """The ledger's run id: scenario / policy label / seed."""
    return f"{result.scenario}/{label}/seed-{result.seed}"


def ledger_table(
    pools: Sequence[NodePool], result: SimulationResult, run_id: str, variant: str | None = None
) -> pa.Table:
    """The run's ledger as Arrow (a ``variant`` column in front for experiment runs)."""
    table = pa.table(ledger_columns(pools, result, run_id))
    if variant is not None:
        table = table.add_column(0, "variant", pa.array([variant] * table.num_rows, pa.string()))
    return table


def write_ledger(
    pools: Sequence[NodePool], result: SimulationResult, run_id: str, folder: Path, variant: str | None = None
) -> tuple[int, float]:
    """Write ``folder/ledger.parquet`` (a ``variant`` column in front for experiment runs); returns
    (rows, total dollars)."""
    table = ledger_table(pools, result, run_id, variant)
    pq.write_table(table, folder / LEDGER_FILE, compression="zstd")
    return table.num_rows, float(sum(table.column("cost_usd").to_pylist()))
