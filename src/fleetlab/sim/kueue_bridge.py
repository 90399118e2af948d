"""Kueue in the loop: jobs with a ``queue`` wait for quota before their pods reach kube-scheduler.

On admission the chosen ResourceFlavor's ``nodeLabels`` join the pods' nodeSelector and its
``tolerations`` are added, as Kueue injects them; the pods then go to the scheduling queue. A job that
finishes releases its quota; a job evicted (Kueue preemption, or its pods preempted by kube-scheduler)
gives its quota back and waits in its ClusterQueue again. Usage per ClusterQueue is sampled whenever it
changes, for the time-weighted quota report.

Two optional helpers plug in: Kueue TAS (sim/kueue_tas.py: the topology gate of the admission cycle, the
assignment in the admitted pod spec, node replacement) and Kueue's DRA quota (sim/kueue_dra.py: device
claims charged as mapped resources).

Subscribes to ``arrive``, ``evict``, ``job_done``, ``job_failed``, ``withdraw``, ``tick``, two event kinds,
``run_end``.
May change: a job's pod spec (``respec``); queues and evicts its jobs' pods; ``halt`` on a preemption loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from fleetlab.admission.manager import (
    Admission,
    AdmissionManager,
    PodSetRequest,
    TopologyAssigner,
    Workload,
)
from fleetlab.model.kueue_config import FairSharingConfig
from fleetlab.model.queues import QueueConfig
from fleetlab.placement.framework import PodSpec
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.kueue_dra import DraQuota
from fleetlab.sim.kueue_tas import KueueTopology
from fleetlab.sim.result import PendingJob, QueueSamples
from fleetlab.sim.step_columns import ChangeLog, StepColumns, changes_of

PODSET = "main"
MAX_CYCLES_PER_STEP = 16
#: A workload preempted this many times with no job completing meanwhile is caught in a preemption loop.
PREEMPTION_LOOP_LIMIT = 50


def _admission_manager(
    config: QueueConfig, fair: FairSharingConfig | None, topology: TopologyAssigner | None = None
) -> AdmissionManager:
    """Classic ordering and preemption, or Kueue's fair sharing when the Configuration enables it."""
    from fleetlab.admission.preemption import ClassicPreemption, FairSharingPreemption

    if fair is not None and fair.enable:
        return AdmissionManager(
            config,
            fair_sharing=fair,
            preemption=FairSharingPreemption(fair.preemption_strategies),
            topology=topology,
        )
    return AdmissionManager(config, preemption=ClassicPreemption(), topology=topology)


def _max_allowed(node: Any, fr: Any) -> int:
    """nominal + borrowingLimit; nominal alone outside a cohort; -1 when only the cohort limits it."""
    quota = node.quotas[fr]
    if node.parent is None:
        return int(quota.nominal)
    if quota.borrowing_limit is None:
        return -1
    return int(quota.nominal + quota.borrowing_limit)


class _Written(Mapping[tuple[int, Any], Any]):
    """The recorded series of each (id(node), flavor/resource), written out when read (``lent_series``
    reads each once, a cohort's once per child)."""

    def __init__(self, steps: StepColumns, column_of: dict[tuple[int, Any], int]) -> None:
        self.steps = steps
        self.column_of = column_of

    def __getitem__(self, key: tuple[int, Any]) -> Any:
        return self.steps.column(self.column_of[key])

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        return iter(self.column_of)

    def __len__(self) -> int:
        return len(self.column_of)


