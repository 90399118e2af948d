"""Scheduler configuration as data, shaped like KubeSchedulerConfiguration's profile and plugin args."""

from __future__ import annotations

from itertools import pairwise
from typing import Literal

from pydantic import Field, field_validator, model_validator

from fleetlab.model.batch_policy import FairShare
from fleetlab.model.cluster import SpecModel
from fleetlab.model.limits import Int, PluginWeight
from fleetlab.model.pod_constraints import TopologySpreadConstraint
from fleetlab.model.policy_names import POLICY_NAMES
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.model.units import PositiveSeconds, Seconds

StrategyType = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
KubernetesVersion = Literal["1.34", "1.35", "1.36"]
#: How the scheduling queue offers its pods (docs/scenario.md, "Queueing disciplines"): kube-scheduler's own
#: best-effort order (a pod that does not fit is skipped, later ones may start), strict
#: first-come-first-served (nothing starts before the first waiting job), or EASY backfill on the requested
#: wall times.
Queueing = Literal["best-effort-fifo", "fifo", "easy-backfill"]


#: Score plugins fleetlab implements and the default profile's weights (default_plugins.go @01db4ae9).
DEFAULT_PLUGIN_WEIGHTS: dict[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
}


class ResourceWeight(SpecModel):
    """A resource a scoring strategy looks at; weights are 1..100 (0 is defaulted to 1 as upstream)."""

    name: str = Field(min_length=1)
    weight: Int = Field(default=1, ge=0, le=100)

    @model_validator(mode="after")
    def _default_zero(self) -> ResourceWeight:
        if self.weight == 0:
            object.__setattr__(self, "weight", 1)
        return self


class UtilizationShapePoint(SpecModel):
    """One point of RequestedToCapacityRatio's shape: utilization 0..100 -> score 0..10."""

    utilization: Int = Field(ge=0, le=100)
    score: Int = Field(ge=0, le=10)


