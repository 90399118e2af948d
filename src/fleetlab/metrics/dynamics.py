"""Node-lifecycle figures of one run: autoscaler activity, waiting for capacity, idle nodes, failures.

Reads a SimulationResult (its lifecycle record and the exact cost split); changes nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fleetlab.cost.billing import MS_PER_HOUR, node_costs
from fleetlab.sim.lifecycle_result import LifecycleRecord
from fleetlab.sim.result import SimulationResult


@dataclass(frozen=True)
class DynamicsSummary:
    """Scale-ups and -downs, stockouts, pod-hours waiting for new nodes, idle node-hours, blast radius."""

    scale_ups: int
    nodes_added: int
    nodes_removed: int
    stockouts: int
    capacity_wait_pod_hours: float
    pods_waited_for_capacity: int
    node_hours_billed: float
    node_hours_idle: float
    cost_idle: float
    cost_boot: float
    cost_down: float
    failures: int
    pods_evicted_per_failure: float
    pods_evicted_max: int
    gpu_hours_lost_per_failure: float
    gpu_hours_lost_to_failures: float


def summarize_dynamics(result: SimulationResult) -> DynamicsSummary:
    """The lifecycle row of a run (fixed nodes only: no scaling or failures, idle node-hours still)."""
    rec = result.lifecycle or LifecycleRecord()
    cost = node_costs(result)
    capacity = np.where(result.nodes.gpus > 0, result.nodes.gpus, result.nodes.cpu_milli).astype(np.float64)
    per_node_hours = np.divide(1.0, capacity * MS_PER_HOUR, out=np.zeros(len(capacity)), where=capacity > 0)
    ups = [e for e in rec.scale_events if e.kind == "up"]
    evicted = [f.pods_evicted for f in rec.failures]
    lost = [f.gpu_hours_lost for f in rec.failures]
    return DynamicsSummary(
        scale_ups=len(ups),
        nodes_added=sum(e.nodes for e in ups),
        nodes_removed=sum(e.nodes for e in rec.scale_events if e.kind == "down"),
        stockouts=sum(1 for e in rec.scale_events if e.kind == "stockout"),
        capacity_wait_pod_hours=rec.capacity_wait_ms / MS_PER_HOUR,
        pods_waited_for_capacity=rec.pods_waited_for_capacity,
        node_hours_billed=float((cost.unit_total * per_node_hours).sum()),
        node_hours_idle=float((cost.units["idle"] * per_node_hours).sum()),
        cost_idle=float(cost.total("idle")),
        cost_boot=float(cost.total("boot")),
        cost_down=float(cost.total("down")),
        failures=len(rec.failures),
        pods_evicted_per_failure=float(np.mean(evicted)) if evicted else 0.0,
        pods_evicted_max=max(evicted, default=0),
        gpu_hours_lost_per_failure=float(np.mean(lost)) if lost else 0.0,
        gpu_hours_lost_to_failures=float(sum(lost)),
    )


def lifecycle_payload(result: SimulationResult) -> dict[str, Any] | None:
    """summary.json's ``lifecycle``: the row above plus every scale event and failure (None: fixed nodes)."""
    rec = result.lifecycle
    if rec is None:
        return None
    return {
        **asdict(summarize_dynamics(result)),
        "scale_events": [
            {"t_s": e.t_ms / 1000, "pool": e.pool, "kind": e.kind, "nodes": e.nodes, "pods": e.pods}
            for e in rec.scale_events
        ],
        "failures": [
            {
                "t_s": f.t_ms / 1000,
                "node": f.node,
                "pool": f.pool,
                "pods_evicted": f.pods_evicted,
                "gpu_hours_lost": f.gpu_hours_lost,
                "repair_s": f.repair_ms / 1000,
            }
            for f in rec.failures
        ],
    }
