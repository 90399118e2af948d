"""Kueue objects (``kueue.x-k8s.io/v1beta2``, v1beta1 accepted) as plain data: users paste real objects.

Field names follow ``apis/kueue/v1beta2`` exactly (camelCase aliases): ResourceFlavor, ClusterQueue, Cohort
and LocalQueue. Quotas are Kubernetes quantities, parsed into fleetlab's integer units (cpu in milli-cores,
memory in bytes, GPUs and other extended resources whole) by :func:`fleetlab.model.resources.parse_amount`.

Each object is accepted as a full Kubernetes object: ``apiVersion``, ``kind``, ``metadata`` (only ``name``
and, for a LocalQueue, ``namespace`` are read; labels, annotations, uid and the rest are ignored), ``spec``
(unknown fields are an error) and ``status`` (ignored, so ``kubectl get -o yaml`` output can be pasted).
Fields that Kueue's defaulting writes into stored objects are accepted with their default values
(``stopPolicy: None``, ``namespaceSelector``, ``preemption.borrowWithinCohort: {policy: Never}``).

``fleetlab.model.queues`` reads a mixed list of them into one validated configuration.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from fleetlab.model.kube import KubeModel, Taint, Toleration
from fleetlab.model.limits import Int, QuotaQuantity
from fleetlab.model.quantity import QuantityError, to_int, to_milli
from fleetlab.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, parse_amount

API_VERSIONS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
ApiVersion = Literal["kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"]
#: Kueue's reference pattern (DNS subdomain, RFC 1123) for object names and references.
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
Name = str  # documented alias: a string matching NAME_PATTERN, at most 253 characters

FungibilityPolicy = Literal["MayStopSearch", "TryNextFlavor"]
QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]


class ObjectMeta(BaseModel):
    """The part of ``metadata`` fleetlab reads; labels, annotations, uid and the rest are ignored."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="ignore")

    name: str = Field(min_length=1, max_length=253, pattern=NAME_PATTERN)
    namespace: str = Field(default="default", min_length=1, max_length=63)


_STANDARD = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
#: Kueue quotas may name any resource (``cpu_credits``, ``example.com/foo``); one outside Kubernetes' own
#: names is counted in whole units, as Kueue's ``Quantity.Value()``.
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_./]{0,251}[A-Za-z0-9])?$")


def _quantity(resource: str, value: Any) -> int:
    try:
        if _RESOURCE_NAME.match(resource) and "/" not in resource and resource not in _STANDARD:
            amount = to_int(value)
        else:
            amount = parse_amount(resource, value)
    except QuantityError as exc:
        text = str(exc)
        raise ValueError(text if text.startswith(f"{resource}:") else f"{resource}: {text}") from None
    if amount < 0:
        raise ValueError(f"{resource}: {value!r} must be greater than or equal to 0")
    return amount


