"""Nodes that come and go during a run: requested (billed, booting), ready, failed (billed, down), removed.

Every pool gets a fixed row per node slot (``NodePool.node_slots``) so the placement arrays never grow;
a slot that is not present is simply not ready. The lifecycle keeps its own timer heap and tells the event
loop about it only while something else can still happen, so failure clocks never keep a finished run
alive. Pods on a node that goes away leave through ``Simulator.evict_job_pods``, the same eviction path
as preemption (work since the last checkpoint lost, requeued, prep paid again).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from enum import IntEnum
from typing import TYPE_CHECKING

import numpy as np

from fleetlab.sim.events import EventQueue, to_ms
from fleetlab.sim.lifecycle_result import LifecycleRecord, NodeWindow
from fleetlab.sim.result import PendingJob

if TYPE_CHECKING:
    from fleetlab.placement.state import NodeInfo
    from fleetlab.sim.autoscaler import Autoscaler
    from fleetlab.sim.failures import FailureModel
    from fleetlab.sim.simulator import Simulator


class Timer(IntEnum):
    """Lifecycle timers; ``attempt`` carries the node's token so stale timers are dropped."""

    BOOTED = 0
    REPAIRED = 1
    SCAN = 2
    FAIL = 3
    PROVISION_TIMEOUT = 4


class TimerHeap(EventQueue):
    """(time_ms, kind, node, token) timers, earliest first; ``token`` is the node life a timer belongs to."""


class NoLifecycle:
    """Fixed nodes (no autoscaled or failing pool): the hooks change nothing, outputs stay as they were."""

    def initial(self, infos: Sequence[NodeInfo]) -> Iterator[tuple[int, NodeInfo]]:
        """Every node slot starts present."""
        return enumerate(infos)

    def next_time(self, t_event: int | None, t_job: int | None) -> int | None:
        """No timers of its own."""
        return t_event

    def step(self, now: int) -> None:
        """Nothing to do."""

    def has_timers(self) -> bool:
        """No timers of its own."""
        return False


def lifecycle_for(sim: Simulator) -> NodeLifecycle | NoLifecycle:
    """Only scenarios with autoscaled, failing or spot-interrupted pools pay for any of this (others stay
    byte-identical)."""
    if any(
        p.autoscaling is not None or p.failures is not None or p.interruptions is not None for p in sim.pools
    ):
        return NodeLifecycle(sim)
    return NoLifecycle()


