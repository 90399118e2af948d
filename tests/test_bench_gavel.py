"""bench/bench_gavel.py: the Gavel trace it draws, the fleetlab scenario it builds from it, and the
StrictFIFO semantics it compares with Gavel's FIFO (one ClusterQueue: jobs are admitted in arrival order,
a head that does not fit blocks the queue)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_gavel.py"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gavel", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gavel"] = module
    spec.loader.exec_module(module)
    return module


def oracle(v100: float, p100: float, k80: float) -> dict[str, dict[tuple[str, int], float]]:
    """Every template at scale factors 1, 2, 4 with the same steps/s per GPU type."""
    b = bench()
    keys = [(t, s) for t, _ in b.job_templates() for s in (1, 2, 4)]
    return {
        "v100": dict.fromkeys(keys, v100),
        "p100": dict.fromkeys(keys, p100),
        "k80": dict.fromkeys(keys, k80),
    }


def test_templates_and_draws_follow_gavels_generator() -> None:
    """26 templates in job_table.py order, 19 distributed; the first job arrives at 0; arrivals only grow;
    durations are 1–4 h on a V100 (steps = throughput × seconds); scale factors 1, 2 or 4, and > 1 only
    for distributed templates; the same seed draws the same rows."""
    b = bench()
    templates = b.job_templates()
    assert len(templates) == 26 and sum(d for _, d in templates) == 19
    assert templates[0] == ("ResNet-18 (batch size 16)", True) and templates[-1] == ("CycleGAN", False)
    rows = b.generate_trace(300, 250.0, 0, oracle(2.0, 1.0, 0.5))
    assert rows == b.generate_trace(300, 250.0, 0, oracle(2.0, 1.0, 0.5))
    assert rows[0][3] == 0 and all(a[3] <= c[3] for a, c in itertools.pairwise(rows))
    distributed = dict(templates)
    for job_type, scale, steps, _ in rows:
        assert steps in {2 * 3600 * h for h in (1, 2, 3, 4)}  # 2 steps/s on a V100
        assert scale in (1, 2, 4) and (scale == 1 or distributed[job_type])
    assert {s for _, s, _, _ in rows} == {1, 2, 4}


def test_usable_lines_skip_jobs_without_throughput_on_some_gpu_type(tmp_path: Path) -> None:
    """A job type with no K80 throughput is skipped; the next usable lines fill up to the count asked."""
    b = bench()
    table = oracle(2.0, 1.0, 0.5)
    table["k80"][("ResNet-50 (batch size 128)", 2)] = 0.0
    rows = [
        ("ResNet-18 (batch size 16)", 1, 7200, 0),
        ("ResNet-50 (batch size 128)", 2, 7200, 10),
        ("LM (batch size 5)", 4, 7200, 20),
        ("A3C", 1, 7200, 30),
    ]
    trace = tmp_path / "t.trace"
    b.write_gavel_trace(rows, trace)
    kept = b.usable_lines(trace.read_text().splitlines(keepends=True), table, 2)
    assert [line.split("\t")[0] for line in kept] == ["ResNet-18 (batch size 16)", "LM (batch size 5)"]
    trace.write_text("".join(kept))
    assert b.read_gavel_trace(trace) == [rows[0], rows[2]]


def test_scenario_runtimes_and_strict_fifo_order() -> None:
    """One 4-GPU node per GPU type and three jobs at t = 0, 1, 2 s: a job of 7,200 steps at 2 steps/s runs
    3,600 s on a V100 (7,200 s on a P100 at 1 step/s, 14,400 s on a K80 at 0.5); under StrictFIFO each is
    admitted in arrival order on the first flavor with quota left (v100, then p100, then k80) and starts
    at once: job-0 (4 GPUs) fills v100's 4, job-1 (4) goes to p100, job-2 (1) to k80."""
    b = bench()
    table = oracle(2.0, 1.0, 0.5)
    rows = [("LM (batch size 5)", 4, 7200, 0), ("LM (batch size 5)", 4, 7200, 1), ("A3C", 1, 7200, 2)]
    spec = b.scenario(rows, table, {"v100": 1, "p100": 1, "k80": 1}, 4, True)
    first = spec["workload"]["jobs"][0]
    assert first["runtime"] == {"default": 3600.0, "by_gpu": {"V100": 3600.0, "P100": 7200.0, "K80": 14400.0}}
    assert first["requests"] == {"nvidia.com/gpu": 4} and first["queue"] == "gavel"
    [queue] = [o for o in spec["kueue"] if o["kind"] == "ClusterQueue"]
    assert queue["spec"]["queueingStrategy"] == "StrictFIFO"
    resolved = resolve(Scenario.model_validate(spec))
    result = Simulator(resolved, profile_for(resolved, None)).run()
    assert int(result.jobs.completed.sum()) == 3
    assert result.jobs.admitted_ms.tolist() == [0, 1000, 2000]
    assert result.jobs.running_ms.tolist() == [0, 1000, 2000]
    assert result.jobs.end_ms.tolist() == [3_600_000, 1000 + 7_200_000, 2000 + 14_400_000]


