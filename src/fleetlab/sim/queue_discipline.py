"""Queueing disciplines for replaying batch schedulers (``scheduler.queueing``, ``scheduler.fair_share``).

Without this feature the scheduling queue is kube-scheduler's: pods in PrioritySort order, a pod that does
not fit is skipped and later ones may start (``best-effort-fifo``). This module runs the scheduling cycle
instead when a scenario asks for another discipline or for fair-share ordering:

* **order**: the pod priority (PriorityClass), then — with fair share — the multifactor priority
  (sim/fair_share.py), then the time the entry was queued;
* ``best-effort-fifo``: every entry in that order; a spec that failed is not tried again this cycle;
* ``fifo``: entries in order until one does not fit; nothing behind it starts (an entry wider than the
  whole cluster is passed over: it could never start);
* ``easy-backfill``: EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001) on nodes. The first entry that
  does not fit gets a reservation: its *shadow time* is the first instant the running pods' planned ends
  (start + requested wall time, ``recorded.walltime_s``; a job without one is planned with its own runtime;
  a pod past its plan is planned to end now) free enough of its eligible nodes for it, and its *reserved
  nodes* are the fewest nodes that then hold it, taking those freed last first. A later entry (at most
  ``backfill_depth`` of them) starts now if it fits now and either ends by the shadow time (now + its wall
  time) or fits on nodes outside the reservation — so no backfilled job delays the head. This is the
  node-granular variant (Slurm's backfill plans on nodes too): the textbook's "extra processors" are the
  nodes the reservation leaves out.

With ``backfill_interval_s`` (Slurm's ``bf_interval``) the two halves of Slurm's scheduling run apart: at
every event the main scheduler starts entries in order, and once an entry of a partition is left waiting
no later entry of that partition starts (Slurm's sched_config.html; a partition here is the set of nodes
an entry may use); the reservation and the starts behind it happen only on the backfill passes, at every whole
multiple of the interval since the run began (a pass wakes the run only when a main cycle left entries
behind a blocked head). ``backfill_window_s`` (``bf_window``) bounds how far ahead a pass plans: a head
whose shadow time lies further gets no reservation and holds no one back.

Volcano's ``backfill`` action is the Kubernetes counterpart in name: it places pods that request nothing
(BestEffort) on any node that passes the predicates, with no reservation and no wall time
(volcano-sh/volcano pkg/scheduler/actions/backfill/backfill.go @0bf0d51).

Each cycle orders the queue afresh (O(Q log Q) for Q waiting entries) and a reservation walks the running
pods (O(R log R)): costs only scenarios that choose a discipline pay; per pod nothing is added.

Subscribes to the scheduling cycle (``take_cycle``); with a backfill interval also to ``tick`` and
``next_time``.
May change: places queue entries (``try_place``, ``try_place_on``) and takes them out of the queue.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from fleetlab.placement.state import BoolArray
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.time_limits import job_time_limits_s

QueueKey = tuple[int, int, int]


class Priorities(Protocol):
    """What orders the queue after the pod priority: the multifactor priority of waiting jobs
    (sim/fair_share.py, sim/job_priority.py)."""

    def priorities(self, jobs: list[int], now: int) -> list[float]: ...


class Reservation:
    """The blocked head's start: when (``shadow_ms``) and the nodes others may use meanwhile (``allowed``)."""

    def __init__(self, shadow_ms: int, allowed: BoolArray) -> None:
        self.shadow_ms = shadow_ms
        self.allowed = allowed


