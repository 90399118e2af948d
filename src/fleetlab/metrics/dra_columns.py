"""Result columns for Dynamic Resource Allocation: per pod the devices its claims held, per node the devices
its ResourceSlices publish and the device-hours claims held there (definitions in fleetlab.sim.dra_claims).
Present only when the scenario has a ``dra:`` section."""

from __future__ import annotations

from typing import Any

from fleetlab.cost.billing import MS_PER_HOUR
from fleetlab.sim.result import SimulationResult

Columns = dict[str, Any]


def pod_dra_columns(result: SimulationResult) -> Columns:
    """``dra_devices``: the devices (``driver/pool/device``, ``;``-separated) the pod's claims held at its
    last binding ("" for pods without claims or never bound)."""
    return {} if result.dra is None else {"dra_devices": list(result.dra.pod_devices)}


def node_dra_columns(result: SimulationResult) -> Columns:
    """``dra_devices`` published by the node and ``dra_device_hours``: Σ over claims allocated there of
    devices × hours allocated (allocation to deallocation, or the run's end)."""
    dra = result.dra
    if dra is None:
        return {}
    return {"dra_devices": dra.node_devices, "dra_device_hours": dra.node_device_ms / MS_PER_HOUR}
