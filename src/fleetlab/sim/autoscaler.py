"""A Cluster Autoscaler for autoscaled pools: scale up for unschedulable pods, scale down unneeded nodes.

Follows the upstream FAQ ("How does scale-up work?", "How does scale-down work?"):

* Every ``scan_interval`` (10 s) while the cluster changed, pods the scheduler left pending are checked.
  Pods that fit an existing node now, or a node already booting, do not count (filterOutSchedulable and
  upcoming nodes). For each autoscaled pool the rest are bin-packed first-fit-decreasing onto template
  nodes (the pool's next slots, judged by the SAME filter plugins the scheduler runs), within the pool's
  ``max`` and the account GPU quota; one pool is picked by the expander (least-waste: least unused
  cpu+memory share; price: cheapest per requested unit; priority: highest pool priority; ties random).
* A refused request (stockout) backs the pool off (5 m doubling to 30 m); pods stay pending and say why.
* A node whose utilisation — requested/allocatable of GPUs on GPU nodes, else max(cpu, memory) — stays
  under its pool's threshold for ``scale_down_unneeded_time``, whose pods can all move (preemptible, and
  another node passes the filters with room), is drained and deleted, never below ``min``, not within
  ``scale_down_delay_after_add`` of a scale-up. Empty nodes go in bulk, non-empty ones one per scan.

Subscribes to ``tick`` (after the node lifecycle's timers) and ``run_end`` (capacity waits, pending reasons).
May change: nothing itself; asks the node lifecycle to request and remove nodes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.lifecycle_result import ScaleEvent
from fleetlab.sim.node_lifecycle import NodeLifecycle, Timer
from fleetlab.sim.result import PendingJob

#: Stream id of the autoscaler's own generator (expander ties, stockout draws, boot times).
AUTOSCALER_STREAM = 0xCA
#: Pods below this priority never trigger a scale-up (--expendable-pods-priority-cutoff).
EXPENDABLE_PRIORITY_CUTOFF = -10

#: Pods per pending spec looked at in one scan (pods of one spec fit templates alike; this bounds a scan
#: on very long queues, as upstream bounds the pods it processes per loop).
MAX_PODS_PER_GROUP = 1000

BoolArray = NDArray[np.bool_]


@dataclass
class _Pending:
    """One queue entry the autoscaler tries to help: a pod, or a whole gang of ``size`` pods."""

    pods: list[int]
    job: int
    compiled: CompiledPod
    template_ok: BoolArray


@dataclass
class _Option:
    """What scaling one pool up would do."""

    pool: int
    slots: list[int]
    helped: list[_Pending]
    waste: float
    price_per_unit: float
    priority: int


class Autoscaler:
    """The scan loop; decisions go to the NodeLifecycle, which owns node slots and billing."""

    def __init__(self, sim: EngineHandle, life: NodeLifecycle) -> None:
        self.life = life
        self.sim = sim
        self.cfg = sim.resolved.scenario.cluster.autoscaler
        self.interval = max(1, to_ms(self.cfg.scan_interval))

        def stream(k: int) -> np.random.Generator:
            seq = np.random.SeedSequence([sim.seed, AUTOSCALER_STREAM, k])
            return np.random.Generator(np.random.PCG64(seq))

        # Separate streams, so switching stockouts on does not move expander ties or boot times.
        self.rng, self.stockout_rng, self.boot_rng = stream(0), stream(1), stream(2)
        self.pool_nodes = {
            p: np.flatnonzero(sim.state.pool == p) for p, pool in enumerate(sim.pools) if pool.autoscaling
        }
        n = sim.state.n
        self.unneeded_since = np.full(n, -1, dtype=np.int64)
        self.threshold = np.ones(n, dtype=np.float64)
        self.unneeded_ms = np.zeros(n, dtype=np.int64)
        for p, nodes in self.pool_nodes.items():
            a = sim.pools[p].autoscaling
            assert a is not None
            self.threshold[nodes] = a.scale_down_utilization_threshold
            self.unneeded_ms[nodes] = to_ms(a.scale_down_unneeded_time)
        self.backoff_until: dict[int, int] = {}
        self.backoff_ms: dict[int, int] = {}
        self.last_scale_up_ms: int | None = None
        self.last_scan_ms: int | None = None
        self.ticks: list[int] = []
        self.armed: set[int] = set()
        self.last_key: tuple[int, ...] | None = None
        self.wait_mark: dict[int, int] = {}
        #: Per job index: why the autoscaler could not add capacity for it (shown for pending jobs).
        self.blocked: dict[int, str] = {}
        life.on_provision_timeout = self.provision_timed_out
        sim.on.tick.append(self.step)
        sim.on.run_end.append(self.finish)

    def finish(self, parts: ResultParts) -> None:
        """Close the capacity waits still open at the end; pending jobs will say why no node came."""
        self.settle_waits(parts.end_ms, final=True)
        parts.pending_notes.append(self.annotate)

    def annotate(self, pending: list[PendingJob]) -> list[PendingJob]:
        """Pending jobs the autoscaler could not add capacity for say why (stockout, max size, quota)."""
        if not self.blocked:
            return pending
        ids = {self.sim.jobs[j].id: reason for j, reason in self.blocked.items()}
        out = []
        for p in pending:
            reason = ids.get(p.job_id)
            if reason is not None:
                p = replace(p, blocked_by="capacity", detail=f"{reason}; {p.detail}" if p.detail else reason)
            out.append(p)
        return out

    # -- scheduling the scans ------------------------------------------------------------------------
    def _key(self) -> tuple[int, ...]:
        s = self.sim
        return (s.placements, s.state.release_generation, s.state.topology_generation, len(s.queue))

    def arm(self, t: int) -> None:
        """Make sure a scan happens at the first scan tick at or after ``t``."""
        tick = -(-t // self.interval) * self.interval
        if self.last_scan_ms is not None:
            tick = max(tick, self.last_scan_ms + self.interval)  # one scan per scan_interval at most
        if tick not in self.armed:
            self.armed.add(tick)
            heapq.heappush(self.ticks, tick)
            if tick > self.sim.now:  # a scan due now runs in this very step
                self.life.timers.push(tick, Timer.SCAN, -1, 0)

    def step(self, now: int) -> None:
        """Called every loop step before the scheduling cycle: scan when one is due."""
        now = int(now)
        if self._key() != self.last_key:
            self.arm(now)
        if not self.ticks or self.ticks[0] > now:
            return
        while self.ticks and self.ticks[0] <= now:
            self.armed.discard(heapq.heappop(self.ticks))
        self.last_scan_ms = now
        self.settle_waits(now)
        self.scale_up(now)
        if self.cfg.scale_down_enabled:
            self.scale_down(now)
        self.last_key = self._key()

    # -- scale up ------------------------------------------------------------------------------------
    def _template_mask(self, compiled: CompiledPod, scheduler: Scheduler) -> BoolArray:
        """Per node slot, whether an empty node with its labels, taints and allocatable would hold the pod:
        the scheduler's own static filter plugins, and NodeResourcesFit's test against allocatable."""
        state = self.sim.state
        mask = np.ones(state.n, dtype=bool)
        for plugin in scheduler.filters:
            if plugin.static:
                mask &= plugin.passes(state, compiled)
        cols = compiled.request_cols
        fits = (state.allocatable[:, cols] >= compiled.request[cols]).all(axis=1)
        return np.asarray(mask & fits, dtype=bool)

    def _pending(self) -> list[_Pending]:
        sim = self.sim
        out: list[_Pending] = []
        masks: dict[int, BoolArray] = {}
        for gid, heads in sorted(sim.queue.pending_heads(MAX_PODS_PER_GROUP).items()):
            group = sim.groups[gid]
            compiled = sim.compiled[group.spec_id]
            scheduler = sim.schedulers[sim.spec_profile[group.spec_id]]
            if not group.gang_size and len(scheduler.feasible_nodes(compiled)):
                continue  # fits an existing node now: the scheduler will place it (filterOutSchedulable)
            mask = masks.get(group.spec_id)
            if mask is None:
                mask = masks[group.spec_id] = self._template_mask(compiled, scheduler)
            for head in heads:
                job = int(sim.book.job[head])
                if sim.jobs[job].priority < EXPENDABLE_PRIORITY_CUTOFF:
                    continue
                pods = sim.entry_pods(gid, head)
                out.append(_Pending(pods, job, compiled, mask))
        out.sort(key=lambda e: (-sim.jobs[e.job].priority, int(sim.submit_ms[e.job]), e.pods[0]))
        return out

    def _quota_room(self) -> int | None:
        quota = self.cfg.gpu_quota
        if quota is None:
            return None
        state = self.sim.state
        used = int(state.allocatable[self.life.present, state.gpu_col].sum())
        return max(0, quota - used)

    def _pack(self, entries: list[_Pending], slots: list[int], free: NDArray[np.int64]) -> list[_Pending]:
        """First-fit onto ``slots`` (rows of ``free``, changed in place); gangs all-or-nothing."""
        placed: list[_Pending] = []
        for entry in entries:
            req = entry.compiled.request
            trial = free.copy()
            ok = True
            for _ in entry.pods:
                for k, slot in enumerate(slots):
                    if entry.template_ok[slot] and (trial[k] >= req).all():
                        trial[k] -= req
                        break
                else:
                    ok = False
                    break
            if ok:
                free[:] = trial
                placed.append(entry)
        return placed

    def _mark(self, entry: _Pending) -> None:
        """From now the entry's pods wait for capacity that is not there yet."""
        for pod in entry.pods:
            self.wait_mark.setdefault(pod, self.sim.now)

    def _upcoming(self, entries: list[_Pending]) -> list[_Pending]:
        """Drop entries the cluster will hold without a new node, as upstream's filterOutSchedulable
        simulates pending pods on existing nodes and upcoming (booting) ones: a gang on the free room of
        ready nodes that pass the filters plus the booting nodes, all or nothing."""
        life, state = self.life, self.sim.state
        booting = [int(n) for n in np.flatnonzero(life.present & ~life.up & ~life.down)]
        free: dict[int, NDArray[np.int64]] = {n: state.allocatable[n].copy() for n in booting}
        left: list[_Pending] = []
        for e in entries:
            req = e.compiled.request
            nodes = [n for n in booting if e.template_ok[n]]
            if len(e.pods) > 1:
                scheduler = self.sim.schedulers[self.sim.spec_profile[self.sim.spec_of(e.job)]]
                nodes += [int(n) for n in scheduler.feasible_nodes(e.compiled)]
            trial: dict[int, NDArray[np.int64]] = {}
            placed = 0
            for _ in e.pods:
                for n in nodes:
                    room = trial.get(n)
                    if room is None:
                        room = free[n].copy() if n in free else state.free[n].copy()
                    if (room >= req).all():
                        trial[n] = room - req
                        placed += 1
                        break
            if placed == len(e.pods) and nodes:
                free.update(trial)
                if any(n in booting for n in trial):
                    self._mark(e)
            else:
                left.append(e)
        return left

    def _option(self, pool_index: int, entries: list[_Pending], quota: int | None) -> _Option | None:
        sim, life, state = self.sim, self.life, self.sim.state
        pool = sim.pools[pool_index]
        nodes = self.pool_nodes[pool_index]
        assert pool.autoscaling is not None
        free_slots = [int(n) for n in nodes if not life.present[n]]
        room = min(len(free_slots), pool.autoscaling.max - int(life.present[nodes].sum()))
        if quota is not None and pool.gpus_per_node > 0:
            room = min(room, quota // pool.gpus_per_node)
        fitting = [e for e in entries if e.template_ok[nodes].any()]
        if not fitting:
            return None
        for e in fitting:
            self._mark(e)
        if room <= 0:
            at_max = pool.autoscaling.max <= int(life.present[nodes].sum())
            reason = "its max size" if at_max else "the account GPU quota"
            for e in fitting:
                self.blocked.setdefault(e.job, f"pool {pool.name} is at {reason}")
            return None
        if self.backoff_until.get(pool_index, -1) > sim.now:
            for e in fitting:
                self.blocked.setdefault(e.job, f"pool {pool.name} is backed off after a stockout")
            return None
        slots = free_slots[:room]
        free = state.allocatable[slots].copy()
        helped = self._pack(fitting, slots, free)
        if not helped:
            return None
        used = [k for k in range(len(slots)) if (free[k] != state.allocatable[slots[k]]).any()]
        used_slots = [slots[k] for k in used]
        alloc = state.allocatable[used_slots]
        left = free[used]
        waste = 0.0
        for col in (state.cpu_col, state.mem_col):
            total = float(alloc[:, col].sum())
            waste += float(left[:, col].sum()) / total if total > 0 else 0.0
        unit_col = state.gpu_col if pool.gpus_per_node > 0 else state.cpu_col
        requested = float(sum(e.compiled.request[unit_col] * len(e.pods) for e in helped))
        price = pool.price_per_hour * len(used_slots) / requested if requested > 0 else float("inf")
        return _Option(pool_index, used_slots, helped, waste / 2, price, pool.autoscaling.priority)

    def _expand(self, options: list[_Option]) -> _Option:
        expander = self.cfg.expander
        if expander == "least-waste":
            best = min(o.waste for o in options)
            tied = [o for o in options if o.waste == best]
        elif expander == "price":
            best = min(o.price_per_unit for o in options)
            tied = [o for o in options if o.price_per_unit == best]
        elif expander == "priority":
            top = max(o.priority for o in options)
            tied = [o for o in options if o.priority == top]
        else:
            tied = options
        return tied[int(self.rng.integers(len(tied)))] if len(tied) > 1 else tied[0]

    def _back_off(self, pool_index: int) -> int:
        """A failed scale-up: the pool is skipped for 5 min, doubling per failure up to 30 min."""
        wait = self.backoff_ms.get(pool_index, 0)
        wait = to_ms(self.cfg.initial_backoff) if wait == 0 else min(2 * wait, to_ms(self.cfg.max_backoff))
        self.backoff_ms[pool_index] = wait
        self.backoff_until[pool_index] = self.sim.now + wait
        return wait

    def provision_timed_out(self, node: int) -> None:
        """A node still not ready after max_node_provision_time: CA deletes it and backs the pool off."""
        p = int(self.sim.state.pool[node])
        self.life.remove(node)
        wait = self._back_off(p)
        self.life.record.scale_events.append(
            ScaleEvent(int(self.sim.now), self.sim.pools[p].name, "timeout", 1)
        )
        self.arm(self.sim.now + self.interval)
        self.arm(self.sim.now + wait)

    def _stocked_out(self, pool_index: int) -> bool:
        pool = self.sim.pools[pool_index]
        assert pool.autoscaling is not None
        stockout = pool.autoscaling.stockout
        now = self.sim.now
        if any(to_ms(w.start_s) <= now < to_ms(w.end_s) for w in stockout.windows):
            return True
        return stockout.probability > 0 and float(self.stockout_rng.random()) < stockout.probability

    def _boot_ms(self, pool_index: int) -> int:
        pool = self.sim.pools[pool_index]
        assert pool.autoscaling is not None
        boot = pool.autoscaling.boot_time
        if boot is None:
            return to_ms(pool.boot_time_s)
        if boot.kind == "uniform":
            return to_ms(float(self.boot_rng.uniform(boot.low, boot.high)))
        if boot.kind == "lognormal":
            return to_ms(float(self.boot_rng.lognormal(np.log(max(boot.median, 1e-9)), boot.sigma)))
        return to_ms(boot.median)

    def scale_up(self, now: int) -> None:
        """One scale-up per scan, as upstream: the expander's pool grows by the nodes the pods need."""
        if not len(self.sim.queue):
            return
        entries = self._upcoming(self._pending())
        if not entries:
            return
        quota = self._quota_room()
        options = [o for p in self.pool_nodes if (o := self._option(p, entries, quota)) is not None]
        if not options:
            return
        self._grow(self._expand(options), now)

    def provision(self, job: int, compiled: CompiledPod, pods: list[int]) -> bool:
        """The scale-up of a best-effort-atomic-scale-up ProvisioningRequest (sim/admission_checks.py): the
        nodes all ``pods`` need, in the one pool the expander picks, or nothing (max size, GPU quota,
        back-off, stockout). True when the nodes were requested."""
        sim = self.sim
        scheduler = sim.schedulers[sim.spec_profile[sim.spec_of(job)]]
        entry = _Pending(pods, job, compiled, self._template_mask(compiled, scheduler))
        quota = self._quota_room()
        options = [o for p in self.pool_nodes if (o := self._option(p, [entry], quota)) is not None]
        return bool(options) and self._grow(self._expand(options), sim.now)

    def _grow(self, choice: _Option, now: int) -> bool:
        """Request the chosen pool's nodes (False: stocked out, the pool backs off)."""
        pool = self.sim.pools[choice.pool]
        pods = sum(len(e.pods) for e in choice.helped)
        if self._stocked_out(choice.pool):
            wait = self._back_off(choice.pool)
            for e in choice.helped:
                self.blocked[e.job] = f"scale-up of pool {pool.name} failed: stockout (no cloud capacity)"
            self.life.record.scale_events.append(
                ScaleEvent(now, pool.name, "stockout", len(choice.slots), pods)
            )
            self.arm(now + self.interval)
            self.arm(now + wait)
            return False
        self.backoff_ms.pop(choice.pool, None)
        limit = to_ms(self.cfg.max_node_provision_time)
        for slot in choice.slots:
            self.life.request(slot, self._boot_ms(choice.pool))
            self.life.timers.push(now + limit, Timer.PROVISION_TIMEOUT, slot, int(self.life.token[slot]))
        for e in choice.helped:
            self.blocked.pop(e.job, None)
        self.last_scale_up_ms = now
        self.life.record.scale_events.append(ScaleEvent(now, pool.name, "up", len(choice.slots), pods))
        return True

    def settle_waits(self, now: int, final: bool = False) -> None:
        """Pods marked as waiting for capacity that are now bound (or the run ended) stop waiting."""
        book = self.sim.book
        rec = self.life.record
        for pod, mark in list(self.wait_mark.items()):
            if book.node[pod] >= 0 and book.bound_ms[pod] >= mark:
                rec.capacity_wait_ms += int(book.bound_ms[pod]) - mark
            elif book.end_ms[pod] >= 0 or final:
                rec.capacity_wait_ms += max(0, now - mark) if book.end_ms[pod] < 0 else 0
            else:
                continue
            rec.pods_waited_for_capacity += 1
            del self.wait_mark[pod]

    # -- scale down ----------------------------------------------------------------------------------
    def _utilisation(self, nodes: NDArray[np.int64]) -> NDArray[np.float64]:
        """CA's utilisation: GPU share on GPU nodes, else the larger of cpu and memory shares."""
        state = self.sim.state
        alloc = state.allocatable[nodes].astype(np.float64)
        req = state.requested[nodes].astype(np.float64)

        def share(col: int) -> NDArray[np.float64]:
            return np.divide(req[:, col], alloc[:, col], out=np.zeros(len(nodes)), where=alloc[:, col] > 0)

        cpu_mem = np.maximum(share(state.cpu_col), share(state.mem_col))
        return np.where(alloc[:, state.gpu_col] > 0, share(state.gpu_col), cpu_mem)

    def _movable(
        self, node: int, leaving: set[int], taken: dict[int, NDArray[np.int64]]
    ) -> dict[int, NDArray[np.int64]] | None:
        """Where the node's pods would go: every pod evictable and another node (not leaving) passing the
        filters with room for it after what earlier drains in this scan took; None if one cannot move."""
        sim, state = self.sim, self.sim.state
        trial = {k: v.copy() for k, v in taken.items()}
        for pod in sorted(sim.node_pods[node]):
            job = int(sim.book.job[pod])
            if not sim.jobs[job].preemptible:
                return None  # not safe to evict (no controller would recreate it / must not be disrupted)
            sid = sim.spec_of(job)
            compiled = sim.compiled[sid]
            scheduler = sim.schedulers[sim.spec_profile[sid]]
            req = compiled.request
            for dest in scheduler.feasible_nodes(compiled):
                d = int(dest)
                if d == node or d in leaving:
                    continue
                used = trial.get(d)
                if used is None or (state.free[d] - used >= req).all():
                    trial[d] = req.copy() if used is None else used + req
                    break
            else:
                return None
        return trial

    def scale_down(self, now: int) -> None:
        """Mark unneeded nodes, and delete those unneeded long enough (empty ones in bulk, else one)."""
        life = self.life
        nodes = np.concatenate(list(self.pool_nodes.values())) if self.pool_nodes else np.zeros(0, np.int64)
        nodes = nodes[life.up[nodes]]
        if not len(nodes):
            return
        under = self._utilisation(nodes) < self.threshold[nodes]
        self.unneeded_since[nodes[~under]] = -1
        self.unneeded_since[~life.up] = -1
        blocked_by_add = self.last_scale_up_ms is not None and now < self.last_scale_up_ms + to_ms(
            self.cfg.scale_down_delay_after_add
        )
        leaving: set[int] = set()
        taken: dict[int, NDArray[np.int64]] = {}
        size = {p: int(life.present[ns].sum()) for p, ns in self.pool_nodes.items()}
        empties = 0
        drained = False
        for node in (int(n) for n in nodes[under]):
            moves = self._movable(node, leaving, taken)
            if moves is None:
                self.unneeded_since[node] = -1
                continue
            if self.unneeded_since[node] < 0:
                self.unneeded_since[node] = now
            due = int(self.unneeded_since[node] + self.unneeded_ms[node])
            if now < due or blocked_by_add:
                after_add = 0
                if blocked_by_add and self.last_scale_up_ms is not None:
                    after_add = self.last_scale_up_ms + to_ms(self.cfg.scale_down_delay_after_add)
                self.arm(max(due, after_add))
                continue
            p = int(self.sim.state.pool[node])
            pool = self.sim.pools[p]
            assert pool.autoscaling is not None
            if size[p] - 1 < pool.autoscaling.min:
                continue
            empty = not self.sim.node_pods[node]
            if empty and empties >= self.cfg.max_empty_bulk_delete:
                continue
            if not empty and drained:
                continue
            leaving.add(node)
            taken = moves
            size[p] -= 1
            empties += int(empty)
            drained = drained or not empty
        removed: dict[str, int] = {}
        for node in sorted(leaving):
            name = self.sim.pools[int(self.sim.state.pool[node])].name
            life.remove(node)
            self.unneeded_since[node] = -1
            removed[name] = removed.get(name, 0) + 1
        for name, count in sorted(removed.items()):
            life.record.scale_events.append(ScaleEvent(now, name, "down", count))
        if leaving:
            self.arm(now + self.interval)
