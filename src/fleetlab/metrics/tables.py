"""Per-job and per-node result tables as plain columns, ready for Parquet or a terminal table."""

from __future__ import annotations

from typing import Any

import numpy as np

from fleetlab.cost.billing import (
    MS_PER_HOUR,
    eviction_delay_ms,
    job_costs,
    lost_unit_ms_per_job,
    node_costs,
)
from fleetlab.metrics.censoring import CANCELLED, PENDING, RUNNING, end_states
from fleetlab.metrics.dra_columns import node_dra_columns, pod_dra_columns
from fleetlab.metrics.sharing_columns import (
    job_sharing_columns,
    merged_timeline,
    pod_gpu_column,
)
from fleetlab.metrics.usage_columns import job_interference_columns, usage_timeline_columns
from fleetlab.sim.result import SimulationResult, names_at

Columns = dict[str, Any]


def _seconds(ms: np.ndarray, valid: np.ndarray) -> np.ndarray:
    return np.where(valid, ms / 1000.0, np.nan)


def job_columns(result: SimulationResult) -> Columns:
    """One row per job: where its time went (queue wait, prep, compute) and what it cost."""
    jobs = result.jobs
    bound = jobs.last_bound_ms >= 0
    running = jobs.running_ms >= 0
    done = jobs.completed
    ends = end_states(jobs)
    state = np.where((ends == RUNNING) & ~running, "preparing", ends)
    known = (ends != PENDING) & (ends != CANCELLED)  # censored: still waiting, or withdrawn while waiting
    pending_by_id = {p.job_id: p for p in result.pending}
    return {
        "job_id": list(jobs.ids),
        "class": list(jobs.job_class),
        "team": list(jobs.team),
        "priority": jobs.priority,
        "pods": jobs.pods,
        "gpus_per_pod": jobs.gpus_per_pod,
        "cpu_milli_per_pod": jobs.cpu_milli_per_pod,
        "submit_s": jobs.submit_ms / 1000.0,
        "queue_wait_s": _seconds(jobs.queue_wait_ms, known),
        "queue_wait_so_far_s": jobs.queue_wait_ms / 1000.0,
        "quota_wait_s": _seconds(jobs.quota_wait_ms, known),
        **_admission_wait_columns(result, known),
        "node_wait_s": _seconds(jobs.node_wait_ms(), known),
        "cluster_queue": list(jobs.cluster_queue),
        "prep_s": _seconds(jobs.running_ms - jobs.last_bound_ms, running & bound),
        "compute_s": _seconds(jobs.end_ms - jobs.running_ms, done),
        "completion_s": _seconds(jobs.end_ms - jobs.submit_ms, done),
        "state": state.tolist(),
        "cost_usd": job_costs(result),
        "evictions": jobs.evictions,
        "eviction_delay_s": eviction_delay_ms(result) / 1000.0,
        "lost_gpu_hours": lost_unit_ms_per_job(result)
        * np.where(jobs.gpus_per_pod > 0, 1.0, 0.0)
        / MS_PER_HOUR,
        "pending_reason": [pending_by_id[i].message if i in pending_by_id else "" for i in jobs.ids],
        **job_sharing_columns(result),
        **job_interference_columns(result),
    }


def _admission_wait_columns(result: SimulationResult, known: np.ndarray) -> Columns:
    """``provisioning_wait_s`` with admission checks, ``namespace_quota_wait_s`` with namespace
    policies (the buckets a run without them does not have)."""
    jobs = result.jobs
    out: Columns = {}
    if jobs.provisioning_wait_ms is not None:
        out["provisioning_wait_s"] = _seconds(jobs.provisioning_wait_ms, known)
    if jobs.namespace_quota_wait_ms is not None:
        out["namespace_quota_wait_s"] = _seconds(jobs.namespace_quota_wait_ms, known)
    return out


def node_columns(result: SimulationResult) -> Columns:
    """One row per node: billed window and the exact compute / prep / idle split of its bill."""
    nodes = result.nodes
    cost = node_costs(result)
    gpu = nodes.gpus > 0
    unit_hours = np.where(gpu, 1.0, 0.0) / MS_PER_HOUR
    return {
        "node": list(nodes.names),
        "pool": list(nodes.pool),
        "gpu_model": list(nodes.gpu_model),
        "capacity_type": list(nodes.capacity_type),
        "gpus": nodes.gpus,
        "price_per_hour": nodes.price_per_hour,
        "billed_s": (
            nodes.billed_end_ms - nodes.billed_start_ms if nodes.billed_ms is None else nodes.billed_ms
        )
        / 1000.0,
        "ready_s": np.where(nodes.ready_ms >= 0, nodes.ready_ms / 1000.0, np.nan),
        "gpu_hours_billed": cost.unit_total * unit_hours,
        **{f"gpu_hours_{b}": cost.units[b] * unit_hours for b in cost.buckets},
        "cost_billed_usd": np.asarray([float(x) for x in cost.billed]),
        **{f"cost_{b}_usd": np.asarray([float(x) for x in cost.dollars[b]]) for b in cost.buckets},
        **node_dra_columns(result),
    }


def pod_columns(result: SimulationResult) -> Columns:
    """One row per pod: its node and lifecycle times (NaN where it did not get that far)."""
    pods, jobs, nodes = result.pods, result.jobs, result.nodes
    placed = pods.node >= 0
    return {
        "job_id": names_at(jobs.ids, pods.job),
        "node": names_at(nodes.names, pods.node),
        "bound_s": _seconds(pods.bound_ms, pods.bound_ms >= 0),
        "running_s": _seconds(pods.running_ms, pods.running_ms >= 0),
        "end_s": _seconds(pods.end_ms, pods.end_ms >= 0),
        "image_pull_wait_s": _seconds(pods.image_wait_ms, placed),
        "data_download_s": _seconds(pods.data_ms, placed),
        "evictions": pods.evictions,
        **pod_gpu_column(result),
        **pod_dra_columns(result),
    }


def segment_columns(result: SimulationResult) -> Columns:
    """One row per stay of a pod on a node (integer ms; stays open at the end are closed there): what the
    bill split and the queue waits are made of, so ``fleetlab check`` can recompute them from the files."""
    seg, nodes = result.segments, result.nodes
    return {
        "pod": seg.pod,
        "node": names_at(nodes.names, seg.node),
        "bound_ms": seg.bound_ms,
        "ready_ms": seg.ready_ms,
        "start_ms": seg.start_ms,
        "end_ms": seg.end_ms,
        "lost_ms": seg.lost_ms,
        "evicted": seg.evicted,
    }


def timeline_columns(result: SimulationResult) -> Columns:
    """The cluster's GPU allocation step function."""
    tl = result.timeline
    columns = {
        "t_s": tl.t_ms / 1000.0,
        "allocated_gpus": tl.allocated_gpus,
        "total_gpus": tl.total_gpus,
        "whole_free_gpu_nodes": tl.whole_free_gpu_nodes,
        "gpu_nodes": tl.gpu_nodes,
        **usage_timeline_columns(tl),
    }
    return merged_timeline(result, columns)
