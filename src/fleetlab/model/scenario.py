"""A scenario: one cluster, one workload, one scheduler profile and a seed."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from fleetlab.model.cluster import Cluster, SpecModel
from fleetlab.model.job import Job
from fleetlab.model.kueue_config import KueueConfiguration
from fleetlab.model.queues import QueueConfig, QueueConfigError, queue_config_from_objects
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.model.units import Seconds
from fleetlab.model.workload import Workload


class Scenario(SpecModel):
    """What a scenario file declares; ``horizon_s`` caps the simulated time (run to completion if unset)."""

    name: str = "scenario"
    description: str = ""
    seed: int = 0
    cluster: Cluster
    workload: Workload
    scheduler: SchedulerConfig = SchedulerConfig()
    horizon_s: Seconds | None = None
    #: Kueue objects (ResourceFlavor, ClusterQueue, Cohort, LocalQueue) exactly as applied to a cluster.
    kueue: QueueConfig | None = None
    #: Kueue's Configuration switches (waitForPodsReady, fairSharing).
    kueue_configuration: KueueConfiguration = KueueConfiguration()

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
    def _queues_known(self) -> Scenario:
        if self.workload.jobs is None:
            return self
        check_job_queues(self.workload.jobs, self.kueue)
        return self


def check_job_queues(jobs: tuple[Job, ...] | list[Job], kueue: QueueConfig | None) -> None:
    """Every job's ``queue`` must name a LocalQueue in the job's namespace."""
    known = {(q.metadata.namespace, q.name) for q in kueue.local_queues} if kueue is not None else set()
    bad = [job for job in jobs if job.queue is not None and (job.namespace, job.queue) not in known]
    if bad:
        shown = ", ".join(f"{j.id} ({j.namespace}/{j.queue})" for j in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        where = "no kueue section is given" if kueue is None else "no such LocalQueue is defined"
        raise ValueError(f"job(s) {shown}{more} name a queue but {where}")


class ResolvedScenario(SpecModel):
    """A scenario with its workload materialised into a concrete, sorted job list."""

    scenario: Scenario
    jobs: tuple[Job, ...]
    source: str = "<inline>"
    warnings: tuple[str, ...] = ()
