"""Small resource.k8s.io/v1 objects for the DRA allocator and plugin tests, in the shapes the upstream test
tables build (class-a selects driver-a, slices named per node and pool, generation 1)."""

from __future__ import annotations

from typing import Any

from fleetlab.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from fleetlab.placement.dra.allocator import Allocator, DeviceID, Features
from fleetlab.placement.dra.pools import NodeView

ALL_NODES = "<all>"
PER_DEVICE = "<per-device>"


def node(name: str, region: str) -> NodeView:
    return NodeView(name, {"region": region, "planet": "earth"})


def klass(name: str, driver: str, expression: str | None = None, config: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {
        "selectors": [{"cel": {"expression": expression or f'device.driver == "{driver}"'}}]
    }
    if config is not None:
        spec["config"] = [{"opaque": {"driver": driver, "parameters": {config: f"{config}Value"}}}]
    return DeviceClass.model_validate({"metadata": {"name": name}, "spec": spec})


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def memory_at_least(driver: str, size: str) -> dict[str, Any]:
    return cel(f'device.capacity["{driver}"].memory.compareTo(quantity("{size}")) >= 0')


def req(
    name: str,
    cls: str,
    count: int | None = 1,
    *selectors: dict[str, Any],
    mode: str = "ExactCount",
    admin: bool | None = None,
    tolerations: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode}
    if count is not None and mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = list(selectors)
    if admin is not None:
        exactly["adminAccess"] = admin
    if tolerations:
        exactly["tolerations"] = list(tolerations)
    return {"name": name, "exactly": exactly}


def sub(
    name: str, cls: str, count: int = 1, *selectors: dict[str, Any], mode: str = "ExactCount",
    tolerations: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        out["count"] = count
    if selectors:
        out["selectors"] = list(selectors)
    if tolerations:
        out["tolerations"] = list(tolerations)
    return out


def first(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str, *requests: dict[str, Any], constraints: tuple[dict[str, Any], ...] = (),
    config: tuple[dict[str, Any], ...] = (),
) -> ResourceClaim:  # fmt: skip
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return ResourceClaim.model_validate({"metadata": {"name": name}, "spec": {"devices": devices}})


def opaque(driver: str, attribute: str, requests: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"opaque": {"driver": driver, "parameters": {attribute: f"{attribute}Value"}}}
    if requests:
        out["requests"] = list(requests)
    return out


def dev(
    name: str,
    capacity: dict[str, str] | None = None,
    attributes: dict[str, dict[str, Any]] | None = None,
    counters: dict[str, dict[str, str]] | None = None,
    from_counters: bool = False,
    taints: tuple[dict[str, str], ...] = (),
    where: Any = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = attributes
    if counters:
        out["consumesCounters"] = [
            {"counterSet": s, "counters": {k: {"value": v} for k, v in c.items()}}
            for s, c in counters.items()
        ]
        if from_counters:  # capacity named after the consumed counters (upstream "fromCounters")
            out["capacity"] = {k: {"value": v} for c in counters.values() for k, v in c.items()}
    if taints:
        out["taints"] = list(taints)
    if where == ALL_NODES:
        out["allNodes"] = True
    elif isinstance(where, dict):
        out["nodeSelector"] = where
    elif isinstance(where, str):
        out["nodeName"] = where
    return out


def label_selector(key: str, *values: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]
    }


def local_selector(node_name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def slice_(
    name: str, where: Any, pool: str, driver: str, *devices: dict[str, Any], count: int = 1, generation: int = 1,
    counter_sets: dict[str, dict[str, str]] | None = None,
) -> ResourceSlice:  # fmt: skip
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
    }
    if where == ALL_NODES:
        spec["allNodes"] = True
    elif where == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        spec["nodeName"] = where
    if counter_sets is not None:
        spec["sharedCounters"] = [
            {"name": s, "counters": {k: {"value": v} for k, v in c.items()}} for s, c in counter_sets.items()
        ]
    else:
        spec["devices"] = list(devices)
    return ResourceSlice.model_validate({"metadata": {"name": name}, "spec": spec})


def allocate(
    claims: list[ResourceClaim],
    classes: list[DeviceClass],
    slices: list[ResourceSlice],
    at: NodeView,
    allocated: tuple[tuple[str, str, str], ...] = (),
    features: Features = Features(),
) -> list[dict[str, Any]] | None:
    """Per claim: its results as a set of (request, driver, pool, device, admin, tolerations...) and the
    node selector and config, as plain data (order of results irrelevant, as upstream's ConsistOf)."""
    allocator = Allocator(
        {c.name: c for c in classes}, slices, frozenset(DeviceID(*a) for a in allocated), features
    )
    found = allocator.allocate(at, claims)
    if found is None:
        return None
    out = []
    for result in found:
        dumped = result.model_dump(by_alias=True, exclude_none=True)
        out.append(
            {
                "results": sorted(
                    (
                        r["request"], r["driver"], r["pool"], r["device"], bool(r.get("adminAccess")),
                        tuple(sorted(str(t) for t in r.get("tolerations", ()))),
                    )
                    for r in dumped["devices"]["results"]
                ),
                "nodeSelector": dumped.get("nodeSelector"),
                "config": [dict(c) for c in dumped["devices"].get("config", ())],
            }
        )  # fmt: skip
    return out
