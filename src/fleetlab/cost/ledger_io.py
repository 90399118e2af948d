"""Write a run folder with its ledger atomically: the files of ``simulate --out`` plus ledger.parquet."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.cost.ledger import ledger_columns
from fleetlab.experiment.output import swap_into_place, write_run_files
from fleetlab.experiment.run import Run
from fleetlab.model.scenario import ResolvedScenario

LEDGER_FILE = "ledger.parquet"


def write_run_with_ledger(resolved: ResolvedScenario, run: Run, out: Path) -> tuple[int, float]:
    """Write the run's files and its ledger into ``out``; returns (ledger rows, total dollars)."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        write_run_files(run, staging)
        run_id = f"{run.result.scenario}/{run.label}/seed-{run.result.seed}"
        columns = ledger_columns(resolved, run.result, run_id)
        pq.write_table(pa.table(columns), staging / LEDGER_FILE, compression="zstd")
        swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return len(columns["cost_usd"]), float(sum(columns["cost_usd"]))
