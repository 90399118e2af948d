"""Nodes that come and go during a run: requested (billed, booting), ready, failed (billed, down), removed.

Every pool gets a fixed row per node slot (``NodePool.node_slots``) so the placement arrays never grow;
a slot that is not present is simply not ready. The lifecycle keeps its own timer heap and tells the event
loop about it only while something else can still happen, so failure clocks never keep a finished run
alive. Pods on a node that goes away leave through the engine's ``evict_job_pods``, the same eviction path
as preemption (work since the last checkpoint lost, requeued, prep paid again).

Subscribes to ``next_time`` and ``tick`` (its timers) and ``run_end`` (the billed windows).
May change: node readiness, image caches and the booting count; evicts the pods of a node that goes away.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

import numpy as np

from fleetlab.sim.events import EventQueue, to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.lifecycle_result import LifecycleRecord, NodeWindow


class Timer(IntEnum):
    """Lifecycle timers; ``attempt`` carries the node's token so stale timers are dropped."""

    BOOTED = 0
    REPAIRED = 1
    SCAN = 2
    FAIL = 3
    PROVISION_TIMEOUT = 4


class TimerHeap(EventQueue):
    """(time_ms, kind, node, token) timers, earliest first; ``token`` is the node life a timer belongs to."""


class NodeLifecycle:
    """Owns which node slots exist, their billed windows, and the timers of boots, repairs and failures."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        n = sim.state.n
        #: The node exists (is billed): requested and not removed.
        self.present = sim.initially_present.copy()
        #: The node is registered and healthy: the scheduler's own ready flags.
        self.up = sim.state.ready
        self.down = np.zeros(n, dtype=bool)
        self.token = np.zeros(n, dtype=np.int64)
        self.timers = TimerHeap()  # boots, repairs, autoscaler scans: they can help pending pods
        self.fail_timers = TimerHeap()  # failures only matter while work is under way
        self._window: dict[int, list[int]] = {}
        self._down_at: dict[int, int] = {}
        self.record = LifecycleRecord()
        for present in np.flatnonzero(self.present).tolist():
            pool = sim.pools[sim.node_infos[present].pool]
            self._window[present] = [0, 0 if pool.initially_ready else to_ms(pool.boot_time_s)]
        #: Set by the failure model: a node came up at a time (its failure clock starts), a failure timer
        #: fired ``(node, token)``; set by the autoscaler: a node was not ready in time.
        self.on_up: Callable[[int, int], None] | None = None
        self.on_fail_timer: Callable[[int, int], None] | None = None
        self.on_provision_timeout: Callable[[int], None] | None = None
        #: The node whose pods ``evict_all`` is evicting because it goes away (-1: none), so Kueue TAS can
        #: tell a failed node's pods from other evictions.
        self.leaving = -1
        on = sim.on
        on.next_time.append(self.next_time)
        on.tick.append(self.step)
        on.run_end.append(self.finish)

    def ready_at(self, node: int) -> int:
        """When the present node became (or becomes) ready: its boot's end."""
        return self._window[node][1]

    # -- the event loop's hooks ----------------------------------------------------------------------
    def next_time(self, t_event: int | None, t_job: int | None) -> int | None:
        """The loop's next event time with lifecycle timers merged in. Failure timers count only while
        something else is still to happen (so they never keep a finished run alive), but then they count
        in time order: a failure due before the next boot or scan fires before it."""
        sim_next = min((t for t in (t_event, t_job) if t is not None), default=None)
        if sim_next is None and not len(self.sim.queue):
            return None
        upcoming = min((t for t in (sim_next, self.timers.peek_time()) if t is not None), default=None)
        if upcoming is None:
            return None
        fail = self.fail_timers.peek_time()
        return upcoming if fail is None else min(upcoming, fail)

    def has_timers(self) -> bool:
        """Whether a boot, repair or autoscaler timer is still to fire (failure clocks do not count)."""
        return self.timers.peek_time() is not None

    def step(self, now: int) -> None:
        """Fire the timers due now (before the autoscaler looks at the cluster and the cycle runs)."""
        for heap in (self.timers, self.fail_timers):
            while heap.peek_time() is not None and heap.peek_time() == now:
                _, kind, node, token = heap.pop()
                if kind == Timer.SCAN:
                    continue  # the autoscaler keeps its own due time
                if kind == Timer.FAIL:
                    if self.on_fail_timer is not None:
                        self.on_fail_timer(node, token)
                    continue
                if token != self.token[node]:
                    continue
                if kind == Timer.BOOTED:
                    self.sim.booting -= 1
                    self._window[node][1] = now
                    self._up(node)
                elif kind == Timer.REPAIRED:
                    self._close_down(node)
                    self._up(node)
                elif (
                    kind == Timer.PROVISION_TIMEOUT
                    and self.on_provision_timeout is not None
                    and self._booting(node)
                ):
                    self.on_provision_timeout(node)

    def _booting(self, node: int) -> bool:
        return bool(self.present[node] and not self.up[node] and not self.down[node])

    def _up(self, node: int) -> None:
        """The node registers with the scheduler; its failure clock starts."""
        self.sim.node_ready(node)
        if self.on_up is not None:
            self.on_up(node, self.sim.now)

    # -- transitions ---------------------------------------------------------------------------------
    def request(self, node: int, boot_ms: int) -> None:
        """Ask the cloud for a node in this slot: billed from now, ready after its boot."""
        sim = self.sim
        self.present[node] = True
        self.token[node] += 1
        self._window[node] = [sim.now, -1]
        sim.forget_images(node)
        sim.booting += 1
        self.timers.push(sim.now + boot_ms, Timer.BOOTED, node, int(self.token[node]))

    def remove(self, node: int) -> None:
        """Drain (evict every pod through the shared eviction path) and delete the node; billing stops."""
        self.evict_all(node)
        if self.up[node]:
            self.sim.node_down(node)
        elif not self.down[node]:
            self.sim.booting -= 1  # removed while booting
        self._close_down(node)
        self.present[node] = False
        self.token[node] += 1
        start, ready = self._window.pop(node)
        self.record.windows.append(NodeWindow(node, start, ready, self.sim.now))

    def fail(self, node: int, repair_ms: int) -> None:
        """The node breaks: its pods are evicted, it stays billed (bucket ``down``) until repaired."""
        self.evict_all(node)
        self.sim.node_down(node)
        self.down[node] = True
        self.token[node] += 1
        self._down_at[node] = self.sim.now
        self.sim.forget_images(node)
        self.timers.push(self.sim.now + repair_ms, Timer.REPAIRED, node, int(self.token[node]))

    def _close_down(self, node: int) -> None:
        if self.down[node]:
            self.down[node] = False
            self.record.down.append((node, self._down_at.pop(node), self.sim.now))

    def evict_all(self, node: int) -> None:
        """Evict every pod still on the node through the shared eviction path, in pod order."""
        sim = self.sim
        self.leaving = node
        for pod in sorted(sim.node_pods[node]):
            if sim.book.node[pod] == node and sim.book.end_ms[pod] < 0:
                sim.evict_job_pods(pod)
        self.leaving = -1

    # -- results -------------------------------------------------------------------------------------
    def finish(self, parts: ResultParts) -> None:
        """Close what is still open at the end of the run (billing stops at the run's end); the features
        built on the lifecycle have closed theirs already (``run_end`` runs in reverse order)."""
        rec = self.record
        windows = list(rec.windows)
        for node, (start, ready) in sorted(self._window.items()):
            windows.append(NodeWindow(node, start, ready, -1))
        down = list(rec.down) + [(n, t, -1) for n, t in sorted(self._down_at.items())]
        parts.lifecycle = LifecycleRecord(
            windows=sorted(windows, key=lambda w: (w.node, w.requested_ms)),
            down=sorted(down),
            scale_events=list(rec.scale_events),
            failures=list(rec.failures),
            capacity_wait_ms=rec.capacity_wait_ms,
            pods_waited_for_capacity=rec.pods_waited_for_capacity,
        )


def billed_columns(
    record: LifecycleRecord, n: int, end_ms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node: first billed ms, last billed ms, billed ms, booting ms and down ms (all within the run)."""
    start = np.full(n, end_ms, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    billed = np.zeros(n, dtype=np.int64)
    boot = np.zeros(n, dtype=np.int64)
    down = np.zeros(n, dtype=np.int64)
    for w in record.windows:
        s = min(w.requested_ms, end_ms)
        e = end_ms if w.removed_ms < 0 else min(w.removed_ms, end_ms)
        r = e if w.ready_ms < 0 else min(w.ready_ms, e)
        start[w.node] = min(start[w.node], s)
        last[w.node] = max(last[w.node], e)
        billed[w.node] += e - s
        boot[w.node] += r - s
    for node, failed, repaired in record.down:
        f = min(failed, end_ms)
        down[node] += (end_ms if repaired < 0 else min(repaired, end_ms)) - f
    start = np.where(billed > 0, start, 0)
    return start, last, billed, boot, down