class RequestedToCapacityRatioParam(SpecModel):
    """The broken-linear shape; utilization must strictly increase."""

    shape: tuple[UtilizationShapePoint, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _increasing(self) -> RequestedToCapacityRatioParam:
        points = [p.utilization for p in self.shape]
        if any(b <= a for a, b in pairwise(points)):
            raise ValueError(f"shape utilization values must be strictly increasing, got {points}")
        return self


def _default_resources() -> tuple[ResourceWeight, ...]:
    return (ResourceWeight(name="cpu", weight=1), ResourceWeight(name="memory", weight=1))


class ScoringStrategy(SpecModel):
    """NodeResourcesFitArgs.scoringStrategy; an empty resource list gets upstream's cpu+memory default."""

    type: StrategyType = "LeastAllocated"
    resources: tuple[ResourceWeight, ...] = Field(default_factory=_default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        default=None, alias="requestedToCapacityRatio"
    )

    @model_validator(mode="after")
    def _check(self) -> ScoringStrategy:
        if not self.resources:
            object.__setattr__(self, "resources", _default_resources())
        if self.type == "RequestedToCapacityRatio" and self.requested_to_capacity_ratio is None:
            raise ValueError("type RequestedToCapacityRatio needs requestedToCapacityRatio.shape")
        return self


class PodTopologySpreadArgs(SpecModel):
    """PodTopologySpreadArgs: ``System`` uses kube-scheduler's built-in defaults (hostname maxSkew 3, zone
    maxSkew 5, ScheduleAnyway); ``List`` uses ``default_constraints`` (none when empty)."""

    defaulting_type: Literal["System", "List"] = Field(default="System", alias="defaultingType")
    default_constraints: tuple[TopologySpreadConstraint, ...] = Field(default=(), alias="defaultConstraints")

    @model_validator(mode="after")
    def _check(self) -> PodTopologySpreadArgs:
        if self.defaulting_type == "System" and self.default_constraints:
            raise ValueError("defaultConstraints need defaultingType: List")
        for c in self.default_constraints:
            if c.label_selector is not None:
                raise ValueError("default constraints must not set labelSelector (it comes from the owner)")
        return self


class SchedulerConfig(SpecModel):
    """A scheduling profile: a named preset, optionally with its parts overridden."""

    policy: str = "default"
    scoring_strategy: ScoringStrategy | None = Field(default=None, alias="scoringStrategy")
    balanced_allocation_resources: tuple[ResourceWeight, ...] | None = None
    plugin_weights: dict[str, PluginWeight] = Field(default_factory=dict)
    tie_break: Literal["random", "first"] = "random"
    #: Place ``gang: true`` jobs all-or-nothing; off shows half-placed jobs holding GPUs while peers wait.
    gang_scheduling: bool = True
    #: kube-scheduler's DefaultPreemption PostFilter for pods that find no node.
    preemption: bool = True
    #: KAI-style consolidation: move preemptible pods elsewhere to open room (fleetlab.sim.consolidation).
    consolidation: bool = False
    #: A pod consolidation moved is not moved again for this long (seconds or a duration such as ``10m``).
    consolidation_cooldown_s: Seconds = Field(default=600.0, ge=0)
    #: A scheduling profile per job class (kube-scheduler profiles by schedulerName), e.g.
    #: ``{inference: least-allocated, batch: most-allocated}``; other classes use ``policy``.
    class_profiles: dict[Literal["training", "inference", "batch", "experiment"], str] = Field(
        default_factory=dict
    )
    kubernetes_version: KubernetesVersion = "1.35"
    #: Time from a pod's creation to its first scheduling attempt (controllers, admission webhooks, the
    #: scheduler's queue); real clusters hide it, ``fleetlab calibrate`` fits it. Waits count from submit.
    scheduling_latency_s: Seconds = Field(default=0.0, ge=0)
    #: A delay drawn per job on top of ``scheduling_latency_s`` (a distribution, not one constant);
    #: ``fleetlab calibrate`` reads it from the waits its record leaves unexplained. None: none.
    scheduling_delay: SchedulingDelay | None = None
    #: Default spreading for pods a Service / ReplicaSet selects (jobs with ``service``).
    pod_topology_spread: PodTopologySpreadArgs = Field(
        default_factory=PodTopologySpreadArgs, alias="podTopologySpread"
    )
    #: The queueing discipline (``Queueing``); ``easy-backfill`` plans with ``recorded.walltime_s``.
    queueing: Queueing = "best-effort-fifo"
    #: EASY backfill: queued entries after the blocked head a cycle may try (Slurm's bf_max_job_test).
    backfill_depth: Int = Field(default=100, ge=1, le=1_000_000)
    #: EASY backfill: seconds between backfill passes (Slurm's bf_interval): the blocked head's reservation
    #: and the starts behind it happen on the passes only, in-order starts at every event. None: every cycle.
    backfill_interval_s: PositiveSeconds | None = None
    #: EASY backfill: how far ahead a pass plans (Slurm's bf_window): a head whose shadow time lies further
    #: gets no reservation and holds no one back. None: no bound.
    backfill_window_s: PositiveSeconds | None = None
    #: Fair-share priority ordering the queue (Slurm multifactor); None: pod priority, then submit time.
    fair_share: FairShare | None = None

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        if value not in POLICY_NAMES:
            raise ValueError(f"unknown policy {value!r}; allowed: {', '.join(POLICY_NAMES)}")
        return value

    @field_validator("class_profiles")
    @classmethod
    def _known_class_policies(cls, value: dict[str, str]) -> dict[str, str]:
        for job_class, policy in value.items():
            if policy not in POLICY_NAMES:
                raise ValueError(
                    f"{job_class}: unknown policy {policy!r}; allowed: {', '.join(POLICY_NAMES)}"
                )
        return value

    @model_validator(mode="after")
    def _check(self) -> SchedulerConfig:
        for name in self.plugin_weights:
            if name not in DEFAULT_PLUGIN_WEIGHTS:
                raise ValueError(
                    f"unknown score plugin {name!r}; allowed: {', '.join(sorted(DEFAULT_PLUGIN_WEIGHTS))}"
                )
        return self
