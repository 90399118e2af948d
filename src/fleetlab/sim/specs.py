"""From a resolved scenario to what placement works on: node infos (one per pool slot) and pod specs."""

from __future__ import annotations

from fleetlab.model.job import Job
from fleetlab.model.resources import EPHEMERAL_STORAGE, MEMORY, PODS
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.state import NodeInfo
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
        affinity=job.affinity,
        image=image.name if image else None,
        image_size=image.size if image else 0,
        explicit_keys=frozenset(job.requests),
        gpu_share=(job.gpu_milli or 0, job.gpu_memory or 0) if job.shares_gpu else (0, 0),
        **spread,
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
