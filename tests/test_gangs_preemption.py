"""Gangs (all-or-nothing, topology), DefaultPreemption, evictions and lost work with checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import job_columns
from fleetlab.placement.gang import best_fit_nodes
from fleetlab.placement.preemption import Victim, pick_one_node, select_victims_on_node
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.progress import progress_at, wall_needed


def _cols(resolved, policy: str = "most-allocated"):  # type: ignore[no-untyped-def]
    run = run_one(resolved, policy)
    cols = job_columns(run.result)
    return run, {jid: i for i, jid in enumerate(cols["job_id"])}, cols


def _fragmented(gang_scheduling: bool):  # type: ignore[no-untyped-def]
    """Two 8-GPU nodes: 4 and 6 GPUs busy for 1000 s; a 2×4-GPU gang arrives at 10 s."""
    return scenario(
        [pool(count=2)],
        [
            job("hold4", gpus=4, runtime=1000, nodeSelector={"kubernetes.io/hostname": "gpu-0"}),
            job("hold6", gpus=6, runtime=1000, nodeSelector={"kubernetes.io/hostname": "gpu-1"}),
            job("train", gpus=4, pods=2, gang=True, submit_s=10, runtime=500),
        ],
        scheduler={"gang_scheduling": gang_scheduling},
    )


def test_gang_on_binds_nothing_until_all_pods_fit() -> None:
    """All-or-nothing: no pod of the gang holds a GPU while its peer has no room (coscheduling/Kueue)."""
    run, idx, cols = _cols(_fragmented(gang_scheduling=True))
    assert cols["queue_wait_s"][idx["train"]] == pytest.approx(990)
    assert summarize(run.result).gpu_hours_wait == 0


def test_gang_off_holds_gpus_idle_while_peers_wait() -> None:
    """With gang scheduling off the first pod binds at once and holds 4 GPUs idle for 990 s."""
    run, idx, cols = _cols(_fragmented(gang_scheduling=False))
    s = summarize(run.result)
    assert s.gpu_hours_wait == pytest.approx(4 * 990 / 3600)
    assert cols["completion_s"][idx["train"]] == pytest.approx(990 + 500)


def test_topology_required_keeps_gang_in_one_rack() -> None:
    """podset-required-topology on the rack level: both 8-GPU pods land in one rack (BestFit domain)."""
    resolved = scenario(
        [pool(count=4, racks_per_zone=2)],
        [
            job("hold", gpus=8, runtime=1000, nodeSelector={"kubernetes.io/hostname": "gpu-0"}),
            job(
                "train",
                gpus=8,
                pods=2,
                gang=True,
                topology_required="fleetlab.io/rack",
                submit_s=1,
                runtime=10,
            ),
        ],
    )
    run = run_one(resolved, "least-allocated")
    labels = {n: i for i, n in enumerate(run.result.nodes.names)}
    pods = run.result.pods
    train = [int(p) for p in np.flatnonzero(np.asarray(run.result.jobs.ids)[pods.job] == "train")]
    racks = {(labels[run.result.nodes.names[int(pods.node[p])]] // 1) % 2 for p in train}
    assert len(racks) == 1  # rack = index % 2 with one zone: gpu-1 and gpu-3 share rack 1


def test_topology_required_impossible_is_explained() -> None:
    """Three 8-GPU pods can never share one 2-node rack: pending, blocked by topology."""
    resolved = scenario(
        [pool(count=4, racks_per_zone=2)],
        [job("train", gpus=8, pods=3, gang=True, topology_required="fleetlab.io/rack")],
    )
    run = run_one(resolved, "default")
    (p,) = run.result.pending
    assert p.blocked_by == "topology"
    assert "roomiest has room for 2" in p.detail


def test_best_fit_nodes_prefers_tightest_remainder() -> None:
    """BestFit: the last node taken is the smallest that still holds the remainder."""
    capacity = np.asarray([8, 3, 5, 1])
    nodes = np.asarray([10, 11, 12, 13])
    assert best_fit_nodes(capacity, nodes, 11) == [10] * 8 + [11] * 3
    assert best_fit_nodes(capacity, nodes, 2) == [11, 11]
    assert best_fit_nodes(capacity, nodes, 18) is None


def test_preemption_evicts_lower_priority_and_loses_work_since_checkpoint() -> None:
    """DefaultPreemption: the 8-GPU urgent job evicts the running low-priority one, which loses the
    compute since its last checkpoint (10-min interval, 30 s writes), requeues, and finishes later."""
    resolved = scenario(
        [pool()],
        [
            job("low", gpus=8, runtime=7200, checkpoint_interval_s=600, checkpoint_write_s=30),
            job("urgent", gpus=8, priority=100, submit_s=1500, runtime=600),
        ],
    )
    run, idx, cols = _cols(resolved)
    assert cols["queue_wait_s"][idx["urgent"]] == 0
    assert cols["evictions"][idx["low"]] == 1
    # 1500 s of wall = 2 × (600 + 30) + 240: two checkpoints saved, 240 s of compute lost.
    assert cols["lost_gpu_hours"][idx["low"]] == pytest.approx(8 * 240 / 3600)
    s = summarize(run.result)
    assert s.evictions == 1
    assert s.gpu_hours_lost == pytest.approx(8 * 240 / 3600)
    # After the urgent job (600 s), low restarts with 6000 s of work left (+ 9 checkpoint writes).
    assert cols["completion_s"][idx["low"]] == pytest.approx(2100 + 6000 + 9 * 30)
    assert cols["eviction_delay_s"][idx["low"]] == pytest.approx(2100)


def test_no_preemption_when_policy_never_or_disabled() -> None:
    """preemptionPolicy: Never, or the scheduler's preemption off: the urgent job waits."""
    jobs = [
        job("low", gpus=8, runtime=1000),
        job("urgent", gpus=8, priority=100, submit_s=100, runtime=10, preemptionPolicy="Never"),
    ]
    _, idx, cols = _cols(scenario([pool()], jobs))
    assert cols["queue_wait_s"][idx["urgent"]] == pytest.approx(900)
    jobs[1].pop("preemptionPolicy")
    _, idx, cols = _cols(scenario([pool()], jobs, scheduler={"preemption": False}))
    assert cols["queue_wait_s"][idx["urgent"]] == pytest.approx(900)


