"""The scheduling queue: PrioritySort order, failure memo, and pods requeued during a cycle."""

from __future__ import annotations

import random

from fleetlab.sim.queue import SchedulingQueue


def test_priority_then_submit_order_across_groups() -> None:
    """PrioritySort: higher priority first, then earlier submit, across spec groups."""
    q = SchedulingQueue()
    q.add(1, priority=0, submit_ms=0, pod=10)
    q.add(2, priority=5, submit_ms=9, pod=20)
    q.add(1, priority=5, submit_ms=3, pod=11)
    seen: list[int] = []
    q.cycle(0, lambda g, p: seen.append(p) or True)
    assert seen == [11, 20, 10]
    assert len(q) == 0


def test_failed_group_is_skipped_until_a_release() -> None:
    """A group that failed is not offered again while the release generation is unchanged."""
    q = SchedulingQueue()
    q.add(1, 0, 0, 1)
    calls: list[int] = []
    q.cycle(7, lambda g, p: calls.append(p) or False)
    q.cycle(7, lambda g, p: calls.append(p) or False)
    assert calls == [1]
    q.cycle(8, lambda g, p: calls.append(p) or False)
    assert calls == [1, 1]


def test_pod_requeued_ahead_during_a_placement_is_kept_and_nothing_is_placed_twice() -> None:
    """Regression: an eviction during a placement requeues a pod ahead of the one being placed in the
    same group; the placed entry (not the new head) must leave the queue, and the requeued pod stays."""
    q = SchedulingQueue()
    q.add(3, priority=0, submit_ms=100, pod=573)
    placed: list[int] = []

    def place(group: int, pod: int) -> bool:
        placed.append(pod)
        if pod == 573 and 545 not in placed:
            q.add(3, priority=0, submit_ms=100, pod=545)  # evicted victim, sorts before 573
        return True

    q.cycle(0, place)
    assert sorted(placed) == [545, 573]
    assert len(placed) == len(set(placed))
    assert len(q) == 0


def test_single_group_cycle_offers_what_the_general_cycle_offers() -> None:
    """The one-group fast path makes the same offers, binds and failures as the heap of group heads: a
    second group whose only pod sorts after everything sends the same queue down the general path, and is
    offered last there."""

    def run(with_last_group: bool, seed: int) -> tuple[list[int], dict[int, list[int]]]:
        rng = random.Random(seed)
        q = SchedulingQueue()
        if with_last_group:
            q.add(9, -100, 0, 900)
        for pod in range(6):
            q.add(1, rng.randrange(3), rng.randrange(5), pod)
        offered: list[int] = []
        next_pod = 100

        def place(group: int, pod: int) -> bool:
            nonlocal next_pod
            offered.append(pod)
            if group == 9:
                return False
            action = rng.randrange(5)
            if action == 0:
                return False
            if action == 1:  # an eviction requeues a pod ahead of this one
                q.add(1, 5, 0, next_pod)
                next_pod += 1
            elif action == 2:  # its job was evicted meanwhile: the placement took the entry out
                q.remove(1, {pod})
            return True

        q.cycle(0, place)
        pending = q.pending()
        pending.pop(9, None)
        return offered, pending

    for seed in range(200):
        fast, general = run(False, seed), run(True, seed)
        assert general[0][-1] == 900
        assert fast == (general[0][:-1], general[1])
