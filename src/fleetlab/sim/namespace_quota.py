"""Namespace ResourceQuota and LimitRange in the run: the API server admits or refuses every pod a
controller creates, and the controller creates the refused ones again with backoff.

A pod is created when its job's pods join the scheduling queue (on arrival, on a Kueue admission, after
an eviction, on a service scale-up): the ``create`` hook. The ResourceQuota admission plugin
(``admission/resource_quota.admit_charges``) checks it against every quota of its namespace whose scopes
match it; the pod shape's charges are computed once per job shape from its pod manifest
(``admission/pod_manifest``, LimitRange defaults already applied by sim/limit_range_defaults.py). An
admitted pod holds its charge until it is gone — succeeded, failed, evicted or deleted (the ``gone``
hook); quota counts pending pods too. A refused pod is not created: its controller's sync failed, and it
syncs again after its work queue's backoff for the n-th failed sync in a row — the Job controller
1 s · 2^(n−1) capped at 1 min, the ReplicaSet controller (service replicas) 5 ms · 2^(n−1) capped at
1000 s (``admission/resource_quota.ControllerBackoff``) —, or sooner when one of the job's pods changes
(is created, bound, started or gone): the Job controller syncs 1 s after a pod event, the ReplicaSet
controller at once; a sync that creates every pod resets the count. A gang's pods are created one by one
and hold their charges, but the gang is queued only when all exist. A pod that breaks a LimitRange
min / max / ratio is refused for good (nothing about it changes between retries) and stays pending.

The time a pod spends refused is its namespace-quota wait, part of its queue wait; a job's is the
largest of its pods' (``namespace_quota_wait_s``). Retries are optional events: in a run without a
horizon, once nothing is left to arrive, run or boot and every retry would be refused again, the run
ends with the pods pending and the API server's message in the pending table (``blocked_by``
``quota (namespace)`` or ``limit-range``).
``count/pods`` counts pods until they end (finished pods are taken as cleaned up at once).

Subscribes to ``create``, ``bind``, ``start``, ``gone``, one optional event kind and ``run_end``.
May change: queues the pods it admits on a retry (``enqueue``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from fleetlab.admission.limit_range import apply_limit_ranges
from fleetlab.admission.pod_manifest import pod_manifest
from fleetlab.admission.resource_quota import (
    JOB_CONTROLLER_BACKOFF,
    REPLICASET_CONTROLLER_BACKOFF,
    ControllerBackoff,
    QuotaCharge,
    admit_charges,
    quota_charges,
)
from fleetlab.model.resource_quota import LimitRange, ResourceQuota
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.result import PendingJob

#: The pending verdicts of pods the API server refuses at creation.
QUOTA_BLOCK = "quota (namespace)"
LIMIT_RANGE_BLOCK = "limit-range"
Usage = dict[str, Fraction]
#: How soon a controller syncs after an event on one of its pods: the Job controller batches pod events
#: for 1 s (``syncJobBatchPeriod``), the ReplicaSet controller syncs at once.
JOB_POD_EVENT_MS = 1000
REPLICASET_POD_EVENT_MS = 0


@dataclass(frozen=True)
class _Shape:
    """What the API server checks for the pods of one job shape: its namespace, its quota charges and the
    LimitRange problems that refuse it for good."""

    namespace: str
    charges: tuple[QuotaCharge, ...]
    limit_problems: tuple[str, ...]
    #: The controller creating the pods: its sync backoff and how soon a pod event makes it sync.
    backoff: ControllerBackoff = JOB_CONTROLLER_BACKOFF
    pod_event_ms: int = JOB_POD_EVENT_MS


class NamespaceQuota:
    """Quota usage per namespace, the pods refused at creation and their controllers' retries."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        self.quotas: dict[str, list[ResourceQuota]] = {}
        self.ranges: dict[str, list[LimitRange]] = {}
        for policy in sim.resolved.scenario.namespace_policies:
            if isinstance(policy, ResourceQuota):
                self.quotas.setdefault(policy.metadata.namespace, []).append(policy)
            else:
                self.ranges.setdefault(policy.metadata.namespace, []).append(policy)
        #: Per namespace, per quota name what it uses now (its status.used).
        self.used: dict[str, dict[str, Usage]] = {ns: {} for ns in self.quotas}
        self._template: list[int] = sim.job_table.column("template").tolist()
        self._shapes: dict[int, _Shape | None] = {}
        n_pods = sim.book.n_pods
        #: Per pod what it holds of its namespace's quotas (None: not created, or gone).
        self.charged: list[dict[str, Usage] | None] = [None] * n_pods
        #: Per pod since when it is refused (-1: not now) and the refused time closed so far.
        self.refused_since = np.full(n_pods, -1, dtype=np.int64)
        self.refused_ms = np.zeros(n_pods, dtype=np.int64)
        #: Per job: its refused pods waiting for the next sync, failed syncs in a row, the last message,
        #: when its next sync is due and that sync's token (a sync rescheduled sooner leaves the old stale).
        self.held: dict[int, set[int]] = {}
        self.failures: dict[int, int] = {}
        self.message: dict[int, tuple[str, str]] = {}
        self.next_sync: dict[int, tuple[int, int]] = {}
        self._tokens = 0
        #: Controller syncs in which the API server refused a pod.
        self.refusals = 0
        on = sim.on
        self.retry_kind = on.event_kind(self.retry, stale=self.retry_is_stale, quiet=self.quiet)
        on.create.append(self.create)
        on.gone.append(self.gone)
        on.bind.append(self.bound)
        on.start.append(self.started)
        on.run_end.append(self.finish)

    # -- the pod shape ---------------------------------------------------------------------------------
    def _shape(self, job: int) -> _Shape | None:
        """The job's shape as the API server checks it, built once per template (None: nothing checks it)."""
        template = self._template[job]
        if template in self._shapes:
            return self._shapes[template]
        spec = self.sim.job_table.templates[template]
        quotas, ranges = self.quotas.get(spec.namespace, []), self.ranges.get(spec.namespace, [])
        shape = None
        if quotas or ranges:
            manifest, problems = apply_limit_ranges(pod_manifest(spec), ranges)
            charges = tuple(quota_charges(manifest, quotas))
            if charges or problems:
                shape = _Shape(spec.namespace, charges, tuple(problems))
                if spec.service is not None:  # a service's replicas: a ReplicaSet creates them
                    shape = replace(
                        shape, backoff=REPLICASET_CONTROLLER_BACKOFF, pod_event_ms=REPLICASET_POD_EVENT_MS
                    )
        self._shapes[template] = shape
        return shape

    # -- creation --------------------------------------------------------------------------------------
    def create(self, job: int, pods: list[int]) -> list[int]:
        """One sync of the job's controller: the pods the API server admits now; the others are held for
        the next sync (a gang: none are queued until all are admitted)."""
        shape = self._shape(job)
        if shape is None:
            return pods
        sim = self.sim
        now = sim.now
        if shape.limit_problems:
            self._refuse(job, pods, LIMIT_RANGE_BLOCK, "; ".join(shape.limit_problems), shape, retry=False)
            return []
        used = self.used[shape.namespace]
        created: list[int] = []
        refused: list[int] = []
        message = ""
        new = 0
        for pod in pods:
            if self.charged[pod] is not None:
                created.append(pod)  # a gang pod created at an earlier sync
                continue
            decision = admit_charges(shape.charges, used)
            if not decision.admitted:
                refused.append(pod)
                message = decision.message
                continue
            self._charge(pod, used, decision.charged or {})
            new += 1
            if self.refused_since[pod] >= 0:
                self.refused_ms[pod] += now - self.refused_since[pod]
                self.refused_since[pod] = -1
                self._unhold(job, pod)
            created.append(pod)
        if not refused:
            self.failures.pop(job, None)  # the work queue forgets the job
            self.message.pop(job, None)
            return pods
        self._refuse(job, refused, QUOTA_BLOCK, message, shape, retry=True)
        if new:  # the pods it did create are events the controller hears
            self._sync_at(job, now + shape.pod_event_ms)
        gang = sim.groups[sim.group_of(job)].gang_size > 0
        return [] if gang else created

    def _charge(
        self, pod: int, used: dict[str, Usage], charged: Mapping[str, Mapping[str, Fraction]]
    ) -> None:
        charge = {name: dict(delta) for name, delta in charged.items()}
        for name, delta in charge.items():
            _add(used.setdefault(name, {}), delta, 1)
        self.charged[pod] = charge

    def _refuse(
        self, job: int, pods: list[int], block: str, message: str, shape: _Shape, retry: bool
    ) -> None:
        """Hold refused pods (their wait starts now) and, for a quota refusal, the failed sync's requeue."""
        now = self.sim.now
        self.refusals += 1
        for pod in pods:
            if self.refused_since[pod] < 0:
                self.refused_since[pod] = now
        self.held.setdefault(job, set()).update(pods)
        self.message[job] = (block, message)
        if not retry:
            return
        failures = self.failures.get(job, 0) + 1
        self.failures[job] = failures
        self._sync_at(job, now + round(shape.backoff.delay_s(failures) * 1000))

    def _sync_at(self, job: int, at_ms: int) -> None:
        """The job's controller syncs at ``at_ms`` unless a sync is due sooner (a work queue keeps an
        item's earliest time)."""
        due = self.next_sync.get(job)
        if due is not None and due[0] <= at_ms:
            return
        self._tokens += 1
        self.next_sync[job] = (at_ms, self._tokens)
        self.sim.schedule(at_ms, self.retry_kind, job, self._tokens)

    def retry_is_stale(self, job: int, token: int) -> bool:
        """A sync that can do nothing: a sooner one replaced it, or no pod is held any more."""
        due = self.next_sync.get(job)
        return due is None or due[1] != token or not self.held.get(job)

    def retry(self, job: int, token: int) -> None:
        """The controller syncs: it creates the job's refused pods again (a gang: the whole job is tried)."""
        if self.retry_is_stale(job, token):
            return
        del self.next_sync[job]
        sim = self.sim
        pods = sorted(self.held.pop(job))
        if sim.groups[sim.group_of(job)].gang_size > 0:
            sim.enqueue(job)
        else:
            sim.enqueue(job, pods)

    def quiet(self) -> bool:
        """Syncs can change nothing: a run without a horizon has nothing left to arrive, bound, queued or
        booting (so no quota can come free) and no held job's sync would pass the quota as it is. With a
        horizon the syncs go on to it."""
        sim = self.sim
        if sim.horizon_ms is not None or sim.submissions_left or sim.bound_pods or len(sim.queue):
            return False
        if sim.booting:
            return False
        for job in self.held:
            shape = self._shape(job)
            if shape is None or shape.limit_problems or self.failures.get(job) is None:
                continue
            if admit_charges(shape.charges, self.used[shape.namespace]).admitted:
                return False
        return True

    # -- pod events ----------------------------------------------------------------------------------------
    def _pod_event(self, pod: int) -> None:
        """An event on a pod whose job has pods held: its controller syncs soon."""
        job = int(self.sim.book.job[pod])
        if job in self.held and job in self.failures:
            shape = self._shape(job)
            assert shape is not None
            self._sync_at(job, self.sim.now + shape.pod_event_ms)

    def started(self, pod: int, _wall_ms: int) -> None:
        """A pod started running (a status update its controller hears)."""
        self._pod_event(pod)

    def gone(self, pod: int) -> None:
        """A pod is gone: its charge is released; a refused pod stops waiting (its job no longer wants it)."""
        charge = self.charged[pod]
        if charge is not None:
            self.charged[pod] = None
            used = self.used[self._namespace(pod)]
            for name, delta in charge.items():
                _add(used[name], delta, -1)
        if self.refused_since[pod] >= 0:
            self.refused_ms[pod] += self.sim.now - self.refused_since[pod]
            self.refused_since[pod] = -1
            job = int(self.sim.book.job[pod])
            self._unhold(job, pod)
            if job not in self.held:  # its controller no longer wants the pods (Kueue suspended the job)
                self.failures.pop(job, None)
                self.next_sync.pop(job, None)
        self._pod_event(pod)

    def _unhold(self, job: int, pod: int) -> None:
        held = self.held.get(job)
        if held is not None:
            held.discard(pod)
            if not held:
                del self.held[job]

    def bound(self, pod: int, node: int, *_: object) -> None:
        """A pod was bound. One bound before the run (a snapshot's) exists already: charged without a
        check."""
        if self.charged[pod] is not None:
            self._pod_event(pod)
            return
        shape = self._shape(int(self.sim.book.job[pod]))
        if shape is not None and not shape.limit_problems:
            self._charge(pod, self.used[shape.namespace], {c.quota: c.delta for c in shape.charges})

    def _namespace(self, pod: int) -> str:
        shape = self._shape(int(self.sim.book.job[pod]))
        assert shape is not None
        return shape.namespace

    # -- results -----------------------------------------------------------------------------------------
    def wait_ms(self, end_ms: int) -> np.ndarray:
        """Per job (submit order) the largest namespace-quota wait of its pods, open waits to the end."""
        since = self.refused_since
        per_pod = self.refused_ms + np.where(since >= 0, np.maximum(end_ms - since, 0), 0)
        starts = self.sim.book.first_pod[:-1]
        if not len(starts):
            return np.zeros(0, dtype=np.int64)
        return np.asarray(np.maximum.reduceat(per_pod, starts), dtype=np.int64)

    def finish(self, parts: ResultParts) -> None:
        """The namespace-quota wait per job, and the refused pods in the pending table."""
        parts.namespace_quota_wait_ms = self.wait_ms(parts.end_ms)
        if self.held:
            parts.pending_notes.append(self.annotate)

    def annotate(self, pending: list[PendingJob]) -> list[PendingJob]:
        """Jobs with pods refused at creation: the API server's message, merged with the scheduler's row of
        the job's created pods when it has one."""
        sim = self.sim
        refused: dict[str, PendingJob] = {}
        for job, pods in self.held.items():
            block, message = self.message[job]
            job_id = str(sim.job_table.ids[job].as_py())
            retry = ""
            if block == QUOTA_BLOCK:
                shape, failures = self._shape(job), self.failures[job]
                assert shape is not None
                delay = shape.backoff.delay_s(failures)
                retry = f"; {failures} failed sync(s) in a row: its controller retries after {delay:g} s"
            refused[job_id] = PendingJob(
                job_id,
                len(pods),
                f'pods "{job_id}" is forbidden: {message}',
                block,
                f"{len(pods)} pod(s) refused at creation{retry}",
            )
        out: list[PendingJob] = []
        for row in pending:
            mine = refused.pop(row.job_id, None)
            if mine is None:
                out.append(row)
                continue
            out.append(
                replace(
                    mine,
                    pods_pending=mine.pods_pending + row.pods_pending,
                    message=f"{mine.message}; {row.message}",
                    detail=f"{mine.detail}; the created pods: {row.blocked_by}, {row.detail}",
                )
            )
        out.extend(refused.values())
        out.sort(key=lambda p: p.job_id)
        return out


def _add(into: Usage, delta: dict[str, Fraction], sign: int) -> None:
    for name, amount in delta.items():
        into[name] = into.get(name, Fraction(0)) + sign * amount