def test_preempting_one_pod_of_a_gang_evicts_the_whole_gang() -> None:
    """A distributed job cannot lose one worker and go on: the whole gang is evicted and requeued."""
    resolved = scenario(
        [pool(count=2)],
        [
            job("train", gpus=8, pods=2, gang=True, runtime=3000),
            job("urgent", gpus=8, priority=100, submit_s=100, runtime=100),
        ],
    )
    _, idx, cols = _cols(resolved)
    assert cols["evictions"][idx["train"]] == 2
    assert cols["lost_gpu_hours"][idx["train"]] == pytest.approx(2 * 8 * 100 / 3600)
    assert cols["state"][idx["train"]] == "completed"


def _victim(pod: int, priority: int, gpus: int, start: int = 0) -> Victim:
    return Victim(pod, priority, start, np.asarray([0, 0, 0, 1, gpus], dtype=np.int64))


def test_select_victims_reprieves_most_important_first() -> None:
    """SelectVictimsOnNode: remove all lower-priority pods, add back the most important while it fits."""
    from fleetlab.model.scheduler import SchedulerConfig
    from fleetlab.placement.framework import PodSpec
    from fleetlab.placement.profiles import resolve_profile
    from fleetlab.placement.state import ClusterState, NodeInfo

    state = ClusterState([NodeInfo("n", 0, {}, (), {"pods": 110, "nvidia.com/gpu": 8})])
    state.set_ready(0)
    pod = Scheduler(state, resolve_profile(SchedulerConfig())).compile(
        PodSpec(requests=(("nvidia.com/gpu", 2),))
    )
    on_node = [_victim(1, 1, 2), _victim(2, 2, 2), _victim(3, 3, 4)]
    free = np.zeros(len(state.resource_names), dtype=np.int64)
    free[state.pods_col] = 107
    victims = select_victims_on_node(free, pod, priority=5, pods_on_node=on_node)
    assert [v.pod for v in victims or []] == [1]
    assert select_victims_on_node(free, pod, priority=1, pods_on_node=on_node) is None


def test_pick_one_node_order() -> None:
    """pickOneNodeForPreemption: lowest top victim priority, then smallest sum, then fewest victims."""
    a = [_victim(1, 5, 1), _victim(2, 1, 1)]
    b = [_victim(3, 3, 1)]
    c = [_victim(4, 3, 1), _victim(5, 1, 1)]
    assert pick_one_node({0: a, 1: b, 2: c}, [0, 1, 2]) == 1
    assert pick_one_node({2: c, 1: [_victim(6, 3, 1), _victim(7, 2, 1)]}, [2, 1]) == 2


@pytest.mark.parametrize(
    ("work", "interval", "write", "wall"),
    [(1000, None, 50, 1000), (1000, 300, 50, 1150), (900, 300, 50, 1000), (1, 300, 50, 1)],
)
def test_wall_needed(work: int, interval: int | None, write: int, wall: int) -> None:
    """A checkpoint after every full interval except at the very end."""
    assert wall_needed(work, interval, write) == wall


@pytest.mark.parametrize(
    ("elapsed", "interval", "write", "saved", "lost"),
    [(1000, None, 0, 0, 1000), (700, 300, 50, 600, 0), (1500, 600, 30, 1200, 240), (620, 600, 30, 0, 600)],
)
def test_progress_at(elapsed: int, interval: int | None, write: int, saved: int, lost: int) -> None:
    """Work up to the last completed checkpoint survives an eviction; a checkpoint being written is lost."""
    assert progress_at(elapsed, interval, write) == (saved, lost)


def test_priority_classes_set_priority_and_policy() -> None:
    """PriorityClass: a named class sets the pod priority; the globalDefault class applies to the rest;
    preemptionPolicy Never on the class stops its pods from preempting (scheduling.k8s.io/v1)."""
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "urgent"},
            "value": 1000,
        },
        {"metadata": {"name": "polite"}, "value": 1000, "preemptionPolicy": "Never"},
        {"metadata": {"name": "batch"}, "value": 10, "globalDefault": True},
    ]
    jobs = [
        job("low", gpus=8, runtime=1000),
        job("urgent", gpus=8, submit_s=100, runtime=10, priorityClassName="urgent"),
    ]
    resolved = scenario([pool()], jobs, priority_classes=classes)
    assert {j.id: j.priority for j in resolved.jobs} == {"low": 10, "urgent": 1000}
    _, idx, cols = _cols(resolved)
    assert cols["queue_wait_s"][idx["urgent"]] == 0
    jobs[1]["priorityClassName"] = "polite"
    _, idx, cols = _cols(scenario([pool()], jobs, priority_classes=classes))
    assert cols["queue_wait_s"][idx["urgent"]] == pytest.approx(900)
    jobs[1]["priorityClassName"] = "missing"
    with pytest.raises(Exception, match="unknown priorityClassName missing"):
        scenario([pool()], jobs, priority_classes=classes)
