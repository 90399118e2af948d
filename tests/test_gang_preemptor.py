"""A multi-node (gang) job preempting under Slurm's QOS preemption (``batch_preemption``,
sim/batch_preemption.py ``make_gang_room``), worked out by hand after https://slurm.schedmd.com/preempt.html
(preemptable jobs are candidates lowest priority first, then youngest first; a job that needs several nodes
stops the candidates until its nodes are found, and the preemptees outside its allocation are not stopped;
``PreemptExemptTime`` spares jobs that ran less).

World: four nodes of 4 CPUs; every pod asks 4 CPUs (a whole node). L1, L2, L3 (QOS low, one pod, 100 s)
start at 0, 5 and 10 on three nodes; the fourth is free. H (QOS high, a gang, 10 s) arrives at 20."""

from __future__ import annotations

import math
from typing import Any

from builders import by_job, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.sim.batch_preemption import BatchPreemption
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

NODES = {"name": "p", "count": 4, "cpu": "4", "memory": "8Gi", "price_per_hour": 1.0}


def _job(job_id: str, qos: str, submit: float, runtime: float, pods: int = 1) -> dict[str, Any]:
    return {"id": job_id, "submit_s": submit, "runtime": runtime, "pods": pods, "gang": pods > 1,
            "labels": {"fleetlab.io/qos": qos}, "requests": {"cpu": "4", "memory": "1Gi"}}  # fmt: skip


def _run(
    jobs: list[dict[str, Any]], low_mode: str = "requeue", **section: Any
) -> tuple[BatchPreemption, SimulationResult]:
    rules = {"classes": [{"name": "high", "priority": 100, "preempts": ["low"]},
                         {"name": "low", "priority": 10, "mode": low_mode}], **section}  # fmt: skip
    resolved = scenario([NODES], jobs, scheduler={"tie_break": "first"}, batch_preemption=rules)
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    feature = sim.features.batch_preemption
    assert feature is not None
    return feature, result


def _world(gang: int) -> list[dict[str, Any]]:
    return [_job("L1", "low", 0, 100), _job("L2", "low", 5, 100), _job("L3", "low", 10, 100),
            _job("H", "high", 20, 10, pods=gang)]  # fmt: skip


def _ends(result: SimulationResult) -> dict[str, float]:
    """Each job's end (submit + completion), rounded; NaN for a job that never completed."""
    submit = by_job(result, "submit_s")
    return {k: round(v + submit[k], 3) for k, v in by_job(result, "completion_s").items()}


def test_a_gang_of_three_stops_the_two_youngest_and_starts_at_once() -> None:
    """H needs 3 nodes; 1 is free. Candidates youngest first: L3 (started 10) → 2 nodes, L2 (5) → 3: both
    requeued at 20, L1 kept. H runs 20 → 30; L2 and L3 start again at 30 and end at 130. Lost: (20 − 5) +
    (20 − 10) = 25 pod-seconds."""
    feature, result = _run(_world(3))
    assert _ends(result) == {"L1": 100, "L2": 130, "L3": 130, "H": 30}
    assert (feature.preempted_jobs, feature.cancelled_jobs, feature.lost_pod_s) == (2, 0, 25.0)
    assert by_job(result, "evictions") == {"L1": 0, "L2": 1, "L3": 1, "H": 0}


def test_a_gang_of_two_stops_only_the_youngest() -> None:
    """H needs 2 nodes: the free one and L3's (the youngest). L2 is not needed and keeps running. H 20 → 30;
    L3 again 30 → 130. Lost: 10 pod-seconds."""
    feature, result = _run(_world(2))
    assert _ends(result) == {"L1": 100, "L2": 105, "L3": 130, "H": 30}
    assert (feature.preempted_jobs, feature.lost_pod_s) == (1, 10.0)


def test_cancelled_victims_free_their_nodes_in_the_same_instant() -> None:
    """PreemptMode CANCEL: L3 and L2 are cancelled at 20 (they never complete); their nodes free at the
    end of the step and H, tried again in the same instant, runs 20 → 30."""
    feature, result = _run(_world(3), low_mode="cancel")
    ends = _ends(result)
    assert ends["H"] == 30 and ends["L1"] == 100 and math.isnan(ends["L2"]) and math.isnan(ends["L3"])
    assert (feature.preempted_jobs, feature.cancelled_jobs) == (2, 2)


def test_a_gang_victim_is_requeued_whole_when_one_of_its_nodes_is_needed() -> None:
    """L (low, a gang of 2) on two nodes from 0; M (low, one pod) from 5; one node free. H (a gang of 3) at
    20: candidates M (youngest) → 2 nodes, then L's first pod → 3. Both jobs are stopped, L whole (both its
    pods, though one of its nodes is enough: Slurm preempts jobs, not nodes). H takes three of the four
    free nodes, 20 → 30; M, requeued, finds the fourth in the same instant and runs 20 → 120; L needs two
    nodes and waits for H's end: 30 → 130. Lost: M 20 − 5 = 15, L 2 × 20 = 40 pod-seconds."""
    jobs = [_job("L", "low", 0, 100, pods=2), _job("M", "low", 5, 100), _job("H", "high", 20, 10, pods=3)]
    feature, result = _run(jobs)
    ends = _ends(result)
    assert ends == {"L": 130, "M": 120, "H": 30}
    assert (feature.preempted_jobs, feature.lost_pod_s) == (2, 55.0)


def test_exempt_jobs_are_spared_until_enough_may_be_taken() -> None:
    """PreemptExemptTime 30 s: at 20 every low job is exempt (L1 until 30, L2 until 35, L3 until 40): H waits.
    At 30 only L1 may be taken: 1 + 1 = 2 nodes < 3, H waits again. At 35 L2 (younger) and L1 may be taken:
    3 nodes; H runs 35 → 45; L1 and L2 restart at 45 and end at 145. Lost: (35 − 0) + (35 − 5) = 65."""
    feature, result = _run(_world(3), exempt_time_s=30)
    assert _ends(result) == {"L1": 145, "L2": 145, "L3": 110, "H": 45}
    assert (feature.preempted_jobs, feature.lost_pod_s) == (2, 65.0)


def test_off_victims_are_never_taken_and_the_gang_waits() -> None:
    """PreemptMode OFF for QOS low: nothing may be taken; H waits for L1 and L2 to end (100, 105) and runs
    105 → 115."""
    feature, result = _run(_world(3), low_mode="off")
    assert _ends(result) == {"L1": 100, "L2": 105, "L3": 110, "H": 115}
    assert feature.preempted_jobs == 0
