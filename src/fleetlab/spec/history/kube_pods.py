"""Per-pod facts from a ``kubectl get pods -A -o json`` item, the per-job accumulator pods fold into, and
the jobs of one import keyed by owner (:class:`KubeJobs`, which Workloads and events add to).

A job is the pods of one controlling owner (a Job, JobSet, PyTorchJob, LeaderWorkerSet, ReplicaSet, a Kueue
pod group, or the bare pod). Times: ``creationTimestamp`` (submit), the ``PodScheduled`` condition's
``lastTransitionTime`` when True (scheduled; for a pod on a node without that condition, ``status.startTime``,
else its first container start, else its creation), the earliest app-container ``startedAt`` in ``state`` or
``lastState`` (running), the latest ``terminated.finishedAt`` (end).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fleetlab.model.cluster import GPU_PRODUCT_LABEL
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.spec.history.common import JobRecord, SourceData, gpu_model_of, parse_rfc3339
from fleetlab.spec.kube_objects import check_container_lists, field_list, field_map
from fleetlab.spec.kube_requests import pod_requests
from fleetlab.spec.kube_snapshot import GROUP_KEYS, QUEUE_LABEL

LWS_LABEL = "leaderworkerset.sigs.k8s.io/name"
TEAM_LABELS = ("team", "fleetlab.io/team")
CLASS_LABEL = "fleetlab.io/job-class"
JOB_CLASSES = ("training", "inference", "batch", "experiment")
SERVING_KINDS = frozenset({"ReplicaSet", "Deployment", "StatefulSet", "LeaderWorkerSet"})
#: DisruptionTarget reasons (core/v1 pod conditions): the pod was taken away, not failed by itself.
DISRUPTION_REASONS = frozenset(
    {"PreemptionByScheduler", "PreemptionByKueue", "DeletionByTaintManager", "EvictionByEvictionAPI",
     "DeletionByPodGC", "TerminationByKubelet"}
)  # fmt: skip
#: Tolerated skew between the API server's clock (creation) and a kubelet's (container start).
CLOCK_SKEW_S = 60.0
_MIG = re.compile(r"^nvidia\.com/mig-([1-7])g\.\d+gb$")


def owner_of(meta: dict[str, Any]) -> tuple[str, str, str | None]:
    """(kind, name, uid) of the job a pod belongs to: its controller, its LeaderWorkerSet, its pod group,
    or the pod itself."""
    labels = meta.get("labels") or {}
    if labels.get(LWS_LABEL):
        return "LeaderWorkerSet", str(labels[LWS_LABEL]), None
    owners = [
        o for o in field_list(meta.get("ownerReferences"), "metadata.ownerReferences") if isinstance(o, dict)
    ]
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if controller is not None and controller.get("kind") and controller.get("name"):
        uid = controller.get("uid")
        return str(controller["kind"]), str(controller["name"]), str(uid) if uid else None
    annotations = meta.get("annotations") or {}
    group = next((str(m[k]) for k in GROUP_KEYS for m in (labels, annotations) if m.get(k)), None)
    if group:
        return "PodGroup", group, None
    return "Pod", str(meta.get("name") or "<unnamed>"), None


@dataclass(slots=True)
class JobAcc:
    """Everything known about one job while its pods, owner objects, Workloads and events are read."""

    key: str
    kind: str
    namespace: str
    name: str
    created: float | None = None
    pods_seen: int = 0
    pods_failed: int = 0
    pods_succeeded: int = 0
    pods_active: int = 0  # Running or Unknown
    pods_waiting: int = 0  # Pending
    pods_deleted: int = 0  # gone before finishing (Prometheus: its series stopped)
    parallelism: int | None = None
    workload_pods: int | None = None  # pods the Kueue Workload's podSets ask for
    gpus: float = 0.0
    gpu_milli: int | None = None  # a MIG slice's share of one GPU, in thousandths
    gpu_pods: int = 0  # pods holding GPUs (a launcher or driver without GPUs is not one)
    gpu_cpu_milli: int = 0  # the largest GPU pod's cpu and memory
    gpu_memory: int = 0
    cpu_milli: int = 0
    memory: int = 0
    priority: int | None = None
    team: str | None = None
    queue: str | None = None
    job_class: str | None = None
    product: str | None = None
    admitted: float | None = None
    scheduled: float | None = None
    running: float | None = None
    end: float | None = None
    state: str | None = None  # from an owner or Workload condition; pods decide otherwise
    end_reason: str | None = None
    pod_failure_reason: str | None = None
    restarts: int = 0
    replaced_pods: int = 0  # batch/v1 Job status.failed: pods the Job controller had to replace
    evictions: int = 0
    workload_evictions: int = 0
    nodes: set[str] = field(default_factory=set)
    pull_s: float | None = None
    parent: tuple[str, str] | None = None  # (kind, name) of the owner's own controller (Job -> JobSet)
    children: int = 0  # child jobs folded in (the Jobs of a JobSet)
    children_done: int = 0  # of which completed

    def take_min(self, attr: str, value: float | None) -> None:
        if value is not None:
            current = getattr(self, attr)
            if current is None or value < current:
                setattr(self, attr, value)

    def take_max(self, attr: str, value: float | None) -> None:
        if value is not None:
            current = getattr(self, attr)
            if current is None or value > current:
                setattr(self, attr, value)

    def take_requests(self, spec: dict[str, Any], where: str, source: str, count: int = 0) -> None:
        """Per-pod requests as kube-scheduler computes them; the largest pod of the job counts. ``count``
        pods have this shape (0 for a template whose pods are counted as they are seen)."""
        requests = _requests_of(spec, where, source)
        gpus = requests.get(GPU, 0)
        if gpus > 0:
            self.gpu_pods += count
            self.gpu_cpu_milli = max(self.gpu_cpu_milli, requests.get(CPU, 0))
            self.gpu_memory = max(self.gpu_memory, requests.get(MEMORY, 0))
        self.gpus = max(self.gpus, float(gpus))
        self.cpu_milli = max(self.cpu_milli, requests.get(CPU, 0))
        self.memory = max(self.memory, requests.get(MEMORY, 0))
        for name in requests:  # a MIG slice (mixed strategy): nvidia.com/mig-<g>g.<memory>gb, g of 7 slices
            match = _MIG.match(name)
            if match and self.gpus == 0:
                milli = min(round(1000 * int(match.group(1)) / 7), 1000)
                self.gpu_milli = max(self.gpu_milli or 0, milli)
        selector = spec.get("nodeSelector") or {}
        if isinstance(selector, dict) and selector.get(GPU_PRODUCT_LABEL) and self.product is None:
            self.product = str(selector[GPU_PRODUCT_LABEL])

    def take_labels(self, labels: dict[str, Any]) -> None:
        if self.team is None:
            self.team = next((str(labels[k]) for k in TEAM_LABELS if labels.get(k)), None)
        if self.queue is None and labels.get(QUEUE_LABEL):
            self.queue = str(labels[QUEUE_LABEL])
        if self.job_class is None and labels.get(CLASS_LABEL) in JOB_CLASSES:
            self.job_class = str(labels[CLASS_LABEL])

    def absorb(self, other: JobAcc) -> None:
        """Fold a child's accumulator (a Job of a JobSet) into this one."""
        for attr in ("created", "admitted", "scheduled", "running"):
            self.take_min(attr, getattr(other, attr))
        self.take_max("end", other.end)
        self.take_max("pull_s", other.pull_s)
        counts = ("pods_seen", "pods_failed", "pods_succeeded", "pods_active", "pods_waiting", "pods_deleted",
                  "restarts", "replaced_pods", "evictions")  # fmt: skip
        for attr in counts:
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        if other.parallelism is not None:
            self.parallelism = (self.parallelism or 0) + other.parallelism
        if other.gpus > 0:  # a child Job of GPU pods: its parallelism (or the pods seen) counts
            self.gpu_pods += other.parallelism or other.gpu_pods or 1
            self.gpu_cpu_milli = max(self.gpu_cpu_milli, other.gpu_cpu_milli)
            self.gpu_memory = max(self.gpu_memory, other.gpu_memory)
        self.gpus = max(self.gpus, other.gpus)
        if other.gpu_milli is not None:
            self.gpu_milli = max(self.gpu_milli or 0, other.gpu_milli)
        self.cpu_milli = max(self.cpu_milli, other.cpu_milli)
        self.memory = max(self.memory, other.memory)
        if other.priority is not None:
            self.priority = max(self.priority or other.priority, other.priority)
        for attr in ("team", "queue", "job_class", "product", "pod_failure_reason"):
            if getattr(self, attr) is None:
                setattr(self, attr, getattr(other, attr))
        self.children += 1
        self.children_done += other.state == "completed"
        if other.state == "failed" and self.state is None:
            self.state, self.end_reason = other.state, other.end_reason
        self.nodes |= other.nodes


