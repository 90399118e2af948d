"""A gang's failed trial remembered and written again, not rerun, while nothing it reads has changed.

A gang admitted to a zonal flavor (its nodeLabels pin it to one zone) waits for whole free nodes there and
is offered again whenever the release generation moves, as kube-scheduler offers it after every release,
also after a release in the other zone, where it cannot fit. The offer cannot simply be skipped: a gang
that fits partly trial-binds its pods one by one and rolls them back, each rollback a release that moves
the generation (later cycles and features read it), and a tied choice draws from the run's random stream.

A trial is a function of what it reads: the pod spec and gang (the queue group), the nodes passing the
static filters (the topology generation), those nodes' requested and non-zero requested rows (fit and
per-node scores), the images (ImageLocality's global score) and, only where nodes tie, the random stream.
So a failed trial that drew nothing is kept with a fingerprint of the rest and the number of pods it
trial-bound; while the fingerprint holds, a retry fails with the same effect on the state: the release
generation moves by that number. The change log is left alone: the nodes the trial would log hold, after
its rollback, the usage they held, and a cache catching them up computes the same rows. Groups whose trial
reads anything else (pod labels, GPU shares, claims, a hook that makes room, another global scorer) are
always tried, and so are groups that may use every ready node: any release can help them, so the
fingerprint would rarely hold and would cost more than it saves (the workloads without Kueue).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, ClusterState, IntArray
from fleetlab.sim.spec_table import GroupPlan

#: Global scorers whose scores read only static node facts (taints, labels), the images and the ready
#: count: covered by the fingerprint.
KNOWN_GLOBAL_SCORERS = frozenset({"TaintToleration", "NodeAffinity", "ImageLocality"})
#: Change-log entries a retry scans for the group's nodes before it compares the rows themselves.
SCAN_LIMIT = 64

Fingerprint = tuple[int, int, bytes]
#: ``Engine._place_gang``: plan and bind a gang entry (on the allowed nodes only, when given).
PlaceGang = Callable[[int, int, BoolArray | None], bool]


@dataclass(slots=True)
class FailedTrial:
    """A group's last failed trial: what it read, how many pods it trial-bound, and where in the change
    log the rows were last seen as they were (no node of the group's changed before ``log_pos``)."""

    fingerprint: Fingerprint
    released: int
    members: list[bool]
    log_pos: int
    cleared: int


class GangRetry:
    """Per gang group, its last failed trial (dropped when it is placed or its trial drew)."""

    #: Off: every offer is tried (for the tests that run a scenario both ways).
    enabled: ClassVar[bool] = True

    def __init__(
        self, state: ClusterState, plans: Sequence[GroupPlan], place_gang: PlaceGang, rooms: Sequence[object]
    ) -> None:
        self.state = state
        #: Per queue group, the engine's plan (compiled pod spec, scheduler, placer, gang size, ...).
        self._plans = plans
        self._place_gang = place_gang
        #: The ``make_gang_room`` subscribers: a group is replayable only while there are none.
        self._rooms = rooms
        self._failed: dict[int, FailedTrial] = {}
        self._replayable: dict[int, bool] = {}
        #: Per group, its static filters' nodes when last read, how to read their rows (a slice or them)
        #: and, per node, whether it is one of them.
        self._rows: dict[int, tuple[IntArray, slice | IntArray, list[bool]]] = {}
        #: Offers answered from a failed trial (read by tests and benchmarks, in no output).
        self.replayed = 0

    def place(self, group: int, pod: int) -> bool:
        """``Engine._place_gang`` for a queue offer, or its failure written again."""
        state, place_gang = self.state, self._place_gang
        compiled, scheduler, _, _, _, _ = self._plans[group]
        failed = self._failed.get(group)
        key: Fingerprint | None = None
        if failed is not None and (
            self._unchanged(failed)
            or (key := self._fingerprint(group, compiled, scheduler)) == failed.fingerprint
        ):
            failed.log_pos, failed.cleared = len(state.changes), state.changes_cleared
            state.release_generation += failed.released
            self.replayed += 1
            return False
        if (
            not self.enabled
            or not self._can_replay(group, compiled, scheduler)
            or self._uses_every_node(compiled, scheduler)
        ):
            return place_gang(group, pod, None)
        if scheduler.fit_count(compiled):
            rng = scheduler.rng.bit_generator
            draws, generation, start = rng.state, state.release_generation, len(state.changes)
            if place_gang(group, pod, None):
                self._failed.pop(group, None)
                return True
            released = state.release_generation - generation
            written = state.changes[start:]
            if (
                len(written) != 2 * released
                or written[:released] != written[released:][::-1]
                or rng.state != draws
            ):
                self._failed.pop(group, None)  # the log cut short or a tie drawn: nothing to write again
                return False
        else:
            # No node fits even one pod: the gang's plan stops at this same test, binding and drawing
            # nothing (GangPlacer.plan), and no hook makes room (a replayable group has none).
            released = 0
        # The trial rolled every bind back: the rows it read are the rows now.
        key = key or self._fingerprint(group, compiled, scheduler)
        members = self._rows[group][2]
        self._failed[group] = FailedTrial(key, released, members, len(state.changes), state.changes_cleared)
        return False

    def _unchanged(self, failed: FailedTrial) -> bool:
        """No node of the group's logged a change since the rows were last seen, nor did the topology or
        the images move (a cheap test; the rows themselves are compared when it cannot tell)."""
        state = self.state
        log = state.changes
        key = failed.fingerprint
        if (
            key[0] != state.topology_generation
            or key[1] != state.image_generation
            or failed.cleared != state.changes_cleared
            or len(log) - failed.log_pos > SCAN_LIMIT
        ):
            return False
        members = failed.members
        return not any(members[node] for node in log[failed.log_pos :])

    def _uses_every_node(self, pod: CompiledPod, scheduler: Scheduler) -> bool:
        """Whether every ready node passes the pod's static filters (no zone or selector narrows them)."""
        scheduler.static_mask(pod)
        return len(pod.cache["static_nodes"]) >= self.state.ready_count

    def _fingerprint(self, group: int, pod: CompiledPod, scheduler: Scheduler) -> Fingerprint:
        """Everything a replayable trial reads that can change: the static filters' nodes (the topology
        generation), the images, and those nodes' requested and non-zero requested rows."""
        state = self.state
        mask = scheduler.static_mask(pod)
        nodes: IntArray = pod.cache["static_nodes"]
        rows = self._rows.get(group)
        if rows is None or rows[0] is not nodes:
            rows = (nodes, rows_at(nodes), mask.tolist())
            self._rows[group] = rows
        at = rows[1]
        return (
            state.topology_generation,
            state.image_generation,
            state.usage[at, : state.width + 2].tobytes(),  # requested and non-zero requested, side by side
        )

    def _can_replay(self, group: int, pod: CompiledPod, scheduler: Scheduler) -> bool:
        """Whether the group's trial reads nothing but the fingerprint (decided once per group)."""
        known = self._replayable.get(group)
        if known is None:
            spec, state = pod.spec, self.state
            known = (
                not self._rooms
                and spec.claims is None
                and not any(spec.gpu_share)
                and not spec.pod_dependent
                and not spec.topology_assignment
                and pod.label_set < 0
                and all(
                    p.name in KNOWN_GLOBAL_SCORERS or p.uniform_for(state, pod)
                    for p, _ in scheduler.global_scorers
                )
            )
            self._replayable[group] = known
        return known


def rows_at(nodes: IntArray) -> slice | IntArray:
    """Sorted node numbers as a slice where they step evenly (a zone's nodes, numbered together or
    alternating with another zone's): their rows are then read as a view, not gathered (a tenth of the
    cost for a zone of 600 nodes); otherwise the numbers themselves. Either reads the same rows in order."""
    count = len(nodes)
    if count == 0:
        return nodes
    first, last = int(nodes[0]), int(nodes[-1])
    step = int(nodes[1]) - first if count > 1 else 1
    if step <= 0 or last - first != step * (count - 1):
        return nodes
    if count > 2 and not bool((np.diff(nodes) == step).all()):
        return nodes
    return slice(first, last + 1, step)
