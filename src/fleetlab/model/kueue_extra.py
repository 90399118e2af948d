"""The other Kueue kinds a team applies next to its queues, accepted as written so a ``kubectl get -o yaml``
dump loads unchanged (``kueue.x-k8s.io`` v1beta2, v1beta1 and v1alpha1).

* ``WorkloadPriorityClass`` is modelled: a job whose ``priorityClassName`` names one (and no PriorityClass
  of that name exists) gets its ``value`` as priority.
* ``Topology`` is checked (1 to 16 levels, each a ``nodeLabel``); a ResourceFlavor naming one is a TAS
  flavor, and ``simulate`` admits through Kueue's topology assignment (``placement/tas``,
  ``sim/kueue_tas.py``).
* ``AdmissionCheck`` and ``ProvisioningRequestConfig`` are checked as their v1beta2 CRDs and Kueue's
  provisioning controller read them; ``simulate`` holds a workload of a ClusterQueue with a provisioning
  check until its ProvisioningRequest is Provisioned (sim/admission_checks.py; checks of other
  controllers count as Ready). ``MultiKueueConfig`` and ``MultiKueueCluster`` are accepted and ignored.

:func:`unmodelled_notes` turns what is accepted but not modelled into one warning line per topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fleetlab.model.kube import KubeModel
from fleetlab.model.limits import Int

__all__ = [
    "EXTRA_KINDS",
    "IGNORED_KINDS",
    "PROVISIONING_CONTROLLER",
    "AdmissionCheck",
    "ExtraMeta",
    "IgnoredKueueObject",
    "ProvisioningRequestConfig",
    "Topology",
    "WorkloadPriorityClass",
]

_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_INT32 = 2**31 - 1
_QUALIFIED = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
ExtraApiVersion = Literal["kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1alpha1"]

#: Kinds kept with the ignored ones that ``simulate`` acts on (sim/admission_checks.py): no note.
MODELLED_KINDS = frozenset({"AdmissionCheck", "ProvisioningRequestConfig"})
#: Kinds accepted and ignored, with what that means for a run.
IGNORED_KINDS: dict[str, str] = {
    "AdmissionCheck": "provisioning checks hold workloads in the run; other controllers count as Ready",
    "ProvisioningRequestConfig": "its ProvisioningRequests are answered by the autoscaler model",
    "MultiKueueConfig": "workloads run in this cluster, not dispatched to workers",
    "MultiKueueCluster": "workloads run in this cluster, not dispatched to workers",
}


class ExtraMeta(BaseModel):
    """``metadata.name``; the rest of metadata is ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field(min_length=1, max_length=253, pattern=_NAME)


class NamedByMetadata:
    """Objects whose name is ``metadata.name`` (each model declares its own ``metadata`` field)."""

    if TYPE_CHECKING:  # not a field here: the models keep their own field order
        metadata: ExtraMeta

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name


class TopologyLevel(KubeModel):
    """One level of a Topology, from the widest domain to the narrowest."""

    node_label: str = Field(alias="nodeLabel", min_length=1, max_length=316, pattern=_QUALIFIED)


class TopologySpec(KubeModel):
    """``Topology.spec``: 1 to 16 levels with the CRD's rules (apis/kueue/v1beta2/topology_types.go):
    unique, and ``kubernetes.io/hostname`` only as the lowest level."""

    levels: tuple[TopologyLevel, ...] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _levels(self) -> TopologySpec:
        labels = [level.node_label for level in self.levels]
        if len(set(labels)) != len(labels):
            raise ValueError(f"levels must be unique, got {', '.join(labels)}")
        if "kubernetes.io/hostname" in labels[:-1]:
            raise ValueError(
                "the kubernetes.io/hostname label can only be used at the lowest level of topology"
            )
        return self


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


#: The controllerName of Kueue's provisioning admission check controller.
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


class CheckParameters(KubeModel):
    """``spec.parameters``: the object holding the check's configuration."""

    api_group: str = Field(alias="apiGroup", min_length=1, max_length=253, pattern=_NAME)
    kind: str = Field(min_length=1, max_length=63, pattern=r"(?i)^[a-z]([-a-z0-9]*[a-z0-9])?$")
    name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class AdmissionCheckSpec(KubeModel):
    controller_name: str = Field(alias="controllerName", min_length=1, max_length=253)
    parameters: CheckParameters | None = None
    retry_delay_minutes: Int | None = Field(
        default=None, alias="retryDelayMinutes", ge=0, le=_INT32
    )  # v1beta1 only


class AdmissionCheck(NamedByMetadata, KubeModel):
    """An AdmissionCheck: a controller that must mark a workload Ready before it is admitted."""

    api_version: ExtraApiVersion = Field(default="kueue.x-k8s.io/v1beta2", alias="apiVersion")
    kind: Literal["AdmissionCheck"] = "AdmissionCheck"
    metadata: ExtraMeta
    spec: AdmissionCheckSpec
    status: Any = None


class RetryStrategy(KubeModel):
    """``retryStrategy``: how often a failed or expired ProvisioningRequest is retried (delay
    ``base·2^(n−1)`` capped at ``max``; after ``backoffLimitCount`` retries the check is Rejected)."""

    backoff_limit_count: Int = Field(default=3, alias="backoffLimitCount", ge=0, le=_INT32)
    backoff_base_seconds: Int = Field(default=60, alias="backoffBaseSeconds", ge=0, le=_INT32)
    backoff_max_seconds: Int = Field(default=1800, alias="backoffMaxSeconds", ge=0, le=_INT32)


