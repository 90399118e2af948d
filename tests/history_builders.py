"""Small hand-made histories for the baseline and calibration tests (every figure worked out by hand)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from fleetlab.model.history import BILL_SCHEMA, JOB_SCHEMA, NODE_SCHEMA, History

JOB_DEFAULTS: dict[str, Any] = {
    "source": "test",
    "owner_kind": "Job",
    "namespace": "ns",
    "team": None,
    "queue": None,
    "job_class": "batch",
    "priority": 0,
    "pods": 1,
    "gpus_per_pod": 0.0,
    "gpu_milli_per_pod": None,
    "cpu_per_pod": 1.0,
    "memory_per_pod": 1 << 30,
    "gpu_model": None,
    "admitted_s": None,
    "scheduled_s": None,
    "running_s": None,
    "end_s": None,
    "end_reason": None,
    "restarts": 0,
    "evictions": 0,
    "nodes": None,
    "gpu_util_mean": None,
    "gpu_mem_used_max": None,
    "image_pull_s": None,
    "run_s": None,
    "user": None,
    "walltime_s": None,
}
NODE_DEFAULTS: dict[str, Any] = {
    "pool": None,
    "gpu_model": None,
    "gpus": 0,
    "cpu": 8.0,
    "memory": 64 << 30,
    "instance_type": None,
    "capacity_type": "owned",
    "zone": None,
    "labels_json": "{}",
    "created_s": None,
    "deleted_s": None,
}


def jobs_table(rows: list[dict[str, Any]]) -> pa.Table:
    """JOB_SCHEMA rows from partial dicts (job_id, submit_s and state required)."""
    return pa.Table.from_pylist([{**JOB_DEFAULTS, **r} for r in rows], schema=JOB_SCHEMA)


def nodes_table(rows: list[dict[str, Any]]) -> pa.Table:
    """NODE_SCHEMA rows from partial dicts (node required)."""
    return pa.Table.from_pylist([{**NODE_DEFAULTS, **r} for r in rows], schema=NODE_SCHEMA)


def bill_table(rows: list[dict[str, Any]]) -> pa.Table:
    """BILL_SCHEMA rows from partial dicts."""
    base = {
        "resource_id": None,
        "sku": None,
        "pricing_category": "On-Demand",
        "region": None,
        "tags_json": None,
    }
    return pa.Table.from_pylist([{**base, **r} for r in rows], schema=BILL_SCHEMA)


def history(
    jobs: list[dict[str, Any]],
    nodes: list[dict[str, Any]] | None = None,
    bill: list[dict[str, Any]] | None = None,
    end_s: float = 100.0,
) -> History:
    """A History of the given rows."""
    return History(
        jobs=jobs_table(jobs),
        nodes=nodes_table(nodes or []),
        bill=bill_table(bill or []),
        epoch="2026-01-01T00:00:00Z",
        end_s=end_s,
        sources=("test",),
    )


#: Four jobs, two nodes and a two-line bill; the expected figures are worked out in test_baseline.py.
HAND_JOBS: list[dict[str, Any]] = [
    {"job_id": "j1", "state": "completed", "submit_s": 0.0, "admitted_s": 4.0, "scheduled_s": 10.0,
     "running_s": 15.0, "end_s": 45.0, "gpus_per_pod": 2.0, "job_class": "training", "team": "a",
     "queue": "q1", "restarts": 1, "gpu_util_mean": 0.5, "nodes": "n1"},
    {"job_id": "j2", "state": "failed", "submit_s": 10.0, "admitted_s": 25.0, "scheduled_s": 30.0,
     "running_s": 30.0, "end_s": 50.0, "pods": 2, "gpus_per_pod": 1.0, "job_class": "training", "team": "a",
     "queue": "q1", "evictions": 1, "nodes": "n1,n2"},
    {"job_id": "j3", "state": "pending", "submit_s": 20.0, "gpus_per_pod": 1.0, "team": "b"},
    {"job_id": "j4", "state": "running", "submit_s": 40.0, "scheduled_s": 40.0, "running_s": 50.0,
     "gpus_per_pod": 4.0, "team": "b", "gpu_util_mean": 0.25, "nodes": "n2"},
]  # fmt: skip
HAND_NODES: list[dict[str, Any]] = [
    {"node": "n1", "gpus": 8, "gpu_model": "H100"},
    {"node": "n2", "gpus": 4, "gpu_model": "H100", "created_s": 50.0},
]
HAND_BILL: list[dict[str, Any]] = [
    {
        "charge_start_s": 0.0,
        "charge_end_s": 50.0,
        "billed_cost": 35.0,
        "effective_cost": 30.0,
        "currency": "USD",
    },
    {
        "charge_start_s": 50.0,
        "charge_end_s": 100.0,
        "billed_cost": 12.0,
        "effective_cost": 10.0,
        "currency": "USD",
    },
]
