"""Queue wait is time spent pending, summed over attempts; jobs unfinished at the end are censored, not
dropped: counted by state next to every average, with lower-bound figures that count them."""

from __future__ import annotations

import pytest

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.teams import team_rows
from fleetlab.report.table import best_of, comparison_table

HOUR = 3600


def test_an_evicted_jobs_wait_excludes_the_time_it_ran() -> None:
    """One 1-GPU node. low (priority 0, 2 h, no checkpoints) runs from 0; urgent (priority 100, 1 h)
    arrives at 0.5 h and preempts it; low waits again 0.5 h → 1.5 h, then runs 2 h from scratch.
    Wait of low = 0 (first attempt) + 1 h (pending 0.5 → 1.5 h) = 3600 s; it was 5400 s (1.5 h, from
    submit to last bind, the 0.5 h it ran included). Completion 3.5 h; urgent waited 0."""
    jobs = [
        job("low", gpus=1, priority=0, runtime=2 * HOUR),
        job("urgent", gpus=1, priority=100, submit_s=HOUR / 2, runtime=HOUR),
    ]
    result = run_one(scenario([pool(gpus=1)], jobs), "default").result
    assert by_job(result, "evictions") == {"low": 1, "urgent": 0}
    assert by_job(result, "queue_wait_s") == {"low": 3600.0, "urgent": 0.0}
    assert by_job(result, "completion_s") == {"low": 3.5 * HOUR, "urgent": HOUR}
    summary = summarize(result)
    assert summary.queue_wait_mean_s == 1800.0  # (3600 + 0) / 2
    assert summary.jobs_pending_at_end == 0 and summary.queue_wait_mean_s_lower_bound == 1800.0


def _fifo_with_horizon() -> object:
    """One 1-GPU node, three 2 h jobs at 0, horizon 3 h: a runs 0–2 h, b 2–4 h (running at the end),
    c never starts (pending at the end)."""
    jobs = [job(x, gpus=1, runtime=2 * HOUR) for x in ("a", "b", "c")]
    return run_one(scenario([pool(gpus=1)], jobs, horizon_s=3 * HOUR), "default")


def test_jobs_pending_at_the_horizon_are_censored_not_dropped() -> None:
    """Waits a 0, b 2 h, c ≥ 3 h (still pending at the 3 h end).
    Exact mean over the known waits (a, b) = 1 h = 3600 s; lower bound over all three = (0 + 2 + 3) / 3 h
    = 6000 s; lower-bound p50 = 2 h, p99 at rank 0.99 × 2 = 1.98: 7200 + 0.98 × 3600 = 10,728 s (numpy linear).
    Completion: a 2 h (known); lower bound over a, b (3 h so far), c (3 h so far) = 8/3 h = 9600 s.
    Counts: 1 completed, 1 running, 1 pending, 0 failed."""
    run = _fifo_with_horizon()
    summary = summarize(run.result)  # type: ignore[attr-defined]
    assert (summary.jobs_completed, summary.jobs_running_at_end, summary.jobs_pending_at_end) == (1, 1, 1)
    assert summary.jobs_failed == 0 and summary.jobs_pending == 1
    assert summary.queue_wait_mean_s == 3600.0
    assert summary.queue_wait_mean_s_lower_bound == 6000.0
    assert summary.queue_wait_p50_s_lower_bound == 7200.0
    assert summary.queue_wait_p99_s_lower_bound == pytest.approx(10728.0)
    assert summary.completion_mean_s == 7200.0
    assert summary.completion_mean_s_lower_bound == 9600.0
    states = by_job(run.result, "state")  # type: ignore[attr-defined]
    assert states == {"a": "completed", "b": "running", "c": "pending"}
    so_far = by_job(run.result, "queue_wait_so_far_s")  # type: ignore[attr-defined]
    assert so_far == {"a": 0.0, "b": 7200.0, "c": 10800.0}
    [team] = team_rows(run.result)  # type: ignore[attr-defined]
    assert (team.jobs, team.completed, team.pending) == (3, 1, 1)
    assert team.queue_wait_mean_s_lower_bound == 6000.0


def test_a_run_that_leaves_jobs_waiting_cannot_win_on_wait() -> None:
    """Exact 1,000 s against a lower bound of 900 s: the censored run might be better or worse, so
    nothing wins; against a bound of 1,200 s the exact 1,000 s wins for sure. A lower bound never wins."""
    assert best_of([1000.0, 900.0], [False, True], "min") is None
    assert best_of([1000.0, 1200.0], [False, True], "min") == 1000.0
    assert best_of([800.0, 1000.0], [True, False], "min") is None


def test_the_comparison_table_shows_counts_and_bounds() -> None:
    """The censored run's wait mean is printed as "≥ 100.0m" (6000 s) next to its counts by state."""
    from rich.console import Console

    run = _fifo_with_horizon()
    console = Console(width=200, record=True)
    console.print(comparison_table([run, run], "t"))  # type: ignore[list-item]
    text = console.export_text()
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 2}
    assert "≥ 100.0m" in rows["queue wait mean"]
    assert rows["jobs running at end"].count(" 1 ") == 2 and rows["jobs pending at end"].count(" 1 ") == 2


def test_service_replica_slots_are_not_a_team() -> None:
    """A 2-job workload (team research) beside a 3-replica service: the team table has research alone
    with 2 jobs (replica slots used to appear as a team with 0/3 jobs done and their waits)."""
    from builders import service

    jobs = [job("a", gpus=1, runtime=600, team="research"), job("b", gpus=1, runtime=600, team="research")]
    resolved = scenario([pool(count=1)], jobs, services=[service()], horizon_s=3600)
    result = run_one(resolved, "default").result
    rows = team_rows(result)
    assert [(r.team, r.jobs, r.completed, r.pending) for r in rows] == [("research", 2, 2, 0)]
    assert summarize(result).jobs == 2


def test_kueue_quota_wait_is_summed_over_admissions() -> None:
    """ClusterQueue team-a (8 GPUs, withinClusterQueue: LowerPriority), one 8-GPU node. lo (priority 0,
    2 h) is admitted at 0; hi (priority 1, 1 h) arrives at 0.5 h, Kueue preempts lo, hi runs 0.5–1.5 h;
    lo waits for quota again 0.5 → 1.5 h and reruns. lo: quota wait 0 + 1 h = 3600 s (it read 5400 s,
    admission − submit, the 0.5 h it ran included), queue wait 3600 s, node wait 0."""
    from test_kueue_sim import _cq, _objects

    objects = _objects(cohort=None)
    objects[1] = _cq("team-a", 8, cohort=None)
    objects[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    jobs = [
        job("lo", gpus=8, runtime=2 * HOUR, queue="q", namespace="a"),
        job("hi", gpus=8, priority=1, submit_s=HOUR / 2, runtime=HOUR, queue="q", namespace="a"),
    ]
    result = run_one(scenario([pool(count=1)], jobs, kueue=objects), "default").result
    assert by_job(result, "evictions") == {"lo": 1, "hi": 0}
    assert by_job(result, "quota_wait_s") == {"lo": 3600.0, "hi": 0.0}
    assert by_job(result, "queue_wait_s") == {"lo": 3600.0, "hi": 0.0}
    assert by_job(result, "node_wait_s") == {"lo": 0.0, "hi": 0.0}
    assert summarize(result).quota_wait_mean_s == 1800.0
