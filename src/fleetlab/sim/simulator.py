"""The event loop: jobs arrive, pods are queued, placed, prepared (image pull, data download), run, finish.

The simulator owns time and lifecycles and records what happened; every placement decision is asked of
``fleetlab.placement.Scheduler``. Nodes boot, then become ready; pods go submitted → bound → preparing →
running → succeeded. Multi-pod jobs are placed pod by pod (gangs and evictions plug in at ``_try_place``
and the event kinds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fleetlab.model.job import Job
from fleetlab.model.resources import EPHEMERAL_STORAGE, GPU, MEMORY, PODS
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.profiles import Profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo
from fleetlab.sim.events import EventKind, EventQueue, to_ms, transfer_ms
from fleetlab.sim.pending import explain_pending
from fleetlab.sim.queue import SchedulingQueue
from fleetlab.sim.result import NEVER, JobTable, NodeTable, PodTable, SimulationResult, Timeline

ProgressCallback = Callable[[int, int], None]


def pod_spec(job: Job) -> PodSpec:
    """The placement-facing view of a job's pods (identical for all of them)."""
    image = job.image
    return PodSpec(
        requests=tuple(sorted(job.requests.items())),
        tolerations=job.tolerations,
        node_selector=tuple(sorted(job.node_selector.items())),
        affinity=job.affinity,
        image=image.name if image else None,
        image_size=image.size if image else 0,
        explicit_keys=frozenset(job.requests),
    )


def build_nodes(resolved: ResolvedScenario) -> list[NodeInfo]:
    """Expand node pools into nodes with allocatable resources and labels."""
    nodes: list[NodeInfo] = []
    for p_index, pool in enumerate(resolved.scenario.cluster.pools):
        allocatable = {
            "cpu": pool.cpu,
            MEMORY: pool.memory,
            EPHEMERAL_STORAGE: pool.ephemeral_storage,
            PODS: pool.max_pods,
            GPU: pool.gpus_per_node,
        }
        allocatable.update(pool.extended_resources)
        for i in range(pool.count):
            nodes.append(
                NodeInfo(
                    name=pool.node_name(i),
                    pool=p_index,
                    labels=pool.node_labels(i),
                    taints=pool.taints,
                    allocatable=dict(allocatable),
                    gpu_model=pool.gpu_model,
                    unschedulable=pool.unschedulable,
                )
            )
    return nodes


@dataclass
class _Counters:
    allocated_gpus: int = 0
    total_gpus: int = 0
    whole_free: int = 0
    gpu_nodes: int = 0


