"""The engine's event loop, kept apart from the lifecycle methods it calls.

One step per distinct time: jobs arriving now are submitted (or held by a feature), events due now are
handled in heap order, the features' ticks run (node lifecycle, autoscaler, services, Kueue), a
scheduling cycle runs when something could now fit, and the step is recorded. Unless a feature registered
optional event kinds (spot interruptions), the loop reads the event heap directly.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING

from fleetlab.sim.events import NODE_READY, POD_FINISH, PREP_DONE, EventQueue
from fleetlab.sim.guards import ProgressGuard
from fleetlab.sim.handle import EventHandler, StaleTest

if TYPE_CHECKING:
    from fleetlab.sim.engine import Engine

ProgressCallback = Callable[[int, int], None]


def run_events(sim: Engine, progress: ProgressCallback | None) -> None:
    """Step the engine until nothing is left to happen, the horizon passes or the run stalls."""
    book, events, queue, state = sim.book, sim.events, sim.queue, sim.state
    arrivals: list[int] = sim.arrival_ms.tolist()
    n_jobs = len(arrivals)
    next_job = 0
    last_generation = -1
    steps = 0
    guard = ProgressGuard(sim.work.longest_ms(), sim.horizon_ms is not None)
    total_work = n_jobs + book.n_pods
    finished = 0
    horizon = sim.horizon_ms
    on = sim.on
    arrive, ticks, merges = tuple(on.arrive), tuple(on.tick), tuple(on.next_time)
    discipline = on.scheduling_cycle  # a queueing discipline's cycle (None: the queue's own)
    handlers, stale_of = list(on.handlers), list(on.stale)
    #: A plain heap (no optional event kinds): peek and pop it directly.
    heap = events.heap if type(events) is EventQueue else None
    attempt_of = book.attempt_at
    enqueue, record = sim.enqueue, sim.end_step
    heappop = heapq.heappop
    pod_events = (PREP_DONE, POD_FINISH)  # a local tuple: not rebuilt from globals at every test
    prepared_each, finish_each = sim.prepared_each, sim.finish_each
    more_of = events.more  # an entry's pod events after its first (sim/events.py)
    while True:
        if heap is not None:
            while heap:  # drop stale events (see drop_stale_events)
                head = heap[0]
                kind = head[2]
                if kind in pod_events:
                    if head[4] == attempt_of[head[3]] or (
                        more_of and any_live(more_of.get(head[1]), attempt_of)
                    ):
                        break
                    heappop(heap)
                    events.taken(head[1])
                    continue
                if (stale := stale_of[kind]) is None or not stale(head[3], head[4]):
                    break
                heappop(heap)
            t_event = heap[0][0] if heap else None
        else:
            drop_stale_events(sim, stale_of)
            t_event = events.peek_time()
        t_job = arrivals[next_job] if next_job < n_jobs else None
        for merge in merges:  # the features' own timers (node lifecycle, services)
            t_event = merge(t_event, t_job)
        if t_event is None:
            if t_job is None:
                break
            t = t_job
        else:
            t = t_event if t_job is None or t_event < t_job else t_job
        if horizon is not None and t > horizon:
            break
        sim.stall_warning = sim.stall_warning or guard.check(
            t, sim.now, steps == 0, sim.last_completion_ms, t == t_job
        )
        if sim.stall_warning:
            break  # nothing can make progress any more (see sim/guards.py and the Kueue bridge)
        if t < sim.now:
            raise RuntimeError(f"internal error: an event at {t} ms, after the clock reached {sim.now}")
        sim.now = t
        submitted = False
        while next_job < n_jobs and arrivals[next_job] == t:
            for hold in arrive:
                if hold(next_job, t):
                    break  # held by a feature (Kueue, until it admits the job)
            else:
                enqueue(next_job)
            next_job += 1
            sim.submissions_left -= 1
            submitted = True
        if heap is not None:
            while heap and heap[0][0] == t:
                _, seq, kind, index, attempt = heappop(heap)
                if kind in pod_events:
                    if seq == events.open_seq:  # events.taken(seq), in line
                        events.open_seq = -1
                    more = more_of.pop(seq, None) if more_of else None
                    # The entry's pods in push order, each unless evicted since its event was pushed.
                    pods = (index,) if more is None else [index, *more[::2]]
                    attempts = (attempt,) if more is None else [attempt, *more[1::2]]
                    if kind == POD_FINISH:
                        finished += finish_each(pods, attempts)
                    else:
                        prepared_each(pods, attempts)
                else:
                    finished += _other_event(sim, handlers, kind, index, attempt)
        else:
            while events.peek_time() == t:
                _, kind, index, attempt = events.pop()
                finished += _other_event(sim, handlers, kind, index, attempt)
        for tick in ticks:
            tick(t)
        submitted = submitted or sim.queue_changed
        sim.queue_changed = False
        if len(queue) and (submitted or state.release_generation != last_generation):
            last_generation = state.release_generation
            if discipline is None:
                queue.cycle(last_generation, sim.try_place)
            else:
                discipline(last_generation)
        record()
        steps += 1
        if progress is not None and steps % 4096 == 0:
            progress(next_job + finished, total_work)
    if progress is not None:
        progress(total_work, total_work)


def any_live(more: list[int] | None, attempt_of: memoryview[int]) -> bool:
    """Whether any of an entry's (pod, attempt) pairs after its first is still the pod's attempt."""
    if more is None:
        return False
    return any(more[k + 1] == attempt_of[more[k]] for k in range(0, len(more), 2))


def drop_stale_events(sim: Engine, stale_of: list[StaleTest | None]) -> None:
    """Pop events that can no longer do anything (a re-timed or evicted pod's old finish or prep, a
    feature's event its stale test rejects: the timeout of an admission that was replaced), so the clock,
    and with it the run's end and every node bill, moves only for live events."""
    events, book = sim.events, sim.book
    while (head := events.peek()) is not None:
        _, kind, index, attempt = head
        if kind in (PREP_DONE, POD_FINISH):
            stale = attempt != book.attempt_at[index]
        else:
            test = stale_of[kind]
            stale = test is not None and test(index, attempt)
        if not stale:
            return
        events.pop()


def _other_event(
    sim: Engine, handlers: list[EventHandler | None], kind: int, index: int, attempt: int
) -> int:
    """Handle one event; returns 1 when a pod finished."""
    if kind == NODE_READY:
        sim.booting -= 1
        sim.node_ready(index)
        return 0
    if kind > POD_FINISH:  # a feature's own kind
        handler = handlers[kind]
        assert handler is not None
        handler(index, attempt)
        return 0
    if attempt != sim.book.attempt_at[index]:
        return 0  # the pod was evicted since this event was scheduled
    if kind == PREP_DONE:
        sim.prepared(index)
        return 0
    sim.finish(index)
    return 1
