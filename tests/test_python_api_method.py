"""fleetlab.api for the whole method: import, baseline and calibrate give the command line's files; compare
and run_experiment give the command line's verdict as objects; best() never picks a difference within noise;
time_weighted weighs change points by how long they held (worked out by hand); frames come on request."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import fleetlab.api as fl
from fleetlab.api import frames
from fleetlab.cli import app

ROOT = Path(__file__).resolve().parents[1]
HISTORY = [
    str(ROOT / "examples" / "history" / f"{n}.json") for n in ("pods-jobs", "workloads", "events", "nodes")
]
TWO_TEAMS = str(ROOT / "examples" / "two-teams" / "baseline.yaml")
runner = CliRunner()


def test_all_names_the_public_api() -> None:
    for name in fl.__all__:
        assert getattr(fl, name) is not None, name
    assert {"import_history", "baseline", "calibrate", "compare", "run_experiment", "time_weighted"} <= set(
        fl.__all__
    )
    assert {"load", "run", "compare_policies", "Result", "Scenario", "DEFAULT_COMPARE"} <= set(fl.__all__)


def test_time_weighted_by_hand() -> None:
    """Rows at 0, 10 and 100 s holding 8, 0 and 4 GPUs, run ends at 200 s: row-wise mean (8 + 0 + 4) / 3 = 4,
    time-weighted (8 x 10 + 0 x 90 + 4 x 100) / 200 = 480 / 200 = 2.4."""
    table = pa.table({"t_s": [0.0, 10.0, 100.0], "allocated_gpus": [8, 0, 4]})
    assert fl.time_weighted(table, "allocated_gpus", end_s=200.0) == pytest.approx(2.4)
    # without end_s the last row weighs nothing: (8 x 10 + 0 x 90) / 100 = 0.8
    assert fl.time_weighted(table, "allocated_gpus") == pytest.approx(0.8)
    pandas = pytest.importorskip("pandas")
    assert fl.time_weighted(pandas.DataFrame(table.to_pydict()), "allocated_gpus", 200.0) == pytest.approx(
        2.4
    )
    polars = pytest.importorskip("polars")
    assert fl.time_weighted(polars.from_arrow(table), "allocated_gpus", 200.0) == pytest.approx(2.4)
    with pytest.raises(ValueError, match="before the last row"):
        fl.time_weighted(table, "allocated_gpus", end_s=50.0)
    with pytest.raises(ValueError, match="not in time order"):
        fl.time_weighted(pa.table({"t_s": [5.0, 1.0], "x": [1, 2]}), "x")


def test_time_weighted_on_a_run_is_the_summary_allocation() -> None:
    """gpu_allocation_ratio = time-weighted allocated / time-weighted allocatable GPUs over [0, end]."""
    result = fl.run(TWO_TEAMS)
    allocated = fl.time_weighted(result, "allocated_gpus")
    total = fl.time_weighted(result, "total_gpus")
    assert allocated / total == pytest.approx(result.summary["gpu_allocation_ratio"])
    naive = sum(result.timeline.column("allocated_gpus").to_pylist()) / result.timeline.num_rows
    assert naive != pytest.approx(allocated)  # the plain mean of change points is another number


def test_frames_on_request_and_a_clear_message_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    result = fl.run(TWO_TEAMS)
    assert result.dataframe("jobs", library="arrow").equals(result.jobs)
    with pytest.raises(ValueError, match="one of jobs, pods, nodes, timeline, ledger"):
        result.dataframe("nope")
    real = frames.import_module

    def no_pandas(name: str) -> object:
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real(name)

    monkeypatch.setattr(frames, "import_module", no_pandas)
    with pytest.raises(fl.MissingDependency, match=r"pip install 'fleetlab\[dataframes\]'"):
        result.dataframe("jobs")


def test_history_baseline_and_calibration_write_the_cli_files(tmp_path: Path) -> None:
    history = fl.import_history(HISTORY, out=tmp_path / "history")
    assert history.jobs.num_rows == 5 and history.summary["jobs_by_state"]["completed"] == 1
    measured = fl.baseline(history, out=tmp_path / "api-baseline")
    cli = runner.invoke(app, ["baseline", str(tmp_path / "history"), "--out", str(tmp_path / "cli-baseline")])
    assert cli.exit_code == 0, cli.output
    for name in ("baseline.json", "baseline.parquet"):
        api_bytes = (tmp_path / "api-baseline" / name).read_bytes()
        assert api_bytes == (tmp_path / "cli-baseline" / name).read_bytes(), name
    assert measured.rows[0]["group"] == "all" and measured.cluster["cost_source"] == "catalog"
    calibration = fl.calibrate(tmp_path / "history", out=tmp_path / "api-cal")
    assert calibration.scenario_file == tmp_path / "api-cal" / "scenario.yaml"
    cli = runner.invoke(app, ["calibrate", str(tmp_path / "history"), "--out", str(tmp_path / "cli-cal")])
    assert cli.exit_code == 0, cli.output
    assert (tmp_path / "api-cal" / "scenario.yaml").read_bytes() == (
        tmp_path / "cli-cal" / "scenario.yaml"
    ).read_bytes()
    assert calibration.payload == json.loads((tmp_path / "cli-cal" / "calibration.json").read_text())
    assert calibration.scenario.jobs == 5


def test_compare_gives_the_cli_verdict_as_objects() -> None:
    comparison = fl.compare(TWO_TEAMS, policies=["default", "most-allocated"], seeds=2)
    cli = runner.invoke(
        app,
        ["compare", TWO_TEAMS, "--policy", "default", "--policy", "most-allocated", "--seeds", "2", "--json"],
    )
    payload = json.loads(cli.stdout)
    assert json.loads(json.dumps(comparison.payload, allow_nan=False, default=str)) == payload
    [verdict] = comparison.verdicts()
    assert isinstance(verdict, fl.Verdict) and verdict.candidate == "most-allocated"
    assert [f.metric for f in verdict.findings] == [f["metric"] for f in payload["verdict"][0]["findings"]]
    assert comparison.runs().shape[0] == 4  # 2 columns x 2 seeds
    assert set(comparison.first_runs) == {"default", "most-allocated"}


def test_best_is_the_baseline_unless_a_variant_is_better_beyond_the_practical_minimum() -> None:
    """Baseline waits 10, 12, 11 min on seeds 1-3 (mean 660 s); A waits 2 min less on every seed (paired
    difference -120 s, beyond the minimum practical effect max(60 s, 10 % of 660 s) = 66 s: better); B
    differs by -1, +1, -1 min (mean -20 s, its interval holds zero: inconclusive). With waits of 10, 12,
    11 s, A's -2 s is under the 60 s floor, so nothing is best."""
    minutes = {"base": (10, 12, 11), "A": (8, 10, 9), "B": (9, 13, 10)}
    samples = {
        name: {seed: {"queue_wait_mean_s": 60.0 * m} for seed, m in zip((1, 2, 3), waits, strict=True)}
        for name, waits in minutes.items()
    }
    best = fl.Samples(samples, "base").best("queue_wait_mean_s")
    assert (best.variant, best.mean, best.significant) == ("A", pytest.approx(540.0), True)
    assert best.difference is not None and best.difference.mean == pytest.approx(-120.0)
    without_a = fl.Samples({k: v for k, v in samples.items() if k != "A"}, "base").best("queue_wait_mean_s")
    assert (without_a.variant, without_a.significant) == ("base", False)
    assert "no variant is significantly better" in without_a.reason
    seconds = {
        name: {seed: {"queue_wait_mean_s": m} for seed, m in zip((1, 2, 3), waits, strict=True)}
        for name, waits in minutes.items()
    }
    assert fl.Samples(seconds, "base").best("queue_wait_mean_s").variant == "base"
    with pytest.raises(ValueError, match="neither higher nor lower is better"):
        fl.Samples(samples, "base").best("jobs")