_REQUESTS_CACHE: dict[str, dict[str, int]] = {}
_CACHE_LIMIT = 4096


def _requests_of(spec: dict[str, Any], where: str, source: str) -> dict[str, int]:
    """pod_requests, remembered by the containers' resources: a history repeats a few pod shapes."""
    check_container_lists(spec, where, source)  # the cache key below skips what is not a container
    key = repr(
        (
            [c.get("resources") for c in spec.get("containers") or [] if isinstance(c, dict)],
            [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or []
             if isinstance(c, dict)],
            spec.get("overhead"),
        )
    )  # fmt: skip
    found = _REQUESTS_CACHE.get(key)
    if found is None:
        found, _ = pod_requests(spec, where, source)
        if len(_REQUESTS_CACHE) >= _CACHE_LIMIT:
            _REQUESTS_CACHE.clear()
        _REQUESTS_CACHE[key] = found
    return found


@dataclass(slots=True)
class PodTimes:
    """The instants and outcome one pod contributes."""

    created: float | None
    scheduled: float | None
    started: float | None
    finished: float | None
    restarts: int
    failure_reason: str | None
    disrupted: bool


def _container_times(
    status: dict[str, Any], source: str, where: str
) -> tuple[float | None, float | None, int, str | None]:
    """(first app-container start, last finish, restarts, failure reason) over containerStatuses."""
    first: float | None = None
    last: float | None = None
    restarts = 0
    reason: str | None = None
    for i, cs in enumerate(field_list(status.get("containerStatuses"), "status.containerStatuses")):
        if not isinstance(cs, dict):
            continue
        here = f"{where}.status.containerStatuses[{i}]"
        restarts += int(cs.get("restartCount") or 0) if isinstance(cs.get("restartCount"), int) else 0
        for state_key in ("lastState", "state"):
            state = field_map(cs.get(state_key), f"status.containerStatuses[{i}].{state_key}")
            for kind in ("running", "terminated"):
                detail = state.get(kind)
                if not isinstance(detail, dict):
                    continue
                start = parse_rfc3339(detail.get("startedAt"), source, f"{here}.{state_key}.{kind}.startedAt")
                if start is not None and (first is None or start < first):
                    first = start
                if kind == "terminated" and state_key == "state":
                    end = parse_rfc3339(
                        detail.get("finishedAt"), source, f"{here}.state.terminated.finishedAt"
                    )
                    if end is not None and (last is None or end > last):
                        last = end
                    if detail.get("exitCode") not in (0, None) and reason is None:
                        reason = str(detail.get("reason") or "Error")
    return first, last, restarts, reason


