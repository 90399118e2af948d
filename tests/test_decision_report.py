"""The decision report: job classes, recommendation, cost sheet and measurements, checked by hand; the
folder written by ``fleetlab report``; bad input. The browser test is in test_decision_browser.py."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import job, pool, scenario
from fleetlab import cli
from fleetlab.experiment.stats import Interval
from fleetlab.experiment.verdict import CandidateVerdict, Finding
from fleetlab.export.write import render
from fleetlab.report.decision import baseline_figures, job_classes, read_baseline, recommend
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load
from fleetlab.spec.out_folder import MARKER
from test_experiment import TINY as EXPERIMENT_TINY

#: The experiment tests' tiny scenario, its one job class given a team.
TINY = EXPERIMENT_TINY.replace("        arrivals_per_hour", "        teams: [ml]\n        arrivals_per_hour")


def test_job_classes_group_and_count_by_hand() -> None:
    resolved = scenario(
        [pool()],
        [
            job("a", gpus=1, runtime=100, team="x", preemptible=True),
            job("b", gpus=1, runtime=300, team="x", preemptible=True),
            job("c", gpus=2, runtime=200, team="x", preemptible=True),
            job("d", gpus=8, runtime=3600, team="y", pods=2, gang=True, topology_required="fleetlab.io/rack"),
        ],
    )
    rows = job_classes(resolved.jobs)
    assert [(r["team"], r["jobs"]) for r in rows] == [("x", 3), ("y", 1)]  # most jobs first
    x, y = rows
    # Team x: three one-pod jobs, 1 + 1 + 2 = 4 GPUs; shapes 1-GPU twice, 2-GPU once (1 cpu, 1Gi each).
    assert (x["pods"], x["gpus"]) == (3, 4)
    assert x["shapes"] == "1×(1 GPU, 1 cpu, 1Gi) ×2, 1×(2 GPU, 1 cpu, 1Gi) ×1"
    # Runtimes 100, 200, 300 s: median 200; p95 by linear interpolation = 200 + 0.9 × 100 = 290.
    assert x["runtime_p50_s"] == 200 and x["runtime_p95_s"] == pytest.approx(290)
    assert x["preemptible"] is True and x["gang"] is False and x["topology"] == ""
    # Team y: one gang of 2 pods × 8 GPUs = 16 GPUs, needing one rack.
    assert (y["pods"], y["gpus"], y["gang"], y["topology"]) == (2, 16, True, "fleetlab.io/rack")
    assert y["class"] == "batch" and y["queue"] == "" and y["priority"] == 0


def _verdict(name: str, better: int, worse: int) -> CandidateVerdict:
    interval = Interval(-1.0, -2.0, -0.5, 5)
    findings = tuple(Finding(f"m{i}", 10.0, interval, "better") for i in range(better)) + tuple(
        Finding(f"w{i}", 10.0, interval, "worse") for i in range(worse)
    )
    return CandidateVerdict(name, "base", 5, findings, (), ())


def test_recommendation_needs_an_improvement_and_no_regression() -> None:
    assert recommend([_verdict("a", 0, 0), _verdict("b", 2, 1)], "base").variant == "base"
    chosen = recommend([_verdict("a", 1, 0), _verdict("b", 2, 0), _verdict("c", 2, 0)], "base")
    assert chosen.variant == "b"
    assert chosen.reason == "better on m0, m1 by more than the minimum effect, worse on none"


def test_baseline_folder_is_read_bounded_and_checked(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"no baseline\.json"):
        read_baseline(tmp_path)
    (tmp_path / "baseline.json").write_text("[1, 2]")
    with pytest.raises(SpecError, match="top level is a list"):
        read_baseline(tmp_path)
    (tmp_path / "baseline.json").write_text("{not json")
    with pytest.raises(SpecError, match="line 1, column 2: invalid JSON"):
        read_baseline(tmp_path)
    for hostile in ('{"summary": {"cost": NaN}}', "[" * 100_000 + "]" * 100_000):  # strict, depth-bounded
        (tmp_path / "baseline.json").write_text(hostile)
        with pytest.raises(SpecError, match=r"not valid JSON|nested deeper"):
            read_baseline(tmp_path)
    (tmp_path / "baseline.json").write_text(
        json.dumps({"summary": {"queue_wait_p95_s": 600, "jobs": 10, "ok": True, "name": "x"}})
    )
    assert baseline_figures(read_baseline(tmp_path)) == {"queue_wait_p95_s": 600.0, "jobs": 10.0}
    # `fleetlab baseline`'s shape: the all-jobs row (with counts by state) and the cluster-wide figures.
    measured = {
        "rows": [
            {"group_by": "all", "group": "all", "completed": 9, "pending": 1, "wait_p95_s": 120.0},
            {"group_by": "team", "group": "a", "completed": 4, "wait_p95_s": 99.0},
        ],
        "cluster": {"gpu_allocation_ratio": 0.5, "cost_total": None, "currency": "USD"},
        "notes": [],
    }
    assert baseline_figures(measured) == {
        "completed": 9.0, "pending": 1.0, "wait_p95_s": 120.0, "gpu_allocation_ratio": 0.5,
    }  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("decision")
    (folder / "tiny.yaml").write_text(TINY, encoding="utf-8")
    (folder / "measured").mkdir()
    (folder / "measured" / "baseline.json").write_text(json.dumps({"queue_wait_p95_s": 321.0}))
    args = ["report", str(folder / "tiny.yaml"), "--out", str(folder / "out"), "--seeds", "3"]
    args += ["--policy", "default", "--policy", "most-allocated", "--jobs", "1"]
    result = CliRunner().invoke(cli.app, [*args, "--baseline", str(folder / "measured")])
    assert result.exit_code == 0, result.output
    assert "decision report: " in result.output
    return folder / "out"


def test_report_folder_holds_every_artefact(report: Path) -> None:
    files = sorted(
        str(p.relative_to(report / "report")) for p in (report / "report").rglob("*") if p.is_file()
    )
    # placement/ is exactly what `fleetlab export` writes for the chosen variant's scenario
    placement = render(load(str(report.parent / "tiny.yaml")).scenario)
    assert "placement/README.md" in [f"placement/{name}" for name in placement]
    expected = [MARKER, "cost-sheet.csv", "index.html", "job-classes.csv", "measurements.json"]
    assert files == sorted(expected + [f"placement/{name}" for name in placement])
    for name, text in placement.items():
        assert (report / "report" / "placement" / name).read_text(encoding="utf-8") == text
    classes = list(csv.DictReader((report / "report" / "job-classes.csv").open()))
    assert [(r["class"], r["team"], r["jobs"]) for r in classes] == [("experiment", "ml", "16")]


def test_cost_sheet_adds_up_to_the_mean_total_cost(report: Path) -> None:
    """The sheet is the chosen variant's ledger, mean per run: its rows sum to the mean of cost_total."""
    measurements = json.loads((report / "report" / "measurements.json").read_text())
    chosen = measurements["chosen"]["variant"]
    rows = list(csv.DictReader((report / "report" / "cost-sheet.csv").open()))
    assert {r["currency"] for r in rows} == {"USD"} and {r["billing_mode"] for r in rows} == {"on-demand"}
    assert {r["price_source"] for r in rows} == {"scenario price_per_hour (as written)"}
    assert {r["price_date"] for r in rows} == {"not dated (the scenario's own figure)"}
    total = math.fsum(float(r["cost_per_run"]) for r in rows)
    cost = next(m for m in measurements["metrics"] if m["metric"] == "cost_total")
    assert total == pytest.approx(cost["values"][chosen]["mean"], rel=1e-6)


