"""What calibrate says and writes: a fitted latency that soaks up waiting is flagged, CPU-only histories
compare CPU-hours (no vacuous GPU-hours pass), lower bounds read ">=", --fit-until on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.experiment.calibration import calibrate
from fleetlab.report.baseline_report import calibration_html
from fleetlab.spec.history.store import write_history
from history_builders import history

runner = CliRunner()
GiB = 1 << 30
# Ten 1-CPU jobs, one a minute, each waiting 500 s on an empty 64-CPU node and running 100 s.
HELD_BACK = [
    {"job_id": f"j{k}", "user": "u", "state": "completed", "submit_s": 60.0 * k, "scheduled_s": 60.0 * k + 500,
     "running_s": 60.0 * k + 500, "end_s": 60.0 * k + 600, "cpu_per_pod": 1.0, "memory_per_pod": GiB}
    for k in range(10)
]  # fmt: skip
NODE = [{"node": "n1", "cpu": 64.0, "memory": 256 * GiB}]


def test_a_latency_longer_than_the_median_compute_is_flagged() -> None:
    c = calibrate(history(HELD_BACK, NODE, end_s=1200.0), fit_until=1.0, max_latency_s=60.0)
    # Every measured wait is 500 s: the latency grid is 0 and 500 s, and 500 s replays them exactly.
    assert c.knobs.scheduling_latency_s == 500.0
    assert c.wait_causes is not None and c.wait_causes.row() is not None
    assert c.wait_causes.row().capacity_explained_wait_share == 0.0  # type: ignore[union-attr]
    # median compute 100 s < 500 s, and the user's bound is 60 s: two flags, recorded in the scenario.
    assert len(c.flags) == 2 and "longer than the median compute (100 s)" in c.flags[0]
    assert "exceeds the bound --max-latency 60 s" in c.flags[1]
    assert c.scenario.calibration is not None and c.scenario.calibration.flags == tuple(c.flags)


def test_cpu_only_histories_compare_cpu_hours_not_zero_gpu_hours() -> None:
    c = calibrate(history(HELD_BACK, NODE, end_s=1200.0), fit=False, fit_until=1.0)
    rows = {r.metric: r for r in c.rows if r.job_class == "all"}
    assert (rows["gpu_hours_allocated"].error, rows["gpu_hours_allocated"].within) == (None, None)
    # 10 jobs x 1 CPU x 100 s held = 1000 CPU-s on both sides.
    cpu = rows["cpu_hours_allocated"]
    assert (cpu.measured, cpu.simulated, cpu.within) == (
        pytest.approx(1000 / 3600),
        pytest.approx(1000 / 3600),
        True,
    )


def test_a_censored_simulated_quantile_reads_as_a_lower_bound_in_html() -> None:
    row = {"job_class": "all", "metric": "wait_p50_s", "measured": 120.0, "simulated": 3600.0, "error": None,
           "error_kind": "abs_s", "tolerance": 60.0, "within": None, "measured_lower_bound": False,
           "simulated_lower_bound": True}  # fmt: skip
    payload = {"verdict": "pass", "why": [], "fitted": {}, "not_fitted": {}, "search": [], "rows": [row],
               "validation": None, "flags": [], "disagreements": [], "notes": []}  # fmt: skip
    page = calibration_html(payload, "t")
    # measured 2 min; simulated at least an hour (the replay's curve never reached the median)
    assert "<td>wait_p50_s</td><td>2.0m</td><td>≥ 60.0m</td>" in page


def test_cli_fit_until_and_bad_values(tmp_path: Path) -> None:
    write_history(history(HELD_BACK, NODE, end_s=1200.0), tmp_path / "h")
    bad = runner.invoke(app, ["calibrate", str(tmp_path / "h"), "--fit-until", "soon"])
    assert bad.exit_code == 2 and "--fit-until" in bad.output and "RFC 3339" in bad.output
    result = runner.invoke(
        app, ["calibrate", str(tmp_path / "h"), "--fit-until", "0.5", "--no-fit", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    # Ten submits 0, 60, ..., 540: half is index ceil(0.5 x 10) = 5, 300 s; five later jobs validate.
    assert payload["fit_until_s"] == 300.0 and payload["validation"]["jobs"] == 5
    assert payload["wait_causes"]["rows"][0]["capacity_explained_wait_share"] == 0.0
    text = runner.invoke(app, ["calibrate", str(tmp_path / "h"), "--no-fit"])
    assert text.exit_code == 0 and text.output.startswith("waiting: 1.4 h over 10 of 10 jobs")
    assert "the measured waits are not capacity waits" in text.output
