"""The measured baseline: what a cluster's own history says about waits, preparation, compute, failures,
idle capacity and cost, per job class, team and queue — computed once here, defined in docs/baseline.md.

Every figure comes from a :class:`History` alone. Jobs that never started (or never finished) are censored
at the record's end, never dropped: waits use Kaplan–Meier (metrics/survival.py), counts by state sit next
to every average.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from fleetlab.metrics.baseline_cost import ClusterCost, cluster_cost, idle_capacity
from fleetlab.metrics.survival import Estimate, kaplan_meier
from fleetlab.model.history import JOB_STATES, History

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Groupings of the table, in order; ``all`` has one group named ``all``.
GROUP_BYS: tuple[str, ...] = ("all", "job_class", "team", "queue")
#: The value standing for a null team / queue.
UNSET = "(none)"
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class JobColumns:
    """The JOB_SCHEMA columns baseline needs, as numpy (NaN for a null time)."""

    job_id: list[str]
    job_class: NDArray[np.object_]
    team: NDArray[np.object_]
    queue: NDArray[np.object_]
    state: NDArray[np.object_]
    gpus: FloatArray  # pods × GPUs per pod (shares as fractions)
    cpus: FloatArray  # pods × cores per pod
    submit: FloatArray
    admitted: FloatArray
    scheduled: FloatArray
    running: FloatArray
    end: FloatArray
    restarts: NDArray[np.int64]
    evictions: NDArray[np.int64]
    util: FloatArray
    run: FloatArray
    image_pull: FloatArray
    nodes: list[str | None]


def _floats(table: pa.Table, name: str) -> FloatArray:
    column = table.column(name).cast(pa.float64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _labels(table: pa.Table, name: str) -> NDArray[np.object_]:
    return np.asarray([UNSET if v is None else v for v in table.column(name).to_pylist()], dtype=object)


def job_columns(history: History) -> JobColumns:
    """Columns of the jobs table, nulls as NaN."""
    t = history.jobs
    pods = _floats(t, "pods")
    return JobColumns(
        job_id=t.column("job_id").to_pylist(),
        job_class=_labels(t, "job_class"),
        team=_labels(t, "team"),
        queue=_labels(t, "queue"),
        state=_labels(t, "state"),
        gpus=pods * _floats(t, "gpus_per_pod"),
        cpus=pods * _floats(t, "cpu_per_pod"),
        submit=_floats(t, "submit_s"),
        admitted=_floats(t, "admitted_s"),
        scheduled=_floats(t, "scheduled_s"),
        running=_floats(t, "running_s"),
        end=_floats(t, "end_s"),
        restarts=np.asarray(_floats(t, "restarts"), dtype=np.int64),
        evictions=np.asarray(_floats(t, "evictions"), dtype=np.int64),
        util=_floats(t, "gpu_util_mean"),
        run=_floats(t, "run_s"),
        image_pull=_floats(t, "image_pull_s"),
        nodes=t.column("nodes").to_pylist(),
    )


#: States of a job that never started: its wait is censored where it left (or at the record's end).
NEVER_STARTED = ("pending", "cancelled")
FINISHED = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class JobTimes:
    """Per-job durations every baseline and calibration figure is built from (NaN: not measured)."""

    #: Wait to start (censored where ``started`` is false), meaningful where ``wait_known``.
    waits: FloatArray
    started: BoolArray
    #: The wait is measured (started) or censored (never started); false for sources that record only a
    #: duration (Philly summaries) — those jobs ran, but when they started is not known.
    wait_known: BoolArray
    #: Compute: the source's ``run_s`` where given, else (end, or the record's end) − running.
    compute: FloatArray
    #: Seconds the job held its resources: (end or the record's end) − scheduled; the compute time where
    #: scheduling was not recorded; 0 for a job that never started.
    held: FloatArray
    #: False for a job that started and ended with neither an end nor a run time recorded (an SWF line
    #: with a wait but no run time): its held time is unknown, counted as 0 and left out of comparisons.
    held_known: BoolArray


def job_times(cols: JobColumns, end_s: float) -> JobTimes:
    """Waits, compute and held time per job (definitions in docs/baseline.md)."""
    started = ~np.isnan(cols.scheduled)
    never = np.isin(cols.state, NEVER_STARTED) & ~started
    stop = np.where(np.isnan(cols.end), end_s, np.minimum(cols.end, end_s))
    waits = np.maximum(np.where(started, cols.scheduled - cols.submit, stop - cols.submit), 0.0)
    end_unknown = np.isin(cols.state, FINISHED) & started & np.isnan(cols.end) & np.isnan(cols.run)
    compute = np.where(
        ~np.isnan(cols.run),
        cols.run,
        np.where(np.isnan(cols.running) | end_unknown, np.nan, np.maximum(stop - cols.running, 0.0)),
    )
    held = np.where(
        started & ~end_unknown,
        np.maximum(stop - np.where(started, cols.scheduled, 0.0), 0.0),
        np.where(never | np.isnan(compute), 0.0, compute),
    )
    return JobTimes(
        waits, started, started | never, compute, np.asarray(held, dtype=np.float64), ~end_unknown
    )


@dataclass(frozen=True)
class BaselineRow:
    """One group's measurement (definitions in docs/baseline.md); None where there is nothing to measure."""

    group_by: str
    group: str
    jobs_submitted: int
    completed: int
    failed: int
    cancelled: int
    running: int
    pending: int
    started: int
    wait_unmeasured: int
    wait_censored: int
    wait_mean_s: float | None
    wait_mean_lower_bound: bool
    wait_p50_s: float | None
    wait_p50_lower_bound: bool
    wait_p95_s: float | None
    wait_p95_lower_bound: bool
    wait_p99_s: float | None
    wait_p99_lower_bound: bool
    kueue_jobs: int
    quota_wait_mean_s: float | None
    node_wait_mean_s: float | None
    prep_jobs: int
    prep_mean_s: float | None
    prep_p95_s: float | None
    image_pull_jobs: int
    image_pull_mean_s: float | None
    compute_jobs: int
    compute_mean_s: float | None
    compute_p50_s: float | None
    restarts: int
    evictions: int
    gpu_hours_allocated: float
    gpu_hours_compute: float
    gpu_hours_lost: float
    gpu_util_measured: float | None
    gpu_util_coverage: float
    cost: float | None
    cost_per_completed_job: float | None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON and Parquet."""
        return asdict(self)


@dataclass(frozen=True)
class Baseline:
    """The per-group table plus the cluster-wide figures that have no per-group split."""

    rows: list[BaselineRow]
    cluster: dict[str, Any]
    notes: list[str]


def _mean(values: FloatArray) -> float | None:
    return float(values.mean()) if len(values) else None


def _p(values: FloatArray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def _row(
    group_by: str,
    group: str,
    cols: JobColumns,
    times: JobTimes,
    mask: BoolArray,
    cost: ClusterCost,
    total_weight: float,
    weight: FloatArray,
) -> BaselineRow:
    state = cols.state[mask]
    counts = {s: int(np.count_nonzero(state == s)) for s in JOB_STATES}
    started = times.started
    known = mask & times.wait_known
    km = kaplan_meier(times.waits[known], started[known])
    quantiles: dict[float, Estimate] = {q: km.quantile(q) for q in (0.5, 0.95, 0.99)}
    mean = km.restricted_mean()
    kueue = mask & ~np.isnan(cols.admitted) & started
    prep = (cols.running - cols.scheduled)[mask & ~np.isnan(cols.running) & started]
    pulls = cols.image_pull[mask & ~np.isnan(cols.image_pull)]
    done = mask & np.isin(cols.state, FINISHED) & ~np.isnan(times.compute)
    compute = times.compute[done]
    ran = mask & ~np.isnan(times.compute)
    gpu_compute = cols.gpus * np.where(ran, times.compute, 0.0) / SECONDS_PER_HOUR
    held = np.where(mask, times.held, 0.0)
    measured = ran & ~np.isnan(cols.util) & (cols.gpus > 0)
    measured_hours = float(gpu_compute[measured].sum())
    compute_hours = float(gpu_compute.sum())
    failed = mask & (cols.state == "failed")
    completed = counts["completed"]
    share = float(weight[mask].sum()) / total_weight if total_weight > 0 else 0.0
    group_cost = cost.total * share if cost.total is not None else None
    return BaselineRow(
        group_by=group_by,
        group=group,
        jobs_submitted=int(mask.sum()),
        completed=completed,
        failed=counts["failed"],
        cancelled=counts["cancelled"],
        running=counts["running"],
        pending=counts["pending"],
        started=int(np.count_nonzero(started & mask)),
        wait_unmeasured=int(np.count_nonzero(mask & ~times.wait_known)),
        wait_censored=km.censored,
        wait_mean_s=mean.value,
        wait_mean_lower_bound=mean.lower_bound,
        wait_p50_s=quantiles[0.5].value,
        wait_p50_lower_bound=quantiles[0.5].lower_bound,
        wait_p95_s=quantiles[0.95].value,
        wait_p95_lower_bound=quantiles[0.95].lower_bound,
        wait_p99_s=quantiles[0.99].value,
        wait_p99_lower_bound=quantiles[0.99].lower_bound,
        kueue_jobs=int(kueue.sum()),
        quota_wait_mean_s=_mean((cols.admitted - cols.submit)[kueue]),
        node_wait_mean_s=_mean((cols.scheduled - cols.admitted)[kueue]),
        prep_jobs=len(prep),
        prep_mean_s=_mean(prep),
        prep_p95_s=_p(prep, 95),
        image_pull_jobs=len(pulls),
        image_pull_mean_s=_mean(pulls),
        compute_jobs=len(compute),
        compute_mean_s=_mean(compute),
        compute_p50_s=_p(compute, 50),
        restarts=int(cols.restarts[mask].sum()),
        evictions=int(cols.evictions[mask].sum()),
        gpu_hours_allocated=float((cols.gpus * held).sum()) / SECONDS_PER_HOUR,
        gpu_hours_compute=compute_hours,
        gpu_hours_lost=float(gpu_compute[failed].sum()),
        gpu_util_measured=(
            float(np.dot(gpu_compute[measured], cols.util[measured])) / measured_hours
            if measured_hours > 0
            else None
        ),
        gpu_util_coverage=measured_hours / compute_hours if compute_hours > 0 else 0.0,
        cost=group_cost,
        cost_per_completed_job=group_cost / completed if group_cost is not None and completed else None,
    )


def cost_weights(cols: JobColumns, held: FloatArray) -> FloatArray:
    """What a job's share of the cluster's cost is proportional to: its allocated GPU-hours (core-hours
    on a cluster whose jobs held no GPU)."""
    gpu = cols.gpus * held
    return gpu if gpu.sum() > 0 else cols.cpus * held


def compute_baseline(history: History) -> Baseline:
    """The measurement table of a history: one row for all jobs, then one per class, team and queue."""
    cols = job_columns(history)
    end_s = float(history.end_s)
    times = job_times(cols, end_s)
    weight = cost_weights(cols, times.held)
    total_weight = float(weight.sum())
    cost = cluster_cost(history)
    rows: list[BaselineRow] = []
    n = len(cols.job_id)
    for group_by in GROUP_BYS:
        labels = np.full(n, "all", dtype=object) if group_by == "all" else getattr(cols, group_by)
        for group in sorted(set(labels.tolist())) if n else (["all"] if group_by == "all" else []):
            rows.append(_row(group_by, str(group), cols, times, labels == group, cost, total_weight, weight))
    idle, idle_notes = idle_capacity(history, cols.scheduled, times.held, cols.gpus, cols.nodes)
    cluster: dict[str, Any] = {
        "history_end_s": end_s,
        "epoch": history.epoch,
        "sources": list(history.sources),
        "skipped": dict(sorted(history.skipped.items())),
        "nodes": history.nodes.num_rows,
        **idle,
        "cost_total": cost.total,
        "cost_source": cost.source,
        "currency": cost.currency,
        "nodes_priced": cost.nodes_priced,
        "nodes_unpriced": cost.nodes_unpriced,
    }
    unknown = int(np.count_nonzero(~times.held_known))
    ended_notes = (
        [f"{unknown} job(s) started and ended with no recorded end or run time: their waits are measured, "
         "their compute and held time are not (left out of compute and GPU-hours)"]
        if unknown
        else []
    )  # fmt: skip
    notes = [*cost.notes, *idle_notes, *ended_notes, *history.notes]
    return Baseline(rows=rows, cluster=cluster, notes=notes)
