"""Nominations remembered per pod-set shape while the quota state they read is unchanged.

A BestEffortFIFO ClusterQueue with a long queue tries one head per cycle; after a release in its cohort
tree every set-aside head is tried again, one per cycle. Between admissions, releases and new preemption
requests the tree's usage, the admitted workloads and the requested victims do not change, so heads of
the same shape (the ClusterQueue, each podset's count, requests, tolerations and node constraints) and the
same priority get the same flavor assignment and the same preemption targets. Preemption policies read a
preemptor's timestamps only under ``withinClusterQueue: LowerOrNewerEqualPriority``, so only there are
they part of the key.

The state (given by the manager) is the quota tree's version (bumped by every change of usage, so also
one made outside the manager; a search that removes and re-adds usage restores it), the cohort tree's
generation (bumped on every admission, release and reserve: the admitted workloads) and the version of
the set of requested victims. Entries of an older state are dropped at once, so the cache holds at most
one state per cohort tree.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

from fleetlab.admission.flavors import PodSetRequest

__all__ = ["NominationCache", "podset_key", "shape_key"]

V = TypeVar("V")


def podset_key(ps: PodSetRequest) -> Hashable:
    """What flavor assignment reads of one podset, hashable."""
    return (
        ps.name,
        ps.count,
        tuple(sorted(ps.requests.items())),
        ps.tolerations,
        ps.node_selector,
        ps.required_terms,
    )


def shape_key(podsets: Sequence[PodSetRequest]) -> Hashable:
    """What flavor assignment reads of a workload's podsets, hashable."""
    return tuple(podset_key(ps) for ps in podsets)


class NominationCache(Generic[V]):
    """Per cohort tree: the state the entries were computed in, and the entries by key."""

    def __init__(self) -> None:
        self._trees: dict[int, tuple[Hashable, dict[Hashable, V]]] = {}
        #: Per podset (by identity, kept alive here): its :func:`podset_key`. Submitters share one podset
        #: per shape, so this stays small; it is cleared when it grows large all the same.
        self._podsets: dict[int, tuple[PodSetRequest, Hashable]] = {}

    def shape(self, podsets: Sequence[PodSetRequest]) -> Hashable:
        """:func:`shape_key` of ``podsets``, each podset's part computed once per podset object."""
        keys = []
        for ps in podsets:
            held = self._podsets.get(id(ps))
            if held is None or held[0] is not ps:
                if len(self._podsets) >= 65536:
                    self._podsets.clear()
                held = self._podsets[id(ps)] = (ps, podset_key(ps))
            keys.append(held[1])
        return tuple(keys)

    def entries(self, tree: int, state: Hashable) -> dict[Hashable, V]:
        """The entries of cohort tree ``tree`` (an id) valid in ``state``; emptied when the state moved."""
        held = self._trees.get(tree)
        if held is None or held[0] != state:
            held = self._trees[tree] = (state, {})
        return held[1]
