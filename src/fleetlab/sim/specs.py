"""From a resolved scenario to what placement works on: node infos (one per pool slot) and pod specs."""

from __future__ import annotations

import numpy as np

from fleetlab.model.cluster import GPU_MEMORY_LABEL
from fleetlab.model.dra import PodClaimRef, PodClaims
from fleetlab.model.job import Job
from fleetlab.model.kube import (
    Affinity,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from fleetlab.model.resources import EPHEMERAL_STORAGE, MEMORY, PODS
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.state import BoolArray, NodeInfo
from fleetlab.sim.pod_constraints import pod_constraints_of


def pod_spec(job: Job, with_labels: bool = False) -> PodSpec:
    """The placement-facing view of a job's pods (identical for all of them); ``with_labels`` gives every
    pod its labels (when other pods' anti-affinity may select them)."""
    image = job.image
    spread = pod_constraints_of(job, with_labels)
    return PodSpec(
        requests=tuple(sorted(job.requests.items())),
        tolerations=job.tolerations,
        node_selector=tuple(sorted(job.node_selector.items())),
        affinity=with_gpu_memory(job.affinity, needs_gpu_memory_mib(job)),
        image=image.name if image else None,
        image_size=image.size if image else 0,
        explicit_keys=frozenset(job.requests),
        gpu_share=(job.gpu_milli or 0, job.gpu_memory or 0) if job.shares_gpu else (0, 0),
        claims=claims_shape(job),
        **spread,
    )


def claims_shape(job: Job) -> PodClaims | None:
    """The ResourceClaims every pod of the job gets, as one shape for placement (None: no claims): shared
    claims by name, template entries still to be generated per pod (sim/dra_claims.py names them)."""
    if not job.resource_claims:
        return None
    refs = tuple(
        PodClaimRef(c.name, c.resource_claim_name, c.resource_claim_template_name)
        for c in job.resource_claims
    )
    return PodClaims(job.namespace, "", "", refs, shape=True)


def needs_gpu_memory_mib(job: Job) -> int | None:
    """The GPU memory (MiB, rounded up) each whole GPU of the job's pods must have: the job's declared
    ``gpu_memory`` when it takes whole GPUs (a share's memory is placed by the sharing code), else None."""
    if job.gpu_memory is None or job.shares_gpu or job.gpus_per_pod < 1:
        return None
    return -(-int(job.gpu_memory) // 1024**2)


def with_gpu_memory(affinity: Affinity | None, mib: int | None) -> Affinity | None:
    """The pod's affinity plus the requirement a user writes with GPU Feature Discovery's label, so a job
    that uses ``mib`` of GPU memory never lands on smaller GPUs (where it would run out of memory):
    ``nvidia.com/gpu.memory Gt mib-1``, added to every required term (terms are ORed, expressions ANDed)."""
    if mib is None:
        return affinity
    need = NodeSelectorRequirement(key=GPU_MEMORY_LABEL, operator="Gt", values=(str(mib - 1),))
    node_affinity = affinity.node_affinity if affinity is not None else None
    required = node_affinity.required if node_affinity is not None else None
    terms = required.node_selector_terms if required is not None else (NodeSelectorTerm(),)
    merged = tuple(t.model_copy(update={"match_expressions": (*t.match_expressions, need)}) for t in terms)
    selector = NodeSelector.model_validate({"nodeSelectorTerms": merged})
    base = node_affinity or NodeAffinity()
    updated = base.model_copy(update={"required": selector})
    return (affinity or Affinity()).model_copy(update={"node_affinity": updated})


def largest_gpu_memory_mib(nodes: list[NodeInfo]) -> int:
    """The most GPU memory (MiB) of any node's GPUs, from GPU Feature Discovery's label (0: none)."""
    return max((int(n.labels.get(GPU_MEMORY_LABEL, "0")) for n in nodes), default=0)


def gpu_memory_note(job: Job, largest_mib: int) -> str | None:
    """Why the job's pods fit no GPU, when its declared GPU memory exceeds every node's GPUs (else None)."""
    need = needs_gpu_memory_mib(job)
    if need is None or need <= largest_mib:
        return None
    return (
        f"the pods use gpu_memory {need} MiB, more than the largest GPU of any node ({largest_mib} MiB, "
        f"label {GPU_MEMORY_LABEL}): they would run out of GPU memory, so no GPU is eligible"
    )


def build_nodes(resolved: ResolvedScenario) -> list[NodeInfo]:
    """Expand node pools into nodes with allocatable resources and labels."""
    nodes: list[NodeInfo] = []
    for p_index, pool in enumerate(resolved.scenario.cluster.pools):
        allocatable = {
            "cpu": pool.cpu,
            MEMORY: pool.memory,
            EPHEMERAL_STORAGE: pool.ephemeral_storage,
            PODS: pool.max_pods,
        }
        allocatable.update(pool.device_resources())
        allocatable.update(pool.extended_resources)
        for i in range(pool.node_slots):
            nodes.append(
                NodeInfo(
                    name=pool.node_name(i),
                    pool=p_index,
                    labels=pool.node_labels(i),
                    taints=pool.taints,
                    allocatable=dict(allocatable),
                    gpu_model=pool.gpu_model,
                    unschedulable=pool.unschedulable,
                )
            )
    return nodes


def initially_present(nodes: list[NodeInfo], resolved: ResolvedScenario) -> BoolArray:
    """Per node slot, whether it exists when the run starts: a pool's first ``count`` slots (the rest
    only when autoscaled)."""
    pools = resolved.scenario.cluster.pools
    first_slot: dict[int, int] = {}
    present = [
        node - first_slot.setdefault(info.pool, node) < pools[info.pool].count
        for node, info in enumerate(nodes)
    ]
    return np.asarray(present, dtype=bool).reshape(-1)
