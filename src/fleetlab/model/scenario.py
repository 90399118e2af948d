"""A scenario: one cluster, one workload, one scheduler profile and a seed."""

from __future__ import annotations

from fleetlab.model.cluster import Cluster, SpecModel
from fleetlab.model.job import Job
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


class ResolvedScenario(SpecModel):
    """A scenario with its workload materialised into a concrete, sorted job list."""

    scenario: Scenario
    jobs: tuple[Job, ...]
    source: str = "<inline>"
    warnings: tuple[str, ...] = ()
