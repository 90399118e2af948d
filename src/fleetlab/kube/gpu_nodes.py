"""Stage (a) of a diagnosis: which nodes are GPU machines, what each offers, and what keeps GPUs away.

A node is a GPU machine when it advertises an ``nvidia.com/*`` resource, carries GPU Feature Discovery
or Node Feature Discovery labels, or its cloud says so (GKE ``cloud.google.com/gke-accelerator``,
Karpenter ``karpenter.k8s.aws/instance-gpu-*``, eksctl ``k8s.amazonaws.com/accelerator``, AKS
``accelerator`` / ``kubernetes.azure.com/accelerator``, a well-known GPU instance type). A machine that
advertises nothing has no device plugin (or no driver), which is said per node.

MIG is named only where a GPU really is partitioned: a ``-MIG-`` product, a ``nvidia.com/mig.config``
other than ``all-disabled``, ``nvidia.com/mig-*.count`` labels or ``nvidia.com/mig-*`` resources (GKE:
``cloud.google.com/gke-gpu-partition-size``). GFD writes ``nvidia.com/mig.strategy`` on every GPU node
from the cluster-wide setting, so that label alone means nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleetlab.kube.cluster import NOT_READY_KEYS
from fleetlab.model.gpu_products import (
    GKE_ACCELERATORS,
    KARPENTER_GPU_NAMES,
    model_for_instance_type,
    parse_product,
)
from fleetlab.model.resources import GPU
from fleetlab.spec.kube_snapshot import KubeNode, KubePod

PRODUCT_LABEL = "nvidia.com/gpu.product"
GFD_LABELS = ("nvidia.com/gpu.present", PRODUCT_LABEL, "nvidia.com/gpu.count")
NFD_NVIDIA_PCI = "feature.node.kubernetes.io/pci-10de.present"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
KARPENTER_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
KARPENTER_GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
KARPENTER_GPU_MAKER = "karpenter.k8s.aws/instance-gpu-manufacturer"
EKSCTL_ACCELERATOR = "k8s.amazonaws.com/accelerator"
AKS_ACCELERATORS = ("accelerator", "kubernetes.azure.com/accelerator")
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
MIG_COUNT = re.compile(r"nvidia\.com/mig-(.+)\.count")


@dataclass
class GpuResource:
    """One GPU resource on one node: advertised (capacity), healthy (allocatable), allocated to bound
    pods that have not terminated, and free (healthy minus allocated, never below 0)."""

    resource: str
    advertised: int
    healthy: int
    allocated: int
    free: int


@dataclass
class GpuNode:
    """One node that has, or should have, GPUs, its totals and what stops it offering them."""

    node: str
    product: str | None
    gpus_allocatable: int
    gpus_capacity: int
    other_gpu_resources: dict[str, int]
    ready: str
    unschedulable: bool
    sharing: str | None
    problems: list[str]
    #: fleetlab's GPU model (from the product, else the cloud's labels), None when unknown.
    model: str | None = None
    #: What identifies the node as a GPU machine (a label, a resource, the instance type).
    evidence: str = ""
    #: GPUs the machine has according to its cloud labels, when they say.
    expected_gpus: int | None = None
    #: Real MIG partitioning, described; None when the GPUs are not in MIG mode.
    mig: str | None = None
    resources: list[GpuResource] = field(default_factory=list)
    schedulable: bool = True


def schedulable(node: KubeNode) -> bool:
    """Ready, not cordoned, no not-ready/unreachable taint: new pods can land here."""
    blocked = any(t.key in NOT_READY_KEYS and t.effect != "PreferNoSchedule" for t in node.taints)
    return node.ready == "True" and not node.unschedulable and not blocked


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def cloud_gpu_machine(node: KubeNode) -> tuple[str, str | None, int | None] | None:
    """(evidence, model, GPU count) from the labels a cloud puts on a GPU machine, or None."""
    labels = node.labels
    if GKE_ACCELERATOR in labels:
        value = labels[GKE_ACCELERATOR]
        return f"{GKE_ACCELERATOR}={value}", GKE_ACCELERATORS.get(value), None
    count = _int(labels.get(KARPENTER_GPU_COUNT))
    if (count or 0) > 0 or KARPENTER_GPU_NAME in labels:
        name = labels.get(KARPENTER_GPU_NAME, "")
        evidence = f"{KARPENTER_GPU_COUNT}={count}" if count else f"{KARPENTER_GPU_NAME}={name}"
        return evidence, KARPENTER_GPU_NAMES.get(name.lower()), count
    if EKSCTL_ACCELERATOR in labels:
        value = labels[EKSCTL_ACCELERATOR]
        return f"{EKSCTL_ACCELERATOR}={value}", GKE_ACCELERATORS.get(value), None
    for key in AKS_ACCELERATORS:
        if labels.get(key, "").lower() == "nvidia":
            return f"{key}=nvidia", _instance_model(node), None
    model = _instance_model(node)
    if model is not None:
        return f"instance type {_instance_type(node)}", model, None
    if labels.get(NFD_NVIDIA_PCI) == "true":
        return f"{NFD_NVIDIA_PCI}=true (an NVIDIA PCI device)", None, None
    return None


def _instance_type(node: KubeNode) -> str:
    return next((node.labels[k] for k in INSTANCE_TYPE_LABELS if k in node.labels), "")


def _instance_model(node: KubeNode) -> str | None:
    kind = _instance_type(node)
    return model_for_instance_type(kind) if kind else None


def mig_mode(node: KubeNode) -> str | None:
    """What shows the node's GPUs are MIG-partitioned, or None (``nvidia.com/mig.strategy`` alone is not)."""
    labels = node.labels
    product = parse_product(labels[PRODUCT_LABEL]) if PRODUCT_LABEL in labels else None
    resources = sorted(r for r in {*node.allocatable, *node.capacity} if r.startswith("nvidia.com/mig-"))
    if resources:
        shown = ", ".join(f"{r.removeprefix('nvidia.com/')} x {node.capacity.get(r, 0)}" for r in resources)
        return f"MIG mixed: {shown}"
    if product is not None and product.mig_profile is not None:
        return f"MIG single: every GPU split into {product.mig_profile} (nvidia.com/gpu counts instances)"
    counts = sorted(m.group(1) for k in labels if (m := MIG_COUNT.fullmatch(k)))
    config = labels.get("nvidia.com/mig.config")
    if counts:
        return f"MIG: instances {', '.join(counts)} labelled, but no nvidia.com/mig-* resource advertised"
    if config is not None and config != "all-disabled":
        return f"MIG config {config} requested (nvidia.com/mig.config)"
    partition = labels.get("cloud.google.com/gke-gpu-partition-size")
    if partition:
        return f"MIG (GKE gpu-partition-size {partition}): nvidia.com/gpu counts instances"
    return None


