"""Damaged result folders: a clear error naming the file, or a rebuild from the Parquet files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.results import load_results
from fleetlab.experiment.store import DATABASE, RUN_RECORD, run_folder
from fleetlab.experiment.sweep import MANIFEST, run_sweep
from fleetlab.spec.errors import SpecError
from test_experiment import EXPERIMENT, write_experiment

ONE_SEED = EXPERIMENT.replace("[1, 2, 3]", "[1]")


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """A finished three-run sweep (one seed per variant)."""
    out = tmp_path / "out"
    run_sweep(load_experiment(write_experiment(tmp_path, ONE_SEED)), out, LocalEngine(1))
    return out


def test_manifest_with_summary_null_is_a_clear_error(sweep: Path) -> None:
    manifest = json.loads((sweep / MANIFEST).read_text())
    manifest["runs"][0]["summary"] = None
    (sweep / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(SpecError) as exc:
        load_results(sweep)
    assert exc.value.source == str(sweep / MANIFEST)
    assert "unreadable manifest" in str(exc.value)
    report = CliRunner().invoke(cli.app, ["experiment", "report", str(sweep)])
    assert report.exit_code == 2 and "Traceback" not in report.output


def test_run_record_missing_fields_is_run_again_on_resume(tmp_path: Path, sweep: Path) -> None:
    experiment = load_experiment(tmp_path / "exp.yaml")
    record_path = run_folder(sweep, "pack", 1) / RUN_RECORD
    record = json.loads(record_path.read_text())
    del record["summary"]
    record_path.write_text(json.dumps(record))
    again = run_sweep(experiment, sweep, LocalEngine(1))
    assert again.executed == ["pack/seed-1"]
    assert sorted(again.kept) == ["base/seed-1", "more-gpus/seed-1"]
    assert "summary" in json.loads(record_path.read_text())


def test_corrupt_duckdb_is_named_and_rebuilt_by_a_rerun(tmp_path: Path, sweep: Path) -> None:
    (sweep / DATABASE).write_bytes(b"not a database at all" * 100)
    html = tmp_path / "report.html"
    result = CliRunner().invoke(cli.app, ["experiment", "report", str(sweep), "--html", str(html)])
    assert result.exit_code == 2, result.output
    assert DATABASE in result.output and "rebuild it" in result.output
    assert "Traceback" not in result.output
    # Rerunning the sweep keeps every run and rebuilds the database from their Parquet files.
    rerun = run_sweep(load_experiment(tmp_path / "exp.yaml"), sweep, LocalEngine(1))
    assert rerun.executed == [] and len(rerun.kept) == 3
    result = CliRunner().invoke(cli.app, ["experiment", "report", str(sweep), "--html", str(html)])
    assert result.exit_code == 0, result.output
