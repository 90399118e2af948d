"""Slurm's preemption by QOS or partition tier (the scenario's ``batch_preemption``; model/batch_policy.py).

Slurm (https://slurm.schedmd.com/preempt.html, https://slurm.schedmd.com/qos.html): with
``PreemptType=preempt/qos`` a pending job may stop running jobs of the QOSes its own QOS lists in
``Preempt``; with ``preempt/partition_prio`` jobs of a partition with a higher ``PriorityTier`` may stop
those of lower tiers. What becomes of a stopped job is the ``PreemptMode`` of *its own* QOS (or partition),
else the cluster's: ``CANCEL`` ends it, ``REQUEUE`` puts it back in the queue to start again from the
beginning, ``SUSPEND`` would hold it in memory until the preemptor ends — which needs gang time-slicing and
which slurm.conf(5) calls incompatible with preempt/qos ("preempted jobs must be removed from the
resources"), so it is replayed as ``REQUEUE`` (docs/scenario.md says so); ``OFF``: never preempted.

Here: when a job's pod finds no node (and kube-scheduler's priority preemption found none), the running
pods of classes it may preempt on the nodes it may use are taken one at a time — lowest class priority
first, then youngest first (the latest started), as Slurm's preempt plugins order candidates — until one
node would hold the pod; the victims are those taken on that node (the others are not needed, as Slurm
drops preemptees outside the allocation). A requeued victim is evicted at once and
the pod is bound; a cancelled one fails at the end of the step and the pod is tried again at once (a
wake-up in the same instant).

``PreemptExemptTime`` (slurm.conf, or the victim's QOS): a job that has run less than that since it was
bound is not a candidate; a preemptor that found no room is tried again when the soonest such job stops
being exempt (Slurm's periodic scheduling passes try it again then, or within ``sched_interval``).
``GraceTime`` (the victim's QOS; preempt.html: "its end time is set to the current time plus GraceTime",
SIGTERM at once, SIGKILL at that end): a victim with a grace keeps running, its end event is scheduled at
now + grace, and the preemptor waits; at that end the victim is cancelled or requeued
as above (if it finished meanwhile, it is not preempted), and the pod is tried again in that step's cycle.
A signalled victim is taken first for any later preemptor (its room is on its way) and never signalled
twice. Every preempted job is counted, with the pod-seconds and GPU-seconds it had
run (the work lost). Multi-node (gang) jobs can be victims, and preemptors: a gang that found no plan takes
candidates in the same order until the nodes it may use would hold all its members (each node as many as
its free room plus what was taken there allows), then stops only the victims on the nodes that were needed
— those that gained room, in the order they did, until the gang fits — as Slurm drops the preemptees
outside the allocation; once requeued victims are off, the gang is planned again at once (a plan that
still fails, on topology, waits as any gang does). A gang for which room enough exists without victims
preempts nothing. The search costs O(pods on the eligible nodes) per failed attempt of a job that may
preempt, nothing otherwise.

Subscribes to ``make_room``, ``make_gang_room`` (and ``tick`` where a class has a grace time); registers a
wake-up event kind, an exemption end's and, with a grace time, the grace end's.
May change: the state's release generation (``note_room``, at an exemption's end); asks to evict
(``evict_job_pods``) or fail (``fail``) the victims' pods.
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.batch_policy import BatchPreemption as Rules
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle


class BatchPreemption:
    """Finds and stops the victims a preempting pod needs; counts them and the work they lose."""

    def __init__(self, sim: EngineHandle, rules: Rules) -> None:
        self.sim = sim
        index = {c.name: k for k, c in enumerate(rules.classes)}
        self.mode = [c.mode for c in rules.classes]
        self.priority = [c.priority for c in rules.classes]
        #: Per class the classes it may preempt (those whose mode is not ``off``).
        self.targets = [
            frozenset(index[n] for n in c.preempts if rules.classes[index[n]].mode != "off")
            for c in rules.classes
        ]
        table = sim.job_table
        of_template = [index.get(t.labels.get(rules.label, ""), -1) for t in table.templates]
        #: Per job (submit order) its class (-1: none).
        self.class_of: list[int] = [of_template[t] for t in table.column("template").tolist()]
        self.preempted_jobs = 0
        self.cancelled_jobs = 0
        self.lost_pod_s = 0.0
        self.lost_gpu_s = 0.0
        #: Cancelled victims (they fail at the end of the step they were chosen in).
        self.failing: set[int] = set()
        self._wake = sim.on.event_kind(lambda _i, _a: None)
        #: Moments a preemptor that found no room waits for: an exempt target stops being exempt (ms).
        self._exempt_ends: set[int] = set()
        self._exempt_over = sim.on.event_kind(self._exemption_ended)
        #: Per class, how long its jobs run before they may be victims (ms; PreemptExemptTime).
        self.exempt_ms = [
            to_ms(rules.exempt_time_s if c.exempt_time_s is None else c.exempt_time_s) for c in rules.classes
        ]
        #: Per class its victims' grace (ms; GraceTime).
        self.grace_ms = [to_ms(c.grace_time_s) for c in rules.classes]
        #: Victims in their grace time: job -> the attempt of the pod whose end was set.
        self.terminating: dict[int, int] = {}
        #: A victim was cancelled at its grace end: wake the run once more in this instant, after the step.
        self._rewake = False
        if any(self.grace_ms):
            self._end = sim.on.event_kind(self.grace_over, stale=self.grace_is_stale)
            sim.on.tick.append(self._wake_after_cancel)
        sim.on.make_room.append(self.make_room)
        sim.on.make_gang_room.append(self.make_gang_room)

    def make_room(self, pod: int, compiled: CompiledPod, scheduler: Scheduler) -> int:
        """Stop the preemptable jobs (in victim order) that let ``pod`` fit on one node; its node, or -1."""
        sim = self.sim
        found = self._candidates(pod, compiled, scheduler)
        if found is None:
            return -1
        candidates, exempt_until = found
        state, book = sim.state, sim.book
        cols = compiled.request_cols
        want = compiled.request[cols]
        freed: dict[int, tuple[np.ndarray, list[int]]] = {}
        chosen: list[int] = []
        node = -1
        for p in candidates:
            at = int(book.node[p])
            free, on_node = freed.setdefault(at, (state.free[at, cols].copy(), []))
            free += sim.compiled[sim.spec_of(book.job_at[p])].request[cols]
            on_node.append(p)
            if (free >= want).all():
                node, chosen = at, on_node
                break
        if node < 0:
            self._wait_for_exemption(exempt_until)
            return -1
        if not self._stop_all(chosen):
            return -1
        return node if bool(scheduler.fits_now(compiled)[node]) else -1

    def make_gang_room(self, pod: int, count: int, compiled: CompiledPod, scheduler: Scheduler) -> bool:
        """Stop the preemptable jobs (in victim order) that let ``count`` members of ``pod``'s gang fit on
        the nodes it may use (module docstring); True when their room is free now (requeued victims)."""
        sim = self.sim
        found = self._candidates(pod, compiled, scheduler)
        if found is None:
            return False
        candidates, exempt_until = found
        state, book = sim.state, sim.book
        cols = compiled.request_cols
        want = compiled.request[cols]
        asked = want > 0
        if not asked.any():
            return False  # asks for nothing: room is not what it lacks
        nodes = np.flatnonzero(scheduler.static_mask(compiled))
        base = (state.free[nodes][:, cols][:, asked] // want[asked]).min(axis=1).clip(min=0)
        room = int(base.sum())
        if room >= count:
            return False  # room enough without victims: the plan failed on something preemption cannot help
        # Per node the members it would hold; the nodes in the order victims first let them hold more.
        members_at = dict(zip(nodes.tolist(), base.tolist(), strict=True))
        gained: dict[int, None] = {}
        freed: dict[int, tuple[np.ndarray, list[int]]] = {}
        for p in candidates:
            at = int(book.node[p])
            free, on_node = freed.setdefault(at, (state.free[at, cols].copy(), []))
            free += sim.compiled[sim.spec_of(book.job_at[p])].request[cols]
            on_node.append(p)
            members = int((free[asked] // want[asked]).min())
            if members > members_at[at]:
                room += members - members_at[at]
                members_at[at] = members
                gained[at] = None
                if room >= count:
                    break
        if room < count:
            self._wait_for_exemption(exempt_until)
            return False
        # Only the victims on the nodes that were needed: those that gained, in order, until the gang fits.
        room -= sum(members_at[at] for at in gained)
        chosen: list[int] = []
        for at in gained:
            if room >= count:
                break
            room += members_at[at]
            chosen += freed[at][1]
        return self._stop_all(chosen)

    def _candidates(
        self, pod: int, compiled: CompiledPod, scheduler: Scheduler
    ) -> tuple[list[int], int] | None:
        """The running pods ``pod``'s job may preempt on the nodes it may use, in victim order, and the
        soonest an exempt one may be taken (ms; -1: none); None when its class preempts nothing."""
        sim = self.sim
        book = sim.book
        job = book.job_at[pod]
        mine = self.class_of[job]
        if mine < 0 or not self.targets[mine]:
            return None
        targets, class_of = self.targets[mine], self.class_of
        job_at, bound_ms, now, exempt = book.job_at, book.bound_ms_at, sim.now, self.exempt_ms
        ending = self.terminating
        candidates: list[int] = []
        exempt_until = -1
        for node in np.flatnonzero(scheduler.static_mask(compiled)).tolist():
            for p in sim.node_pods[node]:
                victim = job_at[p]
                if class_of[victim] not in targets or victim == job or victim in self.failing:
                    continue
                until = int(bound_ms[p]) + exempt[class_of[victim]]
                if until > now and victim not in ending:
                    exempt_until = until if exempt_until < 0 else min(exempt_until, until)
                    continue
                candidates.append(p)
        candidates.sort(
            key=lambda p: (job_at[p] not in ending, self.priority[class_of[job_at[p]]], -bound_ms[p], p)
        )
        return candidates, exempt_until

    def _wait_for_exemption(self, exempt_until: int) -> None:
        """No room: try again when the soonest exempt target may be taken."""
        if exempt_until > 0 and exempt_until not in self._exempt_ends:
            self._exempt_ends.add(exempt_until)
            self.sim.schedule(exempt_until, self._exempt_over, 0)

    def _stop_all(self, chosen: list[int]) -> bool:
        """Signal, cancel or requeue the jobs of the ``chosen`` pods; True when their room is free now."""
        sim = self.sim
        book, now = sim.book, sim.now
        ending, class_of = self.terminating, self.class_of
        waiting = cancelled = False
        done: set[int] = set()
        for p in chosen:
            victim = book.job_at[p]
            if victim in done:
                continue
            done.add(victim)
            if victim in ending:  # signalled already: its room frees when its grace ends
                waiting = True
                continue
            grace = self.grace_ms[class_of[victim]]
            if grace > 0:  # SIGTERM now, cancelled or requeued when the grace ends
                ending[victim] = int(book.attempt_at[p])
                sim.schedule(now + grace, self._end, p, ending[victim])
                waiting = True
            else:
                cancelled = self._stop(p) or cancelled
        if cancelled:  # the room frees at the end of this step: try again in the same instant
            sim.schedule(now, self._wake, 0)
        return not (waiting or cancelled)

    def _exemption_ended(self, _index: int, _attempt: int) -> None:
        """A target may be taken from now on: the waiting pods are tried again in this step's cycle."""
        self._exempt_ends.discard(self.sim.now)
        self.sim.state.note_room()

    def _stop(self, pod: int) -> bool:
        """Cancel or requeue the pod's job now; True when its room frees only at the end of the step."""
        sim = self.sim
        victim = sim.book.job_at[pod]
        self._account(victim)
        if self.mode[self.class_of[victim]] == "cancel":
            self.cancelled_jobs += 1
            self.failing.add(victim)
            sim.fail(pod)
            return True
        sim.evict_job_pods(pod)
        return False

    def grace_is_stale(self, pod: int, attempt: int) -> bool:
        """The victim ended (finished, failed, evicted) during its grace time."""
        book = self.sim.book
        job = book.job_at[pod]
        if attempt != book.attempt_at[pod] or book.end_ms_at[pod] >= 0 or bool(book.failed[pod]):
            if self.terminating.get(job) == attempt:
                del self.terminating[job]
            return True
        return False

    def grace_over(self, pod: int, attempt: int) -> None:
        """A victim's grace time is over: it is cancelled or requeued (the preemptor is tried again in this
        step's cycle)."""
        if self.grace_is_stale(pod, attempt):
            return
        self.terminating.pop(self.sim.book.job_at[pod], None)
        if self._stop(pod):  # cancelled: its room frees at the end of this step
            self._rewake = True

    def _wake_after_cancel(self, now: int) -> None:
        """After the events of a step in which a victim was cancelled: one more step in this instant, whose
        cycle sees the room (an event scheduled while the step's events run would be taken in this step)."""
        if self._rewake:
            self._rewake = False
            self.sim.schedule(now, self._wake, 0)

    def _account(self, victim: int) -> None:
        """Count a preempted job and the work its bound pods had done (lost: no checkpoint is kept)."""
        sim = self.sim
        book, now = sim.book, sim.now
        gpus = int(sim.compiled[sim.spec_of(victim)].request[sim.state.gpu_col])
        self.preempted_jobs += 1
        for p in book.pods_of(victim):
            if book.node[p] >= 0 and book.end_ms_at[p] < 0:
                held_s = max(now - book.bound_ms_at[p], 0) / 1000
                self.lost_pod_s += held_s
                self.lost_gpu_s += held_s * gpus
