"""The other Kueue kinds a team applies next to its queues, accepted as written so a ``kubectl get -o yaml``
dump loads unchanged (``kueue.x-k8s.io`` v1beta2, v1beta1 and v1alpha1).

* ``WorkloadPriorityClass`` is modelled: a job whose ``priorityClassName`` names one (and no PriorityClass
  of that name exists) gets its ``value`` as priority.
* ``Topology`` is checked (1 to 16 levels, each a ``nodeLabel``) but topology-aware admission is not
  modelled: gang topology is decided at placement (``topology_required`` / ``topology_preferred``).
* ``AdmissionCheck``, ``ProvisioningRequestConfig``, ``MultiKueueConfig`` and ``MultiKueueCluster`` are
  accepted and ignored: workloads are admitted as if every check were Ready.

:func:`unmodelled_notes` turns what is accepted but not modelled into one warning line per topic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fleetlab.model.kube import KubeModel
from fleetlab.model.limits import Int

__all__ = [
    "EXTRA_KINDS",
    "IGNORED_KINDS",
    "ExtraMeta",
    "IgnoredKueueObject",
    "Topology",
    "WorkloadPriorityClass",
]

_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_INT32 = 2**31 - 1
ExtraApiVersion = Literal["kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1alpha1"]

#: Kinds accepted and ignored, with what that means for a run.
IGNORED_KINDS: dict[str, str] = {
    "AdmissionCheck": "workloads are admitted as if every admission check were Ready",
    "ProvisioningRequestConfig": "no ProvisioningRequest is made; capacity comes from the scenario's pools",
    "MultiKueueConfig": "workloads run in this cluster, not dispatched to workers",
    "MultiKueueCluster": "workloads run in this cluster, not dispatched to workers",
}


class ExtraMeta(BaseModel):
    """``metadata.name``; the rest of metadata is ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field(min_length=1, max_length=253, pattern=_NAME)


class TopologyLevel(KubeModel):
    """One level of a Topology, from the widest domain to the narrowest."""

    node_label: str = Field(alias="nodeLabel", min_length=1, max_length=316)


class TopologySpec(KubeModel):
    """``Topology.spec``: 1 to 16 levels, as Kueue's validation allows."""

    levels: tuple[TopologyLevel, ...] = Field(min_length=1, max_length=16)


class Topology(KubeModel):
    """A TAS Topology (checked, not modelled at admission)."""

    api_version: ExtraApiVersion = Field(default="kueue.x-k8s.io/v1beta2", alias="apiVersion")
    kind: Literal["Topology"] = "Topology"
    metadata: ExtraMeta
    spec: TopologySpec
    status: Any = None


class WorkloadPriorityClass(KubeModel):
    """A Kueue WorkloadPriorityClass: ``value`` (int32) is the priority of workloads that name it."""

    api_version: ExtraApiVersion = Field(default="kueue.x-k8s.io/v1beta2", alias="apiVersion")
    kind: Literal["WorkloadPriorityClass"] = "WorkloadPriorityClass"
    metadata: ExtraMeta
    value: Int = Field(ge=-_INT32 - 1, le=_INT32)
    description: str = ""


class IgnoredKueueObject(BaseModel):
    """An object of one of :data:`IGNORED_KINDS`: kept by kind and name only."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    api_version: str = Field(
        default="kueue.x-k8s.io/v1beta2", alias="apiVersion", pattern=r"^kueue\.x-k8s\.io/"
    )
    kind: Literal["AdmissionCheck", "ProvisioningRequestConfig", "MultiKueueConfig", "MultiKueueCluster"]
    metadata: ExtraMeta
    spec: dict[str, Any] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name


EXTRA_KINDS: dict[str, type[BaseModel]] = {
    "Topology": Topology,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    **dict.fromkeys(IGNORED_KINDS, IgnoredKueueObject),
}


def unmodelled_notes(
    topologies: tuple[Topology, ...],
    ignored: tuple[IgnoredKueueObject, ...],
    cluster_queue_fields: dict[str, list[str]],
) -> list[str]:
    """One warning per topic naming what is accepted but not modelled."""
    notes: list[str] = []
    if topologies:
        names = ", ".join(f'Topology "{t.metadata.name}"' for t in topologies)
        notes.append(
            f"kueue: {names} accepted; topology-aware admission is not modelled (a job's "
            "topology_required / topology_preferred decides gang topology at placement)"
        )
    for kind in sorted({o.kind for o in ignored}):
        names = ", ".join(f'"{o.name}"' for o in ignored if o.kind == kind)
        notes.append(f"kueue: {kind} {names} accepted but not modelled: {IGNORED_KINDS[kind]}")
    for cq, fields in sorted(cluster_queue_fields.items()):
        notes.append(f'kueue: ClusterQueue "{cq}": {", ".join(fields)} accepted but not modelled (ignored)')
    return notes
