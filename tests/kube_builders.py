"""Small kubectl-shaped objects (nodes, pods, Lists) for the snapshot and diagnosis tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleetlab.model.resources import GPU


def container(
    name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def pod(
    name: str, containers: list[dict[str, Any]], node: str | None = None, phase: str = "Pending", **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": containers, **spec}
    if node:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-11-30T09:00:00Z"},
        "spec": body,
        "status": {"phase": phase},
    }


def node(
    name: str, gpus: int | None = 8, capacity_gpus: int | None = None, ready: str = "True", **spec: Any
) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    cap: dict[str, Any] = {"cpu": "64", "memory": "520Gi", "pods": "110"}
    if gpus is not None:
        alloc[GPU] = str(gpus)
        cap[GPU] = str(gpus if capacity_gpus is None else capacity_gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": cap,
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


def write_list(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2))
    return path
