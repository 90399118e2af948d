"""Kueue ``Workload`` objects and core/v1 Events, as they add to jobs built from pods.

Workload (``kueue.x-k8s.io/v1beta1``/``v1beta2``): ``metadata.ownerReferences`` (the job), ``spec.queueName``,
``spec.priority``, ``spec.podSets[].count/template``, ``spec.active``; ``status.conditions`` QuotaReserved
(admitted_s), Evicted (present at all) / Preempted (True) (evictions), Finished (end and outcome);
``status.requeueState.count`` (requeues). Events (``kubectl get events -A -o json``; ``events.k8s.io/v1``
too): ``Preempted`` and ``Evicted`` on pods and Workloads count evictions, ``Pulled`` gives the image pull
time from its message.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from fleetlab.spec.history.common import SourceData, go_duration_s, parse_rfc3339
from fleetlab.spec.history.kube_pods import CLASS_LABEL, TEAM_LABELS, JobAcc, KubeJobs, owner_of
from fleetlab.spec.kube_objects import field_list, field_map, object_name
from fleetlab.spec.kube_snapshot import QUEUE_LABEL

#: kubelet's Pulled message: `Successfully pulled image "x" in 2.345s (2.345s including waiting)...`.
_PULLED = re.compile(r'Successfully pulled image ".*" in ([0-9.a-zµ]+)')
_PRESENT = "already present on machine"
LABELS_USED = frozenset({*TEAM_LABELS, CLASS_LABEL, QUEUE_LABEL})


@dataclass
class EventTally:
    """What events say per pod and per Workload (``namespace/name``)."""

    pod_evictions: Counter[str] = field(default_factory=Counter)
    pod_pull_s: dict[str, float] = field(default_factory=dict)
    workload_evictions: Counter[str] = field(default_factory=Counter)

    def apply(self, history: KubeJobs) -> None:
        """Add evictions and pull times to the jobs the pods and Workloads belong to."""
        per_job: Counter[str] = Counter()
        for pod in sorted(set(self.pod_evictions) | set(history.pod_evicted)):
            job = history.job_of_pod(pod)
            if job is None:
                history.data.skip("event about a pod not in the history")
                continue
            per_job[job.key] += max(self.pod_evictions.get(pod, 0), history.pod_evicted.get(pod, 0))
        for pod, seconds in sorted(self.pod_pull_s.items()):
            job = history.job_of_pod(pod)
            if job is None:
                history.data.skip("event about a pod not in the history")
                continue
            job.take_max("pull_s", seconds)
        for workload, count in self.workload_evictions.items():
            wl_key = history.workload_job.get(workload)
            wl_job = None if wl_key is None else history.jobs.get(history.resolve(wl_key) or wl_key)
            if wl_job is None:
                history.data.skip("event about a Workload not in the history")
                continue
            wl_job.workload_evictions = max(wl_job.workload_evictions, count)
        for key, job in history.jobs.items():
            job.evictions = max(job.evictions + per_job.get(key, 0), job.workload_evictions)


def _event_count(obj: dict[str, Any]) -> int:
    for value in (obj.get("count"), (obj.get("series") or {}).get("count"), obj.get("deprecatedCount")):
        if _is_int(value) and 0 < value < 10_000_000:
            return value
    return 1


def tally_event(tally: EventTally, obj: dict[str, Any], source: str, data: SourceData) -> None:
    """Record one Event if it is one the history uses; others are counted as skipped by reason."""
    target = field_map(obj.get("involvedObject") or obj.get("regarding"), "involvedObject")
    reason = str(obj.get("reason") or "")
    kind = target.get("kind")
    key = f"{target.get('namespace') or 'default'}/{target.get('name')}"
    where = f"Event {object_name(obj)}"
    last = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("deprecatedLastTimestamp")
    data.saw(parse_rfc3339(last, source, f"{where}.lastTimestamp"))
    message = str(obj.get("message") or obj.get("note") or "")
    if kind == "Pod" and reason in ("Preempted", "Evicted"):
        tally.pod_evictions[key] += _event_count(obj)
    elif kind == "Pod" and reason == "Pulled":
        match = _PULLED.search(message)
        seconds = go_duration_s(match.group(1)) if match else (0.0 if _PRESENT in message else None)
        if seconds is None:
            data.skip("Pulled event with an unreadable message")
            return
        tally.pod_pull_s[key] = tally.pod_pull_s.get(key, 0.0) + seconds
    elif kind == "Workload" and (reason == "Preempted" or reason.startswith("Evicted")):
        tally.workload_evictions[key] += _event_count(obj)
    elif reason in ("FailedScheduling", "Pulling", "Scheduled", "Started", "Created", "Killing"):
        return  # expected and not needed: the pod's own conditions and statuses carry these times
    else:
        data.skip("event with a reason the history does not use")


def _conditions(
    obj: dict[str, Any], source: str, where: str
) -> dict[str, tuple[str, str, str, float | None]]:
    out: dict[str, tuple[str, str, str, float | None]] = {}
    for i, cond in enumerate(
        field_list(field_map(obj.get("status"), "status").get("conditions"), "status.conditions")
    ):
        if isinstance(cond, dict) and cond.get("type"):
            at = parse_rfc3339(
                cond.get("lastTransitionTime"), source, f"{where}.status.conditions[{i}].lastTransitionTime"
            )
            status, reason = str(cond.get("status") or ""), str(cond.get("reason") or "")
            out[str(cond["type"])] = (status, reason, str(cond.get("message") or ""), at)
    return out


@dataclass(slots=True)
class WorkloadFacts:
    """What the history needs of one Workload, kept instead of the object (a month holds many)."""

    namespace: str
    name: str
    owner: tuple[str, str]
    created: float | None
    labels: dict[str, str]
    queue: str | None
    priority: int | None
    shape: JobAcc  # requests and pod count of its podSets
    admitted: float | None
    requeues: int
    evicted: bool
    finished: tuple[bool, str, float | None] | None  # (failed, reason, when)
    deactivated: tuple[float | None] | None  # (when it was evicted as inactive) for spec.active false


def _is_int(value: Any) -> TypeGuard[int]:
    """A whole number of a Kubernetes object (``true`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def read_workload(obj: dict[str, Any], source: str, data: SourceData) -> WorkloadFacts:
    """The facts of one Workload; its instants count toward the history's end at once."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "<unnamed>")
    where = f"Workload {object_name(obj)}"
    kind, owner_name, _ = owner_of(meta)
    if kind in ("Pod", "PodGroup"):
        kind, owner_name = "Workload", name
    shape = JobAcc(key="", kind=kind, namespace=namespace, name=owner_name)
    counts = 0
    for i, pod_set in enumerate(field_list(spec.get("podSets"), "spec.podSets")):
        if not isinstance(pod_set, dict):
            continue
        here = f"spec.podSets[{i}].template"
        template = field_map(field_map(pod_set.get("template"), here).get("spec"), f"{here}.spec")
        count = pod_set.get("count", 1) if isinstance(pod_set.get("count"), int) else 1
        shape.take_requests(template, f"{where}.spec.podSets[{i}].template.spec", source, count)
        counts += count
    shape.workload_pods = counts or None
    created = parse_rfc3339(meta.get("creationTimestamp"), source, f"{where}.metadata.creationTimestamp")
    conds = _conditions(obj, source, where)
    data.saw(created, *(at for _, _, _, at in conds.values()))
    reserved = conds.get("QuotaReserved") or conds.get("Admitted")
    requeues = field_map(status.get("requeueState"), "status.requeueState").get("count")
    finished = conds.get("Finished")
    labels = meta.get("labels") or {}
    return WorkloadFacts(
        namespace=namespace,
        name=name,
        owner=(kind, owner_name),
        created=created,
        labels={str(k): str(v) for k, v in labels.items() if k in LABELS_USED},
        queue=str(spec["queueName"]) if spec.get("queueName") else None,
        priority=spec["priority"] if _is_int(spec.get("priority")) else None,
        shape=shape,
        admitted=reserved[3] if reserved and reserved[0] == "True" else None,
        requeues=requeues if _is_int(requeues) and 0 <= requeues < 10_000_000 else 0,
        # Kueue adds the Evicted condition only when it evicts; on re-admission it sets it False and keeps
        # it, so its presence means at least one eviction. Preempted counts while True.
        evicted="Evicted" in conds or conds.get("Preempted", ("",))[0] == "True",
        finished=(
            (finished[1] == "Failed" or "fail" in finished[2].lower(), finished[1], finished[3])
            if finished and finished[0] == "True"
            else None
        ),
        deactivated=(conds.get("Evicted", ("", "", "", None))[3],) if spec.get("active") is False else None,
    )


def apply_workload(history: KubeJobs, wl: WorkloadFacts) -> None:
    """Add one Workload's admission, evictions, requeues and outcome to its job."""
    key = history.resolve(f"{wl.namespace}/{wl.owner[0]}/{wl.owner[1]}")  # a Job of a JobSet: the JobSet
    job = history.jobs.get(key) if key is not None else None
    if job is None:
        job = history.acc(wl.namespace, *wl.owner)
    history.workload_job[f"{wl.namespace}/{wl.name}"] = job.key
    job.take_min("created", wl.created)
    job.take_labels(wl.labels)
    if job.queue is None:
        job.queue = wl.queue
    if wl.priority is not None:  # Kueue orders admission by the Workload's priority
        job.priority = wl.priority
    if job.pods_seen == 0:
        job.gpus = max(job.gpus, wl.shape.gpus)
        if wl.shape.gpu_milli is not None:
            job.gpu_milli = max(job.gpu_milli or 0, wl.shape.gpu_milli)
        job.cpu_milli = max(job.cpu_milli, wl.shape.cpu_milli)
        job.memory = max(job.memory, wl.shape.memory)
        job.product = job.product or wl.shape.product
        job.workload_pods = wl.shape.workload_pods
        job.gpu_pods = max(job.gpu_pods, wl.shape.gpu_pods)
        job.gpu_cpu_milli = max(job.gpu_cpu_milli, wl.shape.gpu_cpu_milli)
        job.gpu_memory = max(job.gpu_memory, wl.shape.gpu_memory)
    job.take_min("admitted", wl.admitted)
    job.restarts += wl.requeues
    job.workload_evictions = max(job.workload_evictions, wl.requeues, 1 if wl.evicted else 0)
    if wl.finished is not None:
        failed, reason, at = wl.finished
        if job.state is None:
            job.state, job.end_reason = (
                ("failed", reason or "Failed") if failed else ("completed", "Completed")
            )
        job.take_max("end", at)
    elif wl.deactivated is not None and job.state is None and not job.pods_active:
        job.state, job.end_reason = "cancelled", "Deactivated"
        job.take_max("end", wl.deactivated[0])
