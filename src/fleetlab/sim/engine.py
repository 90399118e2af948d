"""The engine core: the clock, the event heap and the pod/job lifecycle, with the pod book and the cluster.

Jobs arrive, their pods are queued, bound (every placement decision is asked of ``fleetlab.placement``),
prepared (image pull, data download), started, stopped and released: they succeed, or are evicted
(preemption, a node going away) and requeued with the work since their last checkpoint lost, or fail.
Nodes boot, then become ready. The engine records all of it in the pod book and the cluster state.

Features never see this class: they get it as an ``EngineHandle`` (sim/handle.py) and subscribe to the
lifecycle events they need. ``_freeze`` turns each event's subscribers into a tuple when the run starts;
the lifecycle methods loop over those tuples inline, so an event nobody subscribed to costs no call. The
event loop itself is sim/loop.py; sim/simulator.py builds the features and runs it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.element_views import int64_elements, int_elements
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.gang import GangPlacer
from fleetlab.placement.profiles import Profile, resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, ClusterState
from fleetlab.sim import held_jobs, pod_removal
from fleetlab.sim.book import PodBook
from fleetlab.sim.counters import Counters
from fleetlab.sim.events import (
    NODE_READY,
    POD_FINISH,
    PREP_DONE,
    EventQueue,
    GatedEventQueue,
    to_ms,
    transfer_ms,
)
from fleetlab.sim.gang_binds import gpus_before_each, trial_binds_stay
from fleetlab.sim.gang_retry import GangRetry
from fleetlab.sim.handle import (
    BindHook,
    CreateHook,
    MakeRoom,
    PodHook,
    PodNodeHook,
    Subscriptions,
    TakeHook,
    TimeHook,
)
from fleetlab.sim.job_arrays import NO_CHECKPOINT, JobArrays, job_arrays
from fleetlab.sim.limit_range_defaults import with_limit_range_defaults
from fleetlab.sim.pod_constraints import job_label_sets, selects_other_jobs
from fleetlab.sim.pod_preemption import preempt_for
from fleetlab.sim.prebound import bind_prebound
from fleetlab.sim.progress import progress_at, wall_needed
from fleetlab.sim.queue import SchedulingQueue
from fleetlab.sim.runtime_model import WorkRuntimes
from fleetlab.sim.service_replicas import with_service_replicas
from fleetlab.sim.spec_table import SpecTable
from fleetlab.sim.specs import build_nodes, initially_present


class Engine:
    """One run's clock, events, pods and cluster, and the lifecycle transitions features subscribe to."""

    def __init__(self, resolved: ResolvedScenario, profile: Profile, seed: int | None = None) -> None:
        resolved = with_service_replicas(resolved)  # services' replicas are jobs (sim/service_replicas.py)
        resolved = with_limit_range_defaults(resolved)  # the API server's LimitRange defaults on requests
        self.resolved = resolved
        self.profile = profile
        scenario = resolved.scenario
        self.seed = scenario.seed if seed is None else seed
        self.config = scenario.scheduler
        self.node_infos = build_nodes(resolved)
        extra = sorted({r for job in resolved.jobs.templates for r in job.requests})  # a template field
        self.state = ClusterState(self.node_infos, extra_resources=extra)
        self.schedulers: dict[str, Scheduler] = {}
        self.placers: dict[str, GangPlacer] = {}
        profiles = {"": profile}
        for job_class, policy in sorted(self.config.class_profiles.items()):
            profiles[job_class] = resolve_profile(self.config.model_copy(update={"policy": policy}))
        for k, (key, prof) in enumerate(profiles.items()):
            self.schedulers[key] = Scheduler(
                self.state,
                prof,
                seed=self.seed + k,
                extended_resource_toleration=scenario.cluster.extended_resource_toleration,
            )
            self.placers[key] = GangPlacer(self.schedulers[key], scenario.cluster.topology_levels)
        self.scheduler = self.schedulers[""]
        self.pools = scenario.cluster.pools
        self.horizon_ms = None if scenario.horizon_s is None else to_ms(scenario.horizon_s)
        #: Where features subscribe to lifecycle events; ``_freeze`` copies the lists when the run starts.
        self.on = Subscriptions()
        self._on_bind: tuple[BindHook, ...] = ()
        self._on_start: tuple[PodNodeHook, ...] = ()
        self._on_stop: tuple[PodHook, ...] = ()
        self._on_release: tuple[PodNodeHook, ...] = ()
        self._on_job_failed: tuple[PodHook, ...] = ()
        self._on_job_done: tuple[PodHook, ...] = ()
        self._on_evict: tuple[TakeHook, ...] = ()
        self._make_room: tuple[MakeRoom, ...] = ()
        self._after_step: tuple[TimeHook, ...] = ()
        self._on_create: tuple[CreateHook, ...] = ()
        self._on_gone: tuple[PodHook, ...] = ()
        #: Per job withdrawn before it started, when (``withdraw_job``).
        self.withdrawn: dict[int, int] = {}
        #: Nodes a bind or release touched in this step, and pods that fail at its end.
        self.touched: set[int] = set()
        self.failing: list[int] = []
        # Submit order (ties by scenario position) from the columns; to_ms is floor(s * 1000 + 0.5).
        submit_ms = np.floor(resolved.jobs.column("submit_s") * 1000 + 0.5).astype(np.int64)
        order = np.argsort(submit_ms, kind="stable")
        self.order = order.astype(np.int64, copy=False)
        #: The jobs in submit order as columns (read these where a whole column is wanted).
        self.job_table = resolved.jobs.take(order)
        #: The same table: ``jobs[i]`` builds job i's Job (recent ones are kept) for the few code paths
        #: that still read one job at a time; the event loop reads ``job_columns``.
        self.jobs = self.job_table
        n_jobs = len(self.jobs)
        pods = self.job_table.column("pods")
        first_pod = np.zeros(n_jobs + 1, dtype=np.int64)
        np.cumsum(pods, out=first_pod[1:])
        pod_job = np.repeat(np.arange(n_jobs, dtype=np.int64), pods)
        self.book = PodBook(int(first_pod[-1]), n_jobs, pod_job, first_pod)
        self.label_everyone = selects_other_jobs(self.job_table)
        self.label_sets = job_label_sets(self.state, self.job_table)
        self.job_columns = job_arrays(self.job_table)
        self._hot_columns(self.job_columns)
        self.submit_ms = submit_ms[order]
        self.book.pending_since_ms[:] = self.submit_ms[pod_job]  # every pod is pending from its submit
        self.arrival_ms = self.submit_ms + to_ms(resolved.scenario.scheduler.scheduling_latency_s)
        self.events = EventQueue()
        self.queue = SchedulingQueue()
        self.counters = Counters()
        self.now = 0
        self.placements = 0
        self.evictions = 0
        self.pods_done = np.zeros(n_jobs, dtype=np.int64)
        self._pods_done_at = int_elements(self.pods_done)
        #: Per job its interned pod spec, per queue entry its group (sim/spec_table.py); the engine reads
        #: the table's lists and methods directly.
        self.specs = SpecTable(
            self.jobs,
            self.job_columns,
            self.schedulers,
            self.placers,
            self.config,
            self.label_everyone,
            self._pods,
            self._pods_done_at,
        )
        specs = self.specs
        self.spec_of = specs.spec_of
        self.group_of = specs.group_of
        self.base_spec = specs.base_spec
        self.respec = specs.respec
        self.spec_ids, self.compiled, self.spec_profile = specs.spec_ids, specs.compiled, specs.spec_profile
        self.job_spec, self.groups = specs.job_spec, specs.groups
        self._spec_gpus, self._group_plan = specs.gpus, specs.plans
        self.gang_retry = GangRetry(self.state, self._group_plan, self._place_gang, self.on.make_gang_room)
        self._multi_gang, self._placed_as_gang = specs.multi_gang, specs.placed_as_gang
        self.node_pods: list[set[int]] = [set() for _ in range(self.state.n)]
        self.work = WorkRuntimes(self)
        self.bound_by_priority: defaultdict[int, set[int]] = defaultdict(set)
        self.image_ready: list[dict[str, int]] = [{} for _ in range(self.state.n)]
        self.ready_ms = np.full(self.state.n, -1, dtype=np.int64)
        self.initially_present = initially_present(self.node_infos, resolved)
        self.runtime_ms = self.work.runtime_ms
        #: Pods were queued since the last scheduling cycle (the loop then runs one).
        self.queue_changed = False
        self.bound_pods = 0
        self.last_completion_ms = 0
        self.stall_warning = ""
        self.booting = 0
        self.submissions_left = n_jobs

    # -- columns -------------------------------------------------------------------------------------
    def _hot_columns(self, columns: JobArrays) -> None:
        """Element views of the per-job columns the loop reads one at a time: an index several times cheaper
        than a numpy scalar's, 8 bytes a job (a list held an int object per job beside its pointer)."""
        self._pods = int64_elements(columns.pods)
        self._priority = int64_elements(columns.priority)
        self._image_size = int64_elements(columns.image_size)
        self._data_size = int64_elements(columns.data_size)
        self._checkpoint_interval = int64_elements(columns.checkpoint_interval_ms)
        self._checkpoint_write = int64_elements(columns.checkpoint_write_ms)
        self._image_name: list[str | None] = columns.image_name.tolist()  # the names shared, not per job
        #: Per pod its job (the book's element view: a list would hold an int object per pod), per job its
        #: pods' label set, per node its pool (fixed for the run).
        self._pod_job: memoryview[int] = self.book.job_at
        self._label_set: list[int] = self.label_sets.tolist()
        self._node_pool = [self.pools[p] for p in self.state.pool.tolist()]
        self._prebound: list[bool] = columns.prebound.tolist()

    # -- identities ----------------------------------------------------------------------------------
    def job_priority(self, job: int) -> int:
        """The job's pod priority."""
        return self._priority[job]

    def is_gang(self, job: int) -> bool:
        """Placed all-or-nothing: a multi-pod gang job while the scheduler does gang scheduling."""
        return self._placed_as_gang[job]

    def enqueue(self, job: int, pods: list[int] | None = None) -> None:
        """Put a job's unfinished pods in the scheduling queue; a gang is one entry. Pods that already
        succeeded stay done when an evicted job is admitted again, as a resumed Job keeps its
        succeeded count."""
        if pods is None and self._prebound[job] and bind_prebound(self, job, self.bind):
            return
        group = self.group_of(job)
        members = self.unfinished_pods(job) if pods is None else pods
        if not members:
            return
        for create in self._on_create:  # the API server admits the pods (namespace ResourceQuota)
            members = create(job, members)
            if not members:
                return
        stamp = self.now
        self.queue_changed = True
        priority = self._priority[job]
        if self._placed_as_gang[job]:
            self.queue.add(group, priority, stamp, members[0])
        else:
            add = self.queue.add
            for pod in members:
                add(group, priority, stamp, pod)

    # -- node lifecycle ------------------------------------------------------------------------------
    def node_ready(self, node: int) -> None:
        """A node registers with the scheduler."""
        state, c = self.state, self.counters
        state.set_ready(node)
        self.ready_ms[node] = self.now
        g = int(state.allocatable[node, state.gpu_col])
        if g > 0:
            c.node_counted(g, state.requested[node, state.gpu_col] == 0, 1)

    def node_down(self, node: int) -> None:
        """An empty node leaves the scheduler and the cluster totals (failed, removed)."""
        state = self.state
        g = int(state.allocatable[node, state.gpu_col])
        if g > 0:
            self.counters.node_counted(g, state.requested[node, state.gpu_col] == 0, -1)
        state.set_ready(node, False)

    def forget_images(self, node: int) -> None:
        """A new or rebuilt node starts with an empty image cache (pulls are paid again)."""
        self.state.forget_images(node)
        self.image_ready[node].clear()

    def cordon(self, node: int, unschedulable: bool) -> None:
        """Mark the node unschedulable (no new pods) or schedulable again."""
        self.state.set_unschedulable(node, unschedulable)

    # -- pod lifecycle -------------------------------------------------------------------------------
    def bind(self, pod: int, node: int, gpus_before: int = -1) -> None:
        """Bind a pod: take its resources, start its image pull (unless cached) and data download;
        ``gpus_before`` >= 0: a kept trial bind took them, when the node held that many GPUs."""
        self.bind_each((pod,), (node,), (gpus_before,))

    def bind_each(self, pods: Sequence[int], nodes: Sequence[int], gpus_before: Sequence[int]) -> None:
        """``bind`` each of one job's ``pods`` (at least one) to its node in turn, as many calls of it would
        (a gang's members in plan order): the job's spec, image and data size are read once."""
        state, book, c, now = self.state, self.book, self.counters, self.now
        node_at, end_ms_at, attempt_at = book.node_at, book.end_ms_at, book.attempt_at
        job_index = self._pod_job[pods[0]]
        sid = self.spec_of(job_index)
        compiled = self.compiled[sid]
        request, nonzero, label_set = compiled.request, compiled.nonzero, self._label_set[job_index]
        delta = compiled.usage_delta
        g = self._spec_gpus[sid]
        on_bind, touched, node_pods, node_pool = self._on_bind, self.touched, self.node_pods, self._node_pool
        by_priority = self.bound_by_priority[self._priority[job_index]]  # no new set per bind
        image, image_size = self._image_name[job_index], self._image_size[job_index]
        data_size = self._data_size[job_index]  # most jobs download nothing: no call for them
        push, stop_pending = self.events.push, book.stop_pending
        bound_ms_at, image_wait_ms_at, data_ms_at = book.bound_ms_at, book.image_wait_ms_at, book.data_ms_at
        for pod, node, before in zip(pods, nodes, gpus_before, strict=True):
            if node_at[pod] >= 0 and end_ms_at[pod] < 0:
                raise RuntimeError(
                    f"internal error: pod {pod} is bound twice (node {node_at[pod]} and {node})"
                )
            if before < 0:
                before = state.requested_at[node * state.row_width + state.gpu_col] if g else 0
                state.bind(node, request, nonzero, label_set, delta)
            for hook in on_bind:
                hook(pod, node, compiled, g)
            touched.add(node)
            self.placements += 1
            if g:
                c.gpus_taken(g, before == 0)
            node_pods[node].add(pod)
            self.bound_pods += 1
            by_priority.add(pod)
            node_at[pod] = node
            bound_ms_at[pod] = now
            stop_pending(pod, now)
            wait = 0
            if image is not None and image_size > 0:
                have = self.image_ready[node].get(image)
                if have is None:
                    have = now + transfer_ms(image_size, node_pool[node].image_pull_bandwidth)
                    self.image_ready[node][image] = have
                wait = max(0, have - now)
            data = transfer_ms(data_size, node_pool[node].data_bandwidth) if data_size > 0 else 0
            image_wait_ms_at[pod] = wait
            data_ms_at[pod] = data
            push(now + wait + data, PREP_DONE, pod, attempt_at[pod])

    def prepared(self, pod: int) -> None:
        """Image and data are there; start computing, or wait for the rest of a gang."""
        self.prepared_each((pod,), (-1,))

    def prepared_each(self, pods: Sequence[int], attempts: Sequence[int]) -> None:
        """``prepared`` for each of ``pods`` in turn (a shared prep-done entry's, in push order) whose
        attempt is still the one in ``attempts`` (-1: not checked) when its turn comes."""
        book, now, pod_job = self.book, self.now, self._pod_job
        node_at, ready_ms_at, attempt_at, job_ready_at = (
            book.node_at,
            book.ready_ms_at,
            book.attempt_at,
            book.job_ready_at,
        )
        image_name, multi_gang = self._image_name, self._multi_gang
        for pod, attempt in zip(pods, attempts, strict=True):
            if attempt >= 0 and attempt != attempt_at[pod]:
                continue  # evicted since its prep-done event was scheduled
            ready_ms_at[pod] = now
            job_index = pod_job[pod]
            image = image_name[job_index]
            if image is not None:
                self.state.add_image(node_at[pod], image, self._image_size[job_index])
            if multi_gang[job_index]:
                job_ready_at[job_index] += 1
                if job_ready_at[job_index] == self._pods[job_index] - self._pods_done_at[job_index]:
                    members = self.unfinished_pods(job_index)
                    nodes = [node_at[p] for p in members]
                    total = self.work.gang_ms(job_index, nodes) or self.work.longest_on_ms(job_index, nodes)
                    self.start_each(members, total)
                continue
            self.start_each((pod,), self.runtime_ms(job_index, node_at[pod]))

    def _checkpointing(self, job: int) -> tuple[int | None, int]:
        interval = self._checkpoint_interval[job]
        return (None if interval == NO_CHECKPOINT else interval), self._checkpoint_write[job]

    def start(self, pod: int, total_ms: int) -> None:
        """Compute what is left of the pod's work (after saved progress), checkpointing as configured."""
        self.start_each((pod,), total_ms)

    def start_each(self, pods: Sequence[int], total_ms: int) -> None:
        """``start`` each of one job's ``pods`` in turn with the same run time (a gang's members): the
        checkpointing is read once, the wall time computed again only where the saved progress differs."""
        book, now = self.book, self.now
        interval, write = self._checkpointing(self._pod_job[pods[0]])
        done_at, attempt_at, on_start, push = (
            book.done_fraction_at,
            book.attempt_at,
            self._on_start,
            self.events.push,
        )
        done, wall = -1.0, 0
        for pod in pods:
            book.start_ms_at[pod] = now
            book.run_total_ms_at[pod] = total_ms
            if done_at[pod] != done:
                done = done_at[pod]
                wall = max(1, wall_needed(math.ceil(total_ms * (1.0 - done)), interval, write))
            push(now + wall, POD_FINISH, pod, attempt_at[pod])
            for hook in on_start:
                hook(pod, wall)

    def release(self, pod: int, evicted: bool) -> int:
        """Give the pod's node back; returns the compute lost (evictions only)."""
        return self._release_each((pod,), (-1,), evicted, False)

    def finish(self, pod: int) -> None:
        """The pod succeeded; the last pod of a Kueue job releases its quota."""
        self._release_each((pod,), (-1,), False, True)

    def finish_each(self, pods: Sequence[int], attempts: Sequence[int]) -> int:
        """``finish`` each of ``pods`` in turn (a shared finish entry's, in push order) whose attempt is
        still the one in ``attempts`` when its turn comes; returns how many finished."""
        return self._release_each(pods, attempts, False, True)

    def _release_each(
        self, pods: Sequence[int], attempts: Sequence[int], evicted: bool, finishing: bool
    ) -> int:
        """Release each of ``pods`` in turn (skipping one whose attempt in ``attempts``, where not -1, is
        no longer its own), and with ``finishing`` record each as succeeded; returns how many finished
        (``finishing``), else the compute lost. Per job and spec its columns are read once."""
        state, book, c = self.state, self.book, self.counters
        attempt_at, pod_job, touched, node_pods = book.attempt_at, self._pod_job, self.touched, self.node_pods
        on_stop, on_release, on_gone = self._on_stop, self._on_release, self._on_gone
        pods_done_at, now, node_at, spec_of = self._pods_done_at, self.now, book.node_at, self.spec_of
        key_job = key_sid = -1
        handled = lost = 0
        for pod, attempt in zip(pods, attempts, strict=True):
            if attempt >= 0 and attempt != attempt_at[pod]:
                continue  # evicted or re-timed since its finish event was scheduled
            node = node_at[pod]
            job_index = pod_job[pod]
            sid = spec_of(job_index)
            if job_index != key_job or sid != key_sid:
                key_job, key_sid = job_index, sid
                compiled = self.compiled[sid]
                request, nonzero, label_set = compiled.request, compiled.nonzero, self._label_set[job_index]
                delta = compiled.usage_delta
                g = self._spec_gpus[sid]
                by_priority = self.bound_by_priority[self._priority[job_index]]
            state.release(node, request, nonzero, label_set, delta)
            for stop in on_stop:
                stop(pod)
            for hook in on_release:
                hook(pod, node)
            touched.add(node)
            if g:
                c.gpus_returned(g, state.requested_at[node * state.row_width + state.gpu_col] == 0)
            node_pods[node].discard(pod)
            self.bound_pods -= 1
            by_priority.discard(pod)
            lost = 0
            if evicted and book.start_ms_at[pod] >= 0:
                interval, write = self._checkpointing(job_index)
                elapsed = book.work_done_ms_at[pod]  # a paced pod's work at full speed (sim/pod_pace.py)
                if elapsed < 0:
                    elapsed = now - book.start_ms_at[pod]
                else:
                    book.work_done_ms_at[pod] = -1
                saved, lost = progress_at(elapsed, interval, write)
                total = book.run_total_ms_at[pod]
                if total > 0:
                    book.done_fraction_at[pod] = min(1.0, book.done_fraction_at[pod] + saved / total)
            book.log_release(pod, now, lost, evicted)
            if finishing:  # it succeeded: its end, its job's count of done pods
                book.end_ms_at[pod] = now
                book.done_fraction_at[pod] = 1.0
                self.last_completion_ms = now
                for gone in on_gone:
                    gone(pod)
                done = pods_done_at[job_index] + 1
                pods_done_at[job_index] = done
                if done == self._pods[job_index]:
                    for job_done in self._on_job_done:
                        job_done(job_index)
                handled += 1
        return handled if finishing else lost

    def evict_job(self, job: int) -> None:
        """Take every unfinished pod of a job off its node or out of the scheduling queue; they are not
        requeued (Kueue requeues the workload in its ClusterQueue)."""
        pod_removal.evict_job(self, job)

    def evict_job_pods(self, pod: int) -> None:
        """Evict a pod (and, for a gang job, every pod of its job) and requeue what was evicted."""
        pod_removal.evict_job_pods(self, pod)

    # -- scheduling ----------------------------------------------------------------------------------
    def try_place(self, group_id: int, pod: int) -> bool:
        """One scheduling attempt for a queue entry: a pod, or a whole gang."""
        compiled, scheduler, _, gang_size, _, preempts = self._group_plan[group_id]
        if gang_size:
            return self.gang_retry.place(group_id, pod)
        node = scheduler.select(compiled)
        if node < 0:
            if preempts:
                node = preempt_for(self, pod, compiled, scheduler)
            if node < 0:
                for make_room in self._make_room:
                    node = make_room(pod, compiled, scheduler)
                    if node >= 0:
                        break
                else:
                    return False
        self.bind(pod, node)
        return True

    def try_place_on(self, group_id: int, pod: int, allowed: BoolArray) -> bool:
        """``try_place`` on the ``allowed`` nodes only, without preemption (a backfill that must leave a
        reservation's nodes alone)."""
        compiled, scheduler, _, gang_size, _, _ = self._group_plan[group_id]
        if gang_size:
            return self._place_gang(group_id, pod, allowed)
        node = scheduler.select(compiled, allowed)
        if node < 0:
            return False
        self.bind(pod, node)
        return True

    def _place_gang(self, group_id: int, pod: int, allowed: BoolArray | None) -> bool:
        """Plan ``pod``'s gang (room made by ``make_gang_room`` if need be), bind its pods; False: no plan."""
        compiled, scheduler, placer, count, topology, _ = self._group_plan[group_id]
        job = self._pod_job[pod]
        keep = trial_binds_stay(self._bind_state_blind, len(self._on_bind), compiled, self._label_set[job])
        plan, kept = placer.plan(compiled, count, topology, allowed, keep)
        rooms = self.on.make_gang_room
        if plan is None and allowed is None and any(r(pod, count, compiled, scheduler) for r in rooms):
            plan, kept = placer.plan(compiled, count, topology, allowed, keep)
        if plan is None:
            return False
        gpus = self._spec_gpus[self.spec_of(job)]
        before = gpus_before_each(self.state, plan, gpus) if kept else [-1] * len(plan)
        self.bind_each(self.unfinished_pods(job), plan, before)
        return True

    # -- arrivals held and withdrawn (sim/held_jobs.py) ------------------------------------------------
    def hand_on(self, job: int, holder: Callable[[int, int], bool]) -> None:
        """A job an ``arrive`` subscriber held goes on."""
        held_jobs.hand_on(self, job, holder)

    def withdraw_job(self, job: int) -> None:
        """The job leaves before any pod of it was bound."""
        held_jobs.withdraw_job(self, job)

    # -- the run -------------------------------------------------------------------------------------
    def start_run(self) -> None:
        """The run starts: freeze the subscriptions, let features schedule their first events, then make the
        nodes present at the start ready (or boot them)."""
        self._freeze()
        for begin in self.on.run_start:
            begin()
        for node in np.flatnonzero(self.initially_present).tolist():
            pool = self.pools[self.node_infos[node].pool]
            if pool.initially_ready:
                self.node_ready(node)
            else:
                self.events.push(to_ms(pool.boot_time_s), NODE_READY, node, 0)
                self.booting += 1

    def entry_pods(self, group_id: int, first: int) -> list[int]:
        """The pods one queue entry stands for: a gang entry is all of its job's unfinished pods."""
        if self.groups[group_id].gang_size:
            return self.unfinished_pods(int(self.book.job[first]))
        return [first]

    def unfinished_pods(self, job_index: int) -> list[int]:
        """A job's pods that have not succeeded (an evicted gang keeps its succeeded pods, as a Job does)."""
        book = self.book
        if self._pods_done_at[job_index] == 0:  # only ``finish`` sets a pod's end, and it counts the pod here
            return list(book.pods_of(job_index))
        return [p for p in book.pods_of(job_index) if book.end_ms_at[p] < 0]

    def end_step(self) -> None:
        """End a step: this step's failures first (OOM kills), then the meters' and recorders' samples."""
        if self.failing:
            self._fail_now()
        now = self.now
        for sample in self._after_step:
            sample(now)
        self.touched.clear()

    # -- failures, deletions, re-timing ----------------------------------------------------------------
    def fail(self, pod: int) -> None:
        """The pod fails at the end of this step (its allocation failed: an OOM kill), with its gang."""
        self.failing.append(pod)

    def _fail_now(self) -> None:
        """Fail this step's pods, each with its gang (sim/pod_removal.py)."""
        failing, self.failing = self.failing, []
        pod_removal.fail_now(self, failing)

    def delete_pod(self, pod: int) -> None:
        """Take a pod off its node (not an eviction: nothing is requeued) or out of the queue."""
        pod_removal.delete_pod(self, pod)

    def schedule(self, time_ms: int, kind: int, index: int, attempt: int = 0) -> None:
        """An event of a feature's kind at ``time_ms``."""
        self.events.push(time_ms, kind, index, attempt)

    def halt(self, reason: str) -> None:
        """Stop the run after this step, with ``reason`` as its warning (the first reason stands)."""
        self.stall_warning = self.stall_warning or reason

    def retime_finish(self, pod: int, finish_ms: int) -> None:
        """The computing pod now finishes at ``finish_ms``: its earlier finish event is dropped."""
        book = self.book
        book.attempt[pod] += 1
        self.events.push(finish_ms, POD_FINISH, pod, int(book.attempt[pod]))

    def _freeze(self) -> None:
        """Turn the subscriptions into the tuples the lifecycle methods loop over (at the run's start)."""
        on = self.on
        self._on_bind, self._on_start = tuple(on.bind), tuple(on.start)
        self._bind_state_blind: tuple[Callable[[CompiledPod], bool], ...] = tuple(on.bind_state_blind)
        self._on_stop, self._on_release = tuple(on.stop), tuple(on.release)
        self._on_job_failed, self._make_room = tuple(on.job_failed), tuple(on.make_room)
        self._after_step = tuple(on.after_step)
        self._on_create, self._on_gone = tuple(on.create), tuple(on.gone)
        self._on_job_done, self._on_evict = tuple(on.job_done), tuple(on.evict)
        if on.optional_kinds:  # events that alone must not keep the run going (spot interruptions)
            assert not len(self.events), "features schedule their first events at run_start"
            self.events = GatedEventQueue(on.optional_kinds, on.quiet)
