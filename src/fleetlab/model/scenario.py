"""A scenario: one cluster, one workload, one scheduler profile and a seed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, overload

from pydantic import BeforeValidator, ConfigDict, Field, field_validator, model_validator

from fleetlab.model.background import BackgroundLoad, check_background
from fleetlab.model.batch_policy import BatchPreemption, JobLimit, TimeLimits, check_job_limits
from fleetlab.model.calibration_record import CalibrationRecord, RecordedBehaviour, check_recorded
from fleetlab.model.cluster import Cluster, SpecModel
from fleetlab.model.dra_config import DraConfig
from fleetlab.model.interference import InterferenceModel
from fleetlab.model.job import Job
from fleetlab.model.job_table import JobTable
from fleetlab.model.kube import PriorityClass, check_one_global_default
from fleetlab.model.kueue_config import KueueConfiguration
from fleetlab.model.limits import Seed
from fleetlab.model.maintenance import MaintenanceWindow, check_maintenance
from fleetlab.model.pod_group_jobs import check_templates, join_pod_groups
from fleetlab.model.queues import QueueConfig, QueueConfigError, queue_config_from_objects
from fleetlab.model.resource_quota import LimitRange, ResourceQuota
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.model.service import Service, check_services
from fleetlab.model.units import Seconds
from fleetlab.model.workload import Workload
from fleetlab.model.workload_api import PodGroup
from fleetlab.model.workload_api import Workload as ApiWorkload


class Scenario(SpecModel):
    """What a scenario file declares; ``horizon_s`` caps the simulated time (run to completion if unset)."""

    name: str = "scenario"
    description: str = ""
    seed: Seed = 0
    cluster: Cluster
    workload: Workload
    scheduler: SchedulerConfig = SchedulerConfig()
    horizon_s: Seconds | None = None
    #: Kueue objects (ResourceFlavor, ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, Topology, and
    #: accepted-but-ignored kinds) exactly as applied to a cluster.
    kueue: QueueConfig | None = None
    #: PriorityClass objects jobs may name with ``priorityClassName``.
    priority_classes: tuple[PriorityClass, ...] = ()
    #: Kueue's Configuration switches (waitForPodsReady, fairSharing).
    kueue_configuration: KueueConfiguration = KueueConfiguration()
    #: Slowdown of co-located pods contending for node resources; None: off.
    interference: InterferenceModel | None = None
    #: Online inference services (model/service.py): long-running replicas with a latency SLO.
    services: tuple[Service, ...] = ()
    #: Dynamic Resource Allocation objects and NVIDIA DRA driver pools (model/dra_config.py).
    dra: DraConfig | None = None
    #: Namespace ResourceQuota and LimitRange objects as applied (model/resource_quota.py).
    namespace_policies: tuple[Annotated[ResourceQuota | LimitRange, Field(discriminator="kind")], ...] = ()
    #: Written by ``fleetlab calibrate``: verdicts and per-metric errors of the replay against its history.
    calibration: CalibrationRecord | None = None
    #: Written by ``fleetlab calibrate``: per job its requested wall time and when it was withdrawn while
    #: pending, and node down and drain windows, as the history recorded them (the replay uses them).
    recorded: RecordedBehaviour | None = None
    #: Node drain windows (model/maintenance.py): cordon, evict after a grace period, uncordon.
    maintenance: tuple[MaintenanceWindow, ...] = ()
    #: Caps on the jobs a user, team, queue or the cluster runs or submits (model/batch_policy.py).
    job_limits: tuple[JobLimit, ...] = ()
    #: Slurm preemption by QOS or partition tier (model/batch_policy.py); None: none.
    batch_preemption: BatchPreemption | None = None
    #: Slurm partition MaxTime / DefaultTime and TIMEOUT kills (model/batch_policy.py); None: none.
    time_limits: TimeLimits | None = None
    #: Room held on a pool's nodes by work the job history does not list (model/background.py).
    background: tuple[BackgroundLoad, ...] = Field(default=(), max_length=1_000)
    #: Workload API objects (scheduling.k8s.io/v1alpha2 Workload, PodGroup): jobs naming a PodGroup in
    #: ``schedulingGroup`` take its gang and topology constraint (model/pod_group_jobs.py).
    workload_api: tuple[Annotated[ApiWorkload | PodGroup, Field(discriminator="kind")], ...] = Field(
        default=(), alias="workloadApi", max_length=10_000
    )

    @model_validator(mode="before")
    @classmethod
    def _pod_groups(cls, data: Any) -> Any:
        return join_pod_groups(data)

    @model_validator(mode="after")
    def _pod_group_templates(self) -> Scenario:
        check_templates(self.workload_api)
        return self

    @field_validator("priority_classes")
    @classmethod
    def _one_global_default(cls, value: tuple[PriorityClass, ...]) -> tuple[PriorityClass, ...]:
        check_one_global_default([c.name for c in value if c.global_default])
        return value

    @field_validator("kueue", mode="before")
    @classmethod
    def _kueue_objects(cls, value: Any) -> Any:
        if value is None or isinstance(value, QueueConfig):
            return value
        try:
            return queue_config_from_objects(value)
        except QueueConfigError as exc:
            raise ValueError("; ".join(exc.problems)) from None

    @model_validator(mode="after")
    def _interference_pools_known(self) -> Scenario:
        if self.interference is not None:
            self.interference.check_pools([p.name for p in self.cluster.pools])
        return self

    @model_validator(mode="after")
    def _dra_pools_known(self) -> Scenario:
        if self.dra is not None:
            gpu_pools = {p.name for p in self.cluster.pools if p.gpu_model is not None and p.gpus_per_node}
            unknown = [p.pool for p in self.dra.nvidia_driver if p.pool not in gpu_pools]
            if unknown:
                raise ValueError(f"dra.nvidiaDriver names {', '.join(unknown)}, which are not GPU pools")
        return self

    @model_validator(mode="after")
    def _claims_known(self) -> Scenario:
        if self.workload.jobs is not None:
            check_job_claims(self.workload.jobs, self.dra)
        return self

    @model_validator(mode="after")
    def _maintenance_nodes_known(self) -> Scenario:
        check_maintenance(self.maintenance, self.cluster.pools)
        check_background(self.background, self.cluster.pools)
        check_job_limits(self.job_limits)
        if self.recorded is not None:
            jobs = self.workload.jobs
            ids = None if jobs is None else (jobs.ids.to_pylist() if isinstance(jobs, JobTable) else
                                               [j.id for j in jobs])  # fmt: skip
            check_recorded(self.recorded, self.cluster.pools, ids)
        return self

    @model_validator(mode="after")
    def _queues_known(self) -> Scenario:
        check_services(self.services, self.horizon_s)
        if self.workload.jobs is None:
            return self
        check_job_queues(self.workload.jobs, self.kueue)
        return self


@overload
def apply_priority_classes(
    jobs: JobTable, classes: tuple[PriorityClass, ...], workload_classes: Mapping[str, int] | None = None
) -> JobTable: ...


@overload
def apply_priority_classes(
    jobs: list[Job] | tuple[Job, ...],
    classes: tuple[PriorityClass, ...],
    workload_classes: Mapping[str, int] | None = None,
) -> list[Job]: ...


def apply_priority_classes(
    jobs: Sequence[Job], classes: tuple[PriorityClass, ...], workload_classes: Mapping[str, int] | None = None
) -> JobTable | list[Job]:
    """Set each job's priority (and preemptionPolicy) from its PriorityClass, or the globalDefault one.

    Like the Priority admission plugin: a named class must exist; without a name, the globalDefault class
    applies to jobs that give no priority of their own (priority 0). A name with no PriorityClass may be a
    Kueue WorkloadPriorityClass (``workload_classes``: name -> value), which sets the priority only.
    A JobTable's templates are changed (priority and class are template fields), not each job.
    """
    by_name = {c.name: c for c in classes}
    kueue_classes = dict(workload_classes or {})
    default = next((c for c in classes if c.global_default), None)
    shapes = jobs.templates if isinstance(jobs, JobTable) else jobs
    unknown = sorted(
        {
            j.priority_class_name
            for j in shapes
            if j.priority_class_name
            and j.priority_class_name not in by_name
            and j.priority_class_name not in kueue_classes
        }
    )
    if unknown:
        raise ValueError(
            f"unknown priorityClassName {', '.join(unknown)}; defined: {', '.join(sorted(by_name)) or 'none'}"
        )

    def with_class(job: Job) -> Job:
        cls = by_name.get(job.priority_class_name) if job.priority_class_name else None
        if cls is None and job.priority_class_name in kueue_classes:
            return job.model_copy(update={"priority": kueue_classes[job.priority_class_name]})
        if cls is None and default is not None and job.priority == 0:
            cls = default
        if cls is not None:
            job = job.model_copy(update={"priority": cls.value, "preemption_policy": cls.preemption_policy})
        return job

    if isinstance(jobs, JobTable):
        return jobs.map_templates(with_class)
    return [with_class(job) for job in jobs]


def check_job_queues(jobs: Sequence[Job], kueue: QueueConfig | None) -> None:
    """Every job's ``queue`` must name a LocalQueue in the job's namespace."""
    known = {(q.metadata.namespace, q.name) for q in kueue.local_queues} if kueue is not None else set()

    def unknown(job: Job) -> bool:
        return job.queue is not None and (job.namespace, job.queue) not in known

    if isinstance(jobs, JobTable) and not any(unknown(t) for t in jobs.templates):
        return  # queue and namespace are template fields: no template names an unknown queue
    bad = [job for job in jobs if unknown(job)]
    if bad:
        shown = ", ".join(f"{j.id} ({j.namespace}/{j.queue})" for j in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        where = "no kueue section is given" if kueue is None else "no such LocalQueue is defined"
        raise ValueError(f"job(s) {shown}{more} name a queue but {where}")


def check_job_claims(jobs: Sequence[Job], dra: DraConfig | None) -> None:
    """Every job's ``resourceClaims`` must name a ResourceClaim or ResourceClaimTemplate of the ``dra:``
    section in the job's namespace (the API server would accept the pod, but it could never be scheduled)."""
    shapes = jobs.templates if isinstance(jobs, JobTable) else jobs
    claimed = [j for j in shapes if j.resource_claims]
    if not claimed:
        return
    objects = dra.dra_objects() if dra is not None else None
    known_claims = {c.key for c in objects.claims} if objects is not None else set()
    known_templates = (
        {f"{t.metadata.namespace or 'default'}/{t.metadata.name}" for t in objects.templates}
        if objects is not None
        else set()
    )
    problems: list[str] = []
    for job in claimed:
        for entry in job.resource_claims:
            if entry.resource_claim_name is not None:
                kind, name, known = "ResourceClaim", entry.resource_claim_name, known_claims
            else:
                assert entry.resource_claim_template_name is not None
                kind, name, known = (
                    "ResourceClaimTemplate",
                    entry.resource_claim_template_name,
                    known_templates,
                )
            if f"{job.namespace}/{name}" not in known:
                problems.append(
                    f"job {job.id}: resourceClaims {entry.name} names {kind} {job.namespace}/{name}"
                )
    if problems:
        where = "there is no dra: section" if dra is None else "the dra: section has no such object"
        shown = "; ".join(problems[:5]) + (f" and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ValueError(f"{shown}, but {where}")


def _job_table(value: Any) -> Any:
    """Jobs given as a list or tuple of Job become a JobTable (anything else is left to pydantic)."""
    if isinstance(value, list | tuple) and all(isinstance(job, Job) for job in value):
        return JobTable.from_jobs(value)
    return value


class ResolvedScenario(SpecModel):
    """A scenario with its workload materialised into a concrete, sorted job list."""

    model_config = ConfigDict(
        frozen=True, allow_inf_nan=False, extra="forbid", populate_by_name=True, arbitrary_types_allowed=True
    )

    scenario: Scenario
    #: The jobs as columns; a list or tuple of Job given here becomes a JobTable.
    jobs: Annotated[JobTable, BeforeValidator(_job_table)]
    source: str = "<inline>"
    warnings: tuple[str, ...] = ()
