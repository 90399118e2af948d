"""Kubernetes v1.36's Workload API (``scheduling.k8s.io/v1alpha2``, feature gate GenericWorkload, alpha):
a Workload's PodGroupTemplates and the PodGroups made from them, as an alternative way to ask for a gang.

A PodGroup's ``schedulingPolicy`` is ``gang: {minCount}`` (at least ``minCount`` pods must be placeable
together before any is bound) or ``basic: {}`` (pods scheduled one by one); ``schedulingConstraints``
may hold one ``topology`` constraint whose ``key`` is a node label: every pod of the group goes to nodes
with one value of it (TopologyAwareWorkloadScheduling, alpha). Pods join a group through
``spec.schedulingGroup.podGroupName``.

Checked as the API server validates (``pkg/apis/scheduling/validation``): names are DNS subdomains,
namespaced, exactly one policy, ``minCount`` ≥ 1, 1 to 8 templates with unique names, at most one
topology constraint whose key is a qualified label name.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from fleetlab.model.kube import KubeModel

__all__ = ["API_VERSION", "PodGroup", "PodGroupTemplate", "SchedulingGroup", "Workload"]

API_VERSION: Literal["scheduling.k8s.io/v1alpha2"] = "scheduling.k8s.io/v1alpha2"
MAX_TEMPLATES = 8
_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(_SUBDOMAIN)


def qualified_name(key: str) -> bool:
    """A label key: an optional DNS-subdomain prefix and ``/``, then a name of 1–63 characters."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME_PART.match(name))


class Meta(KubeModel):
    """``metadata``: name and namespace (both required for these namespaced kinds); the rest ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    name: str = Field(min_length=1, max_length=253, pattern=_SUBDOMAIN)
    namespace: str = Field(min_length=1, max_length=63, pattern=_LABEL)


class Gang(KubeModel):
    """``gang``: the fewest pods that must fit together."""

    min_count: int = Field(alias="minCount", ge=1, le=2**31 - 1)


class SchedulingPolicy(KubeModel):
    """Exactly one of ``basic`` and ``gang``."""

    basic: dict[str, Any] | None = None
    gang: Gang | None = None

    @model_validator(mode="after")
    def _one(self) -> SchedulingPolicy:
        if (self.basic is None) == (self.gang is None):
            raise ValueError(
                "schedulingPolicy: exactly one of `basic`, `gang` is required"
                + (", but multiple fields are set" if self.gang is not None else "")
            )
        return self


class TopologyConstraint(KubeModel):
    """One ``topology`` entry: pods share one value of the node label ``key``."""

    key: str = Field(min_length=1, max_length=316)

    @model_validator(mode="after")
    def _qualified(self) -> TopologyConstraint:
        if not qualified_name(self.key):
            raise ValueError(f'topology key "{self.key}" is not a qualified label name')
        return self


class SchedulingConstraints(KubeModel):
    """``schedulingConstraints``: at most one topology constraint (v1.36), and at least one when set."""

    topology: tuple[TopologyConstraint, ...] = Field(min_length=1, max_length=1)


class PodGroupTemplate(KubeModel):
    """One template of a Workload."""

    name: str = Field(min_length=1, max_length=63, pattern=_LABEL)
    scheduling_policy: SchedulingPolicy = Field(alias="schedulingPolicy")
    scheduling_constraints: SchedulingConstraints | None = Field(default=None, alias="schedulingConstraints")
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    priority: int | None = None
    disruption_mode: Literal["Pod", "PodGroup"] | None = Field(default=None, alias="disruptionMode")
    resource_claims: tuple[dict[str, Any], ...] = Field(default=(), alias="resourceClaims")


class ControllerRef(KubeModel):
    """``controllerRef``: the object (a Job, JobSet...) that owns the Workload."""

    api_group: str = Field(default="", alias="apiGroup", max_length=253)
    kind: str = Field(min_length=1, pattern=r"^[^/]+$")
    name: str = Field(min_length=1, pattern=r"^[^/]+$")

    @model_validator(mode="after")
    def _group(self) -> ControllerRef:
        if self.api_group and not _PREFIX.match(self.api_group):
            raise ValueError(f'controllerRef.apiGroup "{self.api_group}" is not a DNS subdomain')
        return self


class WorkloadSpec(KubeModel):
    """``Workload.spec``: 1 to 8 templates with unique names."""

    controller_ref: ControllerRef | None = Field(default=None, alias="controllerRef")
    pod_group_templates: tuple[PodGroupTemplate, ...] = Field(
        alias="podGroupTemplates", min_length=1, max_length=MAX_TEMPLATES
    )

    @model_validator(mode="after")
    def _unique(self) -> WorkloadSpec:
        names = [t.name for t in self.pod_group_templates]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"podGroupTemplates: duplicate name {', '.join(dup)}")
        return self


class Workload(KubeModel):
    """A Workload: the templates its controller stamps PodGroups from."""

    api_version: Literal["scheduling.k8s.io/v1alpha2"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Workload"] = "Workload"
    metadata: Meta
    spec: WorkloadSpec


class TemplateRef(KubeModel):
    """``podGroupTemplateRef.workload``: the Workload and template a PodGroup was made from."""

    workload_name: str = Field(alias="workloadName", min_length=1, max_length=253, pattern=_SUBDOMAIN)
    pod_group_template_name: str = Field(
        alias="podGroupTemplateName", min_length=1, max_length=253, pattern=_SUBDOMAIN
    )


class PodGroupTemplateRef(KubeModel):
    workload: TemplateRef


class PodGroupSpec(KubeModel):
    """``PodGroup.spec``: policy and constraints (copied from the template by the controller)."""

    pod_group_template_ref: PodGroupTemplateRef | None = Field(default=None, alias="podGroupTemplateRef")
    scheduling_policy: SchedulingPolicy = Field(alias="schedulingPolicy")
    scheduling_constraints: SchedulingConstraints | None = Field(default=None, alias="schedulingConstraints")
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    priority: int | None = None
    disruption_mode: Literal["Pod", "PodGroup"] | None = Field(default=None, alias="disruptionMode")
    resource_claims: tuple[dict[str, Any], ...] = Field(default=(), alias="resourceClaims")


class PodGroup(KubeModel):
    """A PodGroup: the runtime group its pods name in ``spec.schedulingGroup.podGroupName``."""

    api_version: Literal["scheduling.k8s.io/v1alpha2"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["PodGroup"] = "PodGroup"
    metadata: Meta
    spec: PodGroupSpec
    status: dict[str, Any] | None = None

    @property
    def min_count(self) -> int | None:
        """The gang's ``minCount`` (None for a basic group)."""
        gang = self.spec.scheduling_policy.gang
        return None if gang is None else gang.min_count

    @property
    def topology_key(self) -> str | None:
        """The node label every pod of the group shares a value of, if constrained."""
        constraints = self.spec.scheduling_constraints
        return None if constraints is None else constraints.topology[0].key


class SchedulingGroup(KubeModel):
    """A pod's ``spec.schedulingGroup``: the PodGroup (in the pod's namespace) it belongs to."""

    pod_group_name: str = Field(alias="podGroupName", min_length=1, max_length=253, pattern=_SUBDOMAIN)
