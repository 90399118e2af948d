"""Variants compared side by side are costed over one accounting window: the horizon when they share one,
else the latest end among them; nodes still billed at a run's end are billed on, idle, to that end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from builders import job, pool, scenario
from fleetlab.experiment.output import write_results
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.window import common_window, window_cost
from fleetlab.report.table import comparison_table

HOUR = 3600


def _runs() -> list[object]:
    """Two 1-GPU nodes at $8/h, two 1 h jobs. parallel: both at 0 → ends 1 h, bill 2 × 1 h × $8 = $16,
    $8 per job. serial: b submitted at 1 h → ends 2 h, bill 2 × 2 h × $8 = $32, $16 per job."""
    parallel = [job("a", runtime=HOUR), job("b", runtime=HOUR)]
    serial = [job("a", runtime=HOUR), job("b", runtime=HOUR, submit_s=HOUR)]
    cluster = [pool(count=2, gpus=1)]
    return [run_one(scenario(cluster, jobs), "default") for jobs in (parallel, serial)]


def test_a_variant_that_ends_earlier_pays_for_the_same_window() -> None:
    """Common window: the latest end, 2 h. parallel's two nodes are billed on 1 h → 2 h: + 2 × $8 = $16,
    so $32 in all and $16 per job — the same as serial, as a fixed cluster costs the same whatever the
    policy. Before, cost per completed job read $8 against $16."""
    parallel, serial = _runs()
    results = [parallel.result, serial.result]  # type: ignore[attr-defined]
    assert common_window(results) == (2 * HOUR * 1000, "latest end")
    own = [summarize(r) for r in results]
    assert [s.cost_per_completed_job for s in own] == [pytest.approx(8.0), pytest.approx(16.0)]
    windowed = [
        window_cost(r, s.cost_total, s.jobs_completed, 2 * HOUR * 1000, "latest end")
        for r, s in zip(results, own, strict=True)
    ]
    assert windowed[0].cost_extension == pytest.approx(16.0)
    assert [w.cost_total for w in windowed] == [pytest.approx(32.0), pytest.approx(32.0)]
    assert [w.cost_per_completed_job for w in windowed] == [pytest.approx(16.0), pytest.approx(16.0)]


def test_compare_prints_and_writes_the_window(tmp_path: Path) -> None:
    runs = _runs()
    console = Console(width=220, record=True)
    console.print(comparison_table(runs, "t"))  # type: ignore[arg-type]
    text = console.export_text()
    assert "total cost, common window (0–2.00h, latest end)" in text
    window_row = next(line for line in text.splitlines() if "cost per completed job, common window" in line)
    assert window_row.count("$16.00") == 2
    out = tmp_path / "cmp"
    write_results(runs, out)  # type: ignore[arg-type]
    combined = json.loads((out / "summary.json").read_text())
    windows = [r["window"] for r in combined["runs"]]
    assert {w["accounting_window"] for w in windows} == {"latest end"}
    assert [w["cost_per_completed_job_window"] for w in windows] == [16.0, 16.0]


def test_a_shared_horizon_is_the_window() -> None:
    """Both runs with horizon 3 h end there: the window is the horizon and nothing is billed on."""
    jobs = [job("a", runtime=HOUR)]
    results = [
        run_one(scenario([pool(gpus=1)], jobs, horizon_s=3 * HOUR), p).result
        for p in ("default", "most-allocated")
    ]
    window = common_window(results)
    assert window == (3 * HOUR * 1000, "horizon")
    assert window_cost(results[0], 24.0, 1, *window).cost_extension == 0.0
