"""Spot interruptions: the provider's notice, the reclaim that evicts every pod on the node, the replacement.

At the notice the node is cordoned (no new pods); pods keep running until the notice period ends, then
every pod on it is evicted as by ``Simulator.evict_job_pods`` — work since its last checkpoint is lost, the
job is requeued (a gang loses its pods on other nodes too) — and the node is removed through the node
lifecycle (sim/node_lifecycle.py), which then requests a replacement in the same pool slot at once: billed
from the request, ready after the pool's boot time (the ``boot`` bucket of the cost split), with an empty
image cache. The slot therefore stays billed without a gap: the old node up to its removal, the
replacement from its request. A node the autoscaler removed (or replaced) during the notice is not reclaimed.

Poisson interruptions draw exponential gaps per node from their own seeded stream (so turning spot on
does not move any other random draw); a node's clock starts when it is ready. Trace rows are scheduled
as given; a row naming no node picks one of the pool's running, not yet noticed nodes from the stream.
While only interruption events are left and no pod is bound, still to arrive or on a node under notice,
they are hidden from the loop: they could change nothing and would only stretch the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fleetlab.model.cluster import NodePool
from fleetlab.sim.events import MS_PER_HOUR, EventKind, EventQueue, to_ms
from fleetlab.sim.interruption_log import IntArray, InterruptionLog
from fleetlab.sim.node_lifecycle import NodeLifecycle
from fleetlab.spec.interruption_trace import read_interruption_trace

if TYPE_CHECKING:
    from fleetlab.sim.simulator import Simulator

#: Entropy mixed with the run's seed for the interruption stream (independent of every other stream).
SPOT_STREAM = 0x5B07


class SpotEventQueue(EventQueue):
    """The event heap, counting interruption events so they can be dropped once they can change nothing."""

    def __init__(self, sim: Simulator) -> None:
        super().__init__()
        self.sim = sim
        self.spot_events = 0
        self.under_notice = 0

    def push_spot(self, time_ms: int, kind: EventKind, node: int, generation: int) -> None:
        """Schedule an interruption event."""
        self.push(time_ms, kind, node, generation)
        self.spot_events += 1

    def pop(self) -> tuple[int, int, int, int]:
        """Remove and return the earliest event (see EventQueue.pop)."""
        out = super().pop()
        if out[1] >= EventKind.SPOT_NOTICE:
            self.spot_events -= 1
        return out

    def peek_time(self) -> int | None:
        """Earliest event time; None while only interruption events are left and they can change nothing:
        no pod bound, none to arrive, no node booting (a boot could let a pending pod start before the next
        interruption), no pending pod with a repair or autoscaler timer still to come, no node under notice
        (the loop then ends once a scheduling cycle has placed nothing more)."""
        if self.spot_events and self.spot_events == len(self._heap):
            sim = self.sim
            idle = sim.submissions_left == 0 and sim.bound_pods == 0 and sim.booting == 0
            # A pending pod may still start once a lifecycle timer (a repair, an autoscaler scan) fires:
            # then the interruptions due before it must fire in time order too.
            waiting = len(sim.queue) > 0 and sim.lifecycle.has_timers()
            if idle and not waiting and self.under_notice == 0:
                return None
        return super().peek_time()


class Interruptions:
    """Drives the spot interruptions of one simulator; inert when no pool has interruptions."""

    def __init__(self, sim: Simulator, events: SpotEventQueue | None) -> None:
        self.sim = sim
        self.events = events
        self.active = events is not None
        self.rng = np.random.default_rng(np.random.SeedSequence([sim.seed, SPOT_STREAM]))
        n = len(sim.node_infos)
        self.generation = np.zeros(n, dtype=np.int64)
        self.noticed = np.zeros(n, dtype=bool)
        self.notice_at = np.full(n, -1, dtype=np.int64)
        self.notice_token = np.full(n, -1, dtype=np.int64)
        self.rows: list[tuple[int, int, int, int, int, int, int, float]] = []
        self.first_ready: dict[int, int] = {}
        self.skipped = 0
        self.pool_nodes: dict[int, list[int]] = {}
        for node, info in enumerate(sim.node_infos):
            self.pool_nodes.setdefault(info.pool, []).append(node)
        if events is not None:
            self._schedule_start()

    # -- scheduling ----------------------------------------------------------------------------------
    def _pool(self, node: int) -> NodePool:
        return self.sim.pools[self.sim.node_infos[node].pool]

    def _schedule_start(self) -> None:
        sim = self.sim
        traces: dict[str, list[int]] = {}
        for p_index, pool in enumerate(sim.pools):
            spec = pool.interruptions
            if spec is None:
                continue
            if spec.trace is not None:
                traces.setdefault(spec.trace, []).append(p_index)
                continue
            first_ready = 0 if pool.initially_ready else to_ms(pool.boot_time_s)
            for node in self.pool_nodes.get(p_index, []):
                self._schedule_poisson(node, first_ready)
        for path, pool_indices in traces.items():
            by_name = {sim.pools[i].name: i for i in pool_indices}
            counts: dict[str, int | None] = {name: sim.pools[i].count for name, i in by_name.items()}
            for row in read_interruption_trace(Path(path), counts):
                p_index = by_name[row.pool]
                node = -1 - p_index if row.node is None else self.pool_nodes[p_index][row.node]
                assert self.events is not None
                self.events.push_spot(to_ms(row.time_s), EventKind.SPOT_NOTICE, node, -1)

    def _schedule_poisson(self, node: int, ready_ms: int) -> None:
        rate = self._pool(node).interruptions
        per_hour = rate.per_node_hour() if rate is not None else None
        if per_hour is None or self.events is None:
            return
        gap = max(1, round(float(self.rng.exponential(MS_PER_HOUR / per_hour))))
        self.events.push_spot(ready_ms + gap, EventKind.SPOT_NOTICE, node, int(self.generation[node]))

    # -- events --------------------------------------------------------------------------------------
    def handle(self, kind: int, index: int, attempt: int) -> bool:
        """Act on an interruption event; False for every other kind (the simulator handles those)."""
        if kind < EventKind.SPOT_NOTICE:
            return False
        if kind == EventKind.SPOT_NOTICE:
            self._notice(index, attempt)
        elif attempt == self.generation[index]:
            self._reclaim(index)
        return True

    def _pick(self, p_index: int) -> int:
        state = self.sim.state
        nodes = [n for n in self.pool_nodes.get(p_index, []) if state.ready[n] and not self.noticed[n]]
        if not nodes:
            return -1
        return nodes[int(self.rng.integers(len(nodes)))]

    def _notice(self, node: int, generation: int) -> None:
        if node < 0:  # a trace row naming only the pool
            node = self._pick(-1 - node)
            if node < 0:
                self.skipped += 1
                return
        elif generation >= 0 and generation != self.generation[node]:
            return
        sim = self.sim
        if not sim.state.ready[node] or self.noticed[node]:
            self.skipped += 1
            return
        pool = self._pool(node)
        assert pool.interruptions is not None and self.events is not None
        self.noticed[node] = True
        self.events.under_notice += 1
        self.notice_at[node] = sim.now
        self.notice_token[node] = self._lifecycle().token[node]
        sim.state.set_unschedulable(node, True)
        notice = to_ms(pool.interruptions.notice_for(pool.cloud))
        self.events.push_spot(sim.now + notice, EventKind.SPOT_RECLAIM, node, int(self.generation[node]))

    def _lifecycle(self) -> NodeLifecycle:
        lifecycle = self.sim.lifecycle
        assert isinstance(lifecycle, NodeLifecycle), "spot pools always run with a node lifecycle"
        return lifecycle

    def _reclaim(self, node: int) -> None:
        sim = self.sim
        book, state = sim.book, sim.state
        lifecycle = self._lifecycle()
        pool = self._pool(node)
        self.noticed[node] = False
        assert self.events is not None
        self.events.under_notice -= 1
        if not lifecycle.present[node] or lifecycle.token[node] != self.notice_token[node]:
            self.skipped += 1  # the autoscaler removed or replaced this VM during its notice
            state.set_unschedulable(node, pool.unschedulable)
            return
        first_segment, evictions = len(book.segments), sim.evictions
        self.first_ready.setdefault(node, int(sim.ready_ms[node]))
        lifecycle.evict_all(node)
        lost_units, lost_gpu, dollars = self._lost(first_segment)
        boot_ms = to_ms(pool.boot_time_s)
        lifecycle.remove(node)
        lifecycle.request(node, boot_ms)
        ready = sim.now + boot_ms
        self.rows.append(
            (
                node,
                int(self.notice_at[node]),
                sim.now,
                ready,
                sim.evictions - evictions,
                lost_units,
                lost_gpu,
                dollars,
            )
        )
        self.generation[node] += 1
        state.set_unschedulable(node, pool.unschedulable)
        self._schedule_poisson(node, ready)

    def _lost(self, first_segment: int) -> tuple[int, int, float]:
        """Compute lost by the evictions just logged: billing-unit ms, GPU-ms and dollars."""
        sim = self.sim
        state = sim.state
        units_total = gpu_total = 0
        dollars = 0.0
        for seg in sim.book.segments[first_segment:]:
            if not seg.evicted or seg.lost_ms <= 0:
                continue
            job = sim.jobs[int(sim.book.job[seg.pod])]
            gpus = int(state.allocatable[seg.node, state.gpu_col])
            units = job.gpus_per_pod if gpus > 0 else int(job.requests.get("cpu", 0))
            units_total += units * seg.lost_ms
            gpu_total += job.gpus_per_pod * seg.lost_ms if gpus > 0 else 0
            capacity = gpus if gpus > 0 else int(state.allocatable[seg.node, state.cpu_col])
            price = sim.pools[sim.node_infos[seg.node].pool].price_per_hour
            dollars += units * seg.lost_ms * price / (capacity * MS_PER_HOUR) if capacity else 0.0
        return units_total, gpu_total, dollars

    def first_ready_ms(self, ready_ms: IntArray) -> IntArray:
        """When each node slot first became ready (a replacement's readiness is in the log)."""
        out = ready_ms.copy()
        for node, first in self.first_ready.items():
            out[node] = first
        return out

    def log(self) -> InterruptionLog | None:
        """The run's interruptions (None when no pool has any configured)."""
        if not self.active:
            return None
        rows = np.asarray([r[:7] for r in self.rows], dtype=np.int64).reshape(-1, 7)
        return InterruptionLog(
            node=rows[:, 0].copy(),
            notice_ms=rows[:, 1].copy(),
            reclaim_ms=rows[:, 2].copy(),
            ready_ms=rows[:, 3].copy(),
            pods_evicted=rows[:, 4].copy(),
            lost_unit_ms=rows[:, 5].copy(),
            lost_gpu_ms=rows[:, 6].copy(),
            lost_dollars=np.asarray([r[7] for r in self.rows], dtype=np.float64),
            skipped=self.skipped,
        )


def interruption_events(sim: Simulator) -> tuple[EventQueue, Interruptions]:
    """The simulator's event heap and its interruption driver (a plain heap when no pool is interrupted)."""
    if not any(pool.interruptions is not None for pool in sim.pools):
        return EventQueue(), Interruptions(sim, None)
    events = SpotEventQueue(sim)
    return events, Interruptions(sim, events)
