"""Kubernetes history from kubectl JSON: pods and batch/v1 Jobs (``kubectl get pods,jobs -A -o json``),
owners (JobSet, PyTorchJob, LeaderWorkerSet), Kueue ``Workload`` objects, core/v1 Events and Nodes.

Every file is streamed and every object dispatched by ``kind``, so one file may hold them all or each may
come in its own file. Pods fold into their owner's job as they are read (:mod:`.kube_pods`); Jobs owned by
a JobSet fold into the JobSet at the end, and Workloads and events add admission, evictions and image
pulls. A job whose pods were already deleted still comes from its Job or Workload object.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard

from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import SourceData, parse_rfc3339
from fleetlab.spec.history.json_stream import stream_objects
from fleetlab.spec.history.kube_nodes import node_record
from fleetlab.spec.history.kube_pods import KubeJobs, job_record, owner_of, pod_problem, pod_times
from fleetlab.spec.history.kube_policy import POLICY_KINDS, KubePolicy
from fleetlab.spec.history.kueue_history import (
    EventTally,
    WorkloadFacts,
    apply_workload,
    read_workload,
    tally_event,
)
from fleetlab.spec.kube_objects import ShapeError, field_list, field_map, object_name

#: Owner kinds whose own objects carry the job's creation time and outcome.
OWNER_KINDS = frozenset({"Job", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "LeaderWorkerSet", "RayJob"})
#: Kinds read but not used for jobs (counted, not errors: a `kubectl get all` dump has them).
IGNORED_KINDS = frozenset({"ReplicaSet", "Deployment", "StatefulSet", "Service", "ConfigMap", "DaemonSet"})


def _whole(value: Any, negative: bool = False) -> TypeGuard[int]:
    """A whole number in a Kubernetes object, not negative unless allowed (``true`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and (negative or value >= 0)


class KubeHistory(KubeJobs):
    """The running state of one kubectl import, over any number of files."""

    def __init__(self, label: str) -> None:
        super().__init__(SourceData(label=label, kind="kubectl"))
        self.events = EventTally()
        self.workloads: list[WorkloadFacts] = []
        self.policy = KubePolicy()  # queues, quotas, priority classes, node outages
        self.objects = 0  # objects read, all files together (the source's row count)

    def read(self, path: Path, progress: Callable[[int], None] | None = None) -> None:
        """Stream one file's objects into the history."""
        source = str(path)
        for obj in stream_objects(path, progress, lambda: self.data.skip("object without kind")):
            self.objects += 1
            self.data.count_rows(self.objects)
            try:
                self._object(obj, source)
            except ShapeError as exc:  # a field of the wrong JSON type, named (never its value)
                raise SpecError(source, [f"{obj['kind']} {object_name(obj)}: {exc}"]) from None
            except (TypeError, AttributeError, KeyError, OverflowError) as exc:  # one not named yet
                raise SpecError(
                    source,
                    [
                        f"{obj['kind']} {object_name(obj)}: a field has a value of the wrong JSON type or "
                        f"size ({type(exc).__name__}); expected the object as kubectl writes it"
                    ],
                ) from None

    def _object(self, obj: dict[str, Any], source: str) -> None:
        """One object into the history, by kind."""
        kind = obj["kind"]
        if kind == "Pod":
            self._pod(obj, source)
        elif kind in OWNER_KINDS:
            self._owner(obj, source)
        elif kind == "Workload":
            self.workloads.append(read_workload(obj, source, self.data))
        elif kind == "Event":
            if not self.policy.event(obj, source, self.data):
                tally_event(self.events, obj, source, self.data)
        elif kind == "Node":
            self.data.nodes.append(node_record(obj, source))
            self.policy.node_status(obj, source)
        elif kind in POLICY_KINDS:
            self.policy.take(obj, source)
        elif kind in IGNORED_KINDS:
            self.data.skip(f"{kind} objects are not read")
        else:
            self.data.skip(f"unknown kind {kind[:40]}")

    def _pod(self, obj: dict[str, Any], source: str) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        where = f"Pod {object_name(obj)}"
        times = pod_times(obj, source, where)
        problem = pod_problem(obj, times)
        if problem is not None:
            self.data.skip(problem)
            return
        namespace = str(meta.get("namespace") or "default")
        kind, name, _ = owner_of(meta)
        job = self.acc(namespace, kind, name)
        self.pod_job[f"{namespace}/{meta.get('name')}"] = job.key
        job.take_requests(spec, f"{where}.spec", source, 0 if status.get("phase") == "Failed" else 1)
        job.take_labels(meta.get("labels") or {})
        job.take_min("created", times.created)
        job.take_min("scheduled", times.scheduled)
        job.take_min("running", times.started)
        job.take_max("end", times.finished)
        self.data.saw(times.created, times.scheduled, times.started, times.finished)
        if _whole(spec.get("priority"), negative=True):
            job.priority = max(
                job.priority if job.priority is not None else spec["priority"], spec["priority"]
            )
        if spec.get("nodeName"):
            job.nodes.add(str(spec["nodeName"]))
        job.pods_seen += 1
        job.restarts += times.restarts
        if times.disrupted:
            self.pod_evicted[f"{namespace}/{meta.get('name')}"] = 1
        phase = status.get("phase")
        if phase == "Succeeded":
            job.pods_succeeded += 1
        elif phase == "Failed":
            job.pods_failed += 1
            job.pod_failure_reason = job.pod_failure_reason or times.failure_reason or "Failed"
        elif phase == "Pending" and times.started is None:
            job.pods_waiting += 1
        else:
            job.pods_active += 1

    def _owner(self, obj: dict[str, Any], source: str) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        kind = obj["kind"]
        where = f"{kind} {object_name(obj)}"
        job = self.acc(str(meta.get("namespace") or "default"), kind, str(meta.get("name") or "<unnamed>"))
        created = parse_rfc3339(meta.get("creationTimestamp"), source, f"{where}.metadata.creationTimestamp")
        job.take_min("created", created)
        job.take_labels(meta.get("labels") or {})
        self.data.saw(created)
        owner_kind, owner_name, _ = owner_of(meta)
        if owner_kind != "Pod" and owner_kind != "PodGroup":
            job.parent = (owner_kind, owner_name)
        if kind == "Job":
            parallelism = spec.get("parallelism", 1)
            completions = spec.get("completions")
            if _whole(parallelism):
                if _whole(completions):
                    parallelism = min(parallelism, completions)
                job.parallelism = max(parallelism, 1)
            template = field_map(
                field_map(spec.get("template"), "spec.template").get("spec"), "spec.template.spec"
            )
            job.take_requests(template, f"{where}.spec.template.spec", source)
            failed = status.get("failed")
            if _whole(failed) and failed > 0:
                job.replaced_pods += failed
        for i, cond in enumerate(field_list(status.get("conditions"), "status.conditions")):
            if not isinstance(cond, dict) or cond.get("status") != "True":
                continue
            at = parse_rfc3339(
                cond.get("lastTransitionTime"), source, f"{where}.status.conditions[{i}].lastTransitionTime"
            )
            self.data.saw(at)
            if cond.get("type") in ("Complete", "Completed", "Succeeded"):
                job.state, job.end_reason = "completed", "Completed"
                job.take_max("end", at)
            elif cond.get("type") == "Failed":
                job.state, job.end_reason = "failed", str(cond.get("reason") or "Failed")
                job.take_max("end", at)
        done = parse_rfc3339(status.get("completionTime"), source, f"{where}.status.completionTime")
        job.take_max("end", done)

    def finish(self) -> SourceData:
        """Fold children into parents, apply Workloads and events, and emit one record per job."""
        for key in sorted(self.jobs):
            job = self.jobs.get(key)
            if job is None or job.parent is None:
                continue
            parent_key = f"{job.namespace}/{job.parent[0]}/{job.parent[1]}"
            if parent_key == key:
                continue
            parent = self.acc(job.namespace, *job.parent)
            parent.absorb(job)
            del self.jobs[key]
            self.folded[key] = parent_key
        for workload in self.workloads:  # after folding: a JobSet's Workload meets its Jobs' pods
            apply_workload(self, workload)
        self.events.apply(self)
        models = {n.node: n.gpu_model for n in self.data.nodes}
        for key in sorted(self.jobs):
            record = job_record(self.jobs[key], models, self.data)
            if record is not None:
                self.data.jobs.append(record)
        self.policy.finish(self.data)
        return self.data


def read_kubectl(paths: list[Path], progress: Callable[[int], None] | None = None) -> SourceData:
    """One kubectl history from any number of kubectl JSON files (pods, jobs, workloads, events, nodes)."""
    if not paths:
        raise SpecError("kubectl", ["no files given"])
    history = KubeHistory(",".join(str(p) for p in paths))
    for path in paths:
        history.read(path, progress)
    return history.finish()