def test_ratio_ranges_divide_gavels_seconds_by_each_modes_per_round() -> None:
    b = bench()
    rounds = [
        {
            "gavel": {"process_cpu_s": 10.0, "simulate_s": 8.0},
            "kube": {"process_cpu_s": 2.0, "simulate_s": 0.5},
        },
        {
            "kube": {"process_cpu_s": 2.5, "simulate_s": 0.004},
            "gavel": {"process_cpu_s": 11.0, "simulate_s": 9.0},
        },
    ]
    summary = b.ratio_ranges(rounds, ["kube"])
    # 10 / 2 = 5, 11 / 2.5 = 4.4; simulate 8 / 0.5 = 16, 9 / max(0.004, 0.01) = 900
    assert summary["ratios"] == {"kube": {"process": [5.0, 4.4], "simulate": [16.0, 900.0]}}
    assert summary["lines"] == [
        "Gavel ÷ fleetlab kube: 4.4–5.0× process CPU, 16.0–900.0× simulate CPU (2 rounds)"
    ]
    assert b.ratio_ranges([{"kube": {"process_cpu_s": 1.0, "simulate_s": 1.0}}], ["kube"])["lines"] == []
    assert b.spread([3.04, 2.96]) == "3.0×"


def test_rounds_interleave_the_sides_and_print_every_round_as_json() -> None:
    if not bench().ORACLE.is_file():
        pytest.skip("Gavel's simulation_throughputs.json (shared/traces/gavel) is not here")
    argv = [
        sys.executable,
        str(BENCH),
        "--jobs",
        "40",
        "--rounds",
        "2",
        "--json",
        "--modes",
        "kube",
        "kueue-strictfifo",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()
    order = [line.split()[3] for line in out if line.startswith("round ")]
    assert order == ["kube", "kueue-strictfifo", "kueue-strictfifo", "kube"]
    report = json.loads(out[-1])
    assert report["gavel_python"] is None and report["ratios"] == {}
    assert [sorted(r) for r in report["rounds"]] == [["kube", "kueue-strictfifo"]] * 2
    assert all(r[m]["completed"] == 40 for r in report["rounds"] for m in r)
    bad = subprocess.run([*argv[:2], "--rounds", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--rounds 0: at least 1 round" in bad.stderr


def test_gavels_completed_jobs_are_its_completion_time_lines() -> None:
    """Gavel's driver prints ``Job N: <seconds>`` per completed job (with ``(high priority)`` for weighted
    ones); its completed-steps listing (``Job N: 12 steps``) and other counts are not completions."""
    line = bench().COMPLETED_LINE
    printed = ["Job 12: 15350.024", "Job 3 (high priority): 1.000", "Job 4: 12 steps", "Job 5: 12", "Job 6:"]
    assert [bool(line.match(x)) for x in printed] == [True, True, False, False, False]
