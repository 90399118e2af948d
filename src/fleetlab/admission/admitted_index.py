"""Admitted workloads per ClusterQueue, kept up to date as workloads are admitted and released (upstream
Kueue's cache keeps each ClusterQueue's admitted workloads and the scheduler's snapshot reads them; here
the index is updated in place instead of copied per cycle).

For every (ClusterQueue, FlavorResource) the workloads using it (usage above 0) are kept sorted by
*candidate key* ``(priority, -admitted_ms, id)``: the order in which classic preemption takes victims of
one kind (``candidate_order_key`` without its evicted and other-queue parts). A preemption policy allows
a prefix of that order (``LowerPriority``: priorities below the preemptor's), so candidate search reads
the workloads it may take, lazily, without building an object per admitted workload. Per ClusterQueue and
priority the index also sums the workloads' usage: a bound on what evicting them could free.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping
from typing import Generic, Protocol, TypeVar

from fleetlab.admission.tree import FlavorResource

__all__ = ["AdmittedIndex", "CandidateKey", "Indexed"]

#: ``(priority, -admitted_ms, id)``: ascending is classic preemption's order within one kind of victim.
CandidateKey = tuple[int, int, str]


class Indexed(Protocol):
    """What the index reads of an admitted workload (the manager's tracked entry)."""

    @property
    def cluster_queue(self) -> str: ...
    @property
    def usage(self) -> Mapping[FlavorResource, int]: ...


E = TypeVar("E", bound=Indexed)


class AdmittedIndex(Generic[E]):
    """Per ClusterQueue: admitted entries by id, and per FlavorResource their candidate keys, sorted."""

    def __init__(self, cluster_queues: list[str]) -> None:
        self.by_id: dict[str, dict[str, E]] = {name: {} for name in cluster_queues}
        self._keys: dict[str, dict[FlavorResource, list[CandidateKey]]] = {n: {} for n in cluster_queues}
        self._key_of: dict[str, CandidateKey] = {}
        self._totals: dict[str, dict[int, dict[FlavorResource, int]]] = {name: {} for name in cluster_queues}

    def add(self, workload_id: str, entry: E, priority: int, admitted_ms: int) -> None:
        """Index an entry just admitted (its usage is final until it is released)."""
        key = (priority, -admitted_ms, workload_id)
        self._key_of[workload_id] = key
        self.by_id[entry.cluster_queue][workload_id] = entry
        lists = self._keys[entry.cluster_queue]
        totals = self._totals[entry.cluster_queue].setdefault(priority, {})
        for fr, value in entry.usage.items():
            totals[fr] = totals.get(fr, 0) + value
            if value > 0:
                insort(lists.setdefault(fr, []), key)

    def remove(self, workload_id: str, entry: E) -> None:
        """Forget an entry whose quota was released (finished or evicted)."""
        if self.by_id[entry.cluster_queue].pop(workload_id, None) is None:
            return
        key = self._key_of.pop(workload_id)
        lists = self._keys[entry.cluster_queue]
        totals = self._totals[entry.cluster_queue][key[0]]
        for fr, value in entry.usage.items():
            totals[fr] -= value
            if value > 0:
                keys = lists[fr]
                del keys[bisect_left(keys, key)]

    def keys(self, cluster_queue: str, fr: FlavorResource) -> list[CandidateKey]:
        """Candidate keys of the workloads of ``cluster_queue`` using ``fr``, ascending (read only)."""
        return self._keys[cluster_queue].get(fr, _EMPTY)

    def usage_up_to(self, cluster_queue: str, fr: FlavorResource, priority: int) -> int:
        """Total usage of ``fr`` by the admitted workloads of ``cluster_queue`` of priority ``priority`` or
        lower."""
        return sum(totals.get(fr, 0) for p, totals in self._totals[cluster_queue].items() if p <= priority)

    def key(self, workload_id: str) -> CandidateKey | None:
        """The candidate key of an admitted workload (None if not admitted)."""
        return self._key_of.get(workload_id)


_EMPTY: list[CandidateKey] = []
