"""The pod a job's controller creates, as the API server's admission plugins (LimitRanger, ResourceQuota)
read it: a core/v1 Pod manifest built from a fleetlab job.

A fleetlab job describes its pods by their requests (one container, ``main``); limits are set where the API
server requires them — for extended resources (``nvidia.com/gpu``), which must have limit = request — and
nowhere else, so a quota on ``limits.cpu`` / ``limits.memory`` needs a LimitRange default for them, as for
any real pod without limits. The namespace, ``priorityClassName`` (quota scopes select on it) and the pod
labels are carried. Built once per job shape, never per creation attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetlab.model.job import Job
from fleetlab.model.resources import ResourceList, format_amount, is_extended, parse_resource_list

__all__ = ["CONTAINER", "container_requests", "pod_manifest"]

#: The name of the one container a fleetlab job's pod has.
CONTAINER = "main"


def pod_manifest(job: Job) -> dict[str, Any]:
    """The Pod the job's controller submits (no status: not yet created)."""
    requests = {name: format_amount(name, amount) for name, amount in sorted(job.requests.items())}
    limits = {name: value for name, value in requests.items() if is_extended(name)}
    spec: dict[str, Any] = {
        "containers": [{"name": CONTAINER, "resources": {"requests": requests, "limits": limits}}]
    }
    if job.priority_class_name is not None:
        spec["priorityClassName"] = job.priority_class_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": job.namespace, "labels": dict(job.labels)},
        "spec": spec,
    }


def container_requests(manifest: Mapping[str, Any]) -> ResourceList:
    """The requests of the manifest's one container, in fleetlab's integer units (a limit alone counts as
    the request, as the API server defaults it)."""
    (container,) = manifest["spec"]["containers"]
    resources = container.get("resources") or {}
    values = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return parse_resource_list(values)
