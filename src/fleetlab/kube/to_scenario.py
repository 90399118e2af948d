"""A cluster snapshot as a scenario, to ask what another policy or more nodes would do with it.

Nodes are grouped into pools of identical nodes (GPU product, instance type, zone, taints, cordon and
allocatable after DaemonSet pods, which run for the node's life and are folded into it). Running pods
become jobs bound to their node at t=0 for ``remaining_s``; pending pods arrive at t=0 and run for
``runtime_s``; pending pods of one pod group with one spec become one gang job. Neither runtime is in
the snapshot, so both are assumptions the caller states.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fleetlab.kube.cluster import implied_taint
from fleetlab.kube.gpu_nodes import cloud_gpu_machine
from fleetlab.kube.queue_order import queue_key
from fleetlab.model.cluster import (
    GPU_PRODUCT_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
)
from fleetlab.model.gpu_products import parse_product
from fleetlab.model.limits import MAX_NODES
from fleetlab.model.resources import CPU, EPHEMERAL_STORAGE, GPU, MEMORY, PODS, format_amount, is_extended
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.kube_snapshot import KubeNode, KubePod, Snapshot
from fleetlab.spec.loader import resolve
from fleetlab.spec.pools import resolve_pool

#: providerID prefixes of the clouds with a built-in price catalog.
PROVIDERS = {"gce": "gcp", "aws": "aws", "azure": "azure"}


def _node_model(node: KubeNode) -> str | None:
    """The node's whole-GPU model; None for an unknown product, or when nvidia.com/gpu counts MIG
    instances or time-slicing replicas rather than GPUs."""
    product = parse_product(node.labels.get(GPU_PRODUCT_LABEL) or "")
    return None if product.mig_profile or product.shared else product.model


def _model_warning(pool: dict[str, Any], node: KubeNode) -> str | None:
    """Why a pool with GPUs got no GPU model (its nvidia.com/gpu is then a plain resource), or that a
    GPU machine's pool has no GPUs at all (no device plugin on its nodes)."""
    if GPU not in pool["extended_resources"]:
        if "gpu_model" in pool or any(r.startswith("nvidia.com/") for r in node.allocatable):
            return None
        machine = cloud_gpu_machine(node)
        if machine is None:
            return None
        return (
            f"pool {pool['name']}: GPU machines ({machine[0]}) that advertise no nvidia.com/gpu (no device "
            "plugin or driver on them); simulated without GPUs, as the scheduler sees them now"
        )
    label = node.labels.get(GPU_PRODUCT_LABEL)
    if not label:
        why = "its nodes carry no nvidia.com/gpu.product label"
    else:
        product = parse_product(label)
        if product.mig_profile or product.shared:
            unit = "MIG instances" if product.mig_profile else "shared replicas"
            why = f"nvidia.com/gpu counts {unit} ({label})"
        else:
            why = f"GPU product {label!r} is not a model fleetlab knows (see docs/kube.md)"
    return f"pool {pool['name']}: {why}; its nvidia.com/gpu is kept as a plain resource without a GPU model"


#: Labels that differ per node and must not become pool labels.
PER_NODE_LABELS = frozenset({HOSTNAME_LABEL, "kubernetes.io/hostname"})


@dataclass
class SnapshotPools:
    """The pools built from a snapshot, where each snapshot node landed, and pricing warnings."""

    pools: list[dict[str, Any]]
    node_of: dict[str, str]  # snapshot node name -> simulated node name
    warnings: list[str]


def _price(pool: dict[str, Any], node: KubeNode) -> str | None:
    """Set the pool's on-demand price from the built-in catalog of its cloud; a warning when it cannot."""
    cloud = PROVIDERS.get(node.provider_id.split(":", 1)[0])
    region = node.labels.get(REGION_LABEL)
    if cloud is None or region is None or "instance_type" not in pool:
        return f"pool {pool['name']}: no price (cloud, region or instance type unknown); costs count it as 0"
    try:
        priced, _ = resolve_pool({**pool, "cloud": cloud, "region": region}, f"pool {pool['name']}", None)
    except ValueError as exc:
        return f"{exc}; its price counts as 0"
    pool["price_per_hour"] = priced["price_per_hour"]  # shape stays the snapshot's, only the price is taken
    return None


