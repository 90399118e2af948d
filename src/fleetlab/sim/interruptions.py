"""Spot interruptions: the provider's notice, the reclaim that evicts every pod on the node, the replacement.

At the notice the node is cordoned (no new pods); pods keep running until the notice period ends, then
every pod on it is evicted as by the engine's ``evict_job_pods`` — work since its last checkpoint is lost, the
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

Subscribes to ``run_start``, its notice and reclaim events (optional kinds) and ``run_end``.
May change: cordons a noticed node; asks the node lifecycle to evict, remove and replace it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fleetlab.model.cluster import NodePool
from fleetlab.sim.events import MS_PER_HOUR, to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.interruption_log import InterruptionLog
from fleetlab.sim.node_lifecycle import NodeLifecycle
from fleetlab.spec.interruption_trace import read_interruption_trace

#: Entropy mixed with the run's seed for the interruption stream (independent of every other stream).
SPOT_STREAM = 0x5B07


class Interruptions:
    """Drives the spot interruptions of one run."""

    def __init__(self, sim: EngineHandle, life: NodeLifecycle) -> None:
        self.sim = sim
        self.life = life
        #: Nodes noticed and not yet reclaimed.
        self.under_notice = 0
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
        on = sim.on
        self.notice_kind = on.event_kind(self._notice, quiet=self.quiet)
        self.reclaim_kind = on.event_kind(self.reclaimed, quiet=self.quiet)
        on.run_start.append(self._schedule_start)
        on.run_end.append(self.finish)

    def quiet(self) -> bool:
        """Interruption events can change nothing: no pod bound, none to arrive, no node booting (a boot
        could let a pending pod start before the next interruption), no pending pod with a repair or
        autoscaler timer still to come (the interruptions due before it must fire in time order), no node
        under notice (the loop then ends once a scheduling cycle has placed nothing more)."""
        sim = self.sim
        idle = sim.submissions_left == 0 and sim.bound_pods == 0 and sim.booting == 0
        waiting = len(sim.queue) > 0 and self.life.has_timers()
        return idle and not waiting and self.under_notice == 0

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
                sim.schedule(to_ms(row.time_s), self.notice_kind, node, -1)

    def _schedule_poisson(self, node: int, ready_ms: int) -> None:
        rate = self._pool(node).interruptions
        per_hour = rate.per_node_hour() if rate is not None else None
        if per_hour is None:
            return
        gap = max(1, round(float(self.rng.exponential(MS_PER_HOUR / per_hour))))
        self.sim.schedule(ready_ms + gap, self.notice_kind, node, int(self.generation[node]))

    # -- events --------------------------------------------------------------------------------------
    def reclaimed(self, node: int, generation: int) -> None:
        """A notice period ended: reclaim the node unless it was replaced meanwhile."""
        if generation == self.generation[node]:
            self._reclaim(node)

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
        assert pool.interruptions is not None
        self.noticed[node] = True
        self.under_notice += 1
        self.notice_at[node] = sim.now
        self.notice_token[node] = self.life.token[node]
        sim.cordon(node, True)
        notice = to_ms(pool.interruptions.notice_for(pool.cloud))
        sim.schedule(sim.now + notice, self.reclaim_kind, node, int(self.generation[node]))

    def _reclaim(self, node: int) -> None:
        sim = self.sim
        book = sim.book
        lifecycle = self.life
        pool = self._pool(node)
        self.noticed[node] = False
        self.under_notice -= 1
        if not lifecycle.present[node] or lifecycle.token[node] != self.notice_token[node]:
            self.skipped += 1  # the autoscaler removed or replaced this VM during its notice
            sim.cordon(node, pool.unschedulable)
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
        sim.cordon(node, pool.unschedulable)
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

    def finish(self, parts: ResultParts) -> None:
        """The run's interruptions, and when each replaced node slot first became ready."""
        rows = np.asarray([r[:7] for r in self.rows], dtype=np.int64).reshape(-1, 7)
        parts.first_ready_ms.update(self.first_ready)
        parts.interruptions = InterruptionLog(
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