class ResourceQuota(KubeModel):
    """One resource of a flavor: quotas as quantities, parsed to fleetlab's integer units for ``name``."""

    name: str = Field(min_length=1)
    nominal_quota: QuotaQuantity = Field(alias="nominalQuota")
    borrowing_limit: QuotaQuantity | None = Field(default=None, alias="borrowingLimit")
    lending_limit: QuotaQuantity | None = Field(default=None, alias="lendingLimit")

    @field_validator("nominal_quota", "borrowing_limit", "lending_limit", mode="before")
    @classmethod
    def _parse(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        resource = info.data.get("name")
        if not isinstance(resource, str):
            raise ValueError("cannot parse the quantity without a valid resource name")
        return _quantity(resource, value)


class FlavorQuotas(KubeModel):
    """A flavor of a resource group with one quota per covered resource, in coveredResources order."""

    name: str = Field(min_length=1, max_length=253, pattern=NAME_PATTERN)
    resources: tuple[ResourceQuota, ...] = Field(min_length=1)


class ResourceGroup(KubeModel):
    """Resources that share one flavor choice, and the flavors that provide them (tried in list order)."""

    covered_resources: tuple[str, ...] = Field(alias="coveredResources", min_length=1)
    flavors: tuple[FlavorQuotas, ...] = Field(min_length=1)


class FairSharing(KubeModel):
    """``fairSharing.weight`` (a quantity, default 1), kept in milli-units for the fair-sharing engineer."""

    weight_milli: Int = Field(default=1000, alias="weight")

    @field_validator("weight_milli", mode="before")
    @classmethod
    def _weight(cls, value: Any) -> int:
        try:
            milli = to_milli(value)
        except QuantityError as exc:
            raise ValueError(f"weight: {exc}") from None
        if milli < 0:
            raise ValueError(f"weight: {value!r} must be greater than or equal to 0")
        return milli


def _legacy_policy(value: Any, old: str) -> Any:
    """Kueue renamed ``Borrow``/``Preempt`` to ``MayStopSearch``; the old spelling means the same."""
    return "MayStopSearch" if value == old else value


class FlavorFungibility(KubeModel):
    """Whether to try the next flavor before borrowing or preempting in the current one (§1.4)."""

    when_can_borrow: FungibilityPolicy = Field(default="MayStopSearch", alias="whenCanBorrow")
    when_can_preempt: FungibilityPolicy = Field(default="TryNextFlavor", alias="whenCanPreempt")
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None

    @field_validator("when_can_borrow", mode="before")
    @classmethod
    def _old_borrow(cls, value: Any) -> Any:
        return _legacy_policy(value, "Borrow")

    @field_validator("when_can_preempt", mode="before")
    @classmethod
    def _old_preempt(cls, value: Any) -> Any:
        return _legacy_policy(value, "Preempt")

    @model_validator(mode="after")
    def _preference_needs_try_next(self) -> FlavorFungibility:
        if self.preference is not None and not (
            self.when_can_borrow == "TryNextFlavor" and self.when_can_preempt == "TryNextFlavor"
        ):
            # Kueue's CEL rule on FlavorFungibility, verbatim.
            raise ValueError(
                "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"
            )
        return self


class BorrowWithinCohort(KubeModel):
    """Preemption while borrowing (classic preemption only)."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: Int | None = Field(default=None, alias="maxPriorityThreshold")


class ClusterQueuePreemption(KubeModel):
    """``spec.preemption``, stored for the preemption module (§1.5); defaults are Kueue's."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = Field(
        default="Never", alias="withinClusterQueue"
    )
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = Field(
        default="Never", alias="reclaimWithinCohort"
    )
    borrow_within_cohort: BorrowWithinCohort | None = Field(default=None, alias="borrowWithinCohort")

    @model_validator(mode="after")
    def _borrow_needs_reclaim(self) -> ClusterQueuePreemption:
        bwc = self.borrow_within_cohort
        if self.reclaim_within_cohort == "Never" and bwc is not None and bwc.policy != "Never":
            # Kueue's CEL rule on ClusterQueuePreemption, verbatim.
            raise ValueError("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
        return self


def _v1beta1_name(data: Any, old: str, new: str) -> Any:
    """A spec with v1beta1's field name ``old`` renamed to v1beta2's ``new`` (both given is an error)."""
    if isinstance(data, dict) and old in data:
        if new in data:
            raise ValueError(f"give {new} (v1beta2) or {old} (v1beta1), not both")
        data = {(new if k == old else k): v for k, v in data.items()}
    return data


class ClusterQueueSpec(KubeModel):
    """``ClusterQueue.spec``; ``cohort`` (the v1beta1 name) is accepted for ``cohortName``."""

    resource_groups: tuple[ResourceGroup, ...] = Field(default=(), alias="resourceGroups")
    cohort_name: str | None = Field(
        default=None, alias="cohortName", min_length=1, max_length=253, pattern=NAME_PATTERN
    )
    queueing_strategy: QueueingStrategy = Field(default="BestEffortFIFO", alias="queueingStrategy")
    namespace_selector: dict[str, Any] | None = Field(default=None, alias="namespaceSelector")  # ignored
    flavor_fungibility: FlavorFungibility = Field(
        default_factory=FlavorFungibility, alias="flavorFungibility"
    )
    preemption: ClusterQueuePreemption = Field(default_factory=ClusterQueuePreemption)
    fair_sharing: FairSharing | None = Field(default=None, alias="fairSharing")
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] | None = Field(default=None, alias="stopPolicy")
    # Provisioning checks act in the run (sim/admission_checks.py); the fields below them are accepted as
    # applied, not modelled (see ``unmodelled_fields``).
    admission_checks: tuple[str, ...] = Field(default=(), alias="admissionChecks")
    admission_checks_strategy: dict[str, Any] | None = Field(default=None, alias="admissionChecksStrategy")
    admission_scope: dict[str, Any] | None = Field(default=None, alias="admissionScope")
    concurrent_admission_policy: dict[str, Any] | None = Field(
        default=None, alias="concurrentAdmissionPolicy"
    )
    concurrent_admission: dict[str, Any] | None = Field(default=None, alias="concurrentAdmission")
    default_local_queue: dict[str, Any] | None = Field(default=None, alias="defaultLocalQueue")

    def unmodelled_fields(self) -> list[str]:
        """The spec fields set here that fleetlab accepts but does not model."""
        out = [
            alias
            for alias, value in (
                ("admissionScope", self.admission_scope),
                ("concurrentAdmissionPolicy", self.concurrent_admission_policy),
                ("concurrentAdmission", self.concurrent_admission),
                ("defaultLocalQueue", self.default_local_queue),
            )
            if value
        ]
        if self.stop_policy in ("Hold", "HoldAndDrain"):
            out.append(f"stopPolicy: {self.stop_policy}")
        return out

    @model_validator(mode="after")
    def _checks_or_strategy(self) -> ClusterQueueSpec:
        if self.admission_checks and self.admission_checks_strategy is not None:
            # Kueue's CEL rule on ClusterQueueSpec.
            raise ValueError("Either AdmissionChecks or AdmissionCheckStrategy can be set, but not both")
        return self

    @model_validator(mode="before")
    @classmethod
    def _v1beta1_cohort(cls, data: Any) -> Any:
        return _v1beta1_name(data, "cohort", "cohortName")


