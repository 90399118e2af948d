"""Jobs: what a team submits — pods with requests, constraints, runtime and the data they need first."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.dra import PodResourceClaim
from fleetlab.model.gpu_share import normalize_share
from fleetlab.model.gpus import check_gpu_model
from fleetlab.model.kube import Affinity, Toleration
from fleetlab.model.limits import MAX_PODS_PER_JOB, Float, Int, Priority
from fleetlab.model.node_demand import Demand, check_demand
from fleetlab.model.plan_job import JobWork
from fleetlab.model.pod_constraints import PodAffinityTerm, PodAntiAffinityTerm, TopologySpreadConstraint
from fleetlab.model.resources import GPU, ResourceList, parse_resource_list
from fleetlab.model.tas_request import topology_request
from fleetlab.model.units import Bytes, PositiveSeconds, Seconds
from fleetlab.model.workload_api import SchedulingGroup


class JobClass(StrEnum):
    """The four kinds of GPU work a platform team runs."""

    TRAINING = "training"
    INFERENCE = "inference"
    BATCH = "batch"
    EXPERIMENT = "experiment"


class Image(SpecModel):
    """A container image; pulled once per node and then cached."""

    name: str = Field(min_length=1)
    size: Bytes = 0


class Runtime(SpecModel):
    """Compute time once running: a default, optionally overridden per GPU model."""

    default: PositiveSeconds
    by_gpu: dict[str, PositiveSeconds] = Field(default_factory=dict)

    @field_validator("by_gpu")
    @classmethod
    def _models(cls, value: dict[str, float]) -> dict[str, float]:
        for name in value:
            check_gpu_model(name)
        return value

    def on(self, gpu_model: str | None) -> float:
        """Runtime on a node with ``gpu_model`` (the default where no override is given)."""
        if gpu_model is not None and gpu_model in self.by_gpu:
            return self.by_gpu[gpu_model]
        return self.default


class Job(SpecModel):
    """One job of ``pods`` identical pods; requests are per pod and equal to limits for GPUs."""

    id: str = Field(min_length=1)
    submit_s: Seconds = 0.0
    job_class: JobClass = Field(default=JobClass.BATCH, alias="class")
    priority: Priority = 0
    team: str = "default"
    #: Who submitted the job (Slurm User, SWF user): job-count limits and fair share may count per user.
    user: str | None = Field(default=None, min_length=1)
    pods: Int = Field(default=1, ge=1, le=MAX_PODS_PER_JOB)
    requests: ResourceList
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    affinity: Affinity | None = None
    #: Extra pod labels (selectors of spread constraints and anti-affinity terms can name them).
    labels: dict[str, str] = Field(default_factory=dict)
    #: A Service (or ReplicaSet) selecting this job's pods: they get ``fleetlab.io/service``, constraints
    #: without a selector count the service's pods, and the profile's default spreading applies.
    service: str | None = None
    #: topologySpreadConstraints of every pod; a constraint without labelSelector counts the job's own pods
    #: (the service's pods when ``service`` is set).
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    #: podAntiAffinity terms (required or preferred); without labelSelector, against the job's own pods.
    anti_affinity: tuple[PodAntiAffinityTerm, ...] = ()
    #: podAffinity terms (required or preferred); without labelSelector, towards the job\'s own pods.
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    runtime: Runtime
    image: Image | None = None
    data_size: Bytes = 0
    preemptible: bool = False
    #: The pods must run together (distributed training): placed all-or-nothing when the scheduler does
    #: gang scheduling, and computing only once every pod is up (rendezvous).
    gang: bool = False
    #: Node label level whose one domain must (required) or should (preferred) hold all pods of a gang,
    #: e.g. ``fleetlab.io/rack`` — Kueue's podset-required-topology / podset-preferred-topology.
    topology_required: str | None = None
    topology_preferred: str | None = None
    #: Compute between checkpoints and the wall time one checkpoint write takes (none by default).
    checkpoint_interval_s: Seconds | None = None
    checkpoint_write_s: Seconds = 0.0
    #: PodSpec.preemptionPolicy: whether this job's pods may preempt lower-priority pods.
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = Field(
        default="PreemptLowerPriority", alias="preemptionPolicy"
    )
    #: Kueue: the LocalQueue (in ``namespace``) the job is submitted to; none = not managed by Kueue.
    queue: str | None = None
    namespace: str = "default"
    #: A PriorityClass of the scenario; its value replaces ``priority`` (the Priority admission plugin).
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    #: Already running on this node when the run starts (a cluster snapshot's running pod): its pods are
    #: bound there at submit time without a scheduling cycle.
    bound_node: str | None = None
    #: A share of one GPU (see fleetlab.model.gpu_share): thousandths of it and/or bytes of its memory.
    gpu_milli: int | None = None
    gpu_memory: Bytes | None = None
    annotations: dict[str, str] = Field(default_factory=dict)
    #: Share of its allocated GPU time the job keeps the GPU busy while computing (DCGM's GPU utilisation).
    gpu_utilization: Float = Field(default=1.0, ge=0.0, le=1.0)
    #: Demand on the node's shared resources (fleetlab.model.interference); None: the class default.
    interference_demand: Demand | None = None
    #: The pods' ``spec.resourceClaims`` (DRA): each entry names a ResourceClaim of the scenario's ``dra:``
    #: section (shared by every pod naming it) or a ResourceClaimTemplate (one claim per pod).
    resource_claims: tuple[PodResourceClaim, ...] = Field(default=(), alias="resourceClaims", max_length=128)
    #: The pods' ``spec.schedulingGroup``: a PodGroup of the scenario's ``workload_api`` whose gang policy
    #: and topology constraint the job takes (model/pod_group_jobs.py).
    scheduling_group: SchedulingGroup | None = Field(default=None, alias="schedulingGroup")

    @field_validator("interference_demand")
    @classmethod
    def _known_demand(cls, value: Demand | None) -> Demand | None:
        return None if value is None else check_demand(value, "interference_demand")

    #: A work profile: the runtime on a GPU model with a performance profile is derived from it and the
    #: gang's placement (fleetlab.sim.runtime_model); ``runtime`` stays the figure everywhere else.
    work: JobWork | None = None

    @model_validator(mode="before")
    @classmethod
    def _share(cls, data: Any) -> Any:
        return normalize_share(data)

    @field_validator("requests", mode="before")
    @classmethod
    def _parse_requests(cls, value: Any) -> ResourceList:
        if not isinstance(value, dict):
            raise ValueError("requests must be a mapping such as {cpu: '4', memory: 16Gi, nvidia.com/gpu: 1}")
        return parse_resource_list(value)

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime_shorthand(cls, value: Any) -> Any:
        if isinstance(value, int | float | str):
            return {"default": value}
        return value

    @model_validator(mode="after")
    def _check(self) -> Job:
        if "pods" in self.requests:
            raise ValueError(
                "requests must not name 'pods'; every pod counts as one against a node's max pods"
            )
        if (self.topology_required or self.topology_preferred) and not self.gang:
            raise ValueError("topology_required / topology_preferred apply to gangs: set gang: true")
        if self.topology_required and self.topology_preferred:
            raise ValueError("give topology_required or topology_preferred, not both")
        if self.work is not None and (self.gpus_per_pod < 1 or self.shares_gpu):
            raise ValueError("work: a work profile needs whole GPUs per pod (requests nvidia.com/gpu >= 1)")
        if any(k.startswith("kueue.x-k8s.io/podset-") for k in self.annotations):
            topology_request(self.annotations, self.pods)  # Kueue's webhook rules for the TAS annotations
        names = [c.name for c in self.resource_claims]
        if len(set(names)) != len(names):
            raise ValueError(f"resourceClaims names must be unique, got {', '.join(names)}")
        if self.checkpoint_interval_s is not None and self.checkpoint_interval_s <= 0:
            raise ValueError("checkpoint_interval_s must be > 0 (omit it for no checkpoints)")
        return self

    @property
    def shares_gpu(self) -> bool:
        """Each pod takes part of one GPU (gpu_milli below 1000 or a gpu-memory share)."""
        return self.gpu_milli is not None or (self.gpu_memory is not None and GPU not in self.requests)

    @property
    def gpus_per_pod(self) -> int:
        """Whole GPUs each pod asks for."""
        return self.requests.get(GPU, 0)

    @property
    def total_gpus(self) -> int:
        """GPUs the whole job needs at once."""
        return self.gpus_per_pod * self.pods
