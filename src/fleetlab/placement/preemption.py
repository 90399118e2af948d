"""kube-scheduler's DefaultPreemption PostFilter: which lower-priority pods to evict, on which node.

Upstream: pkg/scheduler/framework/preemption/preemption.go and plugins/defaultpreemption (v1.35 era).
Only nodes that failed the resource filter (Unschedulable, not UnschedulableAndUnresolvable) are
candidates. On each, every lower-priority pod is removed; if the pod then fits, victims are reprieved
from the most important down (higher priority, then earlier start) while it still fits. Among candidate
nodes the choice is: lowest highest-victim priority, smallest priority sum, fewest victims, latest
earliest start of the highest-priority victims, then scan order. There are no PodDisruptionBudgets in
the model, so the PDB criteria never separate nodes. The scan starts at a seeded random offset and stops
after max(10 % of nodes, 100) candidates, as upstream's candidate budget does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import add, ge, sub

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import IntArray

MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
INT32_SPAN = 2**31


@dataclass(frozen=True)
class Victim:
    """A running pod that may be evicted: its id, priority, start time and request vector."""

    pod: int
    priority: int
    start_ms: int
    request: IntArray


@dataclass(frozen=True)
class PreemptionPlan:
    """The node chosen for the preemptor and the pods to evict there."""

    node: int
    victims: tuple[int, ...]


def select_victims_on_node(
    free: IntArray, pod: CompiledPod, priority: int, pods_on_node: Sequence[Victim]
) -> list[Victim] | None:
    """SelectVictimsOnNode: the minimal set of lower-priority pods whose removal lets ``pod`` fit."""
    cols = pod.request_cols
    need = pod.request[cols].tolist()
    return _victims_on_columns(free[cols].tolist(), need, _RequestParts(cols), priority, pods_on_node)


class _RequestParts:
    """Victims' requests on the preemptor's requested columns, as Python integers, once per request array
    (the pods of one spec share it). The array is kept beside its part, so its ``id`` stays its own."""

    def __init__(self, cols: IntArray) -> None:
        self.cols = cols
        self.parts: dict[int, tuple[IntArray, list[int]]] = {}

    def of(self, request: IntArray) -> list[int]:
        known = self.parts.get(id(request))
        if known is None:
            known = self.parts[id(request)] = (request, request[self.cols].tolist())
        return known[1]


def _victims_on_columns(
    room: list[int], need: list[int], parts_of: _RequestParts, priority: int, pods_on_node: Sequence[Victim]
) -> list[Victim] | None:
    """``select_victims_on_node`` on the pod's requested columns only (the only ones its fit reads), as
    Python integers: a dry run tries a hundred nodes or more, each with a few pods, and a numpy operation
    on a handful of values costs several times the arithmetic."""
    lower = [v for v in pods_on_node if v.priority < priority]
    if not lower:
        return None
    of = parts_of.of
    parts = [of(v.request) for v in lower]
    for part in parts:
        room = list(map(add, room, part))  # (map over builtins: no Python frame per value)
    if not all(map(ge, room, need)):
        return None
    # MoreImportantPod: higher priority first, then earlier start.
    order = sorted(range(len(lower)), key=lambda i: (-lower[i].priority, lower[i].start_ms, lower[i].pod))
    victims: list[Victim] = []
    for i in order:
        trial = list(map(sub, room, parts[i]))
        if all(map(ge, trial, need)):
            room = trial  # reprieved: the pod stays
        else:
            victims.append(lower[i])
    return victims


def pick_one_node(candidates: dict[int, list[Victim]], order: Sequence[int]) -> int:
    """pickOneNodeForPreemption's criteria, in upstream's order (no PDBs in the model)."""

    position = {node: k for k, node in reversed(list(enumerate(order)))}  # first place, as order.index

    def key(node: int) -> tuple[int, int, int, int, int]:
        victims = candidates[node]
        top = max(v.priority for v in victims)
        total = sum(v.priority + INT32_SPAN for v in victims)
        earliest_top = min(v.start_ms for v in victims if v.priority == top)
        return (top, total, len(victims), -earliest_top, position[node])

    return min(candidates, key=key)


def find_preemption(
    scheduler: Scheduler,
    pod: CompiledPod,
    priority: int,
    pods_on: Callable[[int], Sequence[Victim]],
    reclaimable: IntArray,
) -> PreemptionPlan | None:
    """Dry-run DefaultPreemption for a pod that found no node; None when preemption cannot help.

    ``reclaimable`` holds, per node, the summed requests of pods with lower priority than the preemptor,
    so nodes where even evicting all of them would not help are skipped without looking at their pods.
    """
    state = scheduler.state
    static = scheduler.static_mask(pod)
    if pod.spec.pod_dependent:
        # Only nodes whose spread / anti-affinity verdict already passes: evicting to fix a skew or an
        # anti-affinity conflict (which upstream's dry run can find) is not modelled.
        static = static & scheduler.pod_filters_pass(pod)
    cols = pod.request_cols
    resolvable = (state.allocatable[:, cols] >= pod.request[cols]).all(axis=1)
    free = state.free[:, cols]
    helps = ((free + reclaimable[:, cols]) >= pod.request[cols]).all(axis=1)
    potential = np.flatnonzero(static & resolvable & helps & ~scheduler._incremental(pod).fits)
    if len(potential) == 0:
        return None
    n = state.n
    budget = min(n, max(n * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE))
    offset = int(scheduler.rng.integers(len(potential)))
    rolled = np.roll(potential, -offset)
    order: list[int] = rolled.tolist()
    rooms = free[rolled]  # a row made a list only when its node is scanned: the scan stops at the budget
    candidates: dict[int, list[Victim]] = {}
    scanned: list[int] = []
    need = pod.request[cols].tolist()
    parts_of = _RequestParts(cols)
    for k, node in enumerate(order):
        victims = _victims_on_columns(rooms[k].tolist(), need, parts_of, priority, pods_on(node))
        if victims:
            candidates[node] = victims
            scanned.append(node)
            if len(candidates) >= budget:
                break
    if not candidates:
        return None
    node = pick_one_node(candidates, scanned)
    return PreemptionPlan(node=node, victims=tuple(v.pod for v in candidates[node]))