class Simulator:
    """Replays one resolved scenario under one profile; the same inputs give the same result."""

    def __init__(self, resolved: ResolvedScenario, profile: Profile, seed: int | None = None) -> None:
        self.resolved = resolved
        self.profile = profile
        self.seed = resolved.scenario.seed if seed is None else seed
        scenario = resolved.scenario
        self.node_infos = build_nodes(resolved)
        extra = sorted({r for job in resolved.jobs for r in job.requests})
        self.state = ClusterState(self.node_infos, extra_resources=extra)
        self.scheduler = Scheduler(
            self.state,
            profile,
            seed=self.seed,
            extended_resource_toleration=scenario.cluster.extended_resource_toleration,
        )
        self.pools = scenario.cluster.pools
        self.horizon_ms = None if scenario.horizon_s is None else to_ms(scenario.horizon_s)
        self._tl: list[tuple[int, int, int, int, int]] = []

    def run(self, progress: ProgressCallback | None = None) -> SimulationResult:
        """Run to completion (or the horizon) and return what happened."""
        started = time.perf_counter()
        jobs = sorted(enumerate(self.resolved.jobs), key=lambda item: (to_ms(item[1].submit_s), item[0]))
        order = [j for j, _ in jobs]
        job_list = [job for _, job in jobs]
        n_jobs = len(job_list)
        first_pod = np.zeros(n_jobs + 1, dtype=np.int64)
        np.cumsum([job.pods for job in job_list], out=first_pod[1:])
        n_pods = int(first_pod[-1])
        pod_job = np.repeat(np.arange(n_jobs, dtype=np.int64), [job.pods for job in job_list])
        pod_node = np.full(n_pods, -1, dtype=np.int64)
        bound = np.full(n_pods, NEVER, dtype=np.int64)
        running = np.full(n_pods, NEVER, dtype=np.int64)
        ended = np.full(n_pods, NEVER, dtype=np.int64)
        image_wait = np.zeros(n_pods, dtype=np.int64)
        data_wait = np.zeros(n_pods, dtype=np.int64)
        submit_ms = np.asarray([to_ms(job.submit_s) for job in job_list], dtype=np.int64)

        state, scheduler = self.state, self.scheduler
        n_nodes = state.n
        node_pool = state.pool
        ready_ms = np.full(n_nodes, NEVER, dtype=np.int64)
        image_ready: list[dict[str, int]] = [{} for _ in range(n_nodes)]
        events = EventQueue()
        counters = _Counters()
        gpus_of = state.allocatable[:, state.gpu_col]

        def node_ready(node: int, now: int) -> None:
            state.set_ready(node)
            ready_ms[node] = now
            g = int(gpus_of[node])
            if g > 0:
                counters.total_gpus += g
                counters.gpu_nodes += 1
                if state.requested[node, state.gpu_col] == 0:
                    counters.whole_free += 1

        for node, info in enumerate(self.node_infos):
            pool = self.pools[info.pool]
            if pool.initially_ready:
                node_ready(node, 0)
            else:
                events.push(to_ms(pool.boot_time_s), EventKind.NODE_READY, node)

        spec_ids: dict[PodSpec, int] = {}
        compiled_pods: list[CompiledPod] = []
        job_spec = np.full(n_jobs, -1, dtype=np.int64)

        def spec_of(job_index: int) -> int:
            sid = int(job_spec[job_index])
            if sid < 0:
                spec = pod_spec(job_list[job_index])
                sid = spec_ids.setdefault(spec, len(spec_ids))
                if sid == len(compiled_pods):
                    compiled_pods.append(scheduler.compile(spec))
                job_spec[job_index] = sid
            return sid

        runtime_cache: dict[tuple[int, str | None], int] = {}
        queue = SchedulingQueue()
        now = 0
        placements = 0

        def try_place(group: int, pod: int) -> bool:
            nonlocal placements
            compiled = compiled_pods[group]
            node = scheduler.select(compiled)
            if node < 0:
                return False
            gpu_before = int(state.requested[node, state.gpu_col])
            state.bind(node, compiled.request, compiled.nonzero)
            placements += 1
            g = int(compiled.request[state.gpu_col])
            if g:
                counters.allocated_gpus += g
                if gpu_before == 0:
                    counters.whole_free -= 1
            pod_node[pod] = node
            bound[pod] = now
            job = job_list[int(pod_job[pod])]
            pool = self.pools[int(node_pool[node])]
            wait = 0
            if job.image is not None and job.image.size > 0:
                have = image_ready[node].get(job.image.name)
                if have is None:
                    have = now + transfer_ms(job.image.size, pool.image_pull_bandwidth)
                    image_ready[node][job.image.name] = have
                wait = max(0, have - now)
            data = transfer_ms(job.data_size, pool.data_bandwidth)
            image_wait[pod] = wait
            data_wait[pod] = data
            events.push(now + wait + data, EventKind.PREP_DONE, pod)
            return True

        next_job = 0
        last_generation = -1
        steps = 0
        total_work = n_jobs + n_pods
        finished_pods = 0
        horizon = self.horizon_ms
        while True:
            t_event = events.peek_time()
            t_job = int(submit_ms[next_job]) if next_job < n_jobs else None
            if t_event is None and t_job is None:
                break
            t = min(x for x in (t_event, t_job) if x is not None)
            if horizon is not None and t > horizon:
                break
            now = t
            submitted = False
            while next_job < n_jobs and submit_ms[next_job] == now:
                job = job_list[next_job]
                sid = spec_of(next_job)
                for pod in range(int(first_pod[next_job]), int(first_pod[next_job + 1])):
                    queue.add(sid, job.priority, now, pod)
                next_job += 1
                submitted = True
            while events.peek_time() == now:
                _, kind, index = events.pop()
                if kind == EventKind.PREP_DONE:
                    running[index] = now
                    node = int(pod_node[index])
                    job_index = int(pod_job[index])
                    job = job_list[job_index]
                    if job.image is not None:
                        state.add_image(node, job.image.name)
                    model = state.gpu_model[node]
                    key = (job_index, model)
                    run_ms = runtime_cache.get(key)
                    if run_ms is None:
                        run_ms = max(1, to_ms(job.runtime.on(model)))
                        runtime_cache[key] = run_ms
                    events.push(now + run_ms, EventKind.POD_FINISH, index)
                elif kind == EventKind.POD_FINISH:
                    node = int(pod_node[index])
                    compiled = compiled_pods[spec_of(int(pod_job[index]))]
                    state.release(node, compiled.request, compiled.nonzero)
                    g = int(compiled.request[state.gpu_col])
                    if g:
                        counters.allocated_gpus -= g
                        if state.requested[node, state.gpu_col] == 0:
                            counters.whole_free += 1
                    ended[index] = now
                    finished_pods += 1
                else:
                    node_ready(index, now)
            if len(queue) and (submitted or state.release_generation != last_generation):
                last_generation = state.release_generation
                queue.cycle(last_generation, try_place)
            self._record(now, counters)
            steps += 1
            if progress is not None and steps % 4096 == 0:
                progress(next_job + finished_pods, total_work)
        end_ms = now if horizon is None else horizon
        if progress is not None:
            progress(total_work, total_work)

        job_table = self._job_table(job_list, order, first_pod, submit_ms, bound, running, ended)
        by_id = {sid: spec for spec, sid in spec_ids.items()}
        groups = {by_id[sid]: pods for sid, pods in queue.pending().items()}
        pending = explain_pending(scheduler, groups, job_list, pod_job)
        return SimulationResult(
            scenario=self.resolved.scenario.name,
            policy=self.profile.name,
            policy_description=self.profile.description,
            seed=self.seed,
            end_ms=int(end_ms),
            jobs=job_table,
            pods=PodTable(
                job=np.asarray(order, dtype=np.int64)[pod_job] if n_jobs else pod_job,
                node=pod_node,
                bound_ms=bound,
                running_ms=running,
                end_ms=ended,
                image_wait_ms=image_wait,
                data_ms=data_wait,
            ),
            nodes=self._node_table(ready_ms, int(end_ms)),
            timeline=self._timeline(),
            pending=pending,
            warnings=list(self.resolved.warnings),
            placements=placements,
            wall_s=time.perf_counter() - started,
        )

    # -- recording -----------------------------------------------------------------------------------
    def _record(self, now: int, c: _Counters) -> None:
        row = (now, c.allocated_gpus, c.total_gpus, c.whole_free, c.gpu_nodes)
        tl = self._tl
        if tl and tl[-1][1:] == row[1:]:
            return
        if tl and tl[-1][0] == now:
            tl[-1] = row
        else:
            tl.append(row)

    def _timeline(self) -> Timeline:
        rows = np.asarray(self._tl, dtype=np.int64).reshape(-1, 5)
        return Timeline(
            t_ms=rows[:, 0].copy(),
            allocated_gpus=rows[:, 1].copy(),
            total_gpus=rows[:, 2].copy(),
            whole_free_gpu_nodes=rows[:, 3].copy(),
            gpu_nodes=rows[:, 4].copy(),
        )

    def _job_table(
        self,
        job_list: list[Job],
        order: list[int],
        first_pod: np.ndarray,
        submit_ms: np.ndarray,
        bound: np.ndarray,
        running: np.ndarray,
        ended: np.ndarray,
    ) -> JobTable:
        """Per-job times in the scenario's original job order."""
        n = len(job_list)
        starts = first_pod[:-1]
        if n:
            last_bound = np.maximum.reduceat(bound, starts) if len(bound) else np.zeros(0, dtype=np.int64)
            all_bound = np.minimum.reduceat(bound, starts) >= 0
            last_running = np.maximum.reduceat(running, starts)
            all_running = np.minimum.reduceat(running, starts) >= 0
            last_end = np.maximum.reduceat(ended, starts)
            completed = np.minimum.reduceat(ended, starts) >= 0
        else:
            last_bound = last_running = last_end = np.zeros(0, dtype=np.int64)
            all_bound = all_running = completed = np.zeros(0, dtype=bool)
        inverse = np.empty(n, dtype=np.int64)
        inverse[np.asarray(order, dtype=np.int64)] = np.arange(n, dtype=np.int64)
        ordered = [job_list[int(i)] for i in inverse]

        def reorder(values: np.ndarray) -> np.ndarray:
            return values[inverse]

        return JobTable(
            ids=[job.id for job in ordered],
            job_class=[job.job_class.value for job in ordered],
            team=[job.team for job in ordered],
            priority=np.asarray([job.priority for job in ordered], dtype=np.int64),
            pods=np.asarray([job.pods for job in ordered], dtype=np.int64),
            gpus_per_pod=np.asarray([job.gpus_per_pod for job in ordered], dtype=np.int64),
            cpu_milli_per_pod=np.asarray([job.requests.get("cpu", 0) for job in ordered], dtype=np.int64),
            submit_ms=reorder(submit_ms),
            last_bound_ms=reorder(np.where(all_bound, last_bound, NEVER)),
            running_ms=reorder(np.where(all_running, last_running, NEVER)),
            end_ms=reorder(np.where(completed, last_end, NEVER)),
            completed=reorder(completed),
        )

    def _node_table(self, ready_ms: np.ndarray, end_ms: int) -> NodeTable:
        """Nodes are billed from the start of the run (boot included) to its end."""
        n = self.state.n
        pools = self.pools
        infos = self.node_infos
        return NodeTable(
            names=list(self.state.node_names),
            pool=[pools[i.pool].name for i in infos],
            gpu_model=[i.gpu_model or "" for i in infos],
            capacity_type=[pools[i.pool].capacity_type for i in infos],
            gpus=self.state.allocatable[:, self.state.gpu_col].copy(),
            cpu_milli=self.state.allocatable[:, self.state.cpu_col].copy(),
            price_per_hour=np.asarray([pools[i.pool].price_per_hour for i in infos], dtype=np.float64),
            billed_start_ms=np.zeros(n, dtype=np.int64),
            billed_end_ms=np.full(n, end_ms, dtype=np.int64),
            ready_ms=ready_ms.copy(),
        )
