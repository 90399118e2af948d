"""The preemption dry run's per-node reclaimable requests, read as columns, against the pod-by-pod sum.

``sim/pod_preemption.py: reclaimable_below`` sums the requests of the bound pods with a lower priority per
node from the pods' node and job columns and the jobs' spec ids. The definition it replaces walked the
pods one at a time (node of the pod, request of the job's spec). Both are checked on a cluster worked out
by hand and at every dry run of simulated runs with two and three priorities.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fleetlab.sim.engine as engine_module
from fleetlab.experiment.run import profile_for
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.pod_preemption import reclaimable_below
from fleetlab.sim.simulator import Simulator

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from workloads import resolve_workload


def pod_by_pod(sim: EngineHandle, priority: int) -> np.ndarray[Any, Any] | None:
    """The definition the columns replace: each lower-priority bound pod's request added at its node."""
    book = sim.book
    lower: list[int] = []
    for prio, pods in sim.bound_by_priority.items():
        if prio < priority:
            lower.extend(pods)
    if not lower:
        return None
    reclaimable = np.zeros_like(sim.state.allocatable)
    nodes = np.asarray([int(book.node[p]) for p in lower], dtype=np.int64)
    requests = np.stack([sim.compiled[sim.spec_of(int(book.job[p]))].request for p in lower])
    np.add.at(reclaimable, nodes, requests)
    return reclaimable


def checked_run(monkeypatch: pytest.MonkeyPatch, name: str, jobs: int, gpus: int) -> tuple[int, int]:
    """Run a benchmark workload with every dry run's reclaimable compared with the pod-by-pod sum, and at
    every priority seen; returns (dry runs, comparisons with some lower-priority pod bound)."""
    real = engine_module.preempt_for
    counts = [0, 0]

    def compared(sim: Any, pod: int, compiled: Any, scheduler: Any) -> int:
        counts[0] += 1
        for priority in {*sim.bound_by_priority, sim.job_priority(sim.book.job_at[pod])}:
            old, new = pod_by_pod(sim, priority), reclaimable_below(sim, priority)
            assert (old is None) == (new is None)
            if old is not None and new is not None:
                counts[1] += 1
                assert new.dtype == old.dtype and np.array_equal(new, old)
        return real(sim, pod, compiled, scheduler)

    monkeypatch.setattr(engine_module, "preempt_for", compared)
    resolved = resolve_workload(name, jobs, gpus)
    Simulator(resolved, profile_for(resolved, None)).run()
    return counts[0], counts[1]


@pytest.mark.parametrize(("name", "jobs", "gpus"), [("mix", 400, 64), ("kueue", 400, 64), ("mix", 300, 32)])
def test_reclaimable_matches_the_pod_by_pod_sum_in_simulated_runs(
    monkeypatch: pytest.MonkeyPatch, name: str, jobs: int, gpus: int
) -> None:
    dry_runs, compared = checked_run(monkeypatch, name, jobs, gpus)
    assert dry_runs > 0 and compared > 0  # the runs do reach the dry run with lower-priority pods bound


def test_reclaimable_on_a_cluster_worked_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three pods bound by hand on a fresh engine: two of priority 10 on node 0 and node 1, one of
    priority 100 on node 1. Below 100: node 0 holds the first pod's request, node 1 the second's; below 10
    nothing; below 1000 node 1 holds both of its pods' requests."""
    resolved = resolve_workload("mix", 40, 32)
    sim = Simulator(resolved, profile_for(resolved, None))
    priorities = [sim.job_priority(j) for j in range(len(sim.jobs))]
    low = [j for j, p in enumerate(priorities) if p == 10][:2]
    high = next(j for j, p in enumerate(priorities) if p == 100)
    pod_of = {j: next(iter(sim.book.pods_of(j))) for j in (*low, high)}
    for job, node in ((low[0], 0), (low[1], 1), (high, 1)):
        sim.bind(pod_of[job], node)
    request = {j: sim.compiled[sim.spec_of(j)].request for j in (*low, high)}
    assert reclaimable_below(sim, 10) is None
    below_100 = reclaimable_below(sim, 100)
    assert below_100 is not None
    assert below_100[0].tolist() == request[low[0]].tolist()
    assert below_100[1].tolist() == request[low[1]].tolist()
    assert not below_100[2:].any()
    below_1000 = reclaimable_below(sim, 1000)
    assert below_1000 is not None
    assert below_1000[1].tolist() == (request[low[1]] + request[high]).tolist()
    for priority in (10, 100, 1000):
        old, new = pod_by_pod(sim, priority), reclaimable_below(sim, priority)
        assert (old is None and new is None) or np.array_equal(old, new)  # type: ignore[arg-type]
