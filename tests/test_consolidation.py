"""Consolidation (KAI scheduler's move of preemptible pods to open room): the all-or-nothing commit on a
hand-worked case, the churn guard (a moved pod stays put for ``consolidation_cooldown_s``), and the array
candidate search against a per-node reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import profile_for, run_one
from fleetlab.placement.framework import PodSpec
from fleetlab.sim.consolidation import Consolidator
from fleetlab.sim.simulator import Simulator


def _on(slot: str, job_id: str, cpu: str, preemptible: bool, **extra: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "1Gi", "nvidia.com/gpu": 1}
    return job(
        job_id, runtime=1000, preemptible=preemptible, requests=requests, nodeSelector={"slot": slot}, **extra
    )


@pytest.mark.parametrize(("d_cpu", "committed"), [("60", False), ("20", True)])
def test_moves_are_committed_only_if_every_evicted_pod_fits_again(d_cpu: str, committed: bool) -> None:
    """Node n0 (2 GPUs, 64 CPUs) runs v1 (1 CPU) and v2 (40 CPUs); n1 runs c (30 CPUs: 34 left), n2 runs d.
    p needs both GPUs of one node, which only evicting v1 and v2 gives. Re-placing them largest GPU first,
    then by index, onto the node left with the fewest GPUs: v1 -> n1; v2 needs 40 CPUs: n1 has no GPU left,
    n2 has 64 - d. With d = 60 (4 left) v2 fits nowhere, so nothing is evicted, not even v1, and p waits;
    with d = 20 (44 left) v2 goes to n2, both are evicted and p starts at once."""
    pools = [pool(f"n{i}", count=1, gpus=2, labels={"slot": str(i)}) for i in range(3)]
    jobs = [
        {**_on("0", "v1", "1", True), "nodeSelector": {}},
        {**_on("0", "v2", "40", True, submit_s=1), "nodeSelector": {}},
        _on("1", "c", "30", False, submit_s=2),
        _on("2", "d", d_cpu, False, submit_s=3),
        job("p", gpus=2, submit_s=10, runtime=10),
    ]
    # v1 and v2 pack onto n0 (most-allocated), c and d are pinned to n1 and n2.
    res = scenario(
        pools, jobs, scheduler={"consolidation": True, "tie_break": "first", "policy": "most-allocated"}
    )
    result = run_one(res).result
    evictions = by_job(result, "evictions")
    assert result.sharing is not None
    if committed:
        assert evictions["v1"] == 1 and evictions["v2"] == 1 and result.sharing.consolidation_evictions == 2
        assert by_job(result, "queue_wait_s")["p"] == 0
    else:
        assert sum(evictions.values()) == 0 and result.sharing.consolidation_evictions == 0
        assert by_job(result, "queue_wait_s")["p"] > 900


def _churn(cooldown: Any) -> Any:
    """a is moved for p1 at t=10; at t=30 p2 could be placed by moving a again (b has left, q sits on the
    other node)."""
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}
    jobs = [
        job("a", runtime=1000, preemptible=True, requests=requests),
        job("b", runtime=20, submit_s=1, requests=requests),
        job("p1", gpus=2, submit_s=10, runtime=10),
        job("q", runtime=1000, submit_s=25, requests=requests),
        job("p2", gpus=2, submit_s=30, runtime=10),
    ]
    sched: dict[str, Any] = {"consolidation": True, "tie_break": "first"}
    if cooldown is not None:
        sched["consolidation_cooldown_s"] = cooldown
    return run_one(scenario([pool(count=2, gpus=2)], jobs, scheduler=sched)).result


def test_a_moved_pod_is_not_moved_again_within_the_cooldown() -> None:
    default = _churn(None)  # 10 minutes: the second move (20 s after the first) is refused
    assert by_job(default, "evictions")["a"] == 1 and by_job(default, "queue_wait_s")["p2"] > 900
    short = _churn("15s")
    assert by_job(short, "evictions")["a"] == 2 and by_job(short, "queue_wait_s")["p2"] == 0


def test_array_candidates_equal_a_per_node_search() -> None:
    """On a busy cluster, at many points: every node where evicting its movable pods smallest GPU request
    first (then pod index) makes the pending pod fit, with the same victims, GPUs and count."""
    rng = np.random.default_rng(3)
    jobs = [
        job(
            f"j{i}",
            gpus=int(rng.choice([1, 1, 2, 4])),
            submit_s=float(i),
            runtime=5000,
            preemptible=bool(rng.random() < 0.6),
        )
        for i in range(60)
    ]
    res = scenario([pool("g", count=5, gpus=8), pool("h", count=3, gpus=4)], jobs, horizon_s=100)
    sim = Simulator(res, profile_for(res, None))
    sim.run()
    consolidator, state = Consolidator(sim), sim.state  # the scenario leaves consolidation off: build one
    checked = 0
    for gpus in (2, 4, 8):
        pending = sim.scheduler.compile(PodSpec(requests=(("cpu", 1000), ("nvidia.com/gpu", gpus))))
        static = sim.scheduler.static_mask(pending)
        cols = pending.request_cols
        expected = []
        for node in np.flatnonzero(static).tolist():
            victims = sorted(
                (p for p in sim.node_pods[node] if consolidator.movable_job[int(sim.book.job[p])]),
                key=lambda p: (int(consolidator._request(p)[state.gpu_col]), p),
            )
            free, chosen = state.free[node, cols].copy(), []
            for v in victims:
                if (free >= pending.request[cols]).all():
                    break
                free += consolidator._request(v)[cols]
                chosen.append(v)
            if chosen and (free >= pending.request[cols]).all():
                freed = sum(int(consolidator._request(v)[state.gpu_col]) for v in chosen)
                expected.append((freed, len(chosen), node, chosen))
        assert consolidator.candidates(pending, static) == sorted(expected)
        checked += len(expected)
    assert checked > 3


def test_a_move_never_binds_the_pod_against_its_required_anti_affinity() -> None:
    """Upstream kube-scheduler binds only to a node that passes every filter, InterPodAffinity included.
    As in the committed case above (d = 20), evicting v1 and v2 frees both GPUs of n0, but n0 also runs
    ``guard`` (CPU only, not preemptible, outliving every other pod), which p's required hostname
    anti-affinity excludes: p must never be bound on n0, and nothing is evicted for a move that cannot
    help."""
    pools = [pool(f"n{i}", count=1, gpus=2, labels={"slot": str(i)}) for i in range(3)]
    guard = job(
        "guard", gpus=0, submit_s=2, runtime=5000, nodeSelector={"slot": "0"}, labels={"app": "guard"}
    )
    anti = [{"topology_key": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "guard"}}}]
    jobs = [
        {**_on("0", "v1", "1", True), "nodeSelector": {}},
        {**_on("0", "v2", "40", True, submit_s=1), "nodeSelector": {}},
        guard,
        _on("1", "c", "30", False, submit_s=3),
        _on("2", "d", "20", False, submit_s=4),
        job("p", gpus=2, submit_s=10, runtime=10, anti_affinity=anti),
    ]
    res = scenario(
        pools, jobs, scheduler={"consolidation": True, "tie_break": "first", "policy": "most-allocated"}
    )
    sim = Simulator(res, profile_for(res, None))
    result = sim.run()
    ids = [j.id for j in sim.jobs]

    def nodes_of(job_id: str) -> set[int]:
        pods = set(sim.book.pods_of(ids.index(job_id)))
        return {int(s.node) for s in sim.book.segments if s.pod in pods}

    assert nodes_of("guard") == {0} and 0 in nodes_of("v1") and 0 in nodes_of("v2")
    assert 0 not in nodes_of("p")
    assert result.sharing is not None and result.sharing.consolidation_evictions == 0
