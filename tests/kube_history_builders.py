"""Kubernetes objects in the shapes a real cluster's kubectl prints, for the history importer tests.

Shapes follow the API types: core/v1 Pod, PodStatus, ContainerStatus and Event (kubernetes/api
core/v1/types.go), batch/v1 Job (kubernetes/api batch/v1/types.go), JobSet (kubernetes-sigs/jobset
api/jobset/v1alpha2/jobset_types.go) and Kueue's Workload (kubernetes-sigs/kueue
apis/kueue/v1beta1/workload_types.go); kubectl wraps several objects in a ``v1 List``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DAY = "2024-05-01"


def ts(hms: str) -> str:
    """``10:02:03`` -> ``2024-05-01T10:02:03Z``."""
    return f"{DAY}T{hms}Z"


def owner(kind: str, name: str, api: str = "batch/v1") -> dict[str, Any]:
    return {"apiVersion": api, "blockOwnerDeletion": True, "controller": True, "kind": kind, "name": name,
            "uid": f"uid-{kind.lower()}-{name}"}  # fmt: skip


def pod(
    ns: str, name: str, created: str, *, owner_ref: dict[str, Any] | None = None, node: str | None = "gpu-node-1",
    scheduled: str | None = None, started: str | None = None, finished: str | None = None, phase: str = "Running",
    exit_code: int = 0, reason: str = "Completed", gpus: int = 0, cpu: str = "1", memory: str = "1Gi",
    restarts: int = 0, labels: dict[str, str] | None = None, status_reason: str | None = None,
    disruption: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    conditions: list[dict[str, Any]] = []
    if scheduled:
        conditions.append({"lastProbeTime": None, "lastTransitionTime": ts(scheduled), "status": "True",
                           "type": "PodScheduled"})  # fmt: skip
    else:
        conditions.append({"lastProbeTime": None, "lastTransitionTime": ts(created), "status": "False",
                           "type": "PodScheduled", "reason": "Unschedulable",
                           "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."})  # fmt: skip
    if disruption:
        conditions.append(
            {
                "lastProbeTime": None,
                "lastTransitionTime": ts(finished or created),
                "status": "True",
                "type": "DisruptionTarget",
                "reason": disruption,
                "message": "Kubernetes Scheduler: preempting to accommodate a higher priority pod",
            }
        )
    state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
    if started and finished:
        state = {"terminated": {"containerID": "containerd://abc", "exitCode": exit_code, "reason": reason,
                                "startedAt": ts(started), "finishedAt": ts(finished)}}  # fmt: skip
    elif started:
        state = {"running": {"startedAt": ts(started)}}
    container_statuses = (
        [{"containerID": "containerd://abc", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
          "imageID": "nvcr.io/nvidia/pytorch@sha256:0123", "lastState": {}, "name": "main",
          "ready": phase == "Running", "restartCount": restarts, "started": phase == "Running", "state": state}]
        if scheduled
        else []
    )  # fmt: skip
    meta: dict[str, Any] = {"creationTimestamp": ts(created), "name": name, "namespace": ns,
                            "resourceVersion": "12345", "uid": f"uid-pod-{name}", "labels": labels or {}}  # fmt: skip
    if owner_ref:
        meta["ownerReferences"] = [owner_ref]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "resources": resources}],
        "restartPolicy": "Never", "schedulerName": "default-scheduler", "priority": 0,
        "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "tolerationSeconds": 300}],
    }  # fmt: skip
    if node and scheduled:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": phase, "conditions": conditions, "qosClass": "Burstable"}
    if container_statuses:
        status["containerStatuses"] = container_statuses
        status["startTime"] = ts(scheduled or created)
    if status_reason:
        status["reason"] = status_reason
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def job(
    ns: str, name: str, created: str, *, parallelism: int = 1, conditions: list[dict[str, Any]] | None = None,
    completion: str | None = None, failed: int = 0, succeeded: int = 0, owner_ref: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None, gpus: int = 0,
) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"creationTimestamp": ts(created), "name": name, "namespace": ns,
                            "uid": f"uid-job-{name}", "labels": labels or {}}  # fmt: skip
    if owner_ref:
        meta["ownerReferences"] = [owner_ref]
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    status: dict[str, Any] = {"conditions": conditions or [], "failed": failed, "succeeded": succeeded}
    if completion:
        status["completionTime"] = ts(completion)
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": {"backoffLimit": 0, "completionMode": "Indexed", "completions": parallelism,
                 "parallelism": parallelism, "suspend": False,
                 "template": {"spec": {"containers": [{"name": "main", "image": "busybox",
                                                       "resources": resources}], "restartPolicy": "Never"}}},
        "status": status,
    }  # fmt: skip


def condition(
    kind: str, at: str, status: str = "True", reason: str = "", message: str = ""
) -> dict[str, Any]:
    return {"lastProbeTime": ts(at), "lastTransitionTime": ts(at), "status": status, "type": kind,
            "reason": reason, "message": message}  # fmt: skip


def workload(
    ns: str, name: str, created: str, owner_ref: dict[str, Any], *, queue: str, conditions: list[dict[str, Any]],
    requeues: int | None = None, count: int = 1, gpus: int = 0, cluster_queue: str = "cq",
) -> dict[str, Any]:  # fmt: skip
    status: dict[str, Any] = {"conditions": conditions}
    if any(c["type"] == "QuotaReserved" and c["status"] == "True" for c in conditions):
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": [
            {"name": "main", "count": count, "flavors": {"nvidia.com/gpu": "h100"},
             "resourceUsage": {"nvidia.com/gpu": str(gpus * count)}}]}  # fmt: skip
    if requeues is not None:
        status["requeueState"] = {"count": requeues}
    resources = {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"creationTimestamp": ts(created), "name": name, "namespace": ns, "uid": f"uid-wl-{name}",
                     "ownerReferences": [owner_ref], "labels": {"kueue.x-k8s.io/job-uid": owner_ref["uid"]}},
        "spec": {"active": True, "queueName": queue, "priority": 100, "priorityClassSource": "",
                 "podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [
                     {"name": "main", "image": "busybox", "resources": resources}]}}}]},
        "status": status,
    }  # fmt: skip


def event(
    kind: str, ns: str, name: str, reason: str, message: str, at: str, count: int = 1
) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Event", "count": count, "type": "Normal" if reason != "FailedScheduling" else "Warning",
        "firstTimestamp": ts(at), "lastTimestamp": ts(at), "reason": reason, "message": message,
        "involvedObject": {"apiVersion": "v1", "kind": kind, "name": name, "namespace": ns, "uid": f"uid-{name}"},
        "metadata": {"name": f"{name}.17c{reason.lower()}", "namespace": ns, "creationTimestamp": ts(at)},
        "reportingComponent": "kubelet", "source": {"component": "kubelet", "host": "gpu-node-1"},
    }  # fmt: skip


def node(name: str, product: str = "NVIDIA-H100-80GB-HBM3", gpus: int = 8) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "a3-highgpu-8g",
              "topology.kubernetes.io/zone": "us-central1-a", "cloud.google.com/gke-nodepool": "h100-pool",
              "cloud.google.com/gke-accelerator": "nvidia-h100-80gb", "nvidia.com/gpu.product": product,
              "nvidia.com/gpu.count": str(gpus)}  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "2024-04-01T00:00:00Z", "uid": "n1"},
        "spec": {"providerID": f"gce://proj/us-central1-a/{name}"},
        "status": {"allocatable": {"cpu": "207", "memory": "1842Gi", "nvidia.com/gpu": str(gpus), "pods": "110",
                                   "ephemeral-storage": "100Gi"},
                   "capacity": {"cpu": "208", "memory": "1872Gi", "nvidia.com/gpu": str(gpus), "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }  # fmt: skip


def kube_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=4), encoding="utf-8")  # kubectl indents by 4
    return path


def small_world(folder: Path) -> list[Path]:
    """The kubectl history of test_history_kubectl (answers worked out there), in three files."""
    a_owner = owner("Job", "train-1")
    pods_and_jobs = [
        pod("team-a", "train-1-0-abcde", "10:02:01", owner_ref=a_owner, scheduled="10:02:03", started="10:04:00",
            finished="11:00:00", phase="Succeeded", gpus=4, cpu="16", memory="64Gi",
            labels={"team": "research", "kueue.x-k8s.io/queue-name": "team-a-queue"}),
        pod("team-a", "train-1-1-fghij", "10:02:01", owner_ref=a_owner, scheduled="10:02:03", started="10:04:30",
            finished="11:00:20", phase="Succeeded", gpus=4, cpu="16", memory="64Gi",
            labels={"team": "research", "kueue.x-k8s.io/queue-name": "team-a-queue"}),
        job("team-a", "train-1", "10:00:00", parallelism=2, succeeded=2, completion="11:00:25",
            conditions=[condition("Complete", "11:00:25")], labels={"kueue.x-k8s.io/queue-name": "team-a-queue"}),
        # A JobSet's two child Jobs; its pods run; Kueue evicted it once and re-admitted it.
        pod("team-b", "js-1-workers-0-0-x1", "10:20:01", owner_ref=owner("Job", "js-1-workers-0"),
            scheduled="10:20:02", started="10:21:00", gpus=8, cpu="32", memory="256Gi", restarts=2),
        pod("team-b", "js-1-driver-0-0-x2", "10:20:01", owner_ref=owner("Job", "js-1-driver-0"),
            scheduled="10:20:02", started="10:20:30", cpu="2", memory="4Gi"),
        job("team-b", "js-1-workers-0", "10:20:00", owner_ref=owner("JobSet", "js-1", "jobset.x-k8s.io/v1alpha2")),
        job("team-b", "js-1-driver-0", "10:20:00", owner_ref=owner("JobSet", "js-1", "jobset.x-k8s.io/v1alpha2")),
        # A pending notebook pod with no owner.
        pod("team-c", "notebook", "10:30:00", gpus=1, phase="Pending"),
        # A Job whose only pod was OOM-killed.
        pod("team-a", "oom-job-0-zz", "10:09:58", owner_ref=owner("Job", "oom-job"), scheduled="10:09:59",
            started="10:10:00", finished="10:15:00", phase="Failed", exit_code=137, reason="OOMKilled", gpus=1),
        job("team-a", "oom-job", "10:09:57", failed=1,
            conditions=[condition("Failed", "10:15:05", reason="BackoffLimitExceeded")]),
        # A pod preempted by the scheduler (DisruptionTarget condition and a Preempted event).
        pod("team-b", "victim", "10:06:00", scheduled="10:06:00", started="10:06:00", finished="10:12:00",
            phase="Failed", exit_code=137, reason="Error", gpus=2, disruption="PreemptionByScheduler"),
        # Bad rows: a running pod with no node, and a pod whose clock went backwards.
        pod("team-c", "ghost", "10:40:00", scheduled="10:40:01", started="10:40:02", node=None),
        pod("team-c", "backwards", "10:41:00", scheduled="10:41:01", started="10:50:00", finished="10:45:00",
            phase="Succeeded"),
    ]  # fmt: skip
    workloads = [
        workload("team-a", "job-train-1-3c1f2", "10:00:00", a_owner, queue="team-a-queue", count=2, gpus=4,
                 conditions=[condition("QuotaReserved", "10:02:00", reason="QuotaReserved"),
                             condition("Admitted", "10:02:00", reason="Admitted"),
                             condition("Finished", "11:00:30", reason="Succeeded", message="Job finished successfully")]),
        workload("team-b", "jobset-js-1-8a2b1", "10:05:00", owner("JobSet", "js-1", "jobset.x-k8s.io/v1alpha2"),
                 queue="team-b-queue", gpus=8, requeues=1,
                 conditions=[condition("QuotaReserved", "10:20:00", reason="QuotaReserved"),
                             condition("Evicted", "10:19:00", status="False", reason="QuotaReserved"),
                             condition("Admitted", "10:20:00")]),
    ]  # fmt: skip
    events = [
        event("Pod", "team-a", "train-1-0-abcde", "Pulled",
              'Successfully pulled image "nvcr.io/nvidia/pytorch:24.05-py3" in 1m52.5s (1m52.5s including waiting). '
              "Image size: 9876543210 bytes.", "10:03:56"),
        event("Pod", "team-a", "train-1-1-fghij", "Pulled",
              'Container image "nvcr.io/nvidia/pytorch:24.05-py3" already present on machine', "10:04:29"),
        event("Pod", "team-b", "victim", "Preempted", "Preempted by pod uid-pod-x on node gpu-node-1", "10:12:00"),
        event("Pod", "team-c", "notebook", "FailedScheduling",
              "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: "
              "1 No preemption victims found for incoming pod.", "10:30:00", count=5),
        event("Node", "default", "gpu-node-1", "NodeNotReady", "Node gpu-node-1 status is now: NodeNotReady", "10:31:00"),
    ]  # fmt: skip
    return [
        write_json(folder / "pods-jobs.json", kube_list(pods_and_jobs)),
        write_json(folder / "workloads.json", kube_list(workloads)),
        write_json(folder / "events.json", {"apiVersion": "v1", "items": events, "kind": "EventList",
                                            "metadata": {"resourceVersion": "99"}}),
        write_json(folder / "nodes.json", kube_list([node("gpu-node-1")])),
    ]  # fmt: skip
