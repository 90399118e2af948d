"""Invariants with spot interruptions on (hypothesis): same inputs replay identically; the cost buckets
(compute, lost, prep, wait, boot, minimum, idle) add up to the bill exactly; no pod is bound to a node
while it is under notice (cordoned) or its replacement boots, and none runs on it past its reclaim."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assert_accounting_checks, assert_cost_split_exact, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize


@st.composite
def spot_worlds(draw: st.DrawFn) -> Any:
    pools = []
    for p in range(draw(st.integers(1, 3))):
        entry: dict[str, Any] = {
            "name": f"p{p}",
            "count": draw(st.integers(1, 4)),
            "cpu": "64",
            "memory": "512Gi",
            "price_per_hour": draw(st.sampled_from([0.0, 1.37, 17.6289])),
            "initially_ready": draw(st.booleans()),
            "boot_time_s": draw(st.sampled_from([0, 30, 300])),
        }
        if draw(st.booleans()):
            entry.update(gpu_model="H100", gpus_per_node=draw(st.sampled_from([2, 8])))
        if p == 0 or draw(st.booleans()):  # at least one spot pool
            entry["capacity_type"] = "spot"
            entry["interruptions"] = {
                "mtbi": draw(st.sampled_from([300, 900, 3600])),
                "notice_s": draw(st.sampled_from([0, 30, 120])),
            }
        if draw(st.booleans()):
            entry["billing"] = {"minimum_billed_s": draw(st.sampled_from([60, 600]))}
        pools.append(entry)
    jobs = []
    for j in range(draw(st.integers(1, 20))):
        requests: dict[str, Any] = {"cpu": f"{draw(st.sampled_from([1, 8, 30]))}", "memory": "8Gi"}
        g = draw(st.sampled_from([0, 1, 2, 8]))
        if g:
            requests["nvidia.com/gpu"] = g
        entry = {
            "id": f"j{j}",
            "submit_s": draw(st.integers(0, 1000)),
            "pods": draw(st.integers(1, 3)),
            "priority": draw(st.integers(0, 2)),
            "requests": requests,
            "runtime": draw(st.integers(1, 3000)),
            "gang": draw(st.booleans()),
        }
        if draw(st.booleans()):
            entry["checkpoint_interval_s"] = draw(st.sampled_from([30, 300]))
            entry["checkpoint_write_s"] = draw(st.sampled_from([0, 5]))
        if draw(st.booleans()):
            entry["image"] = {"name": draw(st.sampled_from(["a", "b"])), "size": "3Gi"}
        jobs.append(entry)
    extra: dict[str, Any] = {"seed": draw(st.integers(0, 5))}
    extra["scheduler"] = {"gang_scheduling": True, "preemption": draw(st.booleans())}
    # Always a horizon: a job longer than its nodes' time between interruptions, without checkpoints,
    # never finishes and would run on to the stall guard (tests/test_spot.py covers runs without one).
    extra["horizon_s"] = draw(st.sampled_from([2000, 6000]))
    return scenario(pools, jobs, **extra)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spot_worlds())
def test_buckets_add_up_and_no_pod_outlives_its_node(resolved: Any) -> None:
    run = run_one(resolved)
    result = run.result
    assert_accounting_checks(run)  # every headline figure recomputed from the written files
    assert_cost_split_exact(result)

    # Determinism: the same scenario and seed replay the same interruptions and summary.
    again = run_one(resolved).result
    assert summarize(again).as_dict() == summarize(result).as_dict()
    log = result.interruptions
    assert log is not None  # every drawn world has a spot pool (p0), so the log always exists
    assert again.interruptions is not None
    assert again.interruptions.notice_ms.tolist() == log.notice_ms.tolist()
    seg = result.segments
    for k in range(len(log)):
        node, notice, reclaim, ready = (
            int(log.node[k]),
            int(log.notice_ms[k]),
            int(log.reclaim_ms[k]),
            int(log.ready_ms[k]),
        )
        on_node = seg.node == node
        # Nothing is bound while the node is cordoned for the notice or while its replacement boots.
        bound = seg.bound_ms[on_node]
        assert not np.any((bound >= notice) & (bound < ready)), (node, notice, ready)
        # Every stay that began before the reclaim has ended by it.
        before = on_node & (seg.bound_ms < notice)
        assert np.all(seg.end_ms[before] <= reclaim)
    assert int(log.pods_evicted.sum()) <= int(np.count_nonzero(seg.evicted))
    lost_by_interruptions = summarize(result).interruption_gpu_hours_lost
    assert lost_by_interruptions <= summarize(result).gpu_hours_lost + 1e-9
