"""The queue manager and Kueue's admission cycle (``shared/reference/queues.md`` §1.3; upstream
``pkg/cache/queue`` and ``pkg/scheduler/scheduler.go``).

Public API (what the simulator calls)::

    PodSetRequest(name, count, requests)          # requests: resource -> per-pod amount in integer units
    Workload(id, namespace, local_queue, priority, created_ms, podsets)
    Admission(workload_id, cluster_queue, flavors, borrowing, admitted_ms)
                                                  # flavors: podset -> resource -> flavor name

    m = AdmissionManager(config)                  # config: fleetlab.model.queues.QueueConfig
    m.submit(workload)                            # ValueError for an unknown LocalQueue or a bad workload
    m.cycle(now_ms) -> list[Admission]            # one scheduling cycle; admitted workloads reserve quota
    m.finish(workload_id)                         # quota released (job done); a pending workload is dropped
    m.evict(workload_id, now_ms)                  # quota released, requeued with timestamp = eviction time
    m.pending() -> list[(workload_id, reason)]    # Kueue's messages where they exist
    m.queue_status() -> {cq: {"flavor/resource": {nominal, usage, borrowed, lent,
                                                  borrowing_limit?, lending_limit?}}}
    m.has_work() -> bool                          # True when cycle() could admit or change something

Queues: one heap per ClusterQueue, ordered by priority (higher first), then timestamp (creation, or the
eviction time after :meth:`AdmissionManager.evict`), then submission order. A cycle takes one head per
ClusterQueue, nominates every head against the same state (flavor assignment, and preemption targets for
heads that need preemption), orders the entries classically (borrowing level ascending, so not-borrowing
first; then priority; then FIFO), and processes them one by one, re-checking fit, because earlier admissions
in the cycle consume quota ("Workload no longer fits after processing another workload").

Requeueing follows upstream ``RequeueIfNotPresent``: a ``StrictFIFO`` head that cannot be admitted stays at
the head and blocks the queue; a ``BestEffortFIFO`` head is set aside as inadmissible until quota is
released in its cohort tree (:meth:`finish`, :meth:`evict`), while heads skipped after nomination are
retried at once. Cheapness: a head whose answer cannot have changed (no usage change in its tree since it
failed) is not nominated again, so ``cycle()`` on an unchanged state does no flavor assignment at all.

A head that needs preemption but has no candidates reserves, for the rest of the cycle only, the quota it
could reclaim (upstream ``reserveCapacityForUnreclaimablePreempt``: unless ``reclaimWithinCohort: Any``,
min(request, nominal − usage), or up to ``nominal + borrowingLimit`` when it borrows), so later heads in the
cohort cannot take it.

Preemption hook (for ``admission/preemption.py``): pass ``AdmissionManager(config, preemption=strategy)``
where ``strategy`` implements :class:`PreemptionStrategy`:

* ``can_preempt(manager, workload, cluster_queue, amounts) -> PreemptionOutcome | None`` answers flavor
  assignment's question "what could preemption do to free ``amounts`` ({FlavorResource: total needed}) in
  this ClusterQueue?" (upstream ``SimulatePreemption``: Preempt / Reclaim and the borrowing level after it);
  None ranks the flavor as "preemption without candidates".
* ``targets(manager, nominee) -> victim workload ids`` for a nominated entry whose assignment needs
  preemption (upstream ``GetTargets``). With targets, the cycle checks overlap with targets already chosen in
  this cycle ("Workload has overlapping preemption targets with another workload"), re-checks fit with all
  chosen targets removed, then records a :class:`PreemptionRequest` (drained by :meth:`take_preemptions`)
  instead of admitting: the simulator evicts the victims (``evict(victim, now, keep_creation_timestamp=True)``
  matches Kueue, whose preempted workloads keep their creation timestamp) and the preemptor is admitted in a
  later cycle. Victims already requested and not yet released are not requested twice.

Fair sharing: ``AdmissionManager(config, fair_sharing=FairSharingConfig(...))`` (the Kueue Configuration's
``fairSharing``; None or ``enable: false`` keeps the classic order) orders the cycle's entries by the
fair-sharing tournament of :mod:`fleetlab.admission.fair_sharing` (lowest DRS after simulating the head's
admission, then priority, then timestamp; recomputed at every pop) and, as upstream
``canPreemptWhileBorrowing``, lets ClusterQueues with ``reclaimWithinCohort != Never`` preempt beyond nominal
(without fair sharing only ``borrowWithinCohort`` does).
Pair it with ``preemption=FairSharingPreemption(cfg.preemption_strategies)`` from ``admission/preemption.py``.
``manager.dominant_resource_share(name, cohort=False, request=None)`` reports a node's DRS.

Topology gate (Kueue TAS, ``sim/kueue_tas.py``): with ``AdmissionManager(config, topology=assign)``, a
head whose quota fits and needs no preemption is admitted only when ``assign(workload, cq, flavors)``
found (and recorded) a topology assignment; its message otherwise keeps it set aside as not fitting, as
Kueue's ``AssignTopology`` does, until :meth:`wake` (a domain gained room) or a quota release retries it.

Read-only views for the strategy: ``manager.tree`` (:class:`~fleetlab.admission.tree.ResourceTree`, with
``simulate_removal``), ``manager.rules[cq]``, ``manager.cluster_queue_spec(cq)``,
``manager.admitted_workloads()``, one ClusterQueue's by id ``manager.admitted_in(cq)``, and the index
``manager.admitted`` (:mod:`~fleetlab.admission.admitted_index`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Protocol

from fleetlab.admission.admitted_index import AdmittedIndex
from fleetlab.admission.fair_sharing import (
    DominantResourceShare,
    dominant_resource_share,
    pop_fair,
    weights_from_config,
)
from fleetlab.admission.flavors import (
    Assignment,
    AssignmentMode,
    CanPreempt,
    ClusterQueueRules,
    PodSetRequest,
    PreemptionOutcome,
    assign_flavors,
)
from fleetlab.admission.nomination_cache import NominationCache
from fleetlab.admission.queue_heap import ClusterQueueHeap
from fleetlab.admission.tree import FlavorResource, Node, ResourceTree
from fleetlab.admission.workloads import (
    Admission,
    AdmittedWorkload,
    Nominee,
    PreemptionRequest,
    Tracked,
    Workload,
)
from fleetlab.model.kueue_config import FairSharingConfig
from fleetlab.model.queues import ClusterQueue, QueueConfig

__all__ = [
    "NO_LONGER_FITS",
    "OVERLAPPING_TARGETS",
    "Admission",
    "AdmissionManager",
    "AdmittedWorkload",
    "NoPreemption",
    "Nominee",
    "PodSetRequest",
    "PreemptionRequest",
    "PreemptionStrategy",
    "Workload",
]

#: Assignment modes read per nominated head, bound once (an Enum class's member is a slow lookup).
_NO_FIT_MODE, _PREEMPT = AssignmentMode.NO_FIT, AssignmentMode.PREEMPT

#: Kueue's ``inadmissibleMsg`` strings (pkg/scheduler/scheduler.go).
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"

# Requeue reasons (upstream qcache.RequeueReason*), deciding immediate retry vs set aside.
_NO_FIT = "NoFit"
_NO_CANDIDATES = "PreemptionNoCandidates"
_FAILED_AFTER_NOMINATION = "FailedAfterNomination"
_PENDING_PREEMPTION = "PendingPreemption"


#: ``assign(workload, cluster_queue, flavors) -> None`` (assigned) or why the topology does not fit.
TopologyAssigner = Callable[[Workload, str, Mapping[str, Mapping[str, str]]], str | None]


class PreemptionStrategy(Protocol):
    """The preemption module's two answers; see the module docstring."""

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> PreemptionOutcome | None:
        """What preempting admitted workloads could do to free ``amounts`` for ``workload`` (None: no
        candidates)."""
        ...

    def targets(self, manager: AdmissionManager, nominee: Nominee) -> Sequence[str]:
        """Workload ids to evict so ``nominee`` fits (empty: no candidates)."""
        ...


