"""Node labels a ResourceFlavor can select a pool's nodes by on a real cluster.

fleetlab's scenarios tie flavors to pools with ``fleetlab.io/pool``, a label no real node carries. For
export each such selector is replaced by labels the cluster has:

* from a snapshot (``--snapshot``), the nodes that belong to the pool (same GPU model, same instance type,
  the pool's own labels) are found and the fewest labels they all share, and no other node has, are
  chosen, trying the keys platforms set themselves first (GPU product, instance type, node pool);
* without one, the labels every node of the pool gets from its platform: GPU Feature Discovery's
  ``nvidia.com/gpu.product`` and ``node.kubernetes.io/instance-type`` (plus the pool's own labels), when
  they tell the pool apart from every other pool.

A pool that neither can tell apart keeps ``fleetlab.io/pool`` and the export notes say to label its nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fleetlab.model.cluster import GPU_PRODUCT_LABEL, INSTANCE_TYPE_LABEL, POOL_LABEL, Cluster, NodePool
from fleetlab.model.gpu_products import GKE_ACCELERATORS, KARPENTER_GPU_NAMES, parse_product
from fleetlab.model.gpus import GPU_MODELS
from fleetlab.spec.kube_snapshot import KubeNode, Snapshot

#: Label keys tried first, in order: what GFD, the cloud and the node-pool tooling write on every node.
PREFERRED_KEYS = (
    GPU_PRODUCT_LABEL,
    INSTANCE_TYPE_LABEL,
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.sh/capacity-type",
    "cloud.google.com/gke-spot",
    "kubernetes.azure.com/scalesetpriority",
    "topology.kubernetes.io/zone",
)
#: Labels that differ per node, or are fleetlab's own: never a flavor selector.
SKIP_KEYS = frozenset({"kubernetes.io/hostname", POOL_LABEL, "fleetlab.io/rack"})


@dataclass(frozen=True)
class PoolSelector:
    """Labels selecting one pool's nodes, where they come from, and how many snapshot nodes match."""

    labels: dict[str, str]
    source: str
    nodes: int = 0


def _node_model(node: KubeNode) -> str | None:
    labels = node.labels
    if GPU_PRODUCT_LABEL in labels:
        return parse_product(labels[GPU_PRODUCT_LABEL]).model
    if "cloud.google.com/gke-accelerator" in labels:
        return GKE_ACCELERATORS.get(labels["cloud.google.com/gke-accelerator"])
    return KARPENTER_GPU_NAMES.get(labels.get("karpenter.k8s.aws/instance-gpu-name", "").lower())


def _belongs(node: KubeNode, pool: NodePool) -> bool:
    """Same GPU model (or both without GPUs), same instance type when the pool names one, and the
    pool's own labels."""
    if _node_model(node) != pool.gpu_model:
        return False
    if pool.instance_type and node.labels.get(INSTANCE_TYPE_LABEL) != pool.instance_type:
        return False
    return all(node.labels.get(k) == v for k, v in pool.labels.items() if k not in SKIP_KEYS)


def _separating(members: Sequence[Mapping[str, str]], others: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """Fewest shared labels of ``members`` that no node of ``others`` carries all of; {} if none do."""
    shared = {
        k: v for k, v in members[0].items() if k not in SKIP_KEYS and all(m.get(k) == v for m in members)
    }
    order = [k for k in PREFERRED_KEYS if k in shared] + sorted(k for k in shared if k not in PREFERRED_KEYS)
    chosen: dict[str, str] = {}
    for key in order:
        chosen[key] = shared[key]
        if not any(all(o.get(k) == v for k, v in chosen.items()) for o in others):
            return chosen
    return {}


def _from_snapshot(pool: NodePool, snapshot: Snapshot) -> PoolSelector | None:
    members = [n for n in snapshot.nodes if _belongs(n, pool)]
    if not members:
        return None
    names = {n.name for n in members}
    others = [n.labels for n in snapshot.nodes if n.name not in names]
    labels = _separating([n.labels for n in members], others)
    if not labels:
        return None
    shown = ", ".join(sorted(names)[:3]) + ("..." if len(names) > 3 else "")
    return PoolSelector(labels, f"the {len(members)} snapshot node(s) of the pool ({shown})", len(members))


def _platform_labels(pool: NodePool) -> dict[str, str]:
    """Labels a real node of the pool carries without anyone adding them."""
    labels = {k: v for k, v in pool.labels.items() if k not in SKIP_KEYS}
    if pool.gpu_model is not None:
        labels[GPU_PRODUCT_LABEL] = GPU_MODELS[pool.gpu_model].product
    if pool.instance_type:
        labels[INSTANCE_TYPE_LABEL] = pool.instance_type
    return labels


def pool_selectors(cluster: Cluster, snapshot: Snapshot | None) -> dict[str, PoolSelector | None]:
    """Per pool, the real labels that select its nodes, or None when none tell it apart."""
    platform = {p.name: _platform_labels(p) for p in cluster.pools}
    out: dict[str, PoolSelector | None] = {}
    for pool in cluster.pools:
        found = _from_snapshot(pool, snapshot) if snapshot is not None else None
        if found is None:
            others = [labels for name, labels in platform.items() if name != pool.name]
            labels = _separating([platform[pool.name]], others) if platform[pool.name] else {}
            source = "the labels GPU Feature Discovery and the cloud put on the pool's nodes"
            if snapshot is not None:
                source += " (no snapshot node matched the pool)"
            found = PoolSelector(labels, source) if labels else None
        out[pool.name] = found
    return out


def real_node_labels(
    node_labels: Mapping[str, str], selectors: Mapping[str, PoolSelector | None]
) -> tuple[dict[str, str], str | None]:
    """A flavor's ``nodeLabels`` with ``fleetlab.io/pool`` replaced by the pool's real labels, and the
    pool name when that was not possible."""
    pool = node_labels.get(POOL_LABEL)
    if pool is None:
        return dict(node_labels), None
    found = selectors.get(pool)
    if found is None:
        return dict(node_labels), pool
    rest = {k: v for k, v in node_labels.items() if k != POOL_LABEL}
    return {**found.labels, **rest}, None