class NodeSelectorUpdate(KubeModel):
    key: str = Field(min_length=1, max_length=317, pattern=_QUALIFIED)
    value_from_provisioning_class_detail: str = Field(
        alias="valueFromProvisioningClassDetail", min_length=1, max_length=32768
    )


class PodSetUpdates(KubeModel):
    node_selector: tuple[NodeSelectorUpdate, ...] = Field(default=(), alias="nodeSelector", max_length=8)


MergePolicy = Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"]


class ProvisioningRequestConfigSpec(KubeModel):
    provisioning_class_name: str = Field(
        alias="provisioningClassName", min_length=1, max_length=253, pattern=_NAME
    )
    parameters: dict[str, str] = Field(default_factory=dict, max_length=100)
    managed_resources: tuple[str, ...] = Field(default=(), alias="managedResources", max_length=100)
    retry_strategy: RetryStrategy = Field(default_factory=RetryStrategy, alias="retryStrategy")
    pod_set_updates: PodSetUpdates | None = Field(default=None, alias="podSetUpdates")
    pod_set_merge_policy: MergePolicy | None = Field(default=None, alias="podSetMergePolicy")

    @model_validator(mode="after")
    def _bounded(self) -> ProvisioningRequestConfigSpec:
        long = [k for k, v in self.parameters.items() if len(v) > 255]
        if long:
            raise ValueError(f"parameters {', '.join(sorted(long))}: a value is at most 255 characters")
        if len(set(self.managed_resources)) != len(self.managed_resources):
            raise ValueError("managedResources: duplicate entries")
        return self


class ProvisioningRequestConfig(NamedByMetadata, KubeModel):
    """The ProvisioningRequest a provisioning AdmissionCheck makes: class, parameters, retries."""

    api_version: ExtraApiVersion = Field(default="kueue.x-k8s.io/v1beta2", alias="apiVersion")
    kind: Literal["ProvisioningRequestConfig"] = "ProvisioningRequestConfig"
    metadata: ExtraMeta
    spec: ProvisioningRequestConfigSpec
    status: Any = None


class IgnoredKueueObject(NamedByMetadata, BaseModel):
    """An object of one of :data:`IGNORED_KINDS`: kept by kind and name only."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    api_version: str = Field(
        default="kueue.x-k8s.io/v1beta2", alias="apiVersion", pattern=r"^kueue\.x-k8s\.io/"
    )
    kind: Literal["MultiKueueConfig", "MultiKueueCluster"]
    metadata: ExtraMeta
    spec: dict[str, Any] = Field(default_factory=dict)


EXTRA_KINDS: dict[str, type[BaseModel]] = {
    "Topology": Topology,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    "AdmissionCheck": AdmissionCheck,
    "ProvisioningRequestConfig": ProvisioningRequestConfig,
    "MultiKueueConfig": IgnoredKueueObject,
    "MultiKueueCluster": IgnoredKueueObject,
}


def unmodelled_notes(
    topologies: tuple[Topology, ...],
    ignored: tuple[IgnoredKueueObject | AdmissionCheck | ProvisioningRequestConfig, ...],
    cluster_queue_fields: dict[str, list[str]],
    used_topologies: frozenset[str] = frozenset(),
) -> list[str]:
    """One warning per topic naming what is accepted but not modelled (or not used)."""
    notes: list[str] = []
    unused = [t.metadata.name for t in topologies if t.metadata.name not in used_topologies]
    if unused:
        names = ", ".join(f'Topology "{name}"' for name in unused)
        notes.append(
            f"kueue: {names} accepted; no ResourceFlavor names it in topologyName, so nothing uses it"
        )
    for kind in sorted({o.kind for o in ignored} - MODELLED_KINDS):
        names = ", ".join(f'"{o.name}"' for o in ignored if o.kind == kind)
        notes.append(f"kueue: {kind} {names} accepted but not modelled: {IGNORED_KINDS[kind]}")
    notes += check_wiring_notes(ignored)
    for cq, fields in sorted(cluster_queue_fields.items()):
        notes.append(f'kueue: ClusterQueue "{cq}": {", ".join(fields)} accepted but not modelled (ignored)')
    return notes


def check_wiring_notes(
    objects: tuple[IgnoredKueueObject | AdmissionCheck | ProvisioningRequestConfig, ...],
) -> list[str]:
    """A provisioning AdmissionCheck whose parameters name no ProvisioningRequestConfig of the scenario:
    Kueue's controller keeps such a check inactive, and the workloads of its ClusterQueues wait."""
    configs = {o.name for o in objects if isinstance(o, ProvisioningRequestConfig)}
    notes = []
    for check in (o for o in objects if isinstance(o, AdmissionCheck)):
        if check.spec.controller_name != PROVISIONING_CONTROLLER:
            continue
        params = check.spec.parameters
        if params is None or params.kind != "ProvisioningRequestConfig" or params.name not in configs:
            named = "no parameters" if params is None else f"{params.kind} {params.name!r}"
            notes.append(
                f'kueue: AdmissionCheck "{check.name}" ({PROVISIONING_CONTROLLER}) names {named}, which is '
                "not a ProvisioningRequestConfig of the scenario: Kueue keeps the check inactive (simulate "
                "counts it as Ready)"
            )
    return notes