class CohortSpec(KubeModel):
    """``Cohort.spec``: parent, extra shared quota on top of the children's, fair-sharing weight."""

    parent_name: str | None = Field(
        default=None, alias="parentName", min_length=1, max_length=253, pattern=NAME_PATTERN
    )
    resource_groups: tuple[ResourceGroup, ...] = Field(default=(), alias="resourceGroups")
    fair_sharing: FairSharing | None = Field(default=None, alias="fairSharing")

    @model_validator(mode="before")
    @classmethod
    def _v1beta1_parent(cls, data: Any) -> Any:
        """v1beta1 spells ``parentName`` as ``parent`` (kueue.x-k8s.io_cohorts.yaml, version v1beta1)."""
        return _v1beta1_name(data, "parent", "parentName")


class ResourceFlavorSpec(KubeModel):
    """``ResourceFlavor.spec``: what admission adds to pods (labels, tolerations), what they must tolerate."""

    node_labels: dict[str, str] = Field(default_factory=dict, alias="nodeLabels")
    node_taints: tuple[Taint, ...] = Field(default=(), alias="nodeTaints")
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = Field(default=None, alias="topologyName")

    @model_validator(mode="after")
    def _topology_needs_labels(self) -> ResourceFlavorSpec:
        """The v1beta2 CRD's rule ``!has(self.topologyName) || self.nodeLabels.size() >= 1``."""
        if self.topology_name is not None and not self.node_labels:
            raise ValueError(
                "a flavor with topologyName needs at least one nodeLabels entry (Kueue's CRD rule)"
            )
        return self


class LocalQueueSpec(KubeModel):
    """``LocalQueue.spec``: the ClusterQueue it feeds."""

    cluster_queue: str = Field(alias="clusterQueue", min_length=1, max_length=253, pattern=NAME_PATTERN)
    stop_policy: Literal["None"] | None = Field(default=None, alias="stopPolicy")
    fair_sharing: FairSharing | None = Field(default=None, alias="fairSharing")


class KueueObject(KubeModel):
    """What the four kinds share: apiVersion, metadata, and a status that is ignored."""

    api_version: ApiVersion = Field(default="kueue.x-k8s.io/v1beta2", alias="apiVersion")
    metadata: ObjectMeta
    status: Any = None  # ignored: lets users paste `kubectl get -o yaml` output

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name


class ResourceFlavor(KueueObject):
    """A variant of resources (GPU model, spot vs on-demand), cluster-scoped."""

    kind: Literal["ResourceFlavor"] = "ResourceFlavor"
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


class ClusterQueue(KueueObject):
    """A pool of quota with its flavors, cohort, queueing strategy, fungibility and preemption policy."""

    kind: Literal["ClusterQueue"] = "ClusterQueue"
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)


class Cohort(KueueObject):
    """A node of the cohort tree; one is created implicitly for every name referenced without an object."""

    kind: Literal["Cohort"] = "Cohort"
    spec: CohortSpec = Field(default_factory=CohortSpec)


class LocalQueue(KueueObject):
    """A namespaced queue users submit to, feeding one ClusterQueue."""

    kind: Literal["LocalQueue"] = "LocalQueue"
    spec: LocalQueueSpec

    @property
    def key(self) -> tuple[str, str]:
        """``(namespace, name)``, the LocalQueue's identity."""
        return (self.metadata.namespace, self.metadata.name)
