"""Re-timed pods (time-slicing, interference) end the run when they really finish: a pod's finish event
scheduled at an old speed is dropped, so it moves neither the clock, the makespan nor any node bill."""

from __future__ import annotations

import pytest

from builders import assert_cost_split_exact, by_job, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize

HOUR = 3600


def test_time_sliced_pair_ends_when_the_second_pod_finishes() -> None:
    """One 1-GPU node ($8/h) time-sliced with α = 1; a (1 h of work) at 0, b (1 h) at 0.5 h.
    a: 0.5 h alone, then half speed: its last 0.5 h of work takes 1 h → ends 1.5 h.
    b: 0.5 h of work at half speed by 1.5 h, then alone 0.5 h → ends 2.0 h.
    When b started its finish was first set at 0.5 + 2 × 1 = 2.5 h; that event is stale once a ends.
    Makespan 2.0 h, bill 2.0 h × $8 = $16.00 (was 2.5 h and $20.00). The bill is split over the node's 2
    time-slice replicas × 2 h = 4 replica-hours: a holds one 1.5 h, b one 1.5 h → 3 busy, 1 idle →
    compute $12.00, idle $4.00."""
    jobs = [job("a", runtime=HOUR), job("b", runtime=HOUR, submit_s=HOUR / 2)]
    result = run_one(
        scenario([pool(gpus=1, time_slicing={"replicas": 2, "slowdown_per_extra_pod": 1.0})], jobs), "default"
    ).result
    summary = summarize(result)
    assert by_job(result, "completion_s") == {"a": pytest.approx(1.5 * HOUR), "b": pytest.approx(1.5 * HOUR)}
    assert summary.makespan_s == pytest.approx(2.0 * HOUR)  # was 2.5 h before stale events were dropped
    assert summary.cost_total == pytest.approx(16.00)  # was $20.00
    assert (summary.cost_compute, summary.cost_idle) == (pytest.approx(12.0), pytest.approx(4.0))
    assert_cost_split_exact(result)


def test_interfering_pair_ends_when_the_second_pod_finishes() -> None:
    """One 8-GPU node ($8/h), interference α = 1, both pods demand 0.8 of the network: together each runs at
    1/1.6. a (1 h) at 0: 0.5 h alone, its last 0.5 h takes 0.8 h → ends 1.3 h. b (1 h) at 0.5 h: 0.5 h of work
    by 1.3 h, 0.5 h alone → ends 1.8 h. Bill 1.8 h × $8 = $14.40 (was $16.80, from b's stale 2.1 h event:
    0.5 + 1.6 × 1 h)."""
    net = {"network": 0.8}
    jobs = [
        job("a", runtime=HOUR, interference_demand=net),
        job("b", runtime=HOUR, submit_s=HOUR / 2, interference_demand=net),
    ]
    result = run_one(scenario([pool()], jobs, interference={"alpha": 1.0}), "default").result
    summary = summarize(result)
    assert by_job(result, "completion_s") == {"a": pytest.approx(1.3 * HOUR), "b": pytest.approx(1.3 * HOUR)}
    assert summary.makespan_s == pytest.approx(1.8 * HOUR)
    assert summary.cost_total == pytest.approx(14.40)
    assert_cost_split_exact(result)
