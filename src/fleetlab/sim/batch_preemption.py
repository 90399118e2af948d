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
wake-up in the same instant). Every preempted job is counted, with the pod-seconds and GPU-seconds it had
run (the work lost). Multi-node (gang) jobs can be victims; a gang preempting is not modelled (its pods do
not come through this hook). The search costs O(pods on the eligible nodes) per failed attempt of a job that
may preempt, nothing otherwise.

Subscribes to ``make_room``; registers a wake-up event kind.
May change: nothing itself; asks to evict (``evict_job_pods``) or fail (``fail``) the victims' pods.
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.batch_policy import BatchPreemption as Rules
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler
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
        sim.on.make_room.append(self.make_room)

    def make_room(self, pod: int, compiled: CompiledPod, scheduler: Scheduler) -> int:
        """Stop the preemptable jobs (in victim order) that let ``pod`` fit on one node; its node, or -1."""
        sim = self.sim
        book = sim.book
        job = book.job_at[pod]
        mine = self.class_of[job]
        if mine < 0 or not self.targets[mine]:
            return -1
        targets, class_of = self.targets[mine], self.class_of
        state = sim.state
        cols = compiled.request_cols
        want = compiled.request[cols]
        job_at, bound_ms = book.job_at, book.bound_ms_at
        candidates = sorted(
            (p for node in np.flatnonzero(scheduler.static_mask(compiled)).tolist()
             for p in sim.node_pods[node] if class_of[job_at[p]] in targets and job_at[p] != job
             and job_at[p] not in self.failing),
            key=lambda p: (self.priority[class_of[job_at[p]]], -bound_ms[p], p),
        )  # fmt: skip
        freed: dict[int, tuple[np.ndarray, list[int]]] = {}
        chosen: list[int] = []
        node = -1
        for p in candidates:
            at = int(book.node[p])
            free, on_node = freed.setdefault(at, (state.free[at, cols].copy(), []))
            free += sim.compiled[sim.spec_of(job_at[p])].request[cols]
            on_node.append(p)
            if (free >= want).all():
                node, chosen = at, on_node
                break
        if node < 0:
            return -1
        cancelled = False
        done: set[int] = set()
        for p in chosen:
            victim = book.job_at[p]
            if victim in done:
                continue
            done.add(victim)
            self._account(victim)
            if self.mode[class_of[victim]] == "cancel":
                cancelled = True
                self.cancelled_jobs += 1
                self.failing.add(victim)
                sim.fail(p)
            else:
                sim.evict_job_pods(p)
        if cancelled:  # the room frees at the end of this step: try again in the same instant
            sim.schedule(sim.now, self._wake, 0)
            return -1
        return node if bool(scheduler.fits_now(compiled)[node]) else -1

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
