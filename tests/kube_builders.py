"""Small kubectl-shaped objects (nodes, pods, Lists) for the snapshot and diagnosis tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleetlab.kube.cluster import build_live_cluster
from fleetlab.kube.diagnose import Diagnosis, diagnose
from fleetlab.model.resources import GPU
from fleetlab.spec.kube_snapshot import load_snapshot


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


def diagnose_items(tmp_path: Path, items: list[dict[str, Any]]) -> Diagnosis:
    """Write the objects as one List and diagnose it, measured at the newest timestamp in it."""
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    return diagnose(build_live_cluster(snap), snap.newest)


def write_list(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2))
    return path


# -- cloud and GPU-operator node shapes ------------------------------------------------------------------
# Each builder returns a Node in the shape its platform writes; the label keys, taints and resource names
# come from the public page cited on the builder.


def _labelled(base: dict[str, Any], labels: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    base["metadata"]["labels"].update(labels)
    if taints:
        base["spec"]["taints"] = taints
    return base


def gke_gpu_node(name: str, accelerator: str = "nvidia-tesla-t4", gpus: int | None = 1) -> dict[str, Any]:
    """GKE Standard GPU node pool node: ``cloud.google.com/gke-accelerator``, the node pool label and
    the ``nvidia.com/gpu=present:NoSchedule`` taint GKE adds (cloud.google.com/kubernetes-engine/docs/
    how-to/gpus, "Run GPUs in GKE Standard node pools"); no GFD labels (GKE runs its own device plugin)."""
    return _labelled(
        node(name, gpus=gpus),
        {
            "cloud.google.com/gke-accelerator": accelerator,
            "cloud.google.com/gke-nodepool": "gpu-pool",
            "cloud.google.com/gke-gpu-driver-version": "default",
            "node.kubernetes.io/instance-type": "n1-standard-8",
            "topology.kubernetes.io/zone": "us-central1-a",
        },
        [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    )


def karpenter_gpu_node(
    name: str, instance_type: str = "g4dn.xlarge", gpus: int | None = None
) -> dict[str, Any]:
    """EKS node launched by Karpenter: ``karpenter.k8s.aws/instance-gpu-*`` labels and the
    ``nvidia.com/gpu:NoSchedule`` taint of Karpenter's GPU NodePool example (docs.aws.amazon.com/eks/
    latest/userguide/ml-workload-placement.html; karpenter.sh "Well-Known Labels"). ``gpus=None``: the
    device plugin has not registered, so no ``nvidia.com/gpu`` is advertised."""
    return _labelled(
        node(name, gpus=gpus),
        {
            "karpenter.sh/nodepool": "gpu",
            "karpenter.sh/capacity-type": "on-demand",
            "karpenter.k8s.aws/instance-family": instance_type.split(".")[0],
            "karpenter.k8s.aws/instance-gpu-count": "1",
            "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            "karpenter.k8s.aws/instance-gpu-memory": "16384",
            "karpenter.k8s.aws/instance-gpu-name": "t4",
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": "us-east-1a",
        },
        [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
    )


def aks_gpu_node(name: str, gpus: int | None = 1) -> dict[str, Any]:
    """AKS GPU node pool node: ``kubernetes.azure.com/agentpool``, ``accelerator=nvidia`` and the
    ``sku=gpu:NoSchedule`` taint the AKS GPU guide creates the pool with (learn.microsoft.com/azure/aks/
    gpu-cluster)."""
    return _labelled(
        node(name, gpus=gpus),
        {
            "kubernetes.azure.com/agentpool": "gpunp",
            "agentpool": "gpunp",
            "accelerator": "nvidia",
            "kubernetes.azure.com/accelerator": "nvidia",
            "node.kubernetes.io/instance-type": "Standard_NC6s_v3",
            "topology.kubernetes.io/zone": "eastus-1",
        },
        [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
    )


def gpu_operator_node(
    name: str,
    product: str,
    gpus: int | None = 8,
    mig_capable: bool = True,
    extra_labels: dict[str, str] | None = None,
    extra_resources: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Bare-metal node under the NVIDIA GPU Operator: GFD labels (``nvidia.com/gpu.product`` from the
    NVML name, ``gpu.count``, ``gpu.memory``, ``mig.capable``, and ``mig.strategy`` from the cluster-wide
    setting, default ``single``) and NFD's ``pci-10de.present`` (NVIDIA/k8s-device-plugin
    docs/gpu-feature-discovery/README.md, "Generated Labels"; GPU Operator "GPU Feature Discovery")."""
    out = _labelled(
        node(name, gpus=gpus),
        {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.count": str(gpus or 0),
            "nvidia.com/gpu.memory": "15360",
            "nvidia.com/mig.capable": "true" if mig_capable else "false",
            "nvidia.com/mig.strategy": "single",
            "nvidia.com/gpu.deploy.device-plugin": "true",
            "feature.node.kubernetes.io/pci-10de.present": "true",
            **(extra_labels or {}),
        },
        [],
    )
    for name_, amount in (extra_resources or {}).items():
        out["status"]["allocatable"][name_] = amount
        out["status"]["capacity"][name_] = amount
    return out