def sharing_mode(node: KubeNode) -> str | None:
    """Time-slicing or MPS: GFD's sharing labels, a ``-SHARED`` product, or GKE's sharing labels."""
    labels = node.labels
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "none")
    gke = labels.get("cloud.google.com/gke-gpu-sharing-strategy")
    if strategy == "none" and PRODUCT_LABEL in labels and parse_product(labels[PRODUCT_LABEL]).shared:
        strategy = "time-slicing or MPS"
    if strategy == "none" and gke:
        strategy = {"time-sharing": "time-slicing", "mps": "mps"}.get(gke, gke)
    if strategy == "none":
        return None
    replicas = labels.get("nvidia.com/gpu.replicas") or labels.get(
        "cloud.google.com/gke-max-shared-clients-per-gpu"
    )
    count = labels.get("nvidia.com/gpu.count")
    shape = f"{count} GPUs x {replicas} replicas" if count and replicas else "replicated GPUs"
    return f"{strategy}: nvidia.com/gpu counts {shape}; memory and faults are shared"


def _problems(node: KubeNode, evidence: str, others: dict[str, int]) -> list[str]:
    alloc, cap = node.allocatable.get(GPU, 0), node.capacity.get(GPU, 0)
    problems: list[str] = []
    if GPU not in node.allocatable and GPU not in node.capacity and not others:
        problems.append(
            f"GPU machine ({evidence}) advertises no nvidia.com/gpu: the NVIDIA device plugin (or the "
            "driver it needs) is not running on this node"
        )
    elif alloc == 0 and not others:
        if cap > 0:
            problems.append(
                f"nvidia.com/gpu allocatable 0 of capacity {cap}: the device plugin marked the GPUs "
                "unhealthy (XID / driver fault); check `nvidia-smi` and the device-plugin log"
            )
        else:
            problems.append("advertises nvidia.com/gpu: 0 (driver not loaded or device plugin found no GPU)")
    elif alloc < cap:
        problems.append(f"{cap - alloc} of {cap} GPUs unhealthy (allocatable {alloc} < capacity {cap})")
    if node.ready != "True":
        problems.append(f"NotReady (Ready={node.ready}): the kubelet is not reporting; no new pods land here")
    if node.unschedulable:
        problems.append("cordoned (spec.unschedulable): new pods are not placed here")
    return problems