class NodeLifecycle:
    """Owns which node slots exist, their billed windows, and the timers of boots, repairs and failures."""

    def __init__(self, sim: Simulator) -> None:
        from fleetlab.sim.autoscaler import Autoscaler
        from fleetlab.sim.failures import FailureModel

        self.sim = sim
        n = sim.state.n
        slot = np.zeros(n, dtype=np.int64)
        first: dict[int, int] = {}
        for node, info in enumerate(sim.node_infos):
            slot[node] = node - first.setdefault(info.pool, node)
        counts = np.asarray([sim.pools[i.pool].count for i in sim.node_infos], dtype=np.int64)
        #: The node exists (is billed): requested and not removed.
        self.present = slot < counts
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
        self.autoscaler: Autoscaler | None = (
            Autoscaler(self) if any(p.autoscaling is not None for p in sim.pools) else None
        )
        self.failures: FailureModel | None = (
            FailureModel(self) if any(p.failures is not None for p in sim.pools) else None
        )
        if self.failures is not None:
            for present in np.flatnonzero(self.present).tolist():
                self.failures.arm(present, self._window[present][1])

    def initial(self, infos: Sequence[NodeInfo]) -> Iterator[tuple[int, NodeInfo]]:
        """The nodes present at the start (an autoscaled pool's slots beyond its count are not)."""
        return ((i, info) for i, info in enumerate(infos) if self.present[i])

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
        """Fire the timers due now, then let the autoscaler look at the cluster (before the cycle)."""
        for heap in (self.timers, self.fail_timers):
            while heap.peek_time() is not None and heap.peek_time() == now:
                _, kind, node, token = heap.pop()
                if kind == Timer.SCAN:
                    continue  # the autoscaler keeps its own due time
                if kind == Timer.FAIL:
                    if self.failures is not None and self.failures.accepts(node, token):
                        self.failures.fail(node)
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
                elif kind == Timer.PROVISION_TIMEOUT and self.autoscaler is not None and self._booting(node):
                    self.autoscaler.provision_timed_out(node)
        if self.autoscaler is not None:
            self.autoscaler.step(now)

    def _booting(self, node: int) -> bool:
        return bool(self.present[node] and not self.up[node] and not self.down[node])

    def _up(self, node: int) -> None:
        """The node registers with the scheduler; its failure clock starts."""
        self.sim.node_ready(node)
        if self.failures is not None:
            self.failures.arm(node, self.sim.now)

    # -- transitions ---------------------------------------------------------------------------------
    def request(self, node: int, boot_ms: int) -> None:
        """Ask the cloud for a node in this slot: billed from now, ready after its boot."""
        sim = self.sim
        self.present[node] = True
        self.token[node] += 1
        self._window[node] = [sim.now, -1]
        self._clear_images(node)
        sim.booting += 1
        self.timers.push(sim.now + boot_ms, Timer.BOOTED, node, int(self.token[node]))

    def remove(self, node: int) -> None:
        """Drain (evict every pod through the shared eviction path) and delete the node; billing stops."""
        self.evict_all(node)
        if self.up[node]:
            self._take_down(node)
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
        self._take_down(node)
        self.down[node] = True
        self.token[node] += 1
        self._down_at[node] = self.sim.now
        self._clear_images(node)
        self.timers.push(self.sim.now + repair_ms, Timer.REPAIRED, node, int(self.token[node]))

    def _close_down(self, node: int) -> None:
        if self.down[node]:
            self.down[node] = False
            self.record.down.append((node, self._down_at.pop(node), self.sim.now))

    def evict_all(self, node: int) -> None:
        """Evict every pod still on the node through the shared eviction path, in pod order."""
        sim = self.sim
        for pod in sorted(sim.node_pods[node]):
            if sim.book.node[pod] == node and sim.book.end_ms[pod] < 0:
                sim.evict_job_pods(pod)

    def _take_down(self, node: int) -> None:
        """Hide an empty node from the scheduler and take it out of the cluster totals."""
        sim, state = self.sim, self.sim.state
        g = int(state.allocatable[node, state.gpu_col])
        if g > 0:
            sim.counters.node_counted(g, state.requested[node, state.gpu_col] == 0, -1)
        state.set_ready(node, False)

    def _clear_images(self, node: int) -> None:
        """A new or rebuilt node starts with an empty image cache (pulls are paid again)."""
        state = self.sim.state
        for image, present in state.images.items():
            if present[node]:
                present[node] = False
                state.image_nodes[image] -= 1
        self.sim.image_ready[node].clear()

    # -- results -------------------------------------------------------------------------------------
    def annotate(self, pending: list[PendingJob]) -> list[PendingJob]:
        """Pending jobs the autoscaler could not add capacity for say why (stockout, max size, quota)."""
        if self.autoscaler is None or not self.autoscaler.blocked:
            return pending
        ids = {self.sim.jobs[j].id: reason for j, reason in self.autoscaler.blocked.items()}
        out = []
        for p in pending:
            reason = ids.get(p.job_id)
            if reason is not None:
                p = replace(p, blocked_by="capacity", detail=f"{reason}; {p.detail}" if p.detail else reason)
            out.append(p)
        return out

    def finish(self, end_ms: int) -> LifecycleRecord:
        """Close what is still open at the end of the run (billing stops at the run's end)."""
        rec = self.record
        windows = list(rec.windows)
        for node, (start, ready) in sorted(self._window.items()):
            windows.append(NodeWindow(node, start, ready, -1))
        down = list(rec.down) + [(n, t, -1) for n, t in sorted(self._down_at.items())]
        if self.autoscaler is not None:
            self.autoscaler.settle_waits(end_ms, final=True)
        return LifecycleRecord(
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
