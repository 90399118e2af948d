"""A ledger longer than a row group is built and written a row group at a time (cost/ledger_io.py) with
the very bytes of the whole table written at once with the same row-group size, and the same returned
row count and dollar total (summed in row order). Checked over the small billed worlds of
test_ledger_reconciles with row groups of a few rows, so every world spans several."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from fleetlab.cost import ledger_io
from fleetlab.cost.ledger_io import LEDGER_FILE, ledger_table, write_ledger
from fleetlab.experiment.run import run_one
from test_ledger_reconciles import billed_worlds


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(resolved=billed_worlds())
def test_row_group_slices_write_the_whole_tables_bytes(
    resolved: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pools, result = resolved.scenario.cluster.pools, run_one(resolved).result
    for variant in (None, "v"):
        whole = ledger_table(pools, result, "r", variant)
        for size in (1, 3, 7):
            monkeypatch.setattr(ledger_io, "ROW_GROUP", size)
            folder = tmp_path / f"{variant}-{size}"
            folder.mkdir(exist_ok=True)
            rows, dollars = write_ledger(pools, result, "r", folder, variant)
            reference = folder / "reference.parquet"
            pq.write_table(whole, reference, compression="zstd", row_group_size=size)
            assert (folder / LEDGER_FILE).read_bytes() == reference.read_bytes()
            assert rows == whole.num_rows
            assert dollars == float(sum(whole.column("cost_usd").to_pylist()))
            groups = pq.ParquetFile(folder / LEDGER_FILE).metadata.num_row_groups
            assert groups == max(1, -(-whole.num_rows // size))  # ceil(rows / size), one for an empty ledger
