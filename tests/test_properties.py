"""Invariants under random clusters and workloads (hypothesis).

No node is ever over-allocated; every job ends completed or pending with a reason; GPU-hours and
dollars are conserved (busy + prep + idle = billed, exactly); the same inputs replay identically.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assert_accounting_checks, assert_cost_split_exact, scenario
from fleetlab.cost.billing import BUCKETS, job_costs
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.placement.rule_blame import RULE_BLOCKS
from fleetlab.sim.result import SimulationResult

POLICIES = ["default", "least-allocated", "most-allocated", "bin-packing"]


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Any, str]:
    pools = []
    for p in range(draw(st.integers(1, 3))):
        gpus = draw(st.sampled_from([0, 2, 4, 8]))
        entry: dict[str, Any] = {
            "name": f"p{p}",
            "count": draw(st.integers(1, 4)),
            "cpu": str(draw(st.sampled_from([8, 16, 64]))),
            "memory": f"{draw(st.sampled_from([32, 128, 512]))}Gi",
            "max_pods": draw(st.sampled_from([3, 110])),
            "price_per_hour": draw(st.sampled_from([0.0, 1.37, 8.0, 55.04])),
            "initially_ready": draw(st.booleans()),
            "boot_time_s": draw(st.sampled_from([0, 30, 300])),
        }
        if gpus:
            entry.update(gpu_model=draw(st.sampled_from(["H100", "A100-80GB"])), gpus_per_node=gpus)
        if draw(st.booleans()):
            entry["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        pools.append(entry)
    jobs = []
    for j in range(draw(st.integers(1, 25))):
        requests: dict[str, Any] = {
            "cpu": f"{draw(st.sampled_from([500, 1000, 4000, 12000]))}m",
            "memory": f"{draw(st.sampled_from([1, 8, 64]))}Gi",
        }
        g = draw(st.sampled_from([0, 1, 2, 4, 8]))
        if g:
            requests["nvidia.com/gpu"] = g
        entry = {
            "id": f"j{j}",
            "submit_s": draw(st.integers(0, 500)),
            "pods": draw(st.integers(1, 3)),
            "priority": draw(st.integers(0, 3)),
            "requests": requests,
            "runtime": draw(st.integers(1, 2000)),
        }
        if draw(st.booleans()):
            entry["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        if entry["pods"] > 1 and draw(st.booleans()):
            entry["gang"] = True
            if draw(st.booleans()):
                entry["topology_required"] = draw(
                    st.sampled_from(["kubernetes.io/hostname", "fleetlab.io/rack"])
                )
        if draw(st.booleans()):
            entry["checkpoint_interval_s"] = draw(st.sampled_from([30, 300]))
            entry["checkpoint_write_s"] = draw(st.sampled_from([0, 5]))
        if draw(st.booleans()):
            entry["image"] = {"name": draw(st.sampled_from(["a", "b"])), "size": "3Gi"}
            entry["data_size"] = draw(st.sampled_from([0, "2Gi"]))
        jobs.append(entry)
    horizon = draw(st.sampled_from([None, None, 700]))
    extra: dict[str, Any] = {"horizon_s": horizon} if horizon is not None else {}
    extra["scheduler"] = {"gang_scheduling": draw(st.booleans()), "preemption": draw(st.booleans())}
    return scenario(pools, jobs, **extra), draw(st.sampled_from(POLICIES))


def _usage_never_exceeds_allocatable(result: SimulationResult, resolved: Any) -> None:
    """Sweep every stay of every pod on its node: requests never sum past allocatable."""
    from fleetlab.sim.specs import build_nodes

    ids = {job.id: job for job in resolved.jobs}
    infos = build_nodes(resolved)
    seg = result.segments
    per_node: dict[int, list[tuple[int, int, dict[str, int]]]] = {}
    for k in range(len(seg.pod)):
        job = ids[result.jobs.ids[int(result.pods.job[int(seg.pod[k])])]]
        req = dict(job.requests)
        req["pods"] = 1
        pod = int(seg.pod[k])
        still_there = not seg.evicted[k] and result.pods.end_ms[pod] < 0  # open at the end of the run
        end = 1 << 62 if still_there else int(seg.end_ms[k])
        per_node.setdefault(int(seg.node[k]), []).append((int(seg.bound_ms[k]), end, req))
    for node, intervals in per_node.items():
        alloc = infos[node].allocatable
        for t in sorted({s for s, _, _ in intervals}):
            active = [r for s, e, r in intervals if s <= t < e]
            for name in ("cpu", "memory", "nvidia.com/gpu", "pods"):
                used = sum(r.get(name, 0) for r in active)
                assert used <= alloc.get(name, 0), f"node {node} over-allocated {name} at {t}: {used}"


def _gang_deadlock(resolved: Any, job_id: str) -> bool:
    """With gang scheduling off, a half-placed gang may wait forever for peers: not pending, not done."""
    job = next(j for j in resolved.jobs if j.id == job_id)
    return bool(job.gang and not resolved.scenario.scheduler.gang_scheduling)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_invariants_hold(world: tuple[Any, str]) -> None:
    resolved, policy = world
    run = run_one(resolved, policy)
    result = run.result
    assert_accounting_checks(run)  # every headline figure recomputed from the written files

    # No node is ever over-allocated (true requests, incl. the pod count).
    _usage_never_exceeds_allocatable(result, resolved)

    # Every job ends completed, or (without a horizon) pending with kube-scheduler's reason.
    jobs = result.jobs
    pending = {p.job_id: p for p in result.pending}
    for i, job_id in enumerate(jobs.ids):
        if jobs.completed[i]:
            assert job_id not in pending
            if jobs.evictions[i]:
                continue  # the split below describes a single uninterrupted stay
            wait = jobs.last_bound_ms[i] - jobs.submit_ms[i]
            prep = jobs.running_ms[i] - jobs.last_bound_ms[i]
            compute = jobs.end_ms[i] - jobs.running_ms[i]
            assert min(wait, prep, compute) >= 0
            assert wait + prep + compute == jobs.end_ms[i] - jobs.submit_ms[i]
        elif resolved.scenario.horizon_s is None and not _gang_deadlock(resolved, job_id):
            assert job_id in pending, job_id
            assert pending[job_id].message.startswith(("0/", "no nodes available", "pod group"))
            assert pending[job_id].blocked_by in {
                "constraints",
                "too-large",
                "shortage",
                "fragmentation",
                "gang",
                "topology",
                *RULE_BLOCKS,  # free room that only a rule keeps away is blamed on that rule
            }

    # Gangs are all-or-nothing while gang scheduling is on: every pod of a gang job is bound at the same
    # instants and released at the same instants.
    seg = result.segments
    if resolved.scenario.scheduler.gang_scheduling:
        by_job: dict[int, dict[int, list[tuple[int, int]]]] = {}
        for k in range(len(seg.pod)):
            pod = int(seg.pod[k])
            by_job.setdefault(int(result.pods.job[pod]), {}).setdefault(pod, []).append(
                (int(seg.bound_ms[k]), int(seg.end_ms[k]))
            )
        for j, pods in by_job.items():
            job = resolved.jobs[j]
            if job.gang and job.pods > 1:
                stays = {tuple(v) for v in pods.values()}
                assert len(pods) == job.pods and len(stays) == 1, (job.id, pods)

    # A pod is on at most one node at a time: its stays never overlap.
    stays: dict[int, list[tuple[int, int]]] = {}
    for k in range(len(seg.pod)):
        stays.setdefault(int(seg.pod[k]), []).append((int(seg.bound_ms[k]), int(seg.end_ms[k])))
    for pod, spans in stays.items():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in pairwise(spans)), (pod, spans)

    # Every eviction is a closed stay with its lost work recorded, and counted once.
    assert int(np.count_nonzero(seg.evicted)) == int(result.jobs.evictions.sum())
    assert np.all(seg.lost_ms[~seg.evicted] == 0)

    # GPU-hours (unit-ms) and dollars conserved per node exactly, nothing negative; per-job attribution
    # covers compute + prep.
    cost = assert_cost_split_exact(result)
    attributed = float(job_costs(result).sum())
    held = sum((cost.total(b) for b in BUCKETS if b not in ("idle", "boot", "down")), Fraction(0))
    assert abs(attributed - float(held)) < 1e-6

    # Determinism: the same scenario and seed give the same placements and summary.
    again = run_one(resolved, policy).result
    assert again.pods.node.tolist() == result.pods.node.tolist()
    assert summarize(again).as_dict() == summarize(result).as_dict()