class KueueBridge:
    """Owns the AdmissionManager of a run and translates between jobs and workloads."""

    def __init__(
        self,
        config: QueueConfig,
        sim: EngineHandle,
        topology: KueueTopology | None = None,
        dra_quota: DraQuota | None = None,
    ) -> None:
        self.topology = topology
        self.dra_quota = dra_quota
        gate = None if topology is None else self._assign_topology
        self.manager = _admission_manager(
            config, sim.resolved.scenario.kueue_configuration.fair_sharing, gate
        )
        if topology is not None:
            topology.wake = self.manager.wake
        self.sim = sim
        self.flavors = {f.name: f for f in config.resource_flavors}
        #: Per job submitted and not finished (submit order), its workload's id (the job's id), and back:
        #: a finished job's entries are dropped, so these grow with the jobs in Kueue, not with the run.
        self.job_by_id: dict[str, int] = {}
        self.workload_id: dict[int, str] = {}
        self._template = sim.job_table.column("template")
        self._pods = sim.job_table.column("pods")
        self._podsets: dict[tuple[int, int], PodSetRequest] = {}
        #: Per job, the ClusterQueue of its last admission as an index into ``_queue_names`` (0: never
        #: admitted): a column, not a dict of a million entries.
        self._queue_names = ["", *sorted(cq.name for cq in config.cluster_queues)]
        self._queue_code = {name: code for code, name in enumerate(self._queue_names)}
        n_jobs = len(sim.job_table)
        self.cluster_queue_code = np.zeros(n_jobs, dtype=np.int32)
        #: Per job, how many times Kueue admitted it (the token of its waitForPodsReady timeout).
        self.admissions = np.zeros(n_jobs, dtype=np.int64)
        #: Per job, when its workload was first created (-1: never).
        self.created_ms = np.full(n_jobs, -1, dtype=np.int64)
        self.requeues: dict[int, int] = {}
        self.deactivated: dict[int, str] = {}
        #: Jobs Kueue cannot charge for their DRA claims (never admitted), with the reason.
        self.uncharged: dict[int, str] = {}
        self.pods_ready_evictions = 0
        self.idle_timeouts: dict[int, int] = {}
        self._preempted_since: dict[int, int] = {}  # per job, Kueue preemptions since the last completion
        self._counted_from_ms = -1
        wait = sim.resolved.scenario.kueue_configuration.wait_for_pods_ready
        self.wait_for_pods_ready = wait if wait is not None and wait.enable else None
        self.pods_ready_timeout_ms = (
            None if self.wait_for_pods_ready is None else int(self.wait_for_pods_ready.timeout * 1000)
        )
        self._keep_creation = (
            self.wait_for_pods_ready is not None
            and self.wait_for_pods_ready.requeuing_strategy.timestamp == "Creation"
        )
        tree = self.manager.tree
        self._columns = [
            (node, fr)
            for _, node in sorted(tree.cluster_queues.items())
            for fr in sorted(node.quotas, key=str)
        ]
        #: Every node of the tree (cohorts too) for every flavor/resource a ClusterQueue has quota for.
        self._frs = sorted({fr for _, fr in self._columns}, key=str)
        # The ClusterQueues' own columns first, so the result's usage is a view of the recorded samples.
        reported = {(id(node), fr) for node, fr in self._columns}
        self._tree_columns = [
            *self._columns,
            *((n, fr) for n in tree.all_nodes() for fr in self._frs if (id(n), fr) not in reported),
        ]
        #: The samples (a row of ``_tree_columns`` per time), kept as the values each sample changes: a
        #: sample changes a few of the tree's columns, and there are several samples a job.
        self._samples = ChangeLog(len(self._tree_columns))
        self._managed: list[bool] = sim.job_columns.kueue_managed.tolist()
        self.admitted_ms = np.full(n_jobs, -1, dtype=np.int64)
        #: Time spent waiting for admission, summed over admissions, and since when it waits now.
        self.quota_waited_ms = np.zeros(n_jobs, dtype=np.int64)
        self.quota_since_ms = np.full(n_jobs, -1, dtype=np.int64)
        #: (spec key, admitted flavors) -> the pod spec Kueue's flavors turn the job's spec into.
        self._admitted_spec: dict[tuple[int, tuple[str, ...]], PodSpec] = {}
        #: Admission checks (sim/admission_checks.py): ``(job, admission) -> True`` when they hold the job
        #: after its quota reservation; they call ``reserve`` and later ``start``.
        self.gate: Callable[[int, Admission], bool] | None = None
        on = sim.on
        self.timeout_kind = on.event_kind(self.timed_out, stale=self.timeout_is_stale)
        self.requeue_kind = on.event_kind(self.requeue)
        on.arrive.append(self.arrived)
        on.evict.append(self.evicting)
        on.job_done.append(self.released)
        on.job_failed.append(self.released)
        on.withdraw.append(self.withdrawn)
        on.tick.append(self.step)
        on.run_end.append(self.finish)

    # -- the engine's events -------------------------------------------------------------------------
    def arrived(self, job_index: int, now: int) -> bool:
        """A job with a queue waits for Kueue (from its submit time); others go to kube-scheduler."""
        if not self._managed[job_index]:
            return False
        self.quota_since_ms[job_index] = self.sim.submit_ms[job_index]
        self.submit(job_index, now)
        return True

    def evicting(self, pod: int) -> bool:
        """kube-scheduler (or a node going away) evicts a pod of a Kueue job: the whole workload goes,
        gives its quota back and waits in its ClusterQueue again."""
        job_index = self.sim.book.job_at[pod]
        if not self._managed[job_index]:
            return False
        if self.topology is not None and self.topology.replaced(job_index, pod):
            return False  # still admitted: the engine evicts the pod (its gang) and places it again
        self._evict(job_index)
        self.evicted(job_index, self.sim.now)
        return True

    def released(self, job_index: int) -> None:
        """A Kueue job finished (its last pod succeeded, or its pods failed): its quota is released."""
        if self._managed[job_index]:
            self.finished_at(job_index, self.sim.now)

    def withdrawn(self, job_index: int) -> None:
        """A Kueue job withdrawn before it started leaves its ClusterQueue, or gives back the quota it was
        admitted with while its pods waited for nodes; its quota wait ends now."""
        workload = self.workload_id.get(job_index)
        if not self._managed[job_index] or workload is None or not self.manager.tracks(workload):
            return  # not submitted to Kueue yet (or between a waitForPodsReady requeue's tries)
        now = self.sim.now
        self.manager.finish(workload)
        if self.quota_since_ms[job_index] >= 0:
            self.quota_waited_ms[job_index] += now - self.quota_since_ms[job_index]
            self.quota_since_ms[job_index] = -1
        self.sample(now)

    def _assign_topology(self, workload: Workload, cluster_queue: str, flavors: Any) -> str | None:
        assert self.topology is not None
        return self.topology.assign(self.job_by_id[workload.id], workload, cluster_queue, flavors)

    def _evict(self, job_index: int) -> None:
        """Take the workload's pods off their nodes; it waits for quota again from now."""
        if self.topology is not None:
            self.topology.release(job_index)
        self.sim.evict_job(job_index)
        if self.quota_since_ms[job_index] < 0:
            self.quota_since_ms[job_index] = self.sim.now

    def admitted(self, job_index: int, admission: Admission) -> None:
        """Kueue admitted the job: inject its flavors and send its pods to kube-scheduler."""
        self.reserve(job_index, admission)
        self.start(job_index)

    def reserve(self, job_index: int, admission: Admission) -> None:
        """Kueue reserved quota for the job: its flavors join its pod spec and its quota wait ends (its
        admission checks may still hold it: sim/admission_checks.py)."""
        sim = self.sim
        flavors = self.flavor_names(admission)
        key = (int(sim.job_columns.spec_key[job_index]), flavors)
        spec = self._admitted_spec.get(key)
        if spec is None:  # same spec key and same flavors give the same pod spec: build it once
            spec = self.spec_for(sim.base_spec(job_index), flavors)
            self._admitted_spec[key] = spec
        if self.topology is not None:
            spec = self.topology.placed_spec(job_index, spec)
        sim.respec(job_index, spec)
        now = sim.now
        if self.quota_since_ms[job_index] >= 0:
            self.quota_waited_ms[job_index] += now - self.quota_since_ms[job_index]
            self.quota_since_ms[job_index] = -1

    def start(self, job_index: int) -> None:
        """The job is admitted: its pods go to kube-scheduler (and waitForPodsReady's timer starts)."""
        sim = self.sim
        now = sim.now
        self.admitted_ms[job_index] = now
        sim.enqueue(job_index)
        timeout = self.pods_ready_timeout_ms
        if timeout is not None:
            sim.schedule(now + timeout, self.timeout_kind, job_index, int(self.admissions[job_index]))

    def submit(self, job_index: int, now: int) -> None:
        """Hand a queued job to Kueue as a one-podset workload, read from the job table's columns and its
        template (a job's queue, namespace, priority and pod shape are its template's) without building
        the job."""
        table = self.sim.job_table
        job_id = self.workload_id.get(job_index)
        if job_id is None:
            job_id = self.workload_id[job_index] = table.ids[job_index].as_py()
        self.job_by_id[job_id] = job_index
        if self.created_ms[job_index] < 0:
            self.created_ms[job_index] = now
        template = table.templates[int(self._template[job_index])]
        assert template.queue is not None
        podset = self._podset(int(self._template[job_index]), int(self._pods[job_index]))
        if isinstance(podset, str):
            self.uncharged[job_index] = podset  # Kueue marks the workload inadmissible
            return
        self.manager.submit(
            Workload(
                id=job_id,
                namespace=template.namespace,
                local_queue=template.queue,
                priority=template.priority,
                created_ms=now,
                podsets=(podset,),
            )
        )

    def _podset(self, template_index: int, pods: int) -> PodSetRequest | str:
        """The podset of ``pods`` pods of a template, built once per (template, pods): it is immutable. Its
        requests include what Kueue's DRA quota charges the pods' claims (a string: they cannot be)."""
        key = (template_index, pods)
        podset = self._podsets.get(key)
        if podset is None:
            job = self.sim.job_table.templates[template_index]
            requests = dict(job.requests)
            if self.dra_quota is not None:
                charge = self.dra_quota.per_pod(template_index, job)
                if isinstance(charge, str):
                    return charge
                for name, amount in charge.items():
                    requests[name] = requests.get(name, 0) + amount
            affinity = job.affinity.node_affinity if job.affinity is not None else None
            required = affinity.required if affinity is not None else None
            podset = self._podsets[key] = PodSetRequest(
                PODSET,
                pods,
                requests,
                job.tolerations,
                tuple(sorted(job.node_selector.items())),
                required.node_selector_terms if required is not None else None,
            )
        return podset

    @staticmethod
    def flavor_names(admission: Admission) -> tuple[str, ...]:
        """The distinct flavors assigned to the job's podset, sorted: all ``spec_for`` depends on."""
        return tuple(sorted(set(admission.flavors.get(PODSET, {}).values())))

    def spec_for(self, base: PodSpec, flavor_names: Iterable[str]) -> PodSpec:
        """The pod spec with the admitted flavors' node labels and tolerations injected, flavor by flavor
        in the order given (the sorted distinct flavors of the job's podset)."""
        selector = dict(base.node_selector)
        tolerations = list(base.tolerations)
        for flavor_name in flavor_names:
            flavor = self.flavors.get(flavor_name)
            if flavor is None:
                continue
            selector.update(flavor.spec.node_labels)
            tolerations.extend(t for t in flavor.spec.tolerations if t not in tolerations)
        return replace(base, tolerations=tuple(tolerations), node_selector=tuple(sorted(selector.items())))

    def step(self, now: int) -> None:
        """Run admission cycles until nothing changes: admit, and carry out requested preemptions."""
        manager = self.manager
        changed = False
        for _ in range(MAX_CYCLES_PER_STEP):
            admissions = manager.cycle(now)  # [] at once when no head's answer can have changed
            preemptions = manager.take_preemptions()
            for admission in admissions:
                job_index = self.job_by_id[admission.workload_id]
                self.cluster_queue_code[job_index] = self._queue_code[admission.cluster_queue]
                self.admissions[job_index] += 1
                if self.gate is None or not self.gate(job_index, admission):  # admission checks
                    self.admitted(job_index, admission)
            for request in preemptions:
                for victim in request.victims:
                    self._evict(self.job_by_id[victim])
                    manager.evict(victim, now, keep_creation_timestamp=True)
                    self._count_preemption(self.job_by_id[victim], request.preemptor_id, now)
            if not admissions and not preemptions and not (self.topology and self.topology.take_refused()):
                break  # (a head set aside for its topology lets the next head of its queue be nominated)
            changed = True
        if changed:
            self.sample(now)

    def _count_preemption(self, job_index: int, preemptor_id: str, now: int) -> None:
        """Stop the run when workloads keep preempting each other with nothing finishing: upstream Kueue
        allows such loops (e.g. preemption within a ClusterQueue while borrowing, answered by a reclaim
        from the cohort; KEP-1337, kueue#2821), and simulating them to the horizon tells nothing more."""
        sim = self.sim
        if sim.last_completion_ms != self._counted_from_ms:
            self._preempted_since.clear()
            self._counted_from_ms = sim.last_completion_ms
        count = self._preempted_since.get(job_index, 0) + 1
        self._preempted_since[job_index] = count
        if count < PREEMPTION_LOOP_LIMIT or sim.stall_warning:
            return
        involved = sorted(sim.jobs[j].id for j, n in self._preempted_since.items() if n >= count // 2)
        shown = ", ".join(involved[:8]) + (" …" if len(involved) > 8 else "")
        sim.halt(
            f"stopped at {now / 3.6e6:.1f} h: a Kueue preemption loop — {sim.jobs[job_index].id} was "
            f"preempted {count} times (last by {preemptor_id}) with no job completing meanwhile; workloads "
            f"involved: {shown}. Typically borrowing workloads preempt within their ClusterQueue and are "
            "reclaimed by the cohort in turn; a stricter preemption policy (e.g. reclaimWithinCohort: "
            "LowerPriority) breaks such loops"
        )

    def timeout_is_stale(self, job_index: int, token: int) -> bool:
        """A waitForPodsReady timeout that can no longer fire: a later admission, or the job is done."""
        sim = self.sim
        return int(self.admissions[job_index]) != token or sim.pods_done[job_index] == self._pods[job_index]

    def requeue(self, job_index: int, _: int) -> None:
        """waitForPodsReady: a workload's backoff has passed; it returns to its queue."""
        now = self.sim.now
        self.submit(job_index, int(self.created_ms[job_index]) if self._keep_creation else now)

    def pods_ready(self, job_index: int) -> bool:
        """Kueue's PodsReady: every pod of the job is bound and past its image pull and data download."""
        book = self.sim.book
        return all(book.ready_ms[p] >= 0 or book.end_ms[p] >= 0 for p in book.pods_of(job_index))

    def quiescent(self) -> bool:
        """Nothing will change any more except Kueue's own retries: no pod preparing or running (pods
        waiting forever for gang peers do not count), no node booting, no job left to arrive — a retry then
        meets exactly the cluster the last one met."""
        sim = self.sim
        if sim.booting or sim.submissions_left:
            return False
        book = sim.book
        busy = (book.node >= 0) & (book.end_ms < 0) & ((book.ready_ms < 0) | (book.start_ms >= 0))
        return not bool(busy.any())

    def timed_out(self, job_index: int, token: int) -> None:
        """waitForPodsReady: evict a workload whose pods are not all ready in time; requeue with backoff."""
        sim = self.sim
        now = sim.now
        if self.timeout_is_stale(job_index, token):
            return  # a later admission, or the job already finished
        if self.pods_ready(job_index):
            return
        wait = self.wait_for_pods_ready
        assert wait is not None
        self._evict(job_index)
        self.manager.finish(self.workload_id[job_index])  # out of the queue until the backoff has passed
        self.pods_ready_evictions += 1
        count = self.requeues.get(job_index, 0) + 1
        self.requeues[job_index] = count
        strategy = wait.requeuing_strategy
        if self.quiescent():
            self.idle_timeouts[job_index] = self.idle_timeouts.get(job_index, 0) + 1
            if self.idle_timeouts[job_index] > 1:
                # Requeued onto an otherwise idle cluster and still not ready: every further retry would
                # be the same, so stop here instead of retrying forever.
                self.deactivated[job_index] = (
                    "Pods never all became ready within waitForPodsReady.timeout, even with the cluster "
                    "otherwise idle; further requeues would repeat the same attempt"
                )
                self.sample(now)
                return
        if strategy.backoff_limit_count is not None and count > strategy.backoff_limit_count:
            limit = strategy.backoff_limit_count
            self.deactivated[job_index] = (
                f"Deactivated: exceeded the maximum number of re-queuing retries ({limit})"
            )
            self.sample(now)
            return
        delay_s = min(strategy.backoff_base_seconds * 2 ** (count - 1), strategy.backoff_max_seconds)
        sim.schedule(now + delay_s * 1000, self.requeue_kind, job_index, 0)
        self.sample(now)

    def finished_at(self, job_index: int, now: int) -> None:
        """Release the quota of the job at ``job_index`` (submit order), which has finished."""
        if self.topology is not None:
            self.topology.release(job_index)
        workload_id = self.workload_id.pop(job_index)
        del self.job_by_id[workload_id]
        self.manager.finish(workload_id)
        self.sample(now)

    def evicted(self, job_index: int, now: int) -> None:
        """A Kueue job lost its pods: give the quota back and requeue it in its ClusterQueue."""
        self.manager.evict(self.workload_id[job_index], now)
        self.sample(now)

    def pending_jobs(self) -> list[PendingJob]:
        """Jobs still waiting for Kueue admission, with Kueue's reason."""
        sim = self.sim
        out = []
        for job_index, reason in sorted(self.deactivated.items()):
            job = sim.jobs[job_index]
            out.append(PendingJob(job.id, job.pods, reason, "quota", "deactivated by waitForPodsReady"))
        for job_index, reason in sorted(self.uncharged.items()):
            job = sim.jobs[job_index]
            detail = "inadmissible: Kueue cannot charge its DRA claims to quota"
            out.append(PendingJob(job.id, job.pods, reason, "quota", detail))
        for workload_id, reason in self.manager.pending():
            job_index = self.job_by_id[workload_id]
            unfinished = sum(1 for p in sim.book.pods_of(job_index) if sim.book.end_ms[p] < 0)
            out.append(PendingJob(workload_id, unfinished, reason, "quota", "waiting for Kueue admission"))
        return out

    def sample(self, now: int) -> None:
        """Record every ClusterQueue's usage after a change (time-weighted in the report).

        The usage of every node of the cohort tree is kept, so ``lent`` is exact at every change: it is
        computed from these samples at the end (``CohortTree.lent_series``), and the time-weighted means
        integrate every change.
        """
        self._samples.record(now, [node.usage.get(fr, 0) for node, fr in self._tree_columns])

    def samples(self) -> QueueSamples:
        """The recorded usage, and what each ClusterQueue lent at every sample, as step columns: written
        out whole they were two (samples × columns) matrices, hundreds of MB at a million jobs."""
        steps = self._samples.steps()
        times = np.array(self._samples.times, dtype=np.int64)
        self._samples = ChangeLog(len(self._tree_columns))  # the run is over: only the steps are kept
        rows = steps.rows
        series = _Written(steps, {(id(node), fr): k for k, (node, fr) in enumerate(self._tree_columns)})
        lent = {}
        column_of = {(id(node), fr): k for k, (node, fr) in enumerate(self._columns)}
        for key, series_lent in self.manager.tree.lent_series(self._frs, series):
            k = column_of.get(key)
            if k is not None:
                lent[k] = changes_of(series_lent, rows)
        return QueueSamples(
            keys=[(node.name, str(fr)) for node, fr in self._columns],
            nominal=np.asarray([node.quotas[fr].nominal for node, fr in self._columns], dtype=np.int64),
            max_allowed=np.asarray([_max_allowed(node, fr) for node, fr in self._columns], dtype=np.int64),
            subtree_quota=np.asarray(
                [node.subtree_quota.get(fr, 0) for node, fr in self._columns], dtype=np.int64
            ),
            t_ms=times,
            usage_steps=StepColumns(rows, steps.changes[: len(self._columns)]),  # the ClusterQueues' first
            lent_steps=StepColumns(rows, [lent[k] for k in range(len(self._columns))]),
        )

    def finish(self, parts: ResultParts) -> None:
        """The quota samples, the jobs still waiting for admission, and per job its admission, quota wait
        (a wait still open runs to the end) and ClusterQueue."""
        parts.queue_samples = self.samples()
        parts.pending.extend(self.pending_jobs())
        since = self.quota_since_ms
        parts.admitted_ms = self.admitted_ms
        parts.quota_wait_ms = self.quota_waited_ms + np.where(
            since >= 0, np.maximum(parts.end_ms - since, 0), 0
        )
        parts.cluster_queue_of = np.asarray(self._queue_names, dtype=object)[self.cluster_queue_code]
