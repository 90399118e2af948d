"""One NODE_SCHEMA row from a ``kubectl get nodes -o json`` item (allocatable, never capacity).

Pool, capacity type and GPU model come from the labels GKE, EKS, AKS, Karpenter and GPU Feature Discovery
set; the first label found in each list below wins.
"""

from __future__ import annotations

from typing import Any

from fleetlab.model.cluster import CAPACITY_TYPE_LABEL, GPU_PRODUCT_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.spec.history.common import NodeRecord, gpu_model_of, labels_json, parse_rfc3339
from fleetlab.spec.kube_snapshot import parse_node

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
    "node.kubernetes.io/instance-type",
)
#: GKE's accelerator label values (GKE docs, "About GPUs") -> fleetlab GPU model.
GKE_ACCELERATORS = {
    "nvidia-tesla-p100": "P100", "nvidia-tesla-v100": "V100", "nvidia-tesla-t4": "T4", "nvidia-l4": "L4",
    "nvidia-tesla-a100": "A100-40GB", "nvidia-a100-80gb": "A100-80GB", "nvidia-h100-80gb": "H100",
    "nvidia-h100-mega-80gb": "H100", "nvidia-h200-141gb": "H200", "nvidia-b200": "B200",
}  # fmt: skip


def capacity_type(labels: dict[str, str]) -> str | None:
    """on-demand | spot, from Karpenter, GKE, EKS or AKS labels."""
    if labels.get(CAPACITY_TYPE_LABEL):
        return labels[CAPACITY_TYPE_LABEL].lower()
    if (
        labels.get("cloud.google.com/gke-spot") == "true"
        or labels.get("cloud.google.com/gke-preemptible") == "true"
    ):
        return "spot"
    eks = labels.get("eks.amazonaws.com/capacityType")
    if eks:
        return "spot" if eks.upper() == "SPOT" else "on-demand"
    aks = labels.get("kubernetes.azure.com/scalesetpriority")
    if aks:
        return "spot" if aks.lower() == "spot" else "on-demand"
    return None


def node_record(obj: dict[str, Any], source: str) -> NodeRecord:
    """The node's allocatable resources, pool, GPU model and lifetime."""
    node = parse_node(obj, source)
    meta = obj.get("metadata") or {}
    labels = node.labels
    where = f"Node {node.name}.metadata"
    model = gpu_model_of(labels.get(GPU_PRODUCT_LABEL)) or GKE_ACCELERATORS.get(
        labels.get("cloud.google.com/gke-accelerator", "")
    )
    return NodeRecord(
        node=node.name,
        pool=next((labels[k] for k in POOL_LABELS if labels.get(k)), None),
        gpu_model=model,
        gpus=node.allocatable.get(GPU, 0),
        cpu=node.allocatable.get(CPU, 0) / 1000.0,
        memory=node.allocatable.get(MEMORY, 0),
        instance_type=labels.get(INSTANCE_TYPE_LABEL),
        capacity_type=capacity_type(labels),
        zone=labels.get(ZONE_LABEL),
        labels_json=labels_json(labels),
        created=parse_rfc3339(meta.get("creationTimestamp"), source, f"{where}.creationTimestamp"),
        deleted=parse_rfc3339(meta.get("deletionTimestamp"), source, f"{where}.deletionTimestamp"),
    )
