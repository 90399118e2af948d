"""Kueue ``Workload`` objects and core/v1 Events, as they add to jobs built from pods.

Workload (``kueue.x-k8s.io/v1beta1``/``v1beta2``): ``metadata.ownerReferences`` (the job), ``spec.queueName``,
``spec.priority``, ``spec.podSets[].count/template``, ``spec.active``; ``status.conditions`` QuotaReserved
(admitted_s), Evicted / Preempted (evictions), Finished (end and outcome); ``status.requeueState.count``
(requeues). Events (``kubectl get events -A -o json``; ``events.k8s.io/v1`` too): ``Preempted`` and
``Evicted`` on pods and Workloads count evictions, ``Pulled`` gives the image pull time from its message.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fleetlab.spec.history.common import SourceData, go_duration_s, parse_rfc3339
from fleetlab.spec.history.kube_pods import owner_of
from fleetlab.spec.kube_objects import object_name

if TYPE_CHECKING:
    from fleetlab.spec.history.kubectl import KubeHistory

#: kubelet's Pulled message: `Successfully pulled image "x" in 2.345s (2.345s including waiting)...`.
_PULLED = re.compile(r'Successfully pulled image ".*" in ([0-9.a-zµ]+)')
_PRESENT = "already present on machine"


@dataclass
class EventTally:
    """What events say per pod and per Workload (``namespace/name``)."""

    pod_evictions: Counter[str] = field(default_factory=Counter)
    pod_pull_s: dict[str, float] = field(default_factory=dict)
    workload_evictions: Counter[str] = field(default_factory=Counter)

    def apply(self, history: KubeHistory) -> None:
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
            wl_job = None if wl_key is None else history.jobs.get(history.folded.get(wl_key, wl_key))
            if wl_job is None:
                history.data.skip("event about a Workload not in the history")
                continue
            wl_job.workload_evictions = max(wl_job.workload_evictions, count)
        for key, job in history.jobs.items():
            job.evictions = max(job.evictions + per_job.get(key, 0), job.workload_evictions)


def _event_count(obj: dict[str, Any]) -> int:
    for value in (obj.get("count"), (obj.get("series") or {}).get("count"), obj.get("deprecatedCount")):
        if isinstance(value, int) and 0 < value < 10_000_000:
            return value
    return 1


def tally_event(tally: EventTally, obj: dict[str, Any], source: str, data: SourceData) -> None:
    """Record one Event if it is one the history uses; others are counted as skipped by reason."""
    target = obj.get("involvedObject") or obj.get("regarding") or {}
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
    for i, cond in enumerate((obj.get("status") or {}).get("conditions") or []):
        if isinstance(cond, dict) and cond.get("type"):
            at = parse_rfc3339(
                cond.get("lastTransitionTime"), source, f"{where}.status.conditions[{i}].lastTransitionTime"
            )
            status, reason = str(cond.get("status") or ""), str(cond.get("reason") or "")
            out[str(cond["type"])] = (status, reason, str(cond.get("message") or ""), at)
    return out


def apply_workload(history: KubeHistory, obj: dict[str, Any]) -> None:
    """Add one Workload's admission, evictions, requeues and outcome to its job."""
    source = history.data.label
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    namespace = str(meta.get("namespace") or "default")
    where = f"Workload {object_name(obj)}"
    kind, name, _ = owner_of(meta)
    if kind in ("Pod", "PodGroup"):
        kind, name = "Workload", str(meta.get("name") or "<unnamed>")
    job = history.acc(namespace, kind, name)
    if job.parent is not None:  # a Job of a JobSet: the JobSet is the job
        job = history.acc(namespace, *job.parent)
    history.workload_job[f"{namespace}/{meta.get('name')}"] = job.key
    created = parse_rfc3339(meta.get("creationTimestamp"), source, f"{where}.metadata.creationTimestamp")
    job.take_min("created", created)
    job.take_labels(meta.get("labels") or {})
    if job.queue is None and spec.get("queueName"):
        job.queue = str(spec["queueName"])
    if isinstance(spec.get("priority"), int) and job.priority is None:
        job.priority = spec["priority"]
    if job.pods_seen == 0:
        counts = 0
        for i, pod_set in enumerate(spec.get("podSets") or []):
            if not isinstance(pod_set, dict):
                continue
            template = (pod_set.get("template") or {}).get("spec") or {}
            job.take_requests(template, f"{where}.spec.podSets[{i}].template.spec", source)
            counts += pod_set.get("count", 1) if isinstance(pod_set.get("count"), int) else 1
        job.workload_pods = counts or None
    conds = _conditions(obj, source, where)
    for _, _, _, at in conds.values():
        history.data.saw(at)
    history.data.saw(created)
    reserved = conds.get("QuotaReserved") or conds.get("Admitted")
    if reserved and reserved[0] == "True":
        job.take_min("admitted", reserved[3])
    requeues = (status.get("requeueState") or {}).get("count")
    requeues = requeues if isinstance(requeues, int) and 0 <= requeues < 10_000_000 else 0
    job.restarts += requeues
    evicted = any(conds.get(t, ("",))[0] == "True" for t in ("Evicted", "Preempted"))
    job.workload_evictions = max(job.workload_evictions, requeues, 1 if evicted else 0)
    finished = conds.get("Finished")
    if finished and finished[0] == "True":
        failed = finished[1] == "Failed" or "fail" in finished[2].lower()
        if job.state is None:
            job.state, job.end_reason = (
                ("failed", finished[1] or "Failed") if failed else ("completed", "Completed")
            )
        job.take_max("end", finished[3])
    elif spec.get("active") is False and job.state is None and not job.pods_active:
        job.state, job.end_reason = "cancelled", "Deactivated"
        job.take_max("end", conds.get("Evicted", ("", "", "", None))[3])
