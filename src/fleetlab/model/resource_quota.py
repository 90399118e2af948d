"""Namespace ResourceQuota and LimitRange (core/v1), as a team applies them.

ResourceQuota ``spec.hard`` caps what the namespace's objects use (``pods``, ``requests.cpu``,
``requests.nvidia.com/gpu``, ``count/pods``...); ``scopes`` / ``scopeSelector`` narrow the pods it counts
(Terminating / NotTerminating / BestEffort / NotBestEffort / PriorityClass). LimitRange ``spec.limits``
gives containers default requests and limits and bounds them (``min``, ``max``,
``maxLimitRequestRatio``). Field names and rules follow the core/v1 API (Kubernetes v1.35).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from fleetlab.model.kube import KubeModel

__all__ = ["LimitRange", "LimitRangeItem", "ResourceQuota", "ScopedRequirement"]

Scope = Literal[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
]
Quantity = str | int


class Meta(KubeModel):
    """``metadata``: name and namespace (both required); the rest ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    name: str = Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    namespace: str = Field(default="default", min_length=1, max_length=63)


class ScopedRequirement(KubeModel):
    """One ``scopeSelector.matchExpressions`` entry."""

    scope_name: Scope = Field(alias="scopeName")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _values(self) -> ScopedRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"scopeSelector operator {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"scopeSelector operator {self.operator} takes no values")
        if self.scope_name != "PriorityClass" and self.operator not in ("Exists", "DoesNotExist"):
            raise ValueError(f"scope {self.scope_name} takes operator Exists or DoesNotExist only")
        return self


class ScopeSelector(KubeModel):
    match_expressions: tuple[ScopedRequirement, ...] = Field(default=(), alias="matchExpressions")


class QuotaSpec(KubeModel):
    hard: dict[str, Quantity] = Field(default_factory=dict)
    scopes: tuple[Scope, ...] = ()
    scope_selector: ScopeSelector | None = Field(default=None, alias="scopeSelector")

    @model_validator(mode="after")
    def _exclusive(self) -> QuotaSpec:
        scopes = set(self.scopes) | {
            r.scope_name for r in (self.scope_selector.match_expressions if self.scope_selector else ())
        }
        for a, b in (("Terminating", "NotTerminating"), ("BestEffort", "NotBestEffort")):
            if a in scopes and b in scopes:
                raise ValueError(f"scopes {a} and {b} are mutually exclusive")
        return self


class ResourceQuota(KubeModel):
    """A ResourceQuota (``status`` is kept only so a ``kubectl get -o yaml`` dump loads)."""

    api_version: Literal["v1"] = Field(default="v1", alias="apiVersion")
    kind: Literal["ResourceQuota"] = "ResourceQuota"
    metadata: Meta
    spec: QuotaSpec = QuotaSpec()
    status: dict[str, Any] | None = None


class LimitRangeItem(KubeModel):
    """One ``spec.limits`` entry."""

    type: Literal["Container", "Pod", "PersistentVolumeClaim"]
    max: dict[str, Quantity] = Field(default_factory=dict)
    min: dict[str, Quantity] = Field(default_factory=dict)
    default: dict[str, Quantity] = Field(default_factory=dict)
    default_request: dict[str, Quantity] = Field(default_factory=dict, alias="defaultRequest")
    max_limit_request_ratio: dict[str, Quantity] = Field(default_factory=dict, alias="maxLimitRequestRatio")

    @model_validator(mode="after")
    def _defaults_only_for_containers(self) -> LimitRangeItem:
        if self.type != "Container" and (self.default or self.default_request):
            raise ValueError(f"default and defaultRequest apply to type Container only, not {self.type}")
        return self


class LimitRangeSpec(KubeModel):
    limits: tuple[LimitRangeItem, ...] = Field(min_length=1)


class LimitRange(KubeModel):
    """A LimitRange of one namespace."""

    api_version: Literal["v1"] = Field(default="v1", alias="apiVersion")
    kind: Literal["LimitRange"] = "LimitRange"
    metadata: Meta
    spec: LimitRangeSpec