def pod_times(obj: dict[str, Any], source: str, where: str) -> PodTimes:
    """The instants of one pod (see the module docstring)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    scheduled = None
    disrupted = status.get("reason") == "Evicted"
    for i, cond in enumerate(field_list(status.get("conditions"), "status.conditions")):
        if not isinstance(cond, dict):
            continue
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            scheduled = parse_rfc3339(
                cond.get("lastTransitionTime"), source, f"{where}.status.conditions[{i}].lastTransitionTime"
            )
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            disrupted = disrupted or str(cond.get("reason")) in DISRUPTION_REASONS
    started, finished, restarts, reason = _container_times(status, source, where)
    if status.get("phase") == "Failed" and status.get("reason"):
        reason = str(status["reason"])  # Evicted, DeadlineExceeded, ... (the pod-level cause)
    created = parse_rfc3339(meta.get("creationTimestamp"), source, f"{where}.metadata.creationTimestamp")
    if scheduled is None and (obj.get("spec") or {}).get("nodeName") and status.get("phase") != "Pending":
        # Bound without a PodScheduled condition (spec.nodeName set at creation, or the condition lost):
        # it held its node from when the kubelet acknowledged it (status.startTime), else its first
        # container start, else its creation.
        acknowledged = parse_rfc3339(status.get("startTime"), source, f"{where}.status.startTime")
        scheduled = acknowledged or started or created
    return PodTimes(
        created=created,
        scheduled=scheduled,
        started=started,
        finished=finished,
        restarts=restarts,
        failure_reason=reason,
        disrupted=disrupted,
    )


def pod_problem(obj: dict[str, Any], times: PodTimes) -> str | None:
    """Why a pod's record cannot be used (a counted skip), or None."""
    phase = (obj.get("status") or {}).get("phase")
    node = (obj.get("spec") or {}).get("nodeName")
    if times.created is None:
        return "pod without metadata.creationTimestamp"
    if phase in ("Running", "Succeeded") and not node:
        return f"pod {phase} without spec.nodeName"
    if times.started is not None and times.finished is not None and times.finished < times.started:
        return "pod finished before it started (clocks went backwards)"
    for t in (times.scheduled, times.started):
        if t is not None and t < times.created - CLOCK_SKEW_S:
            return f"pod scheduled or started more than {CLOCK_SKEW_S:.0f}s before it was created"
    return None


