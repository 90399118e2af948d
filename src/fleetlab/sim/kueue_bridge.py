"""Kueue in the loop: jobs with a ``queue`` wait for quota before their pods reach kube-scheduler.

On admission the chosen ResourceFlavor's ``nodeLabels`` join the pods' nodeSelector and its
``tolerations`` are added, as Kueue injects them; the pods then go to the scheduling queue. A job that
finishes releases its quota; a job evicted (Kueue preemption, or its pods preempted by kube-scheduler)
gives its quota back and waits in its ClusterQueue again. Usage per ClusterQueue is sampled whenever it
changes, for the time-weighted quota report.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from fleetlab.admission.manager import (
    Admission,
    AdmissionManager,
    PodSetRequest,
    PreemptionStrategy,
    Workload,
)
from fleetlab.model.job import Job
from fleetlab.model.queues import QueueConfig
from fleetlab.placement.framework import PodSpec

if TYPE_CHECKING:
    from fleetlab.sim.simulator import Simulator

PODSET = "main"
MAX_CYCLES_PER_STEP = 16

QueueSample = tuple[int, dict[str, dict[str, dict[str, int]]]]


def _preemption_strategy() -> PreemptionStrategy | None:
    """Kueue's classic preemption when the module is present (it is optional while it is built)."""
    try:
        module = importlib.import_module("fleetlab.admission.preemption")
    except ImportError:  # pragma: no cover
        return None
    strategy: PreemptionStrategy = module.ClassicPreemption()
    return strategy


class KueueBridge:
    """Owns the AdmissionManager of a run and translates between jobs and workloads."""

    def __init__(self, config: QueueConfig, sim: Simulator) -> None:
        strategy = _preemption_strategy()
        self.manager = (
            AdmissionManager(config) if strategy is None else AdmissionManager(config, preemption=strategy)
        )
        self.sim = sim
        self.flavors = {f.name: f for f in config.resource_flavors}
        self.job_by_id: dict[str, int] = {}
        self.samples: list[QueueSample] = []
        self.cluster_queue_of: dict[int, str] = {}

    def submit(self, job_index: int, job: Job, now: int) -> None:
        """Hand a queued job to Kueue as a one-podset workload."""
        assert job.queue is not None
        self.job_by_id[job.id] = job_index
        requests = dict(job.requests)
        self.manager.submit(
            Workload(
                id=job.id,
                namespace=job.namespace,
                local_queue=job.queue,
                priority=job.priority,
                created_ms=now,
                podsets=(PodSetRequest(PODSET, job.pods, requests),),
            )
        )

    def spec_for(self, base: PodSpec, admission: Admission) -> PodSpec:
        """The pod spec with the admitted flavors' node labels and tolerations injected."""
        selector = dict(base.node_selector)
        tolerations = list(base.tolerations)
        for flavor_name in sorted(set(admission.flavors.get(PODSET, {}).values())):
            flavor = self.flavors.get(flavor_name)
            if flavor is None:
                continue
            selector.update(flavor.spec.node_labels)
            tolerations.extend(t for t in flavor.spec.tolerations if t not in tolerations)
        return PodSpec(
            requests=base.requests,
            tolerations=tuple(tolerations),
            node_selector=tuple(sorted(selector.items())),
            affinity=base.affinity,
            image=base.image,
            image_size=base.image_size,
            containers=base.containers,
            explicit_keys=base.explicit_keys,
        )

    def step(self, now: int) -> None:
        """Run admission cycles until nothing changes: admit, and carry out requested preemptions."""
        manager, sim = self.manager, self.sim
        changed = False
        for _ in range(MAX_CYCLES_PER_STEP):
            if not manager.has_work():
                break
            admissions = manager.cycle(now)
            preemptions = manager.take_preemptions()
            for admission in admissions:
                job_index = self.job_by_id[admission.workload_id]
                self.cluster_queue_of[job_index] = admission.cluster_queue
                sim.admitted(job_index, admission)
            for request in preemptions:
                for victim in request.victims:
                    sim.evict_job(self.job_by_id[victim], by_kueue=True)
                    manager.evict(victim, now, keep_creation_timestamp=True)
            if not admissions and not preemptions:
                break
            changed = True
        if changed:
            self.sample(now)

    def finished(self, job: Job, now: int) -> None:
        """Release a finished job's quota."""
        self.manager.finish(job.id)
        self.sample(now)

    def evicted(self, job: Job, now: int) -> None:
        """A Kueue job lost its pods: give the quota back and requeue it in its ClusterQueue."""
        self.manager.evict(job.id, now)
        self.sample(now)

    def sample(self, now: int) -> None:
        """Record the ClusterQueues' usage after a change (time-weighted in the report)."""
        status = self.manager.queue_status()
        if self.samples and self.samples[-1][0] == now:
            self.samples[-1] = (now, status)
        else:
            self.samples.append((now, status))