class NoPreemption:
    """The default strategy: preemption never frees anything."""

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> PreemptionOutcome | None:
        """Never: there is nothing to preempt."""
        return None

    def targets(self, manager: AdmissionManager, nominee: Nominee) -> Sequence[str]:
        """No victims."""
        return ()


class AdmissionManager:
    """Kueue's queue manager and scheduler for one configuration; see the module docstring."""

    def __init__(
        self,
        config: QueueConfig,
        preemption: PreemptionStrategy | None = None,
        fair_sharing: FairSharingConfig | None = None,
        topology: TopologyAssigner | None = None,
    ) -> None:
        self.config = config
        self._topology = topology
        #: The Kueue Configuration's ``fairSharing`` when enabled, else None (classic ordering).
        self.fair_sharing = fair_sharing if fair_sharing is not None and fair_sharing.enable else None
        self.fair_weights = weights_from_config(config)
        self.tree = ResourceTree.from_config(config)
        fair = self.fair_sharing is not None
        self.rules: dict[str, ClusterQueueRules] = {
            cq.name: ClusterQueueRules.from_spec(cq, fair, config.resource_flavors)
            for cq in config.cluster_queues
        }
        self._specs: dict[str, ClusterQueue] = {cq.name: cq for cq in config.cluster_queues}
        self._local_queues = {lq.key: lq.spec.cluster_queue for lq in config.local_queues}
        self._queues = {
            name: ClusterQueueHeap(name, self._specs[name].spec.queueing_strategy == "StrictFIFO")
            for name in sorted(self._specs)
        }
        self._root_of: dict[str, Node] = {name: self.tree.cluster_queue(name).root() for name in self._queues}
        self._queue_roots = [(queue, id(self._root_of[name])) for name, queue in self._queues.items()]
        self._members: dict[int, list[str]] = {}
        for name, root in self._root_of.items():
            self._members.setdefault(id(root), []).append(name)
        self._generation: dict[int, int] = dict.fromkeys(self._members, 0)
        self._preemption: PreemptionStrategy = preemption or NoPreemption()
        self._tracked: dict[str, Tracked] = {}
        #: Admitted workloads per ClusterQueue in candidate order, read lazily by candidate search.
        self.admitted: AdmittedIndex[Tracked] = AdmittedIndex(list(self._queues))
        self._seq = 0
        self._requests: list[PreemptionRequest] = []
        self._requested_victims: set[str] = set()
        #: Nominations per pod-set shape and priority in the state they were made in (nomination_cache.py).
        self._nominations: NominationCache[tuple[Assignment, tuple[str, ...]]] = NominationCache()
        self._requested_version = 0
        self._newer_counts = {
            name: spec.spec.preemption.within_cluster_queue == "LowerOrNewerEqualPriority"
            for name, spec in self._specs.items()
        }
        self.cycles = self._assignments = 0
        #: Inside :meth:`_assign`, a number no other assignment had (0 outside), for a strategy's notes.
        self.assigning = 0

    # ---- views ---------------------------------------------------------------------------------------------

    def cluster_queue_spec(self, name: str) -> ClusterQueue:
        """The ClusterQueue object ``name`` (its preemption policy, strategy and quotas)."""
        return self._specs[name]

    def dominant_resource_share(
        self, name: str, *, cohort: bool = False, request: Mapping[FlavorResource, int] | None = None
    ) -> DominantResourceShare:
        """DRS (§1.6) of ClusterQueue ``name`` (or Cohort ``name``), with ``request`` added if given."""
        node = self.tree.cohorts[name] if cohort else self.tree.cluster_queue(name)
        return dominant_resource_share(self.tree, node, self.fair_weights, request)

    def admitted_workloads(self) -> dict[str, AdmittedWorkload]:
        """Every admitted workload by id, with its ClusterQueue and quota usage."""
        return {
            wid: AdmittedWorkload(t.workload, t.cluster_queue, dict(t.usage), t.admission)
            for wid, t in self._tracked.items()
            if t.state == "admitted" and t.admission is not None
        }

    def admitted_in(self, cluster_queue: str) -> list[AdmittedWorkload]:
        """The admitted workloads of one ClusterQueue, by id: candidate search reads only the queues its
        policies allow taking from, instead of every admitted workload at every nomination."""
        group = self.admitted.by_id.get(cluster_queue, {})
        return [
            AdmittedWorkload(t.workload, t.cluster_queue, t.usage, t.admission)
            for wid, t in sorted(group.items())
            if t.admission is not None
        ]

    def requested_victims(self) -> frozenset[str]:
        """Workloads already asked to be evicted and not yet released (Kueue orders them first)."""
        return frozenset(self._requested_victims)

    def take_preemptions(self) -> list[PreemptionRequest]:
        """Preemption requests issued since the last call (empty unless a preemption strategy is set)."""
        out, self._requests = self._requests, []
        return out

    # ---- input ---------------------------------------------------------------------------------------------

    def submit(self, workload: Workload) -> None:
        """Queue ``workload`` in the ClusterQueue its LocalQueue feeds."""
        key = (workload.namespace, workload.local_queue)
        if key not in self._local_queues:
            known = ", ".join(f"{ns}/{name}" for ns, name in sorted(self._local_queues)) or "none"
            raise ValueError(
                f"workload {workload.id!r}: LocalQueue {workload.namespace}/{workload.local_queue} "
                f"doesn't exist "
                f"(known LocalQueues: {known})"
            )
        if workload.id in self._tracked:
            raise ValueError(f"workload {workload.id!r} was already submitted")
        names: set[str] = set()
        for ps in workload.podsets:
            if ps.name in names:
                raise ValueError(f"workload {workload.id!r}: podset name {ps.name!r} is used twice")
            names.add(ps.name)
            if ps.count < 0 or any(v < 0 for v in ps.requests.values()):
                raise ValueError(
                    f"workload {workload.id!r}: podset {ps.name!r} has a negative count or request"
                )
        self._seq += 1
        tracked = Tracked(workload, self._local_queues[key], self._seq, workload.created_ms)
        self._tracked[workload.id] = tracked
        self._queues[tracked.cluster_queue].push(tracked)

    def reserve(
        self, workload: Workload, cluster_queue: str, flavors: dict[str, dict[str, str]], now_ms: int
    ) -> None:
        """Record ``workload`` as already admitted in ``cluster_queue`` with ``flavors`` (podset -> resource
        -> flavor), reserving its quota without a cycle: a snapshot's running workloads, or an upstream test's
        ``ReserveQuotaAt``. Its usage is each podset's count × request on the named flavor."""
        self.submit(workload)
        usage: dict[FlavorResource, int] = {}
        for ps in workload.podsets:
            for resource, amount in ps.requests.items():
                fr = FlavorResource(flavors[ps.name][resource], resource)
                usage[fr] = usage.get(fr, 0) + amount * ps.count
        tracked = self._tracked[workload.id]
        self._queues[cluster_queue].discard(workload.id)
        self.tree.add_cq_usage(cluster_queue, usage)
        self._generation[id(self._root_of[cluster_queue])] += 1
        tracked.state, tracked.usage = "admitted", usage
        tracked.admission = Admission(workload.id, cluster_queue, flavors, False, now_ms)
        self.admitted.add(workload.id, tracked, workload.priority, now_ms)

    def finish(self, workload_id: str) -> None:
        """The workload is done (or deleted): its quota is released, or it leaves the queue if pending."""
        tracked = self._get(workload_id)
        if tracked.state == "admitted":
            self._release(tracked)
        else:
            self._queues[tracked.cluster_queue].discard(workload_id)
        del self._tracked[workload_id]
        self._requested_victims.discard(workload_id)

    def evict(self, workload_id: str, now_ms: int, *, keep_creation_timestamp: bool = False) -> None:
        """Release an admitted workload's quota and requeue it, ordered from ``now_ms`` (Eviction timestamp).

        ``keep_creation_timestamp`` keeps the original order, as Kueue does for preempted workloads."""
        tracked = self._get(workload_id)
        if tracked.state != "admitted":
            raise ValueError(
                f"workload {workload_id!r} is not admitted (it is {tracked.state}); "
                "only admitted ones can be evicted"
            )
        self._release(tracked)
        self._requested_victims.discard(workload_id)
        self._seq += 1
        tracked.seq = self._seq
        if not keep_creation_timestamp:
            tracked.timestamp_ms = now_ms
        tracked.state, tracked.admission, tracked.usage = "queued", None, {}
        tracked.message, tracked.answer = f"Requeued after eviction at {now_ms} ms", None
        self._queues[tracked.cluster_queue].push(tracked)

    def tracks(self, workload_id: str) -> bool:
        """Whether the workload is queued or admitted (submitted and not finished)."""
        return workload_id in self._tracked

    def _get(self, workload_id: str) -> Tracked:
        try:
            return self._tracked[workload_id]
        except KeyError:
            raise ValueError(
                f"unknown workload {workload_id!r} (never submitted, or already finished)"
            ) from None

    def _release(self, tracked: Tracked) -> None:
        """Free quota and :meth:`wake` the tree, as Kueue's QueueInadmissibleWorkloads does."""
        self.tree.remove_cq_usage(tracked.cluster_queue, tracked.usage)
        self.admitted.remove(tracked.workload.id, tracked)
        self.wake(tracked.cluster_queue)

    def wake(self, cluster_queue: str) -> None:
        """Retry the set-aside heads of the ClusterQueue's cohort tree (quota was released there, or a
        topology domain it admits to gained room)."""
        root = id(self._root_of[cluster_queue])
        self._generation[root] += 1
        for name in self._members[root]:
            queue = self._queues[name]
            for wid in list(queue.inadmissible):
                other = self._tracked[wid]
                other.state = "queued"
                queue.push(other)
            queue.inadmissible.clear()

    # ---- the cycle -----------------------------------------------------------------------------------------

    def _heads(self) -> list[Tracked]:
        heads: list[Tracked] = []
        generation, tracked = self._generation, self._tracked
        for queue, root in self._queue_roots:
            wid = queue.head()
            if wid is None:
                continue
            blocked = queue.blocked
            if blocked is not None and blocked[0] == wid and blocked[1] == generation[root]:
                continue
            heads.append(tracked[wid])
        return heads

    def has_work(self) -> bool:
        """Whether ``cycle()`` could admit or change anything (some head's answer may have changed)."""
        return bool(self._heads())

    def _nominate(self, tracked: Tracked) -> Nominee:
        wl, cq = tracked.workload, tracked.cluster_queue
        key = tracked.nomination_key
        if key is None:
            workload_key: tuple[int, ...] = (wl.priority,)
            if self._newer_counts[cq]:
                workload_key += (wl.created_ms, tracked.timestamp_ms)
            key = (cq, self._nominations.shape(wl.podsets), workload_key)
            if not self._newer_counts[cq]:  # fixed for the workload's life
                tracked.nomination_key = key
        root = self._root_of[cq]
        state = (self.tree.version, self._generation[id(root)], self._requested_version)
        known = self._nominations.entries(id(root), state)
        answer = known.get(key)
        if answer is None:
            answer = known[key] = self._assign(tracked)
        return Nominee(wl, cq, tracked.timestamp_ms, answer[0], answer[1], seq=tracked.seq)

    def _assign(self, tracked: Tracked) -> tuple[Assignment, tuple[str, ...]]:
        """Flavor assignment and, when it needs preemption, the targets."""
        wl, cq, tree = tracked.workload, tracked.cluster_queue, self.tree
        hook: CanPreempt = partial(self._preemption.can_preempt, self, wl)
        self._assignments += 1
        self.assigning = self._assignments
        # Searches remove and re-add usage, leaving it as it was: the version is put back (answers stay good).
        version = tree.version
        try:
            assignment = assign_flavors(tree, self.rules[cq], wl.podsets, hook)
            if assignment.mode != _PREEMPT:
                return assignment, ()
            nominee = Nominee(wl, cq, tracked.timestamp_ms, assignment, seq=tracked.seq)
            return assignment, tuple(self._preemption.targets(self, nominee))
        finally:
            tree.version = version
            self.assigning = 0

    def cycle(self, now_ms: int) -> list[Admission]:
        """One scheduling cycle: heads → nominate → classic order → admit one by one, re-checking fit."""
        heads = self._heads()
        if not heads:
            return []
        self.cycles += 1
        generations = dict(self._generation)  # a head's answer is known for the state it was nominated in
        entries = [self._nominate(t) for t in heads]
        temporary: list[tuple[str, dict[FlavorResource, int]]] = []
        preempted: dict[str, tuple[str, Mapping[FlavorResource, int]]] = {}
        admitted: list[Admission] = []
        # Heads whose preemptions were issued in an earlier cycle go first (kueue#13797): otherwise a
        # workload reclaimed from, or another borrower, can take the quota just freed for them, and the
        # same preemptions repeat forever.
        ordered: Iterable[Nominee]
        if len(entries) == 1 and self.fair_sharing is None:
            ordered = entries  # (the usual cycle at saturation: one queue's head)
        else:
            sticky = {q.sticky for q, _ in self._queue_roots if q.sticky is not None}
            first = [e for e in entries if e.workload.id in sticky]
            rest = [e for e in entries if e.workload.id not in sticky]
            first.sort(key=self._classic_key)
            if self.fair_sharing is None:
                rest.sort(key=self._classic_key)
                ordered = [*first, *rest]
            else:
                ordered = itertools.chain(first, self._fair_order(rest))
        for entry in ordered:
            admission = self._process(entry, now_ms, temporary, preempted)
            if admission is not None:
                admitted.append(admission)
        for cq, usage in reversed(temporary):
            self.tree.remove_cq_usage(cq, usage)
        for entry in entries:
            if entry.requeue_reason:
                self._requeue(entry, generations[id(self._root_of[entry.cluster_queue])])
        return admitted

    @staticmethod
    def _classic_key(entry: Nominee) -> tuple[int, int, int, int]:
        """Upstream entry order without fair sharing: not borrowing, higher priority, older first."""
        return (entry.assignment.borrowing, -entry.workload.priority, entry.timestamp_ms, entry.seq)

    def _fair_order(self, entries: Sequence[Nominee]) -> Iterator[Nominee]:
        """Upstream ``fairSharingIterator``: pop by the tournament, recomputing DRS on the current tree
        (so entries processed before count) at every pop."""
        remaining = {e.cluster_queue: e for e in entries}
        while remaining:
            entry, _ = pop_fair(
                self.tree,
                self.fair_weights,
                remaining,
                lambda e: e.assignment.usage,
                lambda e: (-e.workload.priority, e.timestamp_ms, e.seq),
            )
            yield entry

    def _process(
        self,
        entry: Nominee,
        now_ms: int,
        temporary: list[tuple[str, dict[FlavorResource, int]]],
        preempted: dict[str, tuple[str, Mapping[FlavorResource, int]]],
    ) -> Admission | None:
        """Upstream ``processEntry`` for one nominated head; sets ``requeue_reason`` unless admitted."""
        mode = entry.assignment.mode
        cq = entry.cluster_queue
        if mode == _NO_FIT_MODE:
            entry.requeue_reason = _NO_FIT
            return None
        if mode == _PREEMPT and not entry.targets:
            entry.requeue_reason = _NO_CANDIDATES
            if self._specs[cq].spec.preemption.reclaim_within_cohort != "Any":
                reserve = self.tree.reservable(cq, entry.assignment.usage, entry.assignment.borrowing > 0)
                self.tree.add_cq_usage(cq, reserve)
                temporary.append((cq, reserve))
            return None
        if any(t in preempted for t in entry.targets):
            entry.requeue_reason, entry.message = _FAILED_AFTER_NOMINATION, OVERLAPPING_TARGETS
            return None
        victims = {t: (self._tracked[t].cluster_queue, self._tracked[t].usage) for t in entry.targets}
        if preempted or victims:
            with self.tree.simulate_removal([*preempted.values(), *victims.values()]):
                fits = self.tree.fits(cq, entry.assignment.usage)
        else:
            fits = self.tree.fits(cq, entry.assignment.usage)
        if not fits:
            entry.requeue_reason, entry.message = _FAILED_AFTER_NOMINATION, NO_LONGER_FITS
            return None
        if mode != _PREEMPT and self._topology is not None:
            refused = self._topology(entry.workload, cq, entry.assignment.flavors())
            if refused is not None:  # the quota fits, the topology does not
                entry.requeue_reason, entry.message = _NO_FIT, refused
                return None
        preempted.update(victims)
        usage = dict(entry.assignment.usage)
        if mode == _PREEMPT:
            self.tree.add_cq_usage(cq, usage)
            temporary.append((cq, usage))
            new = tuple(t for t in entry.targets if t not in self._requested_victims)
            self._requested_victims.update(new)
            self._requested_version += 1
            if new:
                self._requests.append(PreemptionRequest(entry.workload.id, cq, new, now_ms))
            entry.requeue_reason = _PENDING_PREEMPTION
            entry.message = (
                f"{entry.assignment.message()}. Pending the preemption of {len(entry.targets)} workload(s)"
            )
            return None
        self.tree.add_cq_usage(cq, usage)
        self._generation[id(self._root_of[cq])] += 1
        tracked = self._tracked[entry.workload.id]
        self._queues[cq].discard(entry.workload.id)
        admission = Admission(
            entry.workload.id, cq, entry.assignment.flavors(), entry.assignment.borrowing > 0, now_ms
        )
        tracked.state, tracked.admission, tracked.usage = "admitted", admission, usage
        tracked.message, tracked.answer = "", None
        self.admitted.add(entry.workload.id, tracked, entry.workload.priority, now_ms)
        return admission

    def _requeue(self, entry: Nominee, generation: int) -> None:
        """Upstream ``RequeueIfNotPresent``: keep the head, or set it aside until quota is released."""
        tracked = self._tracked[entry.workload.id]
        tracked.message = entry.message  # else the assignment's, formatted when read (``pending``)
        tracked.answer = None if entry.message else entry.assignment
        queue = self._queues[entry.cluster_queue]
        reason = entry.requeue_reason
        queue.sticky = entry.workload.id if reason == _PENDING_PREEMPTION else None
        if reason == _PENDING_PREEMPTION:
            queue.blocked = (entry.workload.id, generation)  # sticky head until victims release quota
        elif queue.strict:
            if reason in (_NO_FIT, _NO_CANDIDATES):
                queue.blocked = (entry.workload.id, generation)
        elif reason in (_NO_FIT, _NO_CANDIDATES):
            queue.discard(entry.workload.id)
            queue.inadmissible[entry.workload.id] = None
            tracked.state = "inadmissible"

    # ---- output --------------------------------------------------------------------------------------------

    def pending(self) -> list[tuple[str, str]]:
        """Every workload not admitted, with the reason in Kueue's words where they exist."""
        waiting = [t for t in self._tracked.values() if t.state != "admitted"]
        waiting.sort(key=lambda t: (t.cluster_queue, t.key()))
        return [
            (
                t.workload.id,
                t.message
                or (t.answer.message() if t.answer is not None else "")
                or f"Pending: not yet nominated in ClusterQueue {t.cluster_queue}",
            )
            for t in waiting
        ]

    def queue_status(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per ClusterQueue and ``"flavor/resource"``: nominal, usage, borrowed, lent and the limits set."""
        return {name: self.tree.cq_status(name) for name in self._queues}
