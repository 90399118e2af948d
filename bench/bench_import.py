"""Import speed and peak memory of ``fleetlab import`` on a synthetic month of a busy cluster.

Writes a ``kubectl get pods,jobs -A -o json`` List (4-space indented, as kubectl prints it) of --pods
finished pods in Jobs of --pods-per-job pods each, plus the Jobs, spread over 30 days on 250 8-GPU nodes
(2,000 GPUs); then imports it in a fresh process and reports wall time, peak RSS and rows.

Run: .venv/bin/python bench/bench_import.py [--pods 500000] [--pods-per-job 4] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2024, 5, 1, tzinfo=UTC)
NODES = 250


def _ts(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(i: int, job: int, t: float) -> dict[str, object]:
    name = f"train-{job}-{i % 4}-x{i:07d}"
    node = f"gke-gpu-pool-{(job * 7 + i) % NODES:04d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "creationTimestamp": _ts(t), "generateName": f"train-{job}-{i % 4}-",
            "labels": {"batch.kubernetes.io/controller-uid": f"uid-{job}", "batch.kubernetes.io/job-name": f"train-{job}",
                       "controller-uid": f"uid-{job}", "job-name": f"train-{job}", "team": f"team-{job % 12}",
                       "kueue.x-k8s.io/queue-name": f"lq-{job % 12}"},
            "name": name, "namespace": f"ns-{job % 12}",
            "ownerReferences": [{"apiVersion": "batch/v1", "blockOwnerDeletion": True, "controller": True,
                                 "kind": "Job", "name": f"train-{job}", "uid": f"uid-{job}"}],
            "resourceVersion": str(100000 + i), "uid": f"pod-uid-{i:09d}",
        },
        "spec": {
            "containers": [{"command": ["python", "train.py"], "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                            "imagePullPolicy": "IfNotPresent", "name": "trainer",
                            "resources": {"limits": {"nvidia.com/gpu": "2"},
                                          "requests": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "2"}},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                              "name": "kube-api-access", "readOnly": True}]}],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "nodeName": node,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0, "restartPolicy": "Never",
            "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "tolerationSeconds": 300},
                            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
        },
        "status": {
            "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": _ts(t + 62), "status": "False", "type": "Ready",
                 "reason": "PodCompleted"},
                {"lastProbeTime": None, "lastTransitionTime": _ts(t + 30), "status": "True", "type": "PodScheduled"},
            ],
            "containerStatuses": [{
                "containerID": f"containerd://{i:064x}", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                "imageID": "nvcr.io/nvidia/pytorch@sha256:" + "0" * 64, "lastState": {}, "name": "trainer",
                "ready": False, "restartCount": 0, "started": False,
                "state": {"terminated": {"containerID": f"containerd://{i:064x}", "exitCode": 0,
                                         "finishedAt": _ts(t + 3600 + i % 600), "reason": "Completed",
                                         "startedAt": _ts(t + 60)}},
            }],
            "hostIP": "10.0.0.1", "phase": "Succeeded", "podIP": "10.4.0.1", "qosClass": "Burstable",
            "startTime": _ts(t + 30),
        },
    }  # fmt: skip


def _job(job: int, t: float, pods: int) -> dict[str, object]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"creationTimestamp": _ts(t - 5), "name": f"train-{job}", "namespace": f"ns-{job % 12}",
                     "uid": f"uid-{job}", "labels": {"team": f"team-{job % 12}"}},
        "spec": {"backoffLimit": 0, "completions": pods, "parallelism": pods,
                 "template": {"spec": {"containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                                       "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
                                       "restartPolicy": "Never"}}},
        "status": {"completionTime": _ts(t + 4300), "succeeded": pods,
                   "conditions": [{"lastProbeTime": _ts(t + 4300), "lastTransitionTime": _ts(t + 4300),
                                   "status": "True", "type": "Complete"}]},
    }  # fmt: skip


def _template(item: dict[str, object]) -> str:
    """The item as kubectl prints it inside a List (indented by 8), with %(...)s placeholders kept."""
    return "        " + json.dumps(item, indent=4).replace("\n", "\n        ")


def write_history(path: Path, pods: int, per_job: int) -> None:
    """A kubectl List of ``pods`` pods and their Jobs, streamed to disk from one template per kind (the
    names, nodes and times vary per item)."""
    jobs = (pods + per_job - 1) // per_job
    month = 30 * 86400
    pod_text = _template(_pod(0, 0, 0.0))
    job_text = _template(_job(0, 0.0, per_job))
    swaps = {"train-0-0-x0000000": "%(name)s", "train-0-": "train-%(job)d-", "train-0": "train-%(job)d",
             "uid-0": "uid-%(job)d", "team-0": "team-%(team)d", "lq-0": "lq-%(team)d", "ns-0": "ns-%(team)d",
             "pod-uid-000000000": "pod-uid-%(i)09d", "gke-gpu-pool-0000": "gke-gpu-pool-%(node)04d",
             _ts(0): "%(t0)s", _ts(30): "%(t30)s", _ts(60): "%(t60)s", _ts(62): "%(t62)s", _ts(3600): "%(tend)s",
             _ts(-5): "%(tm5)s", _ts(4300): "%(tdone)s"}  # fmt: skip
    pod_text = pod_text.replace("%", "%%")
    job_text = job_text.replace("%", "%%")
    for old, new in swaps.items():
        pod_text = pod_text.replace(old, new)
        job_text = job_text.replace(old, new)
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{\n    "apiVersion": "v1",\n    "items": [\n')
        for i in range(pods):
            job = i // per_job
            t = int(job * month / jobs)
            fh.write(("" if i == 0 else ",\n") + pod_text % {
                "name": f"train-{job}-{i % 4}-x{i:07d}", "job": job, "team": job % 12, "i": i,
                "node": (job * 7 + i) % NODES, "t0": _ts(t), "t30": _ts(t + 30), "t60": _ts(t + 60),
                "t62": _ts(t + 62), "tend": _ts(t + 3600 + i % 600)})  # fmt: skip
        for job in range(jobs):
            t = int(job * month / jobs)
            fh.write(
                ",\n" + job_text % {"job": job, "team": job % 12, "tm5": _ts(t - 5), "tdone": _ts(t + 4300)}
            )
        fh.write(
            '\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n'
        )


CHILD = """
import json, resource, sys, time
from pathlib import Path
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.store import write_history
t = time.perf_counter()
history = import_sources(["kubectl:" + sys.argv[1]])
read_s = time.perf_counter() - t
write_history(history, Path(sys.argv[2]))
print(json.dumps({"read_s": read_s, "total_s": time.perf_counter() - t, "jobs": history.jobs.num_rows,
                  "states": dict(zip(*__import__("numpy").unique(history.jobs.column("state").to_numpy(zero_copy_only=False), return_counts=True))),
                  "skipped": history.skipped,
                  "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, default=int))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=500_000)
    parser.add_argument("--pods-per-job", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="write the synthetic history here and keep it")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-import-"))
    source = args.keep or folder / "pods-jobs.json"
    t = time.perf_counter()
    write_history(source, args.pods, args.pods_per_job)
    size_mib = source.stat().st_size / 2**20
    print(
        f"wrote {args.pods} pods in {args.pods // args.pods_per_job} Jobs: {size_mib:.0f} MiB in {time.perf_counter() - t:.1f} s"
    )
    result = subprocess.run([sys.executable, "-c", CHILD, str(source), str(folder / "out")], capture_output=True,
                            text=True, check=False)  # fmt: skip
    if result.returncode != 0:
        sys.exit(result.stderr)
    figures = json.loads(result.stdout)
    print(f"import: read {figures['read_s']:.1f} s, read + write {figures['total_s']:.1f} s "
          f"({args.pods / figures['read_s']:,.0f} pods/s, {size_mib / figures['read_s']:.0f} MiB/s), "
          f"CPU {figures['cpu_s']:.1f} s, peak RSS {figures['peak_rss_mib']:.0f} MiB; {figures['jobs']} jobs {figures['states']}, "
          f"skipped {figures['skipped']}")  # fmt: skip
    print(
        f"max RSS of this process (generator): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    if args.keep is None:
        source.unlink()
    for leftover in sorted(folder.glob("**/*"), reverse=True):
        leftover.unlink() if leftover.is_file() else leftover.rmdir()
    os.rmdir(folder)


if __name__ == "__main__":
    main()