class QueueDiscipline:
    """Runs each scheduling cycle in the scenario's discipline and order."""

    def __init__(self, sim: EngineHandle, fair_share: Priorities | None) -> None:
        self.sim = sim
        self.mode = sim.config.queueing
        self.depth = sim.config.backfill_depth
        self.fair_share = fair_share
        runtime = sim.job_table.column("runtime_s")
        #: Per job (submit order) the time the scheduler plans it to run: its time limit (the wall time it
        #: requested, else its partition's default), else its runtime.
        self.plan_ms: list[int] = [
            to_ms(limit) if limit is not None else to_ms(float(runtime[job]))
            for job, limit in enumerate(job_time_limits_s(sim))
        ]
        #: Per queue group: could it ever fit, on the whole cluster empty (None: not asked yet)?
        self._ever_fits: dict[int, bool] = {}
        #: Per queue group the nodes its pods may use (``partition_of``).
        self._partition: dict[int, bytes] = {}
        interval, window = sim.config.backfill_interval_s, sim.config.backfill_window_s
        self.window_ms = None if window is None else to_ms(window)
        #: Backfill passes apart from the main cycles (``backfill_interval_s``; None: every cycle backfills).
        self.interval_ms = to_ms(interval) if interval is not None and self.mode == "easy-backfill" else None
        self.next_pass_ms = self.interval_ms or 0
        #: A main cycle stopped at a blocked head with entries behind it since the last pass.
        self.behind_head = False
        #: Backfill passes run (``backfill_interval_s``).
        self.passes = 0
        sim.on.take_cycle(self.cycle)
        if self.interval_ms is not None:
            sim.on.tick.append(self.tick)
            sim.on.next_time.append(self.next_time)

    # -- order -----------------------------------------------------------------------------------------
    def ordered(self) -> list[tuple[QueueKey, int]]:
        """The waiting entries in the discipline's order."""
        entries = self.sim.queue.entries()
        if self.fair_share is None:
            entries.sort()
            return entries
        job_at = self.sim.book.job_at
        priorities = self.fair_share.priorities([job_at[key[2]] for key, _ in entries], self.sim.now)
        ranked = sorted(
            zip(entries, priorities, strict=True), key=lambda e: (e[0][0][0], -e[1], e[0][0][1], e[0][0][2])
        )
        return [entry for entry, _ in ranked]

    # -- the cycle ---------------------------------------------------------------------------------------
    def cycle(self, _: int) -> int:
        """One scheduling cycle (the main scheduler's alone with a backfill interval); returns the entries
        placed."""
        return self.run_cycle() if self.interval_ms is None else self.main_cycle()

    def tick(self, now: int) -> None:
        """A backfill pass when one is due (``backfill_interval_s``)."""
        interval = self.interval_ms
        if interval is None or now < self.next_pass_ms:
            return
        self.next_pass_ms = (now // interval + 1) * interval
        self.behind_head = False
        if len(self.sim.queue):
            self.passes += 1
            self.run_cycle()

    def next_time(self, t_event: int | None, _: int | None) -> int | None:
        """The next pass, while a main cycle left entries behind a blocked head (else it waits for the
        next event)."""
        if not self.behind_head or (t_event is not None and t_event <= self.next_pass_ms):
            return t_event
        return self.next_pass_ms

    def main_cycle(self) -> int:
        """Slurm's main scheduler between backfill passes: entries in order; once an entry of a partition
        (the nodes its pods may use) is left waiting, no later entry of that partition starts (an entry that
        could never fit blocks nothing)."""
        sim = self.sim
        blocked: set[bytes] = set()
        bound = 0
        for key, group in self.ordered():
            partition = self.partition_of(group)
            if partition in blocked:
                self.behind_head = True
                continue
            if sim.try_place(group, key[2]):
                sim.queue.take(group, key)
                bound += 1
            elif self.ever_fits(group):
                blocked.add(partition)
        return bound

    def partition_of(self, group: int) -> bytes:
        """The nodes the group's pods may use, as a key (memoised per group)."""
        known = self._partition.get(group)
        if known is None:
            sim = self.sim
            spec_id = sim.groups[group].spec_id
            mask = sim.schedulers[sim.spec_profile[spec_id]].static_mask(sim.compiled[spec_id])
            known = self._partition[group] = np.packbits(mask).tobytes()
        return known

    def run_cycle(self) -> int:
        """Place entries in order; the first that does not fit is the head: stop (``fifo``) or reserve its
        start and backfill behind it (``easy-backfill``)."""
        sim = self.sim
        queue, try_place = sim.queue, sim.try_place
        bound = 0
        failed: set[tuple[int, bool]] = set()  # (group, outside a reservation) that did not fit this cycle
        reservation: Reservation | None = None
        tried = 0
        for key, group in self.ordered():
            pod = key[2]
            if reservation is None:
                if (group, False) not in failed and try_place(group, pod):
                    queue.take(group, key)
                    bound += 1
                    continue
                failed.add((group, False))
                if self.mode == "best-effort-fifo" or not self.ever_fits(group):
                    continue
                if self.mode == "fifo":
                    break
                # None when it cannot be planned (its nodes are not there): then it holds nothing back
                reservation = self.reserve(group)
                continue
            tried += 1
            if tried > self.depth:
                break
            ends_in_time = sim.now + self.plan_ms[sim.book.job_at[pod]] <= reservation.shadow_ms
            memo = (group, not ends_in_time)
            if memo in failed:
                continue
            if ends_in_time:
                placed = try_place(group, pod)
            else:
                placed = sim.try_place_on(group, pod, reservation.allowed)
            if placed:
                queue.take(group, key)
                bound += 1
            else:
                failed.add(memo)
        return bound

    def ever_fits(self, group: int) -> bool:
        """Whether the entry's pods fit the cluster's nodes were they all empty (else it never starts and
        blocks nobody)."""
        known = self._ever_fits.get(group)
        if known is None:
            sim = self.sim
            spec = sim.groups[group]
            compiled = sim.compiled[spec.spec_id]
            cols = compiled.request_cols
            capacity = sim.state.allocatable[:, cols] // np.maximum(compiled.request[cols], 1)
            known = int(capacity.min(axis=1).sum()) >= max(spec.gang_size, 1) if len(cols) else True
            self._ever_fits[group] = known
        return known

    def reserve(self, group: int) -> Reservation | None:
        """The head's shadow time and the nodes outside its reservation (see the module docstring); None
        when the running pods' ends never free enough of its eligible nodes."""
        sim = self.sim
        state, book, now = sim.state, sim.book, sim.now
        spec = sim.groups[group]
        compiled = sim.compiled[spec.spec_id]
        scheduler = sim.schedulers[sim.spec_profile[spec.spec_id]]
        count = max(spec.gang_size, 1)
        cols = compiled.request_cols
        request = np.maximum(compiled.request[cols], 1)
        nodes = np.flatnonzero(scheduler.static_mask(compiled)).tolist()
        position = {node: k for k, node in enumerate(nodes)}
        free = state.free[nodes][:, cols].copy()
        fit = (free // request).min(axis=1) if len(cols) else np.zeros(len(nodes), dtype=np.int64)
        total = int(fit.sum())
        freed_at = [now] * len(nodes)
        shadow = now if total >= count else None
        if shadow is None:
            ends = []
            job_at, plan_ms = book.job_at, self.plan_ms
            for node in nodes:
                for p in sim.node_pods[node]:
                    job = job_at[p]
                    ends.append((max(book.bound_ms_at[p] + plan_ms[job], now), node, job))
            ends.sort()
            k = 0
            while k < len(ends) and shadow is None:
                t = ends[k][0]
                while k < len(ends) and ends[k][0] == t:
                    _, node, job = ends[k]
                    row = position[node]
                    free[row] += sim.compiled[sim.spec_of(job)].request[cols]
                    new_fit = int((free[row] // request).min())
                    total += new_fit - int(fit[row])
                    fit[row] = new_fit
                    freed_at[row] = t
                    k += 1
                if total >= count:
                    shadow = t
        if shadow is None or (self.window_ms is not None and shadow - now > self.window_ms):
            return None
        allowed = np.ones(state.n, dtype=bool)
        left = count
        for row in sorted(range(len(nodes)), key=lambda r: (-freed_at[r], nodes[r])):
            if left <= 0:
                break
            if fit[row] > 0:
                allowed[nodes[row]] = False
                left -= int(fit[row])
        return Reservation(shadow, allowed)
