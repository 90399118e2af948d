"""The scheduling queue: pending pods ordered as PrioritySort orders them, grouped by pod spec.

Groups are pod-spec ids: pods with the same spec have the same feasibility, so once one fails in a cycle
the rest of its group is skipped, and the group stays skipped until something is released (the
cluster's release generation moves).
This keeps a cycle's cost proportional to binds plus distinct pending specs, not to pending pods.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

QueueKey = tuple[int, int, int]  # (-priority, submit_ms, pod index)


class SchedulingQueue:
    """activeQ + unschedulable pool in one: a heap per spec group and a failure memo per group."""

    def __init__(self) -> None:
        self._groups: dict[int, list[QueueKey]] = {}
        self._failed_at: dict[int, int] = {}
        self._size = 0

    def add(self, group: int, priority: int, submit_ms: int, pod: int) -> None:
        """Enqueue a pod; a group that already failed stays skipped until a release (same spec, same fate)."""
        heap = self._groups.get(group)
        if heap is None:
            heap = []
            self._groups[group] = heap
        heapq.heappush(heap, (-priority, submit_ms, pod))
        self._size += 1

    def __len__(self) -> int:
        return self._size

    def cycle(self, generation: int, try_place: Callable[[int, int], bool]) -> int:
        """Offer pods in queue order until every group has bound or failed; returns pods bound."""
        heads: list[tuple[QueueKey, int, int]] = []
        failed_at = self._failed_at
        for order, (group, heap) in enumerate(self._groups.items()):
            if heap and failed_at.get(group) != generation:
                heads.append((heap[0], order, group))
        if len(heads) == 1:  # the usual cycle: one group to offer (the others, if any, failed already)
            key, _, group = heads[0]
            return self._cycle_one(group, key, generation, try_place)
        heapq.heapify(heads)
        bound = 0
        while heads:
            key, order, group = heapq.heappop(heads)
            current = self._groups.get(group)
            if not current:
                continue  # the group was emptied (its pods were taken out) during this cycle
            if current[0] != key:
                # Placing another pod requeued pods here (evictions): re-rank this group by its real head.
                heapq.heappush(heads, (current[0], order, group))
                continue
            if try_place(group, key[2]):
                bound += 1
                head = self._take_placed(group, key)
                if head is not None:
                    heapq.heappush(heads, (head, order, group))
            else:
                self._failed_at[group] = generation
        return bound

    def _cycle_one(
        self, group: int, key: QueueKey, generation: int, try_place: Callable[[int, int], bool]
    ) -> int:
        """``cycle`` when one group is to be offered: the same offers in the same order, without the heap
        of group heads (groups that placing creates or requeues into wait for the next cycle, as there)."""
        bound = 0
        while try_place(group, key[2]):
            bound += 1
            head = self._take_placed(group, key)
            if head is None:
                return bound
            key = head
        self._failed_at[group] = generation
        return bound

    def _take_placed(self, group: int, key: QueueKey) -> QueueKey | None:
        """Take a just-bound entry out of its group; the group's new head, or None when the group is now
        empty (and dropped) or the placement itself took the entry out (its job was evicted meanwhile)."""
        entries = self._groups.get(group)
        if entries and entries[0] == key:
            heapq.heappop(entries)
        elif entries and key in entries:  # pods were requeued ahead of this one while placing it
            entries.remove(key)
            heapq.heapify(entries)
        else:
            return None
        self._size -= 1
        if entries:
            return entries[0]
        del self._groups[group]
        return None

    def entries(self) -> list[tuple[QueueKey, int]]:
        """Every waiting entry with its group, unordered: a queueing discipline orders them its own way."""
        return [(key, group) for group, heap in self._groups.items() for key in heap]

    def take(self, group: int, key: QueueKey) -> None:
        """Take out an entry a queueing discipline just placed."""
        self._take_placed(group, key)

    def remove(self, group: int, pods: set[int]) -> None:
        """Take pods out of the queue (their job was evicted from its quota and waits again)."""
        heap = self._groups.get(group)
        if not heap:
            return
        kept = [k for k in heap if k[2] not in pods]
        self._size -= len(heap) - len(kept)
        heapq.heapify(kept)
        if kept:
            self._groups[group] = kept
        else:
            del self._groups[group]

    def pending_heads(self, limit: int) -> dict[int, list[int]]:
        """The first ``limit`` waiting pods of every group, in queue order (cheap with long queues)."""
        return {g: [k[2] for k in heapq.nsmallest(limit, h)] for g, h in self._groups.items() if h}

    def pending(self) -> dict[int, list[int]]:
        """Pods still waiting, by group."""
        return {g: [k[2] for k in sorted(h)] for g, h in self._groups.items() if h}