def test_run_experiment_from_a_base_and_variants(tmp_path: Path) -> None:
    sweep = fl.run_experiment(
        TWO_TEAMS, variants={"pack": {"policy": "most-allocated"}}, seeds=2, out=tmp_path / "sweep", jobs=1
    )
    assert sweep.baseline == "as-is" and sweep.changes["pack"] == "policy=most-allocated"
    runs = sweep.dataframe("runs")
    assert sorted(runs["variant"].unique()) == ["as-is", "pack"] and len(runs) == 4
    report = json.loads(
        runner.invoke(app, ["experiment", "report", str(tmp_path / "sweep"), "--json"]).stdout
    )
    [verdict] = sweep.verdicts()
    assert [f.metric for f in verdict.findings] == [f["metric"] for f in report["verdict"][0]["findings"]]
    assert sweep.best("cost_per_completed_job").variant in ("as-is", "pack")
    again = fl.run_experiment(TWO_TEAMS, variants={"pack": {"policy": "most-allocated"}}, seeds=2,
                              out=tmp_path / "sweep", jobs=1)  # fmt: skip
    assert again.outcome is not None and not again.outcome.executed and len(again.outcome.kept) == 4
    timeline = fl.load_experiment_result(tmp_path / "sweep").dataframe("timeline", library="polars")
    assert {"variant", "seed", "t_s", "allocated_gpus"} <= set(timeline.columns)