def gpu_node_report(node: KubeNode, allocated: dict[str, int] | None = None) -> GpuNode | None:
    """Totals and problems of a GPU node, or None for a node with no sign of GPUs; ``allocated`` holds
    what bound, running pods request on it."""
    used = allocated or {}
    names = sorted(r for r in {*node.allocatable, *node.capacity} if r.startswith("nvidia.com/"))
    others = {r: node.allocatable.get(r, 0) for r in names if r != GPU and r in node.allocatable}
    product = node.labels.get(PRODUCT_LABEL)
    cloud = cloud_gpu_machine(node)
    labelled = any(k in node.labels for k in GFD_LABELS)
    if not (names or labelled or cloud is not None):
        return None
    if names:
        evidence = ", ".join(names)
    elif cloud is not None:
        evidence = cloud[0]
    else:
        evidence = "GPU Feature Discovery labels"
    model = parse_product(product).model if product else None
    if model is None and cloud is not None:
        model = cloud[1]
    rows = [
        GpuResource(
            resource=r,
            advertised=node.capacity.get(r, 0),
            healthy=node.allocatable.get(r, 0),
            allocated=used.get(r, 0),
            free=max(0, node.allocatable.get(r, 0) - used.get(r, 0)),
        )
        for r in names
    ]
    return GpuNode(
        node=node.name,
        product=product,
        gpus_allocatable=node.allocatable.get(GPU, 0),
        gpus_capacity=node.capacity.get(GPU, 0),
        other_gpu_resources=others,
        ready=node.ready,
        unschedulable=node.unschedulable,
        sharing=sharing_mode(node),
        problems=_problems(node, evidence, others),
        model=model,
        evidence=evidence,
        expected_gpus=cloud[2] if cloud is not None else _int(node.labels.get("nvidia.com/gpu.count")),
        mig=mig_mode(node),
        resources=rows,
        schedulable=schedulable(node),
    )


def allocated_by_node(pods: list[KubePod]) -> dict[str, dict[str, int]]:
    """Requests of bound, non-terminated pods summed per node (what the scheduler has charged there)."""
    out: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod.node_name is None or pod.terminated:
            continue
        into = out.setdefault(pod.node_name, {})
        for name, amount in pod.requests.items():
            into[name] = into.get(name, 0) + amount
    return out


def unknown_products(reports: list[GpuNode]) -> list[str]:
    """One warning per GPU product string fleetlab cannot map to a model, naming the nodes."""
    nodes: dict[str, list[str]] = {}
    for r in reports:
        if r.product and parse_product(r.product).model is None:
            nodes.setdefault(r.product, []).append(r.node)
    return [
        f"GPU product {product!r} on {len(names)} node(s) ({', '.join(names[:3])}) is not a model fleetlab "
        "knows; its GPUs are counted but not matched to a GPU model (see docs/kube.md for the table)"
        for product, names in sorted(nodes.items())
    ]
