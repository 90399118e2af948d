"""An experiment's results declare their layout: a schema version in manifest.json, run.json and every
Parquet file; run_summary's column types from Summary's declared fields; the ledger in the database."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.store import DATABASE, RESULTS_SCHEMA_VERSION
from fleetlab.experiment.sweep import run_sweep
from test_experiment_shipping import _experiment


def _sweep(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    run_sweep(load_experiment(_experiment(tmp_path / "in")), out, LocalEngine(1))
    return out


def test_schema_version_everywhere(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    assert json.loads((out / "manifest.json").read_text())["schema_version"] == RESULTS_SCHEMA_VERSION
    records = sorted((out / "runs").rglob("run.json"))
    assert len(records) == 6
    assert all(json.loads(p.read_text())["schema_version"] == RESULTS_SCHEMA_VERSION for p in records)
    tables = sorted((out / "runs").rglob("*.parquet"))
    assert len(tables) == 6 * 6
    for path in tables:
        metadata = pq.read_schema(path).metadata
        assert metadata[b"fleetlab.schema_version"] == str(RESULTS_SCHEMA_VERSION).encode(), path


def test_summary_types_follow_declared_fields_and_ledger_is_in_the_database(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    con = duckdb.connect(str(out / DATABASE), read_only=True)
    types = dict(
        con.sql(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'run_summary'"
        ).fetchall()
    )
    # Declared int: counts. Declared float: every time, ratio and dollar figure, even when every run's
    # value is whole (no run here has an interruption, so interruption_gpu_hours_lost is 0.0 throughout).
    assert types["evictions"] == "BIGINT" and types["jobs_completed"] == "BIGINT"
    assert types["interruption_gpu_hours_lost"] == "DOUBLE" and types["makespan_s"] == "DOUBLE"
    assert con.sql("SELECT count(DISTINCT interruption_gpu_hours_lost) FROM runs").fetchall() == [(1,)]
    # The ledger view holds every run's ledger.parquet rows; its dollars add up to the files'.
    files = sorted((out / "runs").rglob("ledger.parquet"))
    want_rows = sum(pq.read_metadata(p).num_rows for p in files)
    want_usd = sum(sum(pq.read_table(p).column("cost_usd").to_pylist()) for p in files)
    ((rows, usd),) = con.sql("SELECT count(*), sum(cost_usd) FROM ledger").fetchall()
    assert rows == want_rows > 0
    assert abs(usd - want_usd) < 1e-6 * max(1.0, want_usd)