def _daemon_usage(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    usage: dict[str, dict[str, int]] = {}
    for pod in snapshot.pods:
        if pod.owner_kind == "DaemonSet" and pod.node_name and not pod.terminated:
            node = usage.setdefault(pod.node_name, {})
            for r, v in pod.requests.items():
                node[r] = node.get(r, 0) + v
            node[PODS] = node.get(PODS, 0) + 1
    return usage


def _pool_name(node: KubeNode, taken: set[str]) -> str:
    product = node.labels.get(GPU_PRODUCT_LABEL)
    model = _node_model(node)
    base = (
        "-".join(x for x in (node.labels.get(INSTANCE_TYPE_LABEL), (model or product or "").lower()) if x)
        or "nodes"
    )
    base = re.sub(r"[^a-z0-9.-]+", "-", base.lower()).strip("-.") or "nodes"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _pool(
    node: KubeNode, free: dict[str, int], name: str, count: int, labels: dict[str, str]
) -> dict[str, Any]:
    model = _node_model(node)
    gpus = free.get(GPU, 0)
    taints = list(node.taints)
    extra = implied_taint(node)
    if extra is not None:
        taints.append(extra)
    pool: dict[str, Any] = {
        "name": name,
        "count": count,
        "cpu": format_amount(CPU, max(0, free.get(CPU, 0))),
        "memory": str(max(0, free.get(MEMORY, 0))),
        "ephemeral_storage": str(max(0, free.get(EPHEMERAL_STORAGE, 0))),
        "max_pods": max(1, free.get(PODS, 110)),
        "labels": labels,
        "taints": [t.model_dump() for t in taints],
        "unschedulable": node.unschedulable,
        "extended_resources": {r: max(0, v) for r, v in sorted(free.items()) if is_extended(r) and r != GPU},
    }
    if node.labels.get(ZONE_LABEL):
        pool["zones"] = [node.labels[ZONE_LABEL]]
    if node.labels.get(INSTANCE_TYPE_LABEL):
        pool["instance_type"] = node.labels[INSTANCE_TYPE_LABEL]
    if model is not None and gpus > 0:
        pool.update(gpu_model=model, gpus_per_node=gpus)
    elif gpus > 0:  # a GPU product fleetlab has no model for: the count is kept as a plain resource
        pool["extended_resources"][GPU] = gpus
    return pool


def _topology_keys(snapshot: Snapshot) -> tuple[str, ...]:
    """Node labels a placement asks to share (Kueue Topology levels, pods' TAS and PodGroup topology
    requests): nodes that differ in one go to different pools, so each pool keeps its domain's value."""
    keys: set[str] = set()
    for obj in snapshot.queue_objects:
        if obj.get("kind") == "Topology":
            levels = (obj.get("spec") or {}).get("levels") or []
            keys.update(str(level.get("nodeLabel")) for level in levels if isinstance(level, Mapping))
    for pod in snapshot.pods:
        if pod.topology is not None:
            asked = (pod.topology.required, pod.topology.preferred, pod.topology.slice_required)
            keys.update(k for k in asked if k)
    keys.discard(HOSTNAME_LABEL)
    return tuple(sorted(keys))


def snapshot_pools(snapshot: Snapshot) -> SnapshotPools:
    """Pools of identical nodes; each node's allocatable is reduced by its DaemonSet pods."""
    daemon = _daemon_usage(snapshot)
    levels = _topology_keys(snapshot)
    groups: dict[tuple[Any, ...], list[tuple[KubeNode, dict[str, int]]]] = {}
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        used = daemon.get(node.name, {})
        free = {r: v - used.get(r, 0) for r, v in node.allocatable.items()}
        key = (
            tuple(node.labels.get(k) for k in levels),
            node.labels.get(GPU_PRODUCT_LABEL),
            node.labels.get(INSTANCE_TYPE_LABEL),
            node.labels.get(ZONE_LABEL),
            node.taints,
            node.unschedulable,
            node.ready == "True",
            tuple(sorted(free.items())),
        )
        groups.setdefault(key, []).append((node, free))
    pools: list[dict[str, Any]] = []
    node_of: dict[str, str] = {}
    warnings: list[str] = []
    taken: set[str] = set()
    for members in groups.values():
        first, free = members[0]
        common = {
            k: v
            for k, v in first.labels.items()
            if k not in PER_NODE_LABELS and all(m.labels.get(k) == v for m, _ in members)
        }
        name = _pool_name(first, taken)
        pool = _pool(first, free, name, len(members), common)
        for warning in (_model_warning(pool, first), _price(pool, first)):
            if warning is not None:
                warnings.append(warning)
        pools.append(pool)
        for i, (node, _) in enumerate(members):
            node_of[node.name] = f"{name}-{i}"
    return SnapshotPools(pools, node_of, warnings)


def _job(
    pod: KubePod,
    job_id: str,
    runtime_s: float,
    node_of: dict[str, str],
    pods: int = 1,
    bound: str | None = None,
    with_labels: bool = False,
) -> dict[str, Any]:
    """A job dict for one pod (or a gang of ``pods`` identical ones); ``with_labels`` carries the pod's
    labels (when some pod's spread or anti-affinity selectors may name them)."""
    job: dict[str, Any] = {
        "id": job_id,
        "submit_s": 0,
        "pods": pods,
        "gang": pods > 1,
        "namespace": pod.namespace,
        "priority": pod.priority,
        "requests": {r: format_amount(r, v) for r, v in sorted(pod.requests.items()) if r != PODS},
        "tolerations": [t.model_dump(by_alias=True, exclude_none=True) for t in pod.tolerations],
        # a hostname selector names the snapshot node; the simulated node has the pool's name for it
        "nodeSelector": {k: node_of.get(v, v) if k == HOSTNAME_LABEL else v for k, v in pod.node_selector},
        "runtime": runtime_s,
    }
    if pod.affinity is not None:
        job["affinity"] = pod.affinity.model_dump(by_alias=True, exclude_none=True)
    if pods > 1 and pod.topology is not None:  # Kueue TAS annotations or a PodGroup topology constraint
        if pod.topology.required is not None:
            job["topology_required"] = pod.topology.required
        elif pod.topology.preferred is not None:
            job["topology_preferred"] = pod.topology.preferred
    if bound is not None:
        job["bound_node"] = bound
    if pod.resource_claims is not None:
        entries = [
            {"name": r.name, "resourceClaimTemplateName": r.template_name}
            if r.template_name is not None
            else {"name": r.name, "resourceClaimName": r.claim_name}
            for r in pod.resource_claims.refs
            if r.template_name is not None or r.claim_name is not None
        ]
        if entries:
            job["resourceClaims"] = entries
    if with_labels and pod.labels:
        job["labels"] = dict(pod.labels)
    if pod.topology_spread:
        job["topology_spread"] = [c.model_dump(by_alias=True, exclude_none=True) for c in pod.topology_spread]
    if pod.anti_affinity:
        job["anti_affinity"] = [t.model_dump(by_alias=True, exclude_none=True) for t in pod.anti_affinity]
    if pod.pod_affinity:
        job["pod_affinity"] = [t.model_dump(by_alias=True, exclude_none=True) for t in pod.pod_affinity]
    return job


def snapshot_jobs(
    snapshot: Snapshot, node_of: dict[str, str], remaining_s: float, runtime_s: float
) -> list[dict[str, Any]]:
    """Running (and bound) pods as jobs bound at t=0; unbound pending pods as arrivals at t=0, listed in
    kube-scheduler's queue order (priority, then creation) so that the simulator, which breaks ties
    between equal arrivals by job order, places them in the order ``diagnose`` does."""
    jobs: list[dict[str, Any]] = []
    gangs: dict[tuple[str, str], list[KubePod]] = {}
    labelled = any(p.topology_spread or p.anti_affinity or p.pod_affinity for p in snapshot.pods)
    placed = sorted((p for p in snapshot.pods if p.node_name is not None), key=lambda p: p.key)
    ordered = placed + sorted((p for p in snapshot.pods if p.node_name is None), key=queue_key)
    for pod in ordered:
        if pod.terminated or pod.owner_kind == "DaemonSet":
            continue
        if pod.node_name is not None:
            bound = node_of.get(pod.node_name)
            if bound is not None:
                jobs.append(_job(pod, pod.key, remaining_s, node_of, bound=bound, with_labels=labelled))
        elif pod.group is not None:
            gangs.setdefault((pod.namespace, pod.group), []).append(pod)
        else:
            jobs.append(_job(pod, pod.key, runtime_s, node_of, with_labels=labelled))
    for (ns, group), members in sorted(gangs.items()):
        first = members[0]
        same = all(m.requests == first.requests and m.tolerations == first.tolerations for m in members)
        if same:
            jobs.append(
                _job(first, f"{ns}/{group}", runtime_s, node_of, pods=len(members), with_labels=labelled)
            )
        else:
            jobs.extend(_job(m, m.key, runtime_s, node_of, with_labels=labelled) for m in members)
    return jobs


def add_nodes(pools: list[dict[str, Any]], extra: Sequence[str]) -> None:
    """Apply ``POOL=N`` requests: N more (empty) nodes in that pool."""
    by_name = {p["name"]: p for p in pools}
    for item in extra:
        name, _, count = item.partition("=")
        if name not in by_name or not re.fullmatch(r"[0-9]{1,9}", count.strip()):
            known = ", ".join(sorted(by_name))
            raise SpecError("--add-nodes", [f"{item!r}: expected POOL=N with POOL one of {known}"])
        if int(count) > MAX_NODES:
            raise SpecError("--add-nodes", [f"{item!r}: at most {MAX_NODES:,} nodes fit in one simulation"])
        by_name[name]["count"] += int(count)


ADMISSION_CHECK_KINDS = frozenset({"AdmissionCheck", "ProvisioningRequestConfig"})


def _as_applied(model: Any) -> dict[str, Any]:
    """An object as a team applies it: no status, only name, namespace, labels and annotations."""
    body: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    body.pop("status", None)
    meta = body["metadata"]
    body["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k)}
    return body


def dra_as_applied(snapshot: Snapshot, node_of: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The snapshot's DRA objects without status (claims start unallocated in a replay) and without
    server-set metadata; a slice's ``nodeName`` becomes the simulated node's name (``node_of``)."""
    d = snapshot.dra
    out = [_as_applied(model) for model in (*d.classes, *d.templates, *d.claims, *d.slices)]
    for body in out:
        spec = body.get("spec")
        if (
            body.get("kind") == "ResourceSlice"
            and isinstance(spec, dict)
            and node_of
            and spec.get("nodeName")
        ):
            spec["nodeName"] = node_of.get(spec["nodeName"], spec["nodeName"])
    return out


def tas_objects(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The snapshot's Kueue Topologies and the ResourceFlavors naming one (TAS flavors), carried so export
    writes them back; without the snapshot's ClusterQueues no replayed job is admitted through them."""
    topologies = [o for o in objects if o.get("kind") == "Topology"]
    names = {(o.get("metadata") or {}).get("name") for o in topologies}
    flavors = [
        o
        for o in objects
        if o.get("kind") == "ResourceFlavor" and (o.get("spec") or {}).get("topologyName") in names
    ]
    return topologies + flavors


def snapshot_scenario(
    snapshot: Snapshot,
    extra_nodes: Sequence[str] = (),
    remaining_s: float = 3600.0,
    runtime_s: float = 3600.0,
    seed: int = 0,
) -> ResolvedScenario:
    """The snapshot as a resolved scenario (pools, bound running jobs, pending arrivals)."""
    if not (remaining_s > 0 and runtime_s > 0):
        raise SpecError("--snapshot-runtime", ["must be longer than 0 (pods need time to run), e.g. 1h"])
    built = snapshot_pools(snapshot)
    add_nodes(built.pools, extra_nodes)
    jobs = snapshot_jobs(snapshot, built.node_of, remaining_s, runtime_s)
    data: dict[str, Any] = {
        "name": "snapshot",
        "seed": seed,
        "cluster": {"pools": built.pools},
        "workload": {"jobs": jobs},
    }
    if snapshot.dra:
        data["dra"] = {"objects": dra_as_applied(snapshot, built.node_of)}
    if snapshot.namespace_policies:
        data["namespace_policies"] = [_as_applied(p) for p in snapshot.namespace_policies]
    checks = [o for o in snapshot.queue_objects if o.get("kind") in ADMISSION_CHECK_KINDS]
    carried = checks + tas_objects(snapshot.queue_objects)
    if carried:  # admission checks and TAS topologies only: the snapshot's queues stay out of the replay
        data["kueue"] = [{k: v for k, v in o.items() if k != "status"} for o in carried]
    label = ", ".join(snapshot.sources)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise SpecError(label, problems_from_validation(exc)) from None
    resolved = resolve(scenario, label)
    return resolved.model_copy(update={"warnings": (*built.warnings, *resolved.warnings)})
