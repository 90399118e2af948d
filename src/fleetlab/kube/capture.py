"""Read-only capture of a live cluster into one ``v1 List`` file, with the optional ``kubernetes`` client.

Only list calls are made (nodes, pods in all namespaces, Kueue objects when its CRDs are served). Every
object is redacted (fleetlab.kube.redact: env values, Secret references, container args, manifest-bearing
annotations, managedFields) before anything is written, so the file can be shared with whoever helps
debug. The file is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleetlab.kube.redact import REDACTED, redact

__all__ = ["REDACTED", "CaptureError", "capture", "to_plain", "write_list"]

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")
#: (kind, plural) of the Kueue objects the diagnosis reads.
KUEUE_RESOURCES = (
    ("ResourceFlavor", "resourceflavors"),
    ("ClusterQueue", "clusterqueues"),
    ("Cohort", "cohorts"),
    ("LocalQueue", "localqueues"),
    ("Workload", "workloads"),
)


class CaptureError(Exception):
    """The cluster could not be read (client missing, no kubeconfig, API refused)."""


def to_plain(serialize: Callable[[Any], Any], kind: str, api_version: str, obj: Any) -> dict[str, Any]:
    """A client model object (or dict) as kubectl's JSON: camelCase keys, RFC 3339 times, kind set."""
    data = serialize(obj)
    if not isinstance(data, dict):
        raise CaptureError(f"unexpected {kind} object from the API: {type(data).__name__}")
    data["apiVersion"] = data.get("apiVersion") or api_version
    data["kind"] = kind
    result: dict[str, Any] = redact(data)  # every kind: Workload templates and annotations carry env too
    return result


def _kueue_objects(custom: Any, serialize: Callable[[Any], Any], api_exception: type[Exception]) -> list[Any]:
    out: list[dict[str, Any]] = []
    for version in KUEUE_VERSIONS:
        found = False
        for kind, plural in KUEUE_RESOURCES:
            try:
                listed = custom.list_cluster_custom_object(KUEUE_GROUP, version, plural)
            except api_exception as exc:
                if getattr(exc, "status", None) == 404:
                    continue  # this version (or kind, e.g. Cohort on old releases) is not served
                raise
            found = True
            for item in listed.get("items") or []:
                out.append(to_plain(serialize, kind, f"{KUEUE_GROUP}/{version}", item))
        if found:
            return out
    return out


def _storage_objects(
    client: Any, api: Any, serialize: Callable[[Any], Any], api_exception: type[Exception]
) -> list[Any]:
    """PersistentVolumes, PersistentVolumeClaims and StorageClasses (skipped when RBAC forbids listing
    them: the diagnosis then reads volume problems from events only)."""
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    calls = (
        ("PersistentVolume", "v1", core.list_persistent_volume),
        ("PersistentVolumeClaim", "v1", core.list_persistent_volume_claim_for_all_namespaces),
        ("StorageClass", "storage.k8s.io/v1", storage.list_storage_class),
    )
    out: list[Any] = []
    for kind, version, call in calls:
        try:
            out += [to_plain(serialize, kind, version, o) for o in call().items]
        except api_exception as exc:
            if getattr(exc, "status", None) not in (403, 404):
                raise
    return out


def capture(context: str | None = None) -> list[dict[str, Any]]:
    """Nodes, pods, storage and Kueue objects of the kubeconfig's cluster, as plain kubectl-shaped dicts."""
    try:  # imported by name: the client is an optional extra and ships no type information
        client = importlib.import_module("kubernetes.client")
        config = importlib.import_module("kubernetes.config")
        api_exception = importlib.import_module("kubernetes.client.rest").ApiException
        config_exception = importlib.import_module("kubernetes.config.config_exception").ConfigException
    except ImportError:
        raise CaptureError(
            "the Kubernetes Python client is not installed; install it with `pip install 'fleetlab[kube]'`, "
            "or save `kubectl get nodes,pods -A -o json > snapshot.json` and pass --snapshot"
        ) from None
    try:
        config.load_kube_config(context=context)
    except (config_exception, OSError) as exc:
        raise CaptureError(f"cannot load the kubeconfig: {exc}") from None
    api = client.ApiClient()
    serialize = api.sanitize_for_serialization
    try:
        core = client.CoreV1Api(api)
        items = [to_plain(serialize, "Node", "v1", n) for n in core.list_node().items]
        items += [to_plain(serialize, "Pod", "v1", p) for p in core.list_pod_for_all_namespaces().items]
        items += _kueue_objects(client.CustomObjectsApi(api), serialize, api_exception)
        items += _storage_objects(client, api, serialize, api_exception)
    except api_exception as exc:
        raise CaptureError(f"the API server refused a list call: {exc.status} {exc.reason}") from None
    except OSError as exc:
        raise CaptureError(f"cannot reach the API server: {exc}") from None
    return items


def write_list(items: list[dict[str, Any]], path: Path) -> None:
    """Write ``{"kind": "List", "items": [...]}`` atomically (temporary file in the folder, then rename)."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise CaptureError(f"--out {path}: folder {folder} does not exist")
    body = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise CaptureError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