def test_measurements_carry_intervals_states_verdict_and_the_measured_baseline(report: Path) -> None:
    m = json.loads((report / "report" / "measurements.json").read_text())
    assert m["baseline"] == "default" and m["seeds"] == [1, 2, 3] and m["runs_finished"] == 6
    assert m["measured_baseline"] == {"queue_wait_p95_s": 321.0}
    assert set(m["jobs_by_state"]) == {"default", "most-allocated"}
    assert sum(m["jobs_by_state"]["default"].values()) == pytest.approx(16)
    [v] = m["verdict"]
    assert v["candidate"] == "most-allocated" and v["pairs"] == 3
    assert m["chosen"]["variant"] in ("default", "most-allocated")
    page = (report / "report" / "index.html").read_text()
    for section in ("decision", "measurements", "charts", "classes", "placement", "costs"):
        assert f"<section id='{section}'>" in page


def test_report_on_an_existing_sweep_and_bad_inputs(report: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    again = runner.invoke(cli.app, ["report", str(report / "sweep"), "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    assert (tmp_path / "again" / "report" / "index.html").is_file()
    assert not (tmp_path / "again" / "sweep").exists()  # the given sweep is read, not rerun
    bad = runner.invoke(
        cli.app, ["report", str(report / "sweep"), "--out", str(tmp_path / "x"), "--choose", "nope"]
    )
    assert bad.exit_code == 2 and "'nope' is not a variant" in bad.output and "Traceback" not in bad.output
    missing = runner.invoke(
        cli.app, ["report", str(report / "sweep"), "--out", str(tmp_path / "y"), "--baseline", str(tmp_path)]
    )
    assert missing.exit_code == 2 and "no baseline.json" in missing.output
    seeds = runner.invoke(cli.app, ["report", "--out", str(tmp_path / "z"), "--seeds", "0"])
    assert seeds.exit_code == 2 and "--seeds" in seeds.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "z").exists()


def test_readme_three_steps_from_a_history_to_a_report_with_the_measured_baseline(tmp_path: Path) -> None:
    """README "on your own cluster": baseline and calibrate from an imported history, then the decision
    report on the calibrated scenario with the measured baseline beside the variants."""
    from fleetlab.spec.history.folder import write_history_folder
    from history_builders import HAND_BILL, HAND_JOBS, HAND_NODES, history

    runner = CliRunner()
    write_history_folder(history(HAND_JOBS, HAND_NODES, HAND_BILL), tmp_path / "history")
    report = ["report", str(tmp_path / "calibration" / "scenario.yaml"), "--out", str(tmp_path / "decision")]
    options = ["--baseline", str(tmp_path / "baseline"), "--seeds", "2", "--policy", "default"]
    options += ["--policy", "most-allocated", "--jobs", "1"]
    steps = [
        ["baseline", str(tmp_path / "history"), "--out", str(tmp_path / "baseline")],
        ["calibrate", str(tmp_path / "history"), "--out", str(tmp_path / "calibration")],
        [*report, *options],
    ]
    for args in steps:
        result = runner.invoke(cli.app, args)
        assert result.exit_code == 0, (args[0], result.output)
    measured = json.loads((tmp_path / "decision" / "report" / "measurements.json").read_text())
    baseline = json.loads((tmp_path / "baseline" / "baseline.json").read_text())
    overall = next(r for r in baseline["rows"] if r["group_by"] == "all")
    assert measured["measured_baseline"]["completed"] == overall["completed"]
    page = (tmp_path / "decision" / "report" / "index.html").read_text()
    assert "data-table='baseline'" in page and "<section id='baseline'>" in page
    # the same per-group table as the standalone baseline.html, one row per group
    standalone = (tmp_path / "baseline" / "baseline.html").read_text()
    table = standalone[standalone.index("<table data-table='baseline'>") :].split("</table>")[0]
    assert table in page and table.count("<tr>") == len(baseline["rows"]) + 1


def test_baseline_section_has_the_standalone_tables_or_falls_back_to_figures() -> None:
    from fleetlab.report.decision_html import _baseline_section

    row = {"group_by": "all", "group": "all", "jobs_submitted": 3, "completed": 1, "failed": 0,
           "cancelled": 0, "running": 1, "pending": 1, "wait_mean_s": 30.0, "wait_mean_lower_bound": True,
           "wait_p50_s": 10.0, "wait_p95_s": 90.0, "wait_p95_lower_bound": True, "wait_p99_s": 90.0,
           "wait_p99_lower_bound": True, "wait_censored": 1, "restarts": 0, "evictions": 0}  # fmt: skip
    html = _baseline_section({"rows": [row], "cluster": {"nodes": 2}, "notes": ["<b>x</b>"]})
    assert html is not None and html.startswith("<section id='baseline'>")
    assert "<td>1 / 0 / 0</td><td>1 / 1</td><td>≥ 30s</td><td>10s</td><td>≥ 90s</td>" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html
    # rows of another shape: no section (the figures are listed under the measurements instead)
    assert _baseline_section({"rows": [{"group_by": "all"}]}) is None
    assert _baseline_section({"rows": "all"}) is None and _baseline_section({"summary": {}}) is None
