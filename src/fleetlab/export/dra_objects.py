"""``dra.yaml``: the scenario's DeviceClasses, ResourceClaimTemplates and ResourceClaims as a team applies
them (``resource.k8s.io/v1``: spec and identifying metadata only; status belongs to the scheduler and
ResourceSlices to the drivers, so neither is written)."""

from __future__ import annotations

from typing import Any

from fleetlab.model.scenario import Scenario

DRA_FILE = "dra.yaml"
_META_KEYS = ("name", "namespace", "labels", "annotations")


def dra_documents(scenario: Scenario) -> list[dict[str, Any]]:
    """The objects to apply, classes first (claims name them)."""
    if scenario.dra is None:
        return []
    objects = scenario.dra.dra_objects()
    out: list[dict[str, Any]] = []
    for model in (*objects.classes, *objects.templates, *objects.claims):
        body = model.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False, mode="json")
        meta = {k: v for k, v in body["metadata"].items() if k in _META_KEYS and v not in (None, "", {}, ())}
        doc: dict[str, Any] = {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": meta}
        doc["spec"] = _prune(body["spec"])
        out.append(doc)
    return out


def dra_notes(scenario: Scenario) -> list[str]:
    """What a reader must do besides applying dra.yaml."""
    if scenario.dra is None:
        return []
    notes = []
    if scenario.dra.nvidia_driver:
        pools = ", ".join(p.pool for p in scenario.dra.nvidia_driver)
        notes.append(
            f"Pools {pools} publish their GPUs through NVIDIA's GPU DRA driver (gpu.nvidia.com): install its "
            "Helm chart (it also creates the gpu.nvidia.com and mig.nvidia.com DeviceClasses); the "
            "ResourceSlices come from the driver, not from dra.yaml."
        )
    if scenario.dra.dra_objects().slices:
        notes.append(
            "ResourceSlices in the scenario describe devices drivers publish; they are not exported."
        )
    return notes


def _prune(value: Any) -> Any:
    """Drop empty lists / maps and default-only fields the API server would not echo (keeps YAML short)."""
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in ([], {}, ())}
    if isinstance(value, (list, tuple)):
        return [_prune(v) for v in value]
    return value


__all__ = ["DRA_FILE", "dra_documents", "dra_notes"]
