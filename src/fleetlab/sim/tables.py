"""Turn a finished run's record into the result tables (in the scenario's original job order).

The pod book and the cluster state are the engine's own record of the pod lifecycle; everything else comes
from what the features recorded (``ResultParts``, filled by their ``run_end`` subscriptions).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.billing_inputs import billing_inputs, node_prices
from fleetlab.sim.book import scenario_positions
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.id_column import IdColumn
from fleetlab.sim.lifecycle_result import LifecycleRecord
from fleetlab.sim.node_lifecycle import billed_columns
from fleetlab.sim.pending import pending_at_end
from fleetlab.sim.result import (
    NEVER,
    JobTable,
    NodeTable,
    PodTable,
    SegmentTable,
    SharingTable,
    SimulationResult,
)

IntArray = NDArray[np.int64]


def _per_job(values: IntArray, starts: IntArray, reduce: np.ufunc) -> IntArray:
    return np.asarray(reduce.reduceat(values, starts), dtype=np.int64) if len(values) else values


def job_table(sim: EngineHandle, parts: ResultParts) -> JobTable:
    """Per-job times: last pod bound, all pods computing, last pod done (NEVER where not reached)."""
    book, end_ms = sim.book, parts.end_ms
    n = len(sim.jobs)
    starts = book.first_pod[:-1]
    if n:
        last_bound = _per_job(book.bound_ms, starts, np.maximum)
        all_bound = _per_job(book.bound_ms, starts, np.minimum) >= 0
        last_start = _per_job(book.start_ms, starts, np.maximum)
        all_started = _per_job(book.start_ms, starts, np.minimum) >= 0
        last_end = _per_job(book.end_ms, starts, np.maximum)
        completed = _per_job(book.end_ms, starts, np.minimum) >= 0
        evictions = np.add.reduceat(book.evictions, starts).astype(np.int64)
        waited = _per_job(book.waited_until(end_ms), starts, np.maximum)
        waiting = np.logical_or.reduceat(book.pending_since_ms >= 0, starts)
        failed = np.logical_or.reduceat(book.failed, starts) & ~completed
    else:
        last_bound = last_start = last_end = evictions = waited = np.zeros(0, dtype=np.int64)
        all_bound = all_started = completed = waiting = failed = np.zeros(0, dtype=bool)
    # A completed job's last stay is what the queue-wait / prep / compute split describes.
    last_bound = np.where(completed | all_bound, last_bound, NEVER)
    inverse = scenario_positions(sim.order)
    table = sim.resolved.jobs  # the workload in scenario order: columns plus one template per job shape
    queues = parts.cluster_queue_of
    admitted = sim.submit_ms if parts.admitted_ms is None else parts.admitted_ms  # Kueue's admissions
    quota_wait = np.zeros(n, dtype=np.int64) if parts.quota_wait_ms is None else parts.quota_wait_ms
    withdrawn = np.full(n, NEVER, dtype=np.int64)
    for job, at in sim.withdrawn.items():
        withdrawn[job] = at
    provisioning, refused = parts.provisioning_wait_ms, parts.namespace_quota_wait_ms
    return JobTable(
        ids=IdColumn(table.ids),  # the workload's Arrow ids, not a Python string per job
        job_class=table.per_template(lambda job: job.job_class.value, dtype=object).tolist(),
        team=table.per_template(lambda job: job.team, dtype=object).tolist(),
        priority=table.per_template(lambda job: job.priority, dtype=np.int64),
        pods=table.column("pods").astype(np.int64),
        gpus_per_pod=_gpus_per_pod(sim, parts),
        cpu_milli_per_pod=table.per_template(lambda job: job.requests.get("cpu", 0), dtype=np.int64),
        submit_ms=sim.submit_ms[inverse],
        last_bound_ms=last_bound[inverse],
        running_ms=np.where(all_started, last_start, NEVER)[inverse],
        end_ms=np.where(completed, last_end, NEVER)[inverse],
        completed=completed[inverse],
        evictions=evictions[inverse],
        admitted_ms=np.where(admitted >= 0, admitted, sim.submit_ms)[inverse],
        cluster_queue=queues[inverse].tolist() if queues is not None else [""] * n,
        queue_wait_ms=waited[inverse],
        waiting_at_end=waiting[inverse],
        failed=failed[inverse],
        quota_wait_ms=quota_wait[inverse],
        withdrawn_ms=withdrawn[inverse],
        provisioning_wait_ms=None if provisioning is None else provisioning[inverse],
        namespace_quota_wait_ms=None if refused is None else refused[inverse],
    )


def _gpus_per_pod(sim: EngineHandle, parts: ResultParts) -> IntArray:
    """Whole GPUs per pod (scenario order): ``nvidia.com/gpu``, plus the GPUs DRA gave its claims."""
    gpus: IntArray = sim.resolved.jobs.per_template(lambda job: job.gpus_per_pod, dtype=np.int64)
    return gpus if parts.dra is None else gpus + parts.dra.job_gpus


def segment_table(sim: EngineHandle, end_ms: int) -> SegmentTable:
    """Closed stays plus the stays still open at the end of the run (closed there). Each column is made
    once, from a view of the log's column and the open stays' values, or is the log's column itself where
    no stay is open (a gang-heavy run logs millions of stays: every copy of a column was part of the
    run's peak of memory; the run is over, so nothing appends to the log any more)."""
    book = sim.book
    log = book.segments
    open_pods = np.flatnonzero((book.node >= 0) & (book.end_ms < 0))
    n_open = len(open_pods)
    opened = [
        open_pods.astype(np.int64),
        book.node[open_pods],
        book.bound_ms[open_pods],
        np.where(book.ready_ms[open_pods] >= 0, book.ready_ms[open_pods], end_ms),
        np.where(book.start_ms[open_pods] >= 0, book.start_ms[open_pods], end_ms),
        np.full(n_open, end_ms, dtype=np.int64),
        np.zeros(n_open, dtype=np.int64),
    ]
    pod, node, bound, ready, start, end, lost = (
        np.concatenate([np.frombuffer(column, dtype=np.int64), more], dtype=np.int64)
        if n_open
        else np.frombuffer(column, dtype=np.int64)  # every stay closed: the log's own column
        for column, more in zip(log.columns, opened, strict=True)
    )
    for times in (bound, ready, start, end):
        np.minimum(times, end_ms, out=times)
    closed_evicted = np.frombuffer(log.evicted, dtype=np.uint8).astype(bool)
    return SegmentTable(
        pod=pod,
        node=node,
        bound_ms=bound,
        ready_ms=ready,
        start_ms=start,
        end_ms=end,
        lost_ms=lost,
        evicted=np.concatenate([closed_evicted, np.zeros(n_open, dtype=bool)]),
    )


def node_table(
    sim: EngineHandle,
    end_ms: int,
    record: LifecycleRecord | None,
    first_ready: dict[int, int],
    background: IntArray | None = None,
) -> NodeTable:
    """Fixed nodes are billed from the start of the run (boot included) to its end; nodes of autoscaled
    pools from their request to their removal (see sim/node_lifecycle.py)."""
    state, pools, infos = sim.state, sim.pools, sim.node_infos
    n = state.n
    if record is None:
        ready = sim.ready_ms
        boot = np.where(ready >= 0, np.minimum(ready, end_ms), end_ms).astype(np.int64)
        start, last = np.zeros(n, dtype=np.int64), np.full(n, end_ms, dtype=np.int64)
        billed, down = last - start, np.zeros(n, dtype=np.int64)
    else:
        start, last, billed, boot, down = billed_columns(record, n, end_ms)
    return NodeTable(
        names=list(state.node_names),
        pool=[pools[i.pool].name for i in infos],
        gpu_model=[i.gpu_model or "" for i in infos],
        capacity_type=[pools[i.pool].capacity_type for i in infos],
        gpus=state.allocatable[:, state.gpu_col].copy(),
        cpu_milli=state.allocatable[:, state.cpu_col].copy(),
        price_per_hour=node_prices(sim),
        billed_start_ms=start,
        billed_end_ms=last,
        ready_ms=_first_ready(sim.ready_ms, first_ready),
        billed_ms=billed,
        boot_ms=boot,
        down_ms=down,
        background_unit_ms=background,
    )


def sharing_table(sim: EngineHandle, parts: ResultParts) -> SharingTable:
    """Per job (scenario order) and per pod what GPU sharing did, and the fragmentation and stranded
    samples (sim/gpu_tenancy.py, sim/pod_pace.py, sim/gpu_fragments.py, sim/stranded.py)."""
    book = sim.book
    n = len(sim.jobs)
    starts = book.first_pod[:-1]
    inverse = scenario_positions(sim.order)

    def per_job(values: np.ndarray, reduce: np.ufunc) -> np.ndarray:
        return reduce.reduceat(values, starts)[inverse] if n else values[:0]

    table = sim.resolved.jobs  # scenario order; the GPU fields are a template's
    milli = table.per_template(
        lambda job: job.gpu_milli or 0 if job.shares_gpu else 1000 * job.gpus_per_pod, dtype=np.int64
    )
    if parts.dra is not None:
        milli = milli + 1000 * parts.dra.job_gpus
    unpaced = np.zeros(n, dtype=np.float64)  # no pod ran on time-sliced GPUs: no per-pod column of zeros
    sliced = unpaced if parts.sliced_ms is None else per_job(parts.sliced_ms, np.add)
    extra = unpaced if parts.sliced_extra_ms is None else per_job(parts.sliced_extra_ms, np.add)
    assert parts.oom_kills is not None and parts.pod_gpus is not None
    assert parts.fragmentation is not None and parts.stranded is not None
    return SharingTable(
        job_oom_kills=per_job(parts.oom_kills, np.add).astype(np.int64),
        job_failed=per_job(book.failed, np.logical_or).astype(bool),
        job_extra_ms=extra.astype(np.float64),
        job_sliced_ms=sliced.astype(np.float64),
        job_gpu_milli=milli,
        pod_gpus=parts.pod_gpus,
        fragmentation=parts.fragmentation,
        consolidation_evictions=parts.consolidation_evictions,
        stranded_gpu_milli_end=parts.stranded_end,
        stranded=parts.stranded,
    )


#: Job ids a stall warning names before it only counts the rest.
STALL_NAMED_JOBS = 5


def stall_warning(sim: EngineHandle) -> str:
    """The stall warning with the jobs it cut off: how many, how many of those were never submitted, and
    the first few ids in submit order (the pending table explains each job still waiting)."""
    unfinished = np.flatnonzero(sim.pods_done < sim.job_table.column("pods"))
    if not len(unfinished):
        return sim.stall_warning
    never_submitted = int(np.count_nonzero(unfinished >= len(sim.job_table) - sim.submissions_left))
    ids = sim.job_table.ids
    named = ", ".join(str(ids[int(i)].as_py()) for i in unfinished[:STALL_NAMED_JOBS])
    more = f" and {len(unfinished) - STALL_NAMED_JOBS} more" if len(unfinished) > STALL_NAMED_JOBS else ""
    return (
        f"{sim.stall_warning}. Cut off: {len(unfinished)} unfinished job(s), {never_submitted} of them never "
        f"submitted ({named}{more}); the pending table explains those still waiting"
    )


def _first_ready(ready_ms: IntArray, first_ready: dict[int, int]) -> IntArray:
    """When each node slot first became ready (a replaced node's first readiness from the spot log)."""
    out = ready_ms.copy()
    for node, first in first_ready.items():
        out[node] = first
    return out


def build_result(sim: EngineHandle, parts: ResultParts, wall_s: float) -> SimulationResult:
    """Assemble the SimulationResult of a finished run from the pod book and the features' parts."""
    end_ms = parts.end_ms
    assert parts.timeline is not None
    pending = pending_at_end(sim, parts)
    book = sim.book
    order = sim.order
    segments = segment_table(sim, end_ms)
    return SimulationResult(
        scenario=sim.resolved.scenario.name,
        policy=sim.profile.name,
        policy_description=sim.profile.description,
        seed=sim.seed,
        end_ms=end_ms,
        jobs=job_table(sim, parts),
        pods=PodTable(  # the finished run's own columns, not copies: nothing writes to the book any more
            job=order[book.job] if len(order) else book.job,
            node=book.node,
            bound_ms=book.bound_ms,
            running_ms=book.start_ms,
            end_ms=book.end_ms,
            image_wait_ms=book.image_wait_ms,
            data_ms=book.data_ms,
            evictions=book.evictions,
        ),
        nodes=node_table(sim, end_ms, parts.lifecycle, parts.first_ready_ms, parts.background_unit_ms),
        timeline=parts.timeline,
        segments=segments,
        pending=pending,
        warnings=[*sim.resolved.warnings, *([stall_warning(sim)] if sim.stall_warning else [])],
        placements=sim.placements,
        wall_s=wall_s,
        queue_samples=parts.queue_samples,
        interruptions=parts.interruptions,
        billing=billing_inputs(sim, segments, end_ms),
        lifecycle=parts.lifecycle,
        sharing=sharing_table(sim, parts),
        interference=parts.interference,
        services=parts.services,
        horizon_ms=sim.horizon_ms,
        dra=parts.dra,
    )
