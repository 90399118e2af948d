"""Pod-to-pod placement constraints as data: label selectors, topology spread, pod affinity and anti-affinity.

Shapes follow core/v1 (TopologySpreadConstraint, LabelSelector, PodAffinityTerm) with camelCase aliases, so a
pod spec fragment pastes into a scenario. A missing ``label_selector`` in a fleetlab job means "this job's
own pods" (resolved when the job's pod spec is built); the matching rules live in ``fleetlab.placement``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fleetlab.model.cluster import HOSTNAME_LABEL, ZONE_LABEL
from fleetlab.model.kube import KubeModel
from fleetlab.model.limits import Int

#: Labels every simulated pod carries, so selectors can name a job, a service, a team or a class.
JOB_LABEL = "fleetlab.io/job"
SERVICE_LABEL = "fleetlab.io/service"
TEAM_LABEL = "fleetlab.io/team"
CLASS_LABEL = "fleetlab.io/class"

NodeInclusionPolicy = Literal["Honor", "Ignore"]


class LabelSelectorRequirement(KubeModel):
    """One ``matchExpressions`` entry of a metav1.LabelSelector."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class LabelSelector(KubeModel):
    """metav1.LabelSelector: every matchLabels pair and every expression must hold (empty = everything)."""

    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: tuple[LabelSelectorRequirement, ...] = Field(default=(), alias="matchExpressions")

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.match_labels.items())), self.match_expressions))

    @property
    def is_empty(self) -> bool:
        """No requirement at all (matches every pod, but upstream counts no existing pod with it)."""
        return not self.match_labels and not self.match_expressions


class TopologySpreadConstraint(KubeModel):
    """core/v1 TopologySpreadConstraint; defaults as kube-scheduler applies them (minDomains 1, policies
    Honor / Ignore)."""

    max_skew: Int = Field(ge=1, alias="maxSkew")
    topology_key: str = Field(min_length=1, alias="topologyKey")
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(
        default="DoNotSchedule", alias="whenUnsatisfiable"
    )
    label_selector: LabelSelector | None = Field(default=None, alias="labelSelector")
    min_domains: Int | None = Field(default=None, ge=1, alias="minDomains")
    node_affinity_policy: NodeInclusionPolicy = Field(default="Honor", alias="nodeAffinityPolicy")
    node_taints_policy: NodeInclusionPolicy = Field(default="Ignore", alias="nodeTaintsPolicy")
    match_label_keys: tuple[str, ...] = Field(default=(), alias="matchLabelKeys")

    def __hash__(self) -> int:
        return hash(
            (
                self.max_skew,
                self.topology_key,
                self.when_unsatisfiable,
                self.label_selector,
                self.min_domains,
                self.node_affinity_policy,
                self.node_taints_policy,
                self.match_label_keys,
            )
        )

    @model_validator(mode="after")
    def _check(self) -> TopologySpreadConstraint:
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise ValueError("minDomains applies only with whenUnsatisfiable: DoNotSchedule")
        return self


class PodAntiAffinityTerm(KubeModel):
    """One anti-affinity term: no (required) or fewer (preferred, by ``weight``) matching pods in the same
    ``topology_key`` domain — a PodAffinityTerm in podAntiAffinity's required or preferred list."""

    topology_key: str = Field(min_length=1, alias="topologyKey")
    required: bool = True
    weight: Int = Field(default=100, ge=1, le=100)
    label_selector: LabelSelector | None = Field(default=None, alias="labelSelector")
    namespaces: tuple[str, ...] = ()
    #: Namespaces by label (``{}``: all); with ``namespaces`` the term looks in the union of both, and in the
    #: pod's own namespace only when neither is given.
    namespace_selector: LabelSelector | None = Field(default=None, alias="namespaceSelector")

    def __hash__(self) -> int:
        return hash(
            (
                self.topology_key,
                self.required,
                self.weight,
                self.label_selector,
                self.namespaces,
                self.namespace_selector,
            )
        )


class PodAffinityTerm(PodAntiAffinityTerm):
    """One pod affinity (attraction) term: the pod goes (required) or prefers to go (preferred, by
    ``weight``) only where a matching pod runs in the same ``topology_key`` domain — a PodAffinityTerm in
    podAffinity's required or preferred list."""


#: kube-scheduler's system default constraints (PodTopologySpreadArgs defaultingType System), applied to
#: pods without constraints of their own that a Service, ReplicaSet or StatefulSet selects.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME_LABEL, when_unsatisfiable="ScheduleAnyway"),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE_LABEL, when_unsatisfiable="ScheduleAnyway"),
)
