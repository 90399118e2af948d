"""Kueue admission checks in the run: a workload of a ClusterQueue with a provisioning AdmissionCheck
reserves quota, then waits for its ProvisioningRequest before its pods reach kube-scheduler.

Kueue's provisioning controller (v0.13 line) makes one ProvisioningRequest per check when the workload
reserves quota (``admission/provisioning.request_needed``: only when one of the check's
``managedResources`` is requested, or always with none). The Cluster Autoscaler looks at it in its next
loop (every ``scan_interval``, 10 s) and answers by class (``admission/provisioning.autoscaler_conditions``):

* ``check-capacity.autoscaling.x-k8s.io``: Provisioned when every pod of the workload fits the ready
  nodes' free room now (first fit over the nodes that pass the scheduler's filters); otherwise not yet,
  and the autoscaler looks again each loop;
* ``best-effort-atomic-scale-up.autoscaling.x-k8s.io``: Provisioned when the pods fit now, or when one
  scale-up of one autoscaled pool holds all those that do not (``Autoscaler.provision``: the pool's max
  size, the GPU quota, back-off and stockouts apply; the nodes are requested at once and boot as any
  scale-up, Provisioned when requested); otherwise nothing is added and the autoscaler looks again each
  loop.

With the parameter ``noRetry: "true"`` a request that finds nothing Fails, and Kueue makes a new one after
``backoffBaseSeconds · 2^(n−1)`` (at most ``backoffMaxSeconds``) while attempts ≤ ``backoffLimitCount``,
then rejects the workload: it is deactivated, its quota released, and it stays pending
(``admission/provisioning.check_state``). The workload keeps its quota reservation while it waits. When
every check is Ready Kueue admits it and its pods are created.

The time from quota reservation to admission (or to the end, or to an eviction of the reservation) is the
job's provisioning wait, summed over reservations: its own bucket of the queue wait (``provisioning_wait_s``).
Checks of other controllers, provisioning checks whose parameters name no ProvisioningRequestConfig (the
loader warns about them) and requests of other classes (a cloud's queued provisioning) count as Ready at
once. Capacity found is booked for 10 minutes: a
later request does not count it as free while the booked pods are not on their nodes. The pods are
created as soon as every check is Ready (a booking that expires before admission is not modelled).

Subscribes to ``gone`` (an evicted reservation), one optional event kind (the autoscaler's looks) and
``run_end``; holds the Kueue bridge's admissions through its gate.
May change: asks the Kueue bridge to reserve, start and release workloads and the autoscaler to scale up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fleetlab.admission.manager import Admission
from fleetlab.admission.provisioning import (
    ATOMIC_SCALE_UP,
    BOOKING_S,
    CHECK_CAPACITY,
    autoscaler_conditions,
    check_state,
    request_needed,
    retry_delay_s,
)
from fleetlab.model.kueue_extra import PROVISIONING_CONTROLLER, AdmissionCheck, ProvisioningRequestConfig
from fleetlab.model.queues import QueueConfig
from fleetlab.placement.framework import CompiledPod
from fleetlab.sim.autoscaler import Autoscaler
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.kueue_bridge import KueueBridge
from fleetlab.sim.result import PendingJob

#: The pending verdict of workloads held by an admission check.
PROVISIONING_BLOCK = "provisioning"


@dataclass(frozen=True)
class ProvisioningCheck:
    """One provisioning AdmissionCheck of a ClusterQueue with the ProvisioningRequestConfig it names;
    ``flavors``: the flavors it applies to (empty: all), from ``admissionChecksStrategy``."""

    name: str
    config: ProvisioningRequestConfig
    flavors: frozenset[str] = frozenset()


@dataclass
class _Waiting:
    """A workload with quota reserved, waiting for its checks: per check its request's attempt, which are
    Ready, and the last message."""

    checks: tuple[ProvisioningCheck, ...]
    token: int
    attempts: dict[str, int] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)
    message: str = ""
    rejected: bool = False
    #: The cluster as the last look found it when every request was left waiting with no retry in
    #: progress (None otherwise): the next look can only answer the same while it is unchanged.
    settled: tuple[int, ...] | None = None
    #: What the last look read (``_look_key``), when the look changed none of it and left every request
    #: waiting, and until when that answer holds (the next booking expiry or pool back-off end): a look
    #: meeting the same key before then would answer the same, so it is skipped.
    unchanged: tuple[object, ...] | None = None
    unchanged_until_ms: int = 0


def provisioning_checks(config: QueueConfig) -> dict[str, tuple[ProvisioningCheck, ...]]:
    """Per ClusterQueue its provisioning checks that name a ProvisioningRequestConfig of the scenario."""
    checks = {o.name: o for o in config.ignored if isinstance(o, AdmissionCheck)}
    configs = {o.name: o for o in config.ignored if isinstance(o, ProvisioningRequestConfig)}
    out: dict[str, tuple[ProvisioningCheck, ...]] = {}
    for cq in config.cluster_queues:
        named: list[tuple[str, frozenset[str]]] = [(n, frozenset()) for n in cq.spec.admission_checks]
        strategy = cq.spec.admission_checks_strategy or {}
        for rule in strategy.get("admissionChecks") or []:
            if isinstance(rule, dict) and isinstance(rule.get("name"), str):
                named.append((rule["name"], frozenset(str(f) for f in rule.get("onFlavors") or [])))
        found = []
        for name, flavors in named:
            check = checks.get(name)
            if check is None or check.spec.controller_name != PROVISIONING_CONTROLLER:
                continue
            params = check.spec.parameters
            if params is None or params.kind != "ProvisioningRequestConfig" or params.name not in configs:
                continue
            if configs[params.name].spec.provisioning_class_name not in (CHECK_CAPACITY, ATOMIC_SCALE_UP):
                continue  # a cloud's own class (queued provisioning): not modelled, Ready at once
            found.append(ProvisioningCheck(name, configs[params.name], flavors))
        if found:
            out[cq.name] = tuple(found)
    return out


class AdmissionChecks:
    """The provisioning checks of the run's ClusterQueues, and the workloads they hold."""

    def __init__(
        self,
        sim: EngineHandle,
        kueue: KueueBridge,
        checks: dict[str, tuple[ProvisioningCheck, ...]],
        autoscaler: Autoscaler | None,
    ) -> None:
        self.sim = sim
        self.kueue = kueue
        self.checks = checks
        self.autoscaler = autoscaler
        self.interval_ms = max(1, to_ms(sim.resolved.scenario.cluster.autoscaler.scan_interval))
        n_jobs = len(sim.job_table)
        self.waited_ms = np.zeros(n_jobs, dtype=np.int64)
        self.since_ms = np.full(n_jobs, -1, dtype=np.int64)
        self.waiting: dict[int, _Waiting] = {}
        self._template: list[int] = sim.job_table.column("template").tolist()
        #: Jobs whose request was Provisioned, until when the autoscaler keeps their capacity booked.
        self.booked: dict[int, int] = {}
        #: ProvisioningRequests made and those the autoscaler Provisioned (counted once each).
        self.requests = 0
        self.provisioned = 0
        #: Bumped when a booking is made: a new booking takes room other requests counted on.
        self.booking_generation = 0
        #: Looks that read the cluster, and those skipped because nothing they read had changed.
        self.looks = 0
        self.skipped_looks = 0
        kueue.gate = self.gate
        on = sim.on
        self.look_kind = on.event_kind(self.look, stale=self.look_is_stale, quiet=self.quiet)
        on.gone.append(self.gone)
        on.run_end.append(self.finish)

    # -- Kueue reserved quota ------------------------------------------------------------------------------
    def gate(self, job: int, admission: Admission) -> bool:
        """Kueue reserved quota for the job: hold it while provisioning checks of its ClusterQueue apply."""
        checks = self._applicable(job, admission)
        if not checks:
            return False
        kueue, now = self.kueue, self.sim.now
        kueue.reserve(job, admission)
        waiting = _Waiting(checks, int(kueue.admissions[job]), {c.name: 1 for c in checks})
        self.waiting[job] = waiting
        self.requests += len(checks)
        self.since_ms[job] = now
        self._look_at(job, now)
        return True

    def _applicable(self, job: int, admission: Admission) -> tuple[ProvisioningCheck, ...]:
        checks = self.checks.get(admission.cluster_queue, ())
        if not checks:
            return ()
        flavors = set(KueueBridge.flavor_names(admission))
        requests = self.sim.job_table.templates[self._template[job]].requests
        names = [name for name, amount in requests.items() if amount > 0]
        return tuple(
            c
            for c in checks
            if (not c.flavors or c.flavors & flavors)
            and request_needed([names], c.config.spec.managed_resources)
        )

    def _look_at(self, job: int, at_ms: int) -> None:
        """The autoscaler looks at the job's requests in its first loop at or after ``at_ms``."""
        tick = -(-at_ms // self.interval_ms) * self.interval_ms
        self.sim.schedule(tick, self.look_kind, job, self.waiting[job].token)

    def look_is_stale(self, job: int, token: int) -> bool:
        """A look for a reservation that is gone (evicted, admitted, rejected)."""
        waiting = self.waiting.get(job)
        return waiting is None or waiting.token != token or waiting.rejected

    # -- the autoscaler looks --------------------------------------------------------------------------------
    def look(self, job: int, token: int) -> None:
        """One autoscaler loop over the job's requests, and Kueue's answer to their conditions."""
        if self.look_is_stale(job, token):
            return
        waiting = self.waiting[job]
        sim = self.sim
        delay_ms = self.interval_ms
        key = self._look_key()
        if waiting.unchanged == key and sim.now < waiting.unchanged_until_ms:
            self.skipped_looks += 1
            self._look_at(job, sim.now + delay_ms)
            return
        self.looks += 1
        waiting.settled = None
        waiting.unchanged = None
        settled = True
        for check in waiting.checks:
            if check.name in waiting.ready:
                continue
            spec = check.config.spec
            unplaced = self._unplaced(job)
            fits_now = not unplaced
            scaled = False
            if not fits_now and spec.provisioning_class_name == ATOMIC_SCALE_UP and self.autoscaler:
                scaled = self.autoscaler.provision(job, self._compiled(job), unplaced)
            conditions = autoscaler_conditions(
                spec.provisioning_class_name, fits_now, scaled, spec.parameters
            )
            attempt = waiting.attempts[check.name]
            state, message = check_state(conditions, attempt, spec.retry_strategy, admitted=False)
            if state == "Ready":
                waiting.ready.add(check.name)
                self.provisioned += 1
                self.booked[job] = sim.now + round(BOOKING_S * 1000)
                self.booking_generation += 1
            elif state == "Retry":
                settled = False
                waiting.attempts[check.name] = attempt + 1
                self.requests += 1
                delay_ms = max(delay_ms, round(retry_delay_s(attempt, spec.retry_strategy) * 1000))
                waiting.message = f'admission check "{check.name}": {message}'
            elif state == "Rejected":
                self._reject(job, waiting, f'admission check "{check.name}" rejected the workload: {message}')
                return
            else:
                last = next((c.message for c in conditions if c.type == "Provisioned"), "")
                waiting.message = f'admission check "{check.name}": {last}'.rstrip(": ")
        if len(waiting.ready) == len(waiting.checks):
            self._close(job)
            del self.waiting[job]
            self.kueue.start(job)
            return
        if settled:
            waiting.settled = self._cluster_key()
            if self._look_key() == key:
                waiting.unchanged = key
                waiting.unchanged_until_ms = self._answer_until()
        self._look_at(job, sim.now + delay_ms)

    def _look_key(self) -> tuple[object, ...]:
        """All a waiting look reads besides the clock: the cluster (``_cluster_key``), room held by no pod,
        the bookings made, and the pools' back-offs."""
        backoff = tuple(self.autoscaler.backoff_until.items()) if self.autoscaler is not None else ()
        return (*self._cluster_key(), self.sim.state.hold_generation, self.booking_generation, backoff)

    def _answer_until(self) -> int:
        """When the clock alone changes a look's answer: the next booking expiry or back-off end."""
        now = self.sim.now
        ends = [until for until in self.booked.values() if until > now]
        if self.autoscaler is not None:
            ends.extend(t for t in self.autoscaler.backoff_until.values() if t > now)
        return min(ends, default=1 << 62)

    def _cluster_key(self) -> tuple[int, ...]:
        """What a look depends on: binds, releases, node changes, the scheduling queue, booting nodes."""
        sim = self.sim
        state = sim.state
        return (
            sim.placements,
            state.release_generation,
            state.topology_generation,
            len(sim.queue),
            sim.booting,
        )

    def _compiled(self, job: int) -> CompiledPod:
        return self.sim.compiled[self.sim.spec_of(job)]

    def _pods(self, job: int) -> list[int]:
        book = self.sim.book
        return [p for p in book.pods_of(job) if book.end_ms[p] < 0]

    def _unplaced(self, job: int) -> list[int]:
        """The job's unfinished pods that do not fit the ready nodes' free room now, once the capacity
        booked for Provisioned requests whose pods are not bound yet is taken (first fit, in node order,
        over the nodes that pass the scheduler's filters for one pod)."""
        room: dict[int, NDArray[np.int64]] = {}
        now, book = self.sim.now, self.sim.book
        for other, until in list(self.booked.items()):
            pods = [p for p in self._pods(other) if book.node[p] < 0]
            if until <= now or not pods:
                del self.booked[other]  # booking expired, or its pods are on their nodes
                continue
            self._fit(other, pods, room)
        return self._fit(job, self._pods(job), room)

    def _fit(self, job: int, pods: list[int], room: dict[int, NDArray[np.int64]]) -> list[int]:
        """First-fit ``pods`` onto ``room`` (filled from the nodes' free room as they are first used,
        changed in place); the pods that do not fit."""
        sim = self.sim
        spec_id = sim.spec_of(job)
        compiled = sim.compiled[spec_id]
        nodes = [int(n) for n in sim.schedulers[sim.spec_profile[spec_id]].feasible_nodes(compiled)]
        request = compiled.request
        left = []
        for pod in pods:
            for n in nodes:
                free = room.get(n)
                if free is None:
                    free = room[n] = sim.state.free[n].copy()
                if (free >= request).all():
                    free -= request
                    break
            else:
                left.append(pod)
        return left

    def _reject(self, job: int, waiting: _Waiting, message: str) -> None:
        """Kueue deactivates the workload: its quota is released and it waits for nothing any more."""
        waiting.rejected = True
        waiting.message = message
        self.kueue.finished_at(job, self.sim.now)

    def _close(self, job: int) -> None:
        since = self.since_ms[job]
        if since >= 0:
            self.waited_ms[job] += self.sim.now - since
            self.since_ms[job] = -1

    def quiet(self) -> bool:
        """Looks can change nothing: a run without a horizon has nothing left to arrive, bound, queued or
        booting, no pool is backed off, and every waiting request's last look met the cluster as it is now
        and left it waiting with no retry in progress."""
        sim = self.sim
        if sim.horizon_ms is not None or sim.submissions_left or sim.bound_pods or len(sim.queue):
            return False
        if sim.booting:
            return False
        if self.autoscaler is not None and any(t > sim.now for t in self.autoscaler.backoff_until.values()):
            return False
        key = self._cluster_key()
        return all(w.rejected or w.settled == key for w in self.waiting.values())

    # -- evictions and results -------------------------------------------------------------------------------
    def gone(self, pod: int) -> None:
        """A pod of a workload waiting for its checks is taken away: Kueue evicted the reservation."""
        if not self.waiting:
            return
        job = int(self.sim.book.job[pod])
        waiting = self.waiting.get(job)
        if waiting is not None and not waiting.rejected:
            self._close(job)
            del self.waiting[job]

    def finish(self, parts: ResultParts) -> None:
        """The provisioning wait per job (an open one runs to the end), and the held jobs as pending."""
        since = self.since_ms
        parts.provisioning_wait_ms = self.waited_ms + np.where(
            since >= 0, np.maximum(parts.end_ms - since, 0), 0
        )
        sim = self.sim
        for job, waiting in sorted(self.waiting.items()):
            job_id = str(sim.job_table.ids[job].as_py())
            detail = "deactivated by its admission check" if waiting.rejected else "quota reserved"
            detail += f"; {sum(waiting.attempts.values())} ProvisioningRequest(s)"
            parts.pending.append(
                PendingJob(job_id, len(self._pods(job)), waiting.message, PROVISIONING_BLOCK, detail)
            )
