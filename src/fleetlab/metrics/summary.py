"""The headline figures of one run: waits, completion times, allocation, idle GPU-hours and dollars.

Reads a SimulationResult and the cost split; changes nothing. Every figure is defined in docs/metrics.md.
Waits and completion times come twice: exact over the jobs whose value is known, and as lower bounds over
every job, the censored ones (still pending or running at the end) counted with their value so far
(metrics/censoring.py); the counts by state say how many were censored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.cost.billing import BACKGROUND, MS_PER_HOUR, extra_lines, node_costs
from fleetlab.metrics.censoring import Censored, censor, mean, percentile, wait_known
from fleetlab.metrics.dynamics import summarize_dynamics
from fleetlab.metrics.services import service_totals, workload_jobs
from fleetlab.metrics.usage_columns import time_weighted_mean, usage_summary
from fleetlab.sim.result import SimulationResult, Timeline


def sharing_summary(result: SimulationResult) -> dict[str, Any]:
    """OOM kills, failed jobs, time-slicing extra hours and time-weighted fragmentation (rate, amount)."""
    sharing = result.sharing
    if sharing is None:
        return {}
    frag = sharing.fragmentation
    idle = frag[:, 1].astype(np.float64)
    amount = frag[:, 4].astype(np.float64)
    rate = np.where(idle > 0, amount / np.where(idle > 0, idle, 1.0), 0.0)
    return {
        "oom_kills": int(sharing.job_oom_kills.sum()),
        "time_slicing_extra_hours": float(sharing.job_extra_ms.sum()) / MS_PER_HOUR,
        "frag_rate_mean": time_weighted_mean(frag[:, 0], rate, result.end_ms) if len(frag) else 0.0,
        "frag_gpu_milli_mean": time_weighted_mean(frag[:, 0], amount, result.end_ms) if len(frag) else 0.0,
        "consolidation_evictions": sharing.consolidation_evictions,
        "stranded_gpus_end": sharing.stranded_gpu_milli_end / 1000.0,
        "stranded_gpus_mean": (
            time_weighted_mean(sharing.stranded[:, 0], sharing.stranded[:, 1] / 1000.0, result.end_ms)
            if len(sharing.stranded)
            else 0.0
        ),
    }


#: Summary fields present only in runs that have the wait bucket.
OPTIONAL_BUCKETS = frozenset(
    {"provisioning_wait_mean_s", "namespace_quota_wait_mean_s", "gpu_hours_background", "cost_background"}
)


@dataclass(frozen=True)
class Summary:
    """One row of the comparison table (seconds, hours and dollars as floats)."""

    policy: str
    jobs: int
    jobs_completed: int
    #: Same as jobs_pending_at_end (kept for readers of earlier summaries).
    jobs_pending: int
    queue_wait_mean_s: float
    queue_wait_p50_s: float
    queue_wait_p95_s: float
    queue_wait_p99_s: float
    quota_wait_mean_s: float
    prep_mean_s: float
    completion_mean_s: float
    gpu_allocation_ratio: float
    whole_free_gpu_nodes_mean: float
    gpu_hours_billed: float
    gpu_hours_busy: float
    gpu_hours_lost: float
    gpu_hours_prep: float
    gpu_hours_wait: float
    gpu_hours_idle: float
    gpu_hours_boot: float
    gpu_hours_down: float
    evictions: int
    cost_total: float
    cost_compute: float
    cost_lost: float
    cost_prep: float
    cost_wait: float
    cost_idle: float
    cost_boot: float
    cost_down: float
    cost_per_completed_job: float
    makespan_s: float
    placements: int
    #: Spot interruptions (sim/interruptions.py): reclaims, pods they evicted, compute and dollars lost.
    interruptions: int = 0
    interruption_pods_evicted: int = 0
    interruption_gpu_hours_lost: float = 0.0
    interruption_cost_lost: float = 0.0
    #: Billing rules (model/billing_rules.py): minimum billed time, and lines outside the node bills
    #: (included in cost_total).
    cost_minimum: float = 0.0
    cost_commitment_unused: float = 0.0
    cost_data_transfer: float = 0.0
    cost_storage: float = 0.0
    #: Node lifecycle (0 with fixed nodes): see metrics/dynamics.py.
    scale_ups: int = 0
    nodes_removed: int = 0
    stockouts: int = 0
    capacity_wait_pod_hours: float = 0.0
    node_hours_idle: float = 0.0
    node_failures: int = 0
    pods_evicted_per_failure: float = 0.0
    gpu_hours_lost_per_failure: float = 0.0
    #: GPU sharing (fleetlab.sim.gpu_tenancy / gpu_fragments): time-sliced OOM kills, jobs they failed,
    #: extra wall time from time-slicing interference, time-weighted mean fragmentation rate (FGD).
    oom_kills: int = 0
    jobs_failed: int = 0
    time_slicing_extra_hours: float = 0.0
    frag_rate_mean: float = 0.0
    frag_gpu_milli_mean: float = 0.0
    consolidation_evictions: int = 0
    #: Free GPUs (in GPUs, from milli) at the end that no pending job or typical pod shape can use.
    stranded_gpus_end: float = 0.0
    #: Time-weighted mean of the free GPUs no typical pod shape can use where they are.
    stranded_gpus_mean: float = 0.0
    #: Busy GPU equivalents over allocatable GPUs, and the mean largest free block (sim/usage_meter.py).
    gpu_utilization_ratio: float = 0.0
    largest_free_block_mean: float = 0.0
    #: Extra wall time co-located pods cost each other (fleetlab.model.interference; 0 when off).
    interference_extra_hours: float = 0.0
    #: Inference services (metrics/services.py), over all services; null (NaN) without services.
    service_slo_attainment_pct: float = float("nan")
    service_late_requests_pct: float = float("nan")
    service_replicas_lost: int = 0
    #: 95th percentile of submit-to-end time over completed jobs (numpy linear interpolation).
    completion_p95_s: float = 0.0
    #: Jobs by state at the end (with jobs_completed and jobs_failed they add up to jobs): every unfinished
    #: pod bound (preparing or computing), and some pod still waiting for a node (metrics/censoring.py).
    jobs_running_at_end: int = 0
    jobs_pending_at_end: int = 0
    #: Jobs withdrawn before they started (recorded withdrawals, refused by a job limit); their waits are
    #: censored at the withdrawal (metrics/censoring.py).
    jobs_cancelled: int = 0
    #: Over every job, pending ones with their wait so far: lower bounds of the figures had they all started.
    queue_wait_mean_s_lower_bound: float = 0.0
    queue_wait_p50_s_lower_bound: float = 0.0
    queue_wait_p95_s_lower_bound: float = 0.0
    queue_wait_p99_s_lower_bound: float = 0.0
    #: Over every job that did not fail, unfinished ones with their time in system up to the end.
    completion_mean_s_lower_bound: float = 0.0
    completion_p95_s_lower_bound: float = 0.0
    #: Parts of the queue wait beside Kueue's quota wait, over jobs not pending at the end: Kueue admission
    #: checks (ProvisioningRequests) and pods refused at creation by namespace policies; None (and left out
    #: of ``as_dict``) in a run without them.
    provisioning_wait_mean_s: float | None = None
    namespace_quota_wait_mean_s: float | None = None
    #: GPU-hours and dollars of room held by work the history does not list (the background load,
    #: sim/background.py), apart from the jobs' compute; None (left out) in a run without one.
    gpu_hours_background: float | None = None
    cost_background: float | None = None

    def as_dict(self) -> dict[str, float | int | str | None]:
        """Plain dict for JSON (NaN, e.g. cost per job with no job completed, becomes null); a wait bucket
        the run does not have is left out, and ``jobs_cancelled`` when no job was cancelled (a run without
        withdrawals keeps its summary as it was)."""
        out: dict[str, float | int | str | None] = {}
        for key, value in asdict(self).items():
            if value is None and key in OPTIONAL_BUCKETS:
                continue
            out[key] = None if isinstance(value, float) and value != value else value
        if not self.jobs_cancelled:
            del out["jobs_cancelled"]
        return out


def allocation_ratio(timeline: Timeline, end_ms: int) -> float:
    """Time-weighted allocated GPUs over time-weighted allocatable GPUs of ready nodes."""
    if len(timeline.t_ms) == 0:
        return 0.0
    alloc = time_weighted_mean(timeline.t_ms, timeline.allocated_gpus.astype(np.float64), end_ms)
    total = time_weighted_mean(timeline.t_ms, timeline.total_gpus.astype(np.float64), end_ms)
    return alloc / total if total > 0 else 0.0


def _gpu_hours(unit_ms: NDArray[np.int64], gpu_nodes: NDArray[np.bool_]) -> float:
    return float(unit_ms[gpu_nodes].sum()) / MS_PER_HOUR


def summarize(result: SimulationResult) -> Summary:
    """Compute the comparison row for one run."""
    jobs = workload_jobs(result.jobs)  # service replicas are summarised per service
    censored = censor(jobs, result.end_ms)
    known = wait_known(jobs)
    waits = censored.waits_known_s
    prep = (jobs.running_ms - jobs.last_bound_ms)[jobs.running_ms >= 0] / 1000.0
    cost = node_costs(result)
    gpu_nodes = result.nodes.gpus > 0
    extras = extra_lines(result)
    total = float(cost.total_billed) + extras.total
    n_completed = censored.completed
    end_ms = result.end_ms
    log = result.interruptions
    life = summarize_dynamics(result)
    background = BACKGROUND in cost.units
    return Summary(
        policy=result.policy,
        jobs=len(jobs.ids),
        jobs_completed=n_completed,
        jobs_pending=censored.pending,
        queue_wait_mean_s=mean(waits),
        queue_wait_p50_s=percentile(waits, 50),
        queue_wait_p95_s=percentile(waits, 95),
        queue_wait_p99_s=percentile(waits, 99),
        quota_wait_mean_s=mean(jobs.quota_wait_ms[known] / 1000.0),
        provisioning_wait_mean_s=_mean_known(jobs.provisioning_wait_ms, known),
        namespace_quota_wait_mean_s=_mean_known(jobs.namespace_quota_wait_ms, known),
        prep_mean_s=mean(prep),
        completion_mean_s=mean(censored.completion_known_s),
        completion_p95_s=percentile(censored.completion_known_s, 95),
        gpu_allocation_ratio=allocation_ratio(result.timeline, end_ms),
        whole_free_gpu_nodes_mean=time_weighted_mean(
            result.timeline.t_ms, result.timeline.whole_free_gpu_nodes.astype(np.float64), end_ms
        ),
        gpu_hours_billed=float(cost.unit_total[gpu_nodes].sum()) / MS_PER_HOUR,
        gpu_hours_busy=_gpu_hours(cost.units["compute"], gpu_nodes),
        gpu_hours_lost=_gpu_hours(cost.units["lost"], gpu_nodes),
        gpu_hours_prep=_gpu_hours(cost.units["prep"], gpu_nodes),
        gpu_hours_wait=_gpu_hours(cost.units["wait"], gpu_nodes),
        gpu_hours_idle=_gpu_hours(cost.units["idle"], gpu_nodes),
        gpu_hours_boot=_gpu_hours(cost.units["boot"], gpu_nodes),
        gpu_hours_down=_gpu_hours(cost.units["down"], gpu_nodes),
        gpu_hours_background=_gpu_hours(cost.units[BACKGROUND], gpu_nodes) if background else None,
        cost_background=float(cost.total(BACKGROUND)) if background else None,
        evictions=int(jobs.evictions.sum()),
        cost_total=total,
        cost_compute=float(cost.total("compute")),
        cost_lost=float(cost.total("lost")),
        cost_prep=float(cost.total("prep")),
        cost_wait=float(cost.total("wait")),
        cost_idle=float(cost.total("idle")),
        cost_boot=float(cost.total("boot")),
        cost_down=float(cost.total("down")),
        cost_per_completed_job=total / n_completed if n_completed else float("nan"),
        makespan_s=end_ms / 1000.0,
        placements=result.placements,
        interruptions=len(log) if log is not None else 0,
        interruption_pods_evicted=int(log.pods_evicted.sum()) if log is not None else 0,
        interruption_gpu_hours_lost=float(log.lost_gpu_ms.sum()) / MS_PER_HOUR if log is not None else 0.0,
        interruption_cost_lost=float(log.lost_dollars.sum()) if log is not None else 0.0,
        cost_minimum=float(cost.total("minimum")),
        cost_commitment_unused=extras.commitment_unused,
        cost_data_transfer=extras.data_transfer,
        cost_storage=extras.storage,
        scale_ups=life.scale_ups,
        nodes_removed=life.nodes_removed,
        stockouts=life.stockouts,
        capacity_wait_pod_hours=life.capacity_wait_pod_hours,
        node_hours_idle=life.node_hours_idle,
        node_failures=life.failures,
        pods_evicted_per_failure=life.pods_evicted_per_failure,
        gpu_hours_lost_per_failure=life.gpu_hours_lost_per_failure,
        **sharing_summary(result),
        **usage_summary(result),
        **service_totals(result),
        **censored_figures(censored),
    )


def _mean_known(wait_ms: NDArray[np.int64] | None, known: NDArray[np.bool_]) -> float | None:
    """Mean of a wait bucket in seconds over the jobs whose wait is known (None without the bucket)."""
    return None if wait_ms is None else mean(wait_ms[known] / 1000.0)


def censored_figures(censored: Censored) -> dict[str, Any]:
    """The counts by state and the lower-bound waits and completion time of the Summary."""
    lower = censored.waits_lower_s
    return {
        "jobs_failed": censored.failed,
        "jobs_running_at_end": censored.running,
        "jobs_pending_at_end": censored.pending,
        "jobs_cancelled": censored.cancelled,
        "queue_wait_mean_s_lower_bound": mean(lower),
        "queue_wait_p50_s_lower_bound": percentile(lower, 50),
        "queue_wait_p95_s_lower_bound": percentile(lower, 95),
        "queue_wait_p99_s_lower_bound": percentile(lower, 99),
        "completion_mean_s_lower_bound": mean(censored.completion_lower_s),
        "completion_p95_s_lower_bound": percentile(censored.completion_lower_s, 95),
    }
