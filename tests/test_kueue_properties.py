"""Kueue in the loop under random workloads: invariants hold with quotas, borrowing and reclaim."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assert_accounting_checks, pool, scenario
from fleetlab.cost.billing import BUCKETS, node_costs
from fleetlab.experiment.run import run_one


def _objects(gpus_a: int, gpus_b: int, reclaim: str, fair: bool) -> list[dict[str, Any]]:
    def cq(name: str, gpus: int) -> dict[str, Any]:
        return {
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohortName": "c",
                "preemption": {"reclaimWithinCohort": reclaim, "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "f",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "256"},
                                    {"name": "memory", "nominalQuota": "2Ti"},
                                    {"name": "nvidia.com/gpu", "nominalQuota": gpus},
                                ],
                            }
                        ],
                    }
                ],
            },
        }

    return [
        {"kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}},
        cq("a", gpus_a),
        cq("b", gpus_b),
        {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "a"}, "spec": {"clusterQueue": "a"}},
        {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "b"}, "spec": {"clusterQueue": "b"}},
    ]


@st.composite
def worlds(draw: st.DrawFn) -> Any:
    jobs = []
    for j in range(draw(st.integers(1, 20))):
        team = draw(st.sampled_from(["a", "b", None]))
        pods = draw(st.integers(1, 2))
        entry: dict[str, Any] = {
            "id": f"j{j}",
            "submit_s": draw(st.integers(0, 600)),
            "pods": pods,
            "priority": draw(st.integers(0, 2)),
            "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": draw(st.sampled_from([1, 4, 8]))},
            "runtime": draw(st.integers(10, 1500)),
        }
        if pods > 1 and draw(st.booleans()):
            entry["gang"] = True
        if draw(st.booleans()):
            entry["checkpoint_interval_s"] = 120
        if team is not None:
            entry.update(queue="q", namespace=team)
        jobs.append(entry)
    extra: dict[str, Any] = {
        "kueue": _objects(
            draw(st.sampled_from([0, 8, 16])),
            draw(st.sampled_from([8, 16])),
            draw(st.sampled_from(["Never", "LowerPriority", "Any"])),
            False,
        ),
        "scheduler": {"gang_scheduling": draw(st.booleans())},
    }
    if draw(st.booleans()):
        extra["kueue_configuration"] = {"waitForPodsReady": {"timeout": "5m"}}
    return scenario([pool(count=draw(st.integers(1, 3)))], jobs, **extra)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_kueue_loop_invariants(resolved: Any) -> None:
    run = run_one(resolved, "most-allocated")
    result = run.result
    assert_accounting_checks(run)  # every headline figure recomputed from the written files
    # Quota: a ClusterQueue never uses more GPUs than the cohort holds (16 + 16 at most here).
    samples = result.queue_samples
    assert samples is not None
    cohort = sum(
        int(n) for (cq, fr), n in zip(samples.keys, samples.nominal, strict=True) if fr.endswith("gpu")
    )
    for k, (_, fr) in enumerate(samples.keys):
        if fr.endswith("gpu"):
            assert int(samples.usage[:, k].max(initial=0)) <= cohort
    # Every job ends completed or is reported pending (Kueue or kube-scheduler), never silently lost.
    pending = {p.job_id for p in result.pending}
    stalled = any(w.startswith("stopped at") for w in result.warnings)
    for i, job_id in enumerate(result.jobs.ids):
        if stalled:
            break  # thrashing without end was cut off: what was in flight is left as it was
        job = next(j for j in resolved.jobs if j.id == job_id)
        if not result.jobs.completed[i] and not (
            job.gang and not resolved.scenario.scheduler.gang_scheduling
        ):
            assert job_id in pending, job_id
    # Money and GPU time conserved.
    cost = node_costs(result)
    assert np.array_equal(sum(cost.units[b] for b in BUCKETS), cost.unit_total)
    for bucket in BUCKETS:
        assert np.all(cost.units[bucket] >= 0)
    assert int(np.count_nonzero(result.segments.evicted)) == int(result.jobs.evictions.sum())
