"""fleetlab.api: load, run, tables as Arrow (pandas/polars in one line), short reprs, and files identical
to what ``fleetlab simulate --out`` writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fleetlab
import fleetlab.api as fl
from fleetlab.cli import app
from fleetlab.spec.errors import SpecError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "two-teams" / "baseline.yaml"


def test_write_equals_the_cli_byte_for_byte(tmp_path: Path) -> None:
    result = fl.run(fl.load(EXAMPLE, seed=3), policy="most-allocated")
    result.write(tmp_path / "api")
    cli = CliRunner().invoke(
        app,
        [
            "simulate",
            str(EXAMPLE),
            "--seed",
            "3",
            "--policy",
            "most-allocated",
            "--out",
            str(tmp_path / "cli"),
        ],
    )
    assert cli.exit_code == 0, cli.output
    api_files = sorted(p.name for p in (tmp_path / "api").iterdir())
    assert api_files == sorted(p.name for p in (tmp_path / "cli").iterdir())
    for name in api_files:
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_tables_are_the_parquet_files(tmp_path: Path) -> None:
    result = fl.run(EXAMPLE)
    folder = result.write(tmp_path / "out")
    for name in ("jobs", "pods", "nodes", "timeline", "ledger"):
        assert getattr(result, name).equals(pq.read_table(folder / f"{name}.parquet")), name
    assert result.jobs.num_rows == fl.load(EXAMPLE).jobs
    states = result.jobs.column("state").to_pylist()
    assert result.summary["jobs_completed"] == states.count("completed")
    assert result.summary["jobs"] == len(states)


def test_reprs_are_one_line() -> None:
    scenario = fl.load(EXAMPLE)
    assert (
        repr(scenario)
        == f"<fleetlab Scenario 'baseline': {scenario.jobs} jobs, {scenario.nodes} nodes, seed {scenario.seed}>"
    )
    result = fl.run(scenario)
    done = result.summary["jobs_completed"]
    assert repr(result) == (
        f"<fleetlab Result 'baseline' policy={result.policy!r} seed={scenario.seed}: "
        f"{scenario.jobs} jobs, {done} completed, {scenario.jobs - done} not completed>"
    )


def test_compare_policies_matches_single_runs() -> None:
    runs = fl.compare_policies(policies=("default", "most-allocated"), seed=2)
    assert list(runs) == ["default", "most-allocated"]
    single = fl.run(None, policy="most-allocated", seed=2)
    assert runs["most-allocated"].jobs.equals(single.jobs)


def test_bad_input_raises_spec_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster: {pools: []}\nworkload: {}\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"bad\.yaml"):
        fl.load(bad)


def test_pandas_and_polars_in_one_line() -> None:
    result = fl.run(EXAMPLE)
    pandas = pytest.importorskip("pandas")
    frame = result.jobs.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == result.jobs.num_rows
    polars = pytest.importorskip("polars")
    assert polars.from_arrow(result.nodes).height == result.nodes.num_rows


def test_python_dash_m_and_one_version() -> None:
    from importlib.metadata import version

    assert version("fleetlab") == fleetlab.__version__
    out = subprocess.run(
        [sys.executable, "-m", "fleetlab", "--version"], capture_output=True, text=True, check=True
    )
    from fleetlab.compiled import describe

    assert out.stdout.splitlines() == [f"fleetlab {fleetlab.__version__}", f"Kueue admission: {describe()}"]
