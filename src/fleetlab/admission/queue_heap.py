"""One ClusterQueue's pending workloads for :mod:`fleetlab.admission.manager`: a heap ordered by priority,
then timestamp, then submission order, with lazy deletion, the set-aside (inadmissible) workloads and the
sticky head of a preemption under way."""

from __future__ import annotations

import heapq
from typing import Protocol

__all__ = ["ClusterQueueHeap"]


class _Queued(Protocol):
    def key(self) -> tuple[int, int, int, str]: ...


class ClusterQueueHeap:
    """One ClusterQueue's pending workloads: a heap with lazy deletion, plus the set-aside ones."""

    def __init__(self, name: str, strict: bool) -> None:
        self.name = name
        self.strict = strict
        self.heap: list[tuple[int, int, int, str]] = []
        self.queued: dict[str, tuple[int, int, int, str]] = {}
        self.inadmissible: dict[str, None] = {}
        self.blocked: tuple[str, int] | None = None  # (head id, tree generation) known not to change
        #: The workload whose preemptions are under way: it stays the head, even over higher-priority
        #: workloads requeued meanwhile, until a cycle has tried it again (upstream's sticky workload,
        #: which ends the reclaim/re-admit loop of kueue#6929 and kueue#6947).
        self.sticky: str | None = None

    def push(self, tracked: _Queued) -> None:
        """Queue (or re-queue) a workload; an older heap entry for it becomes stale. The key's last
        element is the workload id."""
        key = tracked.key()
        self.queued[key[3]] = key
        heapq.heappush(self.heap, key)

    def head(self) -> str | None:
        """The sticky workload if still queued, else the id at the head of the heap (dropping stale
        entries on the way)."""
        if self.sticky is not None:
            if self.sticky in self.queued:
                return self.sticky
            self.sticky = None
        while self.heap and self.queued.get(self.heap[0][3]) != self.heap[0]:
            heapq.heappop(self.heap)
        return self.heap[0][3] if self.heap else None

    def discard(self, workload_id: str) -> None:
        """Forget a workload (admitted, finished or set aside); its heap entry goes stale."""
        self.queued.pop(workload_id, None)
        self.inadmissible.pop(workload_id, None)
