"""SelectVictimsOnNode and pickOneNodeForPreemption as Python integers on the requested columns, against
the numpy definitions they replace (whole request vectors, ``order.index``), on a node worked out by hand
and on random nodes.

Upstream: kubernetes pkg/scheduler/framework/preemption/preemption.go (SelectVictimsOnNode's reprieve
order, pickOneNodeForPreemption's criteria); ``tests/test_gangs_preemption.py`` holds the semantic cases.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.preemption import INT32_SPAN, Victim, pick_one_node, select_victims_on_node
from fleetlab.placement.profiles import resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, IntArray, NodeInfo

CAPACITY = {"cpu": 64_000, "memory": 512 * 2**30, "pods": 110, "nvidia.com/gpu": 8}


def numpy_victims(
    free: IntArray, pod: CompiledPod, priority: int, on_node: Sequence[Victim]
) -> list[Victim] | None:
    """The definition replaced: whole vectors, the fit read on the requested columns."""
    cols = pod.request_cols

    def fits(room: IntArray) -> bool:
        return bool((room[cols] >= pod.request[cols]).all())

    lower = [v for v in on_node if v.priority < priority]
    if not lower:
        return None
    room = free + sum((v.request for v in lower), np.zeros_like(free))
    if not fits(room):
        return None
    lower.sort(key=lambda v: (-v.priority, v.start_ms, v.pod))
    victims: list[Victim] = []
    for v in lower:
        trial = room - v.request
        if fits(trial):
            room = trial
        else:
            victims.append(v)
    return victims


def index_pick(candidates: dict[int, list[Victim]], order: Sequence[int]) -> int:
    """The pick replaced: the scan position by ``order.index``."""

    def key(node: int) -> tuple[int, int, int, int, int]:
        victims = candidates[node]
        top = max(v.priority for v in victims)
        total = sum(v.priority + INT32_SPAN for v in victims)
        earliest_top = min(v.start_ms for v in victims if v.priority == top)
        return (top, total, len(victims), -earliest_top, order.index(node))

    return min(candidates, key=key)


def compiled_pod(state: ClusterState, cpu: int, gpus: int) -> CompiledPod:
    requests = (("cpu", cpu), ("nvidia.com/gpu", gpus)) if gpus else (("cpu", cpu),)
    return Scheduler(state, resolve_profile(SchedulerConfig())).compile(PodSpec(requests=requests))


def a_state() -> ClusterState:
    state = ClusterState([NodeInfo("n", 0, {}, (), CAPACITY)])
    state.set_ready(0)
    return state


def test_a_node_worked_by_hand() -> None:
    """Free: 1 GPU, 4,000 m CPU, one pod slot. The pod asks 4 GPUs and 6,000 m. Lower pods (priority, start, GPUs, m):
    a (1, 0, 2, 1000), b (2, 5, 1, 3000), c (2, 1, 2, 500). All removed: 6 GPUs, 8,500 m free. Reprieve
    in order c (priority 2, start 1), b (2, 5), a (1): keeping c leaves 4 GPUs, 8,000 m: fits, c stays;
    keeping b then leaves 3 GPUs: no, b goes; keeping a leaves 2 GPUs: no, a goes. Victims b, a."""
    state = a_state()
    pod = compiled_pod(state, 6000, 4)
    width = len(state.resource_names)
    cpu, gpu = state.resource_names.index("cpu"), state.gpu_col

    def request(gpus: int, milli: int) -> IntArray:
        row = np.zeros(width, dtype=np.int64)
        row[gpu], row[cpu] = gpus, milli
        return row

    free = request(1, 4000)
    free[state.pods_col] = 1  # room for one more pod (the pod counts against it)
    on_node = [
        Victim(1, 1, 0, request(2, 1000)),
        Victim(2, 2, 5, request(1, 3000)),
        Victim(3, 2, 1, request(2, 500)),
    ]
    victims = select_victims_on_node(free, pod, 3, on_node)
    assert [v.pod for v in victims or []] == [2, 1]
    assert numpy_victims(free, pod, 3, on_node) == victims
    assert select_victims_on_node(free, pod, 2, on_node) is None  # only a is lower: 3 GPUs at most


@pytest.mark.parametrize("seed", range(8))
def test_random_nodes_choose_the_same_victims_and_node(seed: int) -> None:
    rng = random.Random(seed)
    state = a_state()
    width = len(state.resource_names)
    pods = [
        compiled_pod(state, rng.choice((0, 500, 4000, 16000)), rng.choice((0, 1, 2, 4, 8))) for _ in range(6)
    ]
    checked = 0
    for _ in range(400):
        pod = rng.choice(pods)
        priority = rng.choice((1, 5, 10, 100))
        candidates: dict[int, list[Victim]] = {}
        for node in range(rng.randint(1, 6)):
            free = np.asarray(
                [rng.randint(0, 3) * rng.choice((1, 1000, 2**30)) for _ in range(width)], dtype=np.int64
            )
            on_node = []
            for p in range(rng.randint(0, 6)):
                request = np.asarray(
                    [rng.randint(0, 4) * rng.choice((1, 1000, 2**30)) for _ in range(width)], dtype=np.int64
                )
                start = rng.choice((0, 10, 20))
                on_node.append(Victim(node * 10 + p, rng.choice((1, 5, 10, 100)), start, request))
            new = select_victims_on_node(free, pod, priority, on_node)
            assert new == numpy_victims(free, pod, priority, on_node)
            if new:
                candidates[node] = new
                checked += 1
        if candidates:
            order = list(candidates)
            rng.shuffle(order)
            assert pick_one_node(candidates, order) == index_pick(candidates, order)
    assert checked > 50  # the random nodes do reach the reprieve loop