def job_record(job: JobAcc, models: dict[str, str | None], data: SourceData) -> JobRecord | None:
    """The JOB_SCHEMA record of one accumulated job, or None (counted in ``data``) when it cannot be one."""
    if job.created is None:
        data.skip("job without any creation time")
        return None
    state, reason = _state(job)
    end = job.end if state in ("completed", "failed", "cancelled") else None
    if state in ("completed", "failed") and end is None:
        data.skip("job finished with no finish time recorded")
        return None
    # A failed Job's last failed pod is the failure itself, not a retry.
    restarts = job.restarts + max(job.replaced_pods - (1 if state == "failed" else 0), 0)
    running = job.running
    if running is not None and job.scheduled is not None and running < job.scheduled:
        running = job.scheduled  # kubelet and API server clocks differ slightly
    admitted = job.admitted
    if admitted is not None and job.scheduled is not None and admitted > job.scheduled:
        admitted = None  # QuotaReserved of a later re-admission: the first admission's time is not kept
    node_models = sorted({m for n in job.nodes if (m := models.get(n))})
    pods = job.parallelism or job.workload_pods or max(job.pods_seen - job.pods_failed, 1)
    cpu_milli, memory = job.cpu_milli, job.memory
    if job.gpus > 0:  # the GPU pods' shape: CPU-only launchers and drivers are not GPU pods
        homogeneous = job.parallelism if job.kind == "Job" and not job.children else None
        pods = homogeneous or job.gpu_pods or 1
        cpu_milli, memory = job.gpu_cpu_milli, job.gpu_memory
    return JobRecord(
        job_id=job.key,
        source=data.kind,
        owner_kind=job.kind,
        namespace=job.namespace,
        team=job.team or job.namespace,
        queue=job.queue,
        job_class=job.job_class or _default_class(job),
        priority=job.priority,
        pods=pods,
        # A share (a MIG slice) counts gpu_milli / 1000 GPUs, as the history schema and the Alibaba reader do.
        gpus_per_pod=job.gpus or (job.gpu_milli or 0) / 1000.0,
        gpu_milli_per_pod=job.gpu_milli if not job.gpus else None,
        cpu_per_pod=cpu_milli / 1000.0,
        memory_per_pod=memory,
        gpu_model=node_models[0] if node_models else gpu_model_of(job.product),
        submit=min(t for t in (job.created, admitted, job.scheduled) if t is not None),
        admitted=admitted,
        scheduled=job.scheduled,
        running=running,
        end=end,
        state=state,
        end_reason=reason,
        restarts=max(restarts, 0),
        evictions=job.evictions,
        nodes=",".join(sorted(job.nodes)) or None,
        image_pull_s=job.pull_s,
    )


def _state(job: JobAcc) -> tuple[str, str | None]:
    """The job's state: its owner's or Workload's terminal condition first, then its pods."""
    if job.state is not None:
        return job.state, job.end_reason
    if job.pods_active:
        return "running", None
    if job.children and job.children_done == job.children and not job.pods_waiting:
        return "completed", "Completed"
    if job.pods_waiting:  # scheduled but not started yet (pulling images) counts as running: it holds a node
        return ("running" if job.running is not None or job.scheduled is not None else "pending"), None
    if job.pods_succeeded:
        return "completed", "Completed"
    if job.pods_failed:
        return "failed", job.pod_failure_reason or "Failed"
    if job.pods_deleted:
        return "cancelled", "Deleted"
    return "pending", None


def _default_class(job: JobAcc) -> str:
    if job.kind in SERVING_KINDS:
        return "inference"
    return "training" if job.gpus > 0 or job.gpu_milli else "batch"


class KubeJobs:
    """The jobs of one kubectl import so far, keyed ``namespace/kind/name``: pods and Workloads point at
    them, and a child job folded into its owner (a JobSet's Jobs) points at the owner's key."""

    def __init__(self, data: SourceData) -> None:
        self.data = data
        self.jobs: dict[str, JobAcc] = {}
        self.pod_job: dict[str, str] = {}  # namespace/pod -> job key
        self.pod_evicted: dict[str, int] = {}  # namespace/pod -> 1 when its status says it was disrupted
        self.workload_job: dict[str, str] = {}  # namespace/workload -> job key
        self.folded: dict[str, str] = {}  # a child job's key -> the key of the job it was folded into

    def resolve(self, key: str | None) -> str | None:
        """The key a job was folded into (itself when it was not)."""
        while key is not None and key in self.folded:
            key = self.folded[key]
        return key

    def job_of_pod(self, pod: str) -> JobAcc | None:
        """The (folded) job a pod ``namespace/name`` belongs to."""
        key = self.resolve(self.pod_job.get(pod))
        return None if key is None else self.jobs.get(key)

    def acc(self, namespace: str, kind: str, name: str) -> JobAcc:
        """The job ``namespace/kind/name``, created empty on first sight."""
        key = f"{namespace}/{kind}/{name}"
        found = self.jobs.get(key)
        if found is None:
            found = self.jobs[key] = JobAcc(key=key, kind=kind, namespace=namespace, name=name)
        return found
