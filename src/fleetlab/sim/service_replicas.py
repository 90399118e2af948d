"""Service replicas as jobs: one single-pod job per replica slot, placed by the same scheduler as any pod.

Each service gets ``replicas.max`` slots (``min`` when it does not autoscale). A replica's runtime
outlasts the horizon, so it never finishes: it runs until the end of the run unless a node failure,
a spot reclaim or a preemption evicts it (it is then requeued like any evicted pod) or the service's
autoscaler deletes it. Slot jobs are named ``service/<name>/<slot>`` so tables can tell them apart.
"""

from __future__ import annotations

from fleetlab.model.cluster import GPU_PRODUCT_LABEL
from fleetlab.model.gpus import GPU_MODELS
from fleetlab.model.job import Job, JobClass, Runtime
from fleetlab.model.job_table import JobTable
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.model.service import Service

SERVICE_JOB_PREFIX = "service/"
#: A replica's runtime beyond the horizon: long enough that a replica started at any time never ends.
RUNTIME_PAST_HORIZON_S = 86_400.0


def replica_job_id(service: str, slot: int) -> str:
    """The job id of a service's replica slot."""
    return f"{SERVICE_JOB_PREFIX}{service}/{slot}"


def is_service_job(job_id: str) -> bool:
    """True for the jobs that stand for service replicas."""
    return job_id.startswith(SERVICE_JOB_PREFIX)


def replica_jobs(service: Service, horizon_s: float) -> list[Job]:
    """The slot jobs of one service, slot 0 first."""
    requests: dict[str, str | int] = {CPU: f"{service.cpu_per_replica}m", MEMORY: service.memory_per_replica}
    if service.mig_profile is not None:
        requests[f"nvidia.com/mig-{service.mig_profile}"] = service.gpus_per_replica
    elif service.gpus_per_replica and service.gpu_milli is None:  # a share is the job's gpu_milli
        requests[GPU] = service.gpus_per_replica
    selector = dict(service.node_selector)
    if service.gpu_model is not None:
        selector[GPU_PRODUCT_LABEL] = GPU_MODELS[service.gpu_model].product
    runtime = Runtime(default=horizon_s + RUNTIME_PAST_HORIZON_S)
    return [
        Job(
            id=replica_job_id(service.name, slot),
            submit_s=service.start_s,
            job_class=JobClass.INFERENCE,
            priority=service.priority,
            team=service.team,
            requests=requests,
            tolerations=service.tolerations,
            node_selector=selector,
            affinity=service.affinity,
            service=service.name,
            labels=service.labels,
            topology_spread=service.topology_spread,
            anti_affinity=service.anti_affinity,
            pod_affinity=service.pod_affinity,
            runtime=runtime,
            preemptible=service.preemptible,
            image=service.image,
            data_size=service.data_size,
            gpu_milli=service.gpu_milli,
        )
        for slot in range(service.replicas.upper)
    ]


def with_service_replicas(resolved: ResolvedScenario) -> ResolvedScenario:
    """The resolved scenario with its services' replica slots appended to the jobs (unchanged without)."""
    scenario = resolved.scenario
    if not scenario.services:
        return resolved
    assert scenario.horizon_s is not None  # Scenario validation requires it with services
    extra = [job for service in scenario.services for job in replica_jobs(service, scenario.horizon_s)]
    return resolved.model_copy(update={"jobs": JobTable.concat([resolved.jobs, JobTable.from_jobs(extra)])})
