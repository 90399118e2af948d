"""Invariants of autoscaled and failing pools under random clusters and workloads (hypothesis).

No node is billed before it was requested or after it was removed, no pod stays on a node outside the
node's ready time, a pool never exceeds its max, the account GPU quota is never exceeded, and the bill
split (boot, down and minimum billed time included) adds up exactly — with spot interruptions replacing
nodes through the same lifecycle.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assert_accounting_checks, assert_cost_split_exact, scenario
from fleetlab.experiment.run import run_one
from fleetlab.sim.result import SimulationResult


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Any, str, int | None]:
    pools = []
    for p in range(draw(st.integers(1, 3))):
        gpus = draw(st.sampled_from([2, 4, 8]))
        entry: dict[str, Any] = {
            "name": f"p{p}",
            "cpu": "32",
            "memory": "256Gi",
            "gpu_model": "H100",
            "gpus_per_node": gpus,
            "price_per_hour": draw(st.sampled_from([1.37, 8.0, 55.04])),
            "boot_time_s": draw(st.sampled_from([0, 30, 300])),
        }
        if p == 0 or draw(st.booleans()):
            top = draw(st.integers(1, 4))
            low = draw(st.integers(0, top))
            entry["count"] = draw(st.integers(low, top))
            entry["autoscaling"] = {
                "min": low,
                "max": top,
                "scale_down_unneeded_time": draw(st.sampled_from([60, 600])),
                "stockout": {"probability": draw(st.sampled_from([0.0, 0.5]))},
            }
        else:
            entry["count"] = draw(st.integers(1, 2))
        if draw(st.booleans()):
            entry["failures"] = {"mtbf": draw(st.sampled_from(["30m", "3h"])), "repair_time": "10m"}
        if draw(st.booleans()):  # spot reclaims go through the same lifecycle (and meet the autoscaler)
            entry["capacity_type"] = "spot"
            entry["interruptions"] = {"mtbi": draw(st.sampled_from(["20m", "2h"])), "notice_s": 120}
            entry["billing"] = {"minimum_billed_s": draw(st.sampled_from([0, 60, 600]))}
        pools.append(entry)
    jobs = []
    for j in range(draw(st.integers(1, 20))):
        entry = {
            "id": f"j{j}",
            "submit_s": draw(st.integers(0, 3000)),
            "pods": draw(st.integers(1, 2)),
            "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": draw(st.sampled_from([1, 2, 4, 8]))},
            "runtime": draw(st.integers(30, 3000)),
            "preemptible": draw(st.booleans()),
            "gang": draw(st.booleans()),
        }
        jobs.append(entry)
    quota = draw(st.sampled_from([None, 16, 32]))
    cluster: dict[str, Any] = {
        "pools": pools,
        "autoscaler": {"expander": draw(st.sampled_from(["least-waste", "price", "priority"]))},
    }
    if quota is not None:
        cluster["autoscaler"]["gpu_quota"] = quota
    resolved = scenario(pools, jobs, cluster=cluster, horizon_s=draw(st.sampled_from([None, 5000])))
    return resolved, draw(st.sampled_from(["default", "most-allocated"])), quota


def _live_counts(result: SimulationResult, pool: str) -> int:
    """The most nodes of ``pool`` billed at one time."""
    assert result.lifecycle is not None
    names = result.nodes.pool
    points = []
    for w in result.lifecycle.windows:
        if names[w.node] == pool:
            points.append((w.requested_ms, 1))
            if w.removed_ms >= 0:
                points.append((w.removed_ms, -1))
    live = peak = 0
    for _, d in sorted(points, key=lambda x: (x[0], x[1])):
        live += d
        peak = max(peak, live)
    return peak


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_lifecycle_invariants(world: tuple[Any, str, int | None]) -> None:
    resolved, policy, quota = world
    run = run_one(resolved, policy)
    result = run.result
    assert_accounting_checks(run)  # every headline figure recomputed from the written files
    assert not [w for w in result.warnings if w.startswith("stopped")], result.warnings
    rec = result.lifecycle
    assert rec is not None
    nodes, seg = result.nodes, result.segments
    end = result.end_ms
    windows: dict[int, list[tuple[int, int, int]]] = {}
    for w in rec.windows:
        removed = end if w.removed_ms < 0 else w.removed_ms
        windows.setdefault(w.node, []).append((w.requested_ms, w.ready_ms, removed))
    # Billed exactly over the windows: never before the request, never after the removal.
    for node in range(len(nodes.names)):
        spans = windows.get(node, [])
        billed = sum(min(e, end) - min(s, end) for s, _, e in spans)
        assert nodes.billed_ms is not None and int(nodes.billed_ms[node]) == billed
        if billed:
            assert nodes.billed_start_ms[node] == min(s for s, _, _ in spans)
    # Every stay of a pod lies inside one ready window of its node.
    for k in range(len(seg.pod)):
        node, bound, stay_end = int(seg.node[k]), int(seg.bound_ms[k]), int(seg.end_ms[k])
        assert any(r >= 0 and r <= bound and stay_end <= e for _, r, e in windows[node]), (node, bound)
    # Pools never above max; the account never above its GPU quota (when it started within it).
    by_pool = {p.name: p for p in resolved.scenario.cluster.pools}
    for name, p in by_pool.items():
        if p.autoscaling is not None:
            assert _live_counts(result, name) <= p.autoscaling.max
    initial = sum(p.count * p.gpus_per_node for p in by_pool.values())
    if quota is not None and initial <= quota:
        events = []
        for w in rec.windows:
            g = int(nodes.gpus[w.node])
            events.append((w.requested_ms, g))
            if w.removed_ms >= 0:
                events.append((w.removed_ms, -g))
        live = 0
        for _, g in sorted(events, key=lambda x: (x[0], x[1])):
            live += g
            assert live <= quota
    # The split adds up exactly, nothing negative.
    assert_cost_split_exact(result)
