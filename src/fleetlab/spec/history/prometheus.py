"""Kubernetes history from Prometheus over its HTTP API (``/api/v1/query_range``): kube-state-metrics and the
NVIDIA DCGM exporter.

kube-state-metrics (values are Unix seconds): ``kube_pod_created`` (submit),
``kube_pod_status_scheduled_time`` (scheduled), ``kube_pod_start_time`` (running; the kubelet's start,
before image pulls finish), ``kube_pod_completion_time`` (end); ``kube_pod_status_phase`` (outcome);
``kube_pod_owner`` and ``kube_job_owner`` (which job a pod belongs to);
``kube_pod_container_resource_requests`` (requests, summed over containers, and the node);
``kube_node_status_allocatable``, ``kube_node_labels`` and ``kube_node_created`` (nodes; a node whose
series stop before the range ends was deleted at its last sample). DCGM: ``DCGM_FI_DEV_GPU_UTIL`` (percent,
mean over samples -> ``gpu_util_mean``) and ``DCGM_FI_DEV_FB_USED`` (MiB, max -> ``gpu_mem_used_max``),
matched to pods by their ``pod``/``namespace`` labels (``exported_*`` first). The HTTP side (no redirects,
deadlines, a streamed and capped answer, a token that never appears in output, files or errors) is
:mod:`.prometheus_api`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    NodeRecord,
    SourceData,
    checked_unix,
    gpu_model_of,
    labels_json,
    short,
)
from fleetlab.spec.history.kube_pods import JobAcc, job_record
from fleetlab.spec.history.prometheus_api import (
    DEFAULT_IMPORT_DEADLINE_S,
    PrometheusClient,
)

FloatArray = NDArray[np.float64]
#: Steps one import may span (a year at the default 60 s step).
MAX_RANGE_POINTS = 600_000
#: Prometheus refuses more than 11,000 points per series; stay under it.
MAX_POINTS = 10_000
DEFAULT_STEP_S = 60.0
#: The range is read one window at a time, so one answer holds a day of series, not a month.
DEFAULT_WINDOW_S = 86400.0
TIME_METRICS = {
    "created": "kube_pod_created",
    "scheduled": "kube_pod_status_scheduled_time",
    "started": "kube_pod_start_time",
    "completed": "kube_pod_completion_time",
}
KSM_RESOURCES = {"nvidia_com_gpu": "gpus", "cpu": "cpu", "memory": "memory"}
#: kube-state-metrics writes nvidia.com/mig-3g.40gb as nvidia_com_mig_3g_40gb.
_KSM_MIG = re.compile(r"^nvidia_com_mig_([1-7])g_\d+gb$")


@dataclass(slots=True)
class PromPod:
    """One pod as kube-state-metrics and DCGM describe it."""

    namespace: str
    name: str
    times: dict[str, float] = field(default_factory=dict)
    phase: str | None = None
    phase_at: float = -math.inf  # the time of the latest sample saying ``phase``
    last_seen: float | None = None
    owner: tuple[str, str] | None = None
    requests: dict[str, float] = field(default_factory=dict)
    node: str | None = None
    util_sum: float = 0.0
    util_n: int = 0
    fb_max: float | None = None


def _pair(pair: Any, where: str) -> tuple[float, float]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise SpecError(where, [f"a sample is not [time, value]: {short(pair)}"])
    try:
        t, v = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, OverflowError):
        raise SpecError(where, [f"a sample is not numeric: {short(pair)}"]) from None
    if not math.isfinite(t):
        raise SpecError(where, [f"a sample's time is not a finite number: {short(pair)}"])
    return t, v


def _samples(values: list[Any], where: str) -> FloatArray:
    """The finite values of every sample (Prometheus writes stale markers and gaps as NaN), converted by
    numpy in one call; a sample that is not ``[time, value]`` goes through :func:`_pair` for the error."""
    try:
        pairs = np.array(values, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        pairs = np.empty((0, 0))
    if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.isfinite(pairs[:, 0]).all():
        if values:
            pairs = np.array([_pair(p, where) for p in values], dtype=np.float64)
        else:
            return np.empty(0)
    kept: FloatArray = pairs[:, 1][np.isfinite(pairs[:, 1])]
    return kept


def _last(values: list[Any], where: str) -> tuple[float, float] | None:
    """The latest sample with a finite value (most queries need only it: no list of every sample)."""
    for pair in reversed(values):
        t, v = _pair(pair, where)
        if math.isfinite(v):
            return t, v
    return None


def _pod_key(labels: dict[str, str]) -> tuple[str, str] | None:
    namespace = labels.get("exported_namespace") or labels.get("namespace")
    pod = labels.get("exported_pod") or labels.get("pod")
    return (namespace, pod) if namespace and pod else None


class PromHistory:
    """The pods, jobs and nodes of one range of Prometheus data."""

    def __init__(
        self,
        client: PrometheusClient,
        start: float,
        end: float,
        step: float,
        window: float = DEFAULT_WINDOW_S,
    ) -> None:
        self.client = client
        self.start, self.end = start, end
        self.step = max(step, math.ceil(min(window, end - start) / MAX_POINTS))
        # Whole steps per window; windows [a, a + window - step] do not share an evaluation instant.
        self.window = max(round(window / self.step), 1) * self.step
        self.data = SourceData(label=client.base, kind="prometheus", end=end)
        self.series = 0  # series read so far, all queries together (the source's row count)
        self.pods: dict[tuple[str, str], PromPod] = {}
        self.job_owner: dict[tuple[str, str], tuple[str, str]] = {}

    def pod(self, key: tuple[str, str]) -> PromPod:
        found = self.pods.get(key)
        if found is None:
            found = self.pods[key] = PromPod(key[0], key[1])
        return found

    def each(self, query: str) -> Iterator[tuple[dict[str, str], list[Any], str]]:
        """Every series of ``query`` over the range, window by window: labels, raw values, error place."""
        where = f"Prometheus {self.client.base}, query {query}"
        at = self.start
        while at <= self.end:
            last = min(at + self.window - self.step, self.end)
            for series in self.client.query_range(query, at, last, self.step):
                self.series += 1
                self.data.count_rows(self.series)
                yield series["metric"], series["values"], where
            at += self.window

    def read(self, progress: Callable[[int], None] | None = None) -> SourceData:
        steps: list[Callable[[], None]] = [self._times, self._phases, self._owners, self._requests,
                                           self._dcgm, self._nodes]  # fmt: skip
        for done, run in enumerate(steps, start=1):
            run()
            if progress is not None:
                progress(done)
        return self._finish()

    def _times(self) -> None:
        for attr, metric in TIME_METRICS.items():
            for labels, values, where in self.each(metric):
                key, sample = _pod_key(labels), _last(values, where)
                if key is None or sample is None:
                    self.data.skip(f"{metric} series without namespace/pod or samples")
                    continue
                pod = self.pod(key)
                pod.times[attr] = checked_unix(sample[1], where, f"pod {key[0]}/{key[1]}")
                pod.last_seen = sample[0] if pod.last_seen is None else max(pod.last_seen, sample[0])

    def _phases(self) -> None:
        for labels, values, where in self.each("kube_pod_status_phase == 1"):
            key = _pod_key(labels)
            sample = _last(values, where) if key in self.pods else None
            if key is None or sample is None:
                continue
            pod = self.pods[key]
            if sample[0] > pod.phase_at:
                pod.phase, pod.phase_at = labels.get("phase"), sample[0]

    def _owners(self) -> None:
        for labels, _, _ in self.each('kube_job_owner{owner_is_controller="true"}'):
            owner = (labels.get("owner_kind"), labels.get("owner_name"))
            if not (labels.get("namespace") and labels.get("job_name")):
                continue
            if owner[0] in (None, "", "<none>") or owner[1] in (None, "", "<none>"):
                self.data.skip(
                    "kube_job_owner series without owner_kind or owner_name (the Job is its own owner)"
                )
                continue
            self.job_owner[(labels["namespace"], labels["job_name"])] = (str(owner[0]), str(owner[1]))
        for labels, _, _ in self.each("kube_pod_owner"):
            key = _pod_key(labels)
            if key is None or key not in self.pods or labels.get("owner_kind") in (None, "", "<none>"):
                continue
            if labels.get("owner_is_controller") == "false" and self.pods[key].owner is not None:
                continue
            self.pods[key].owner = (labels["owner_kind"], labels.get("owner_name", key[1]))

    def _requests(self) -> None:
        query = "kube_pod_container_resource_requests"
        for labels, values, where in self.each(query):
            key = _pod_key(labels)
            raw = labels.get("resource", "")
            mig = _KSM_MIG.match(raw)
            resource = f"mig{mig.group(1)}" if mig else KSM_RESOURCES.get(raw)
            sample = _last(values, where) if key in self.pods and resource is not None else None
            if key is None or sample is None:
                continue
            pod = self.pods[key]
            name = f"{resource}:{labels.get('container', '')}"
            pod.requests[name] = max(pod.requests.get(name, 0.0), sample[1])
            if labels.get("node"):
                pod.node = labels["node"]

    def _dcgm(self) -> None:
        for labels, values, where in self.each("DCGM_FI_DEV_GPU_UTIL"):
            key = _pod_key(labels)
            if key is None or key not in self.pods:
                continue
            pod = self.pods[key]
            samples = _samples(values, where)
            pod.util_sum += float(samples.sum())
            pod.util_n += len(samples)
        for labels, values, where in self.each("DCGM_FI_DEV_FB_USED"):
            key = _pod_key(labels)
            samples = _samples(values, where) if key in self.pods else np.empty(0)
            if key is None or not len(samples):
                continue
            pod = self.pods[key]
            top = float(samples.max()) * 2**20
            pod.fb_max = top if pod.fb_max is None else max(pod.fb_max, top)

    def _nodes(self) -> None:
        nodes: dict[str, NodeRecord] = {}
        last_seen: dict[str, float] = {}
        for labels, values, where in self.each("kube_node_status_allocatable"):
            name = labels.get("node")
            sample = _last(values, where) if name else None
            if not name or sample is None:
                continue
            node = nodes.setdefault(name, NodeRecord(node=name))
            last_seen[name] = max(last_seen.get(name, sample[0]), sample[0])
            value = sample[1]
            resource = labels.get("resource")
            if not 0 <= value <= 2.0**60:
                raise SpecError(
                    where, [f"node {name}: allocatable {resource} {short(value)} is outside 0..2^60"]
                )
            if resource == "nvidia_com_gpu":
                node.gpus = int(value)
            elif resource == "cpu":
                node.cpu = value
            elif resource == "memory":
                node.memory = int(value)
        for labels, _, _ in self.each("kube_node_labels"):
            found = nodes.get(labels.get("node", ""))
            if found is None:
                continue
            node = found
            node_labels = {k[len("label_") :]: v for k, v in labels.items() if k.startswith("label_")}
            node.labels_json = labels_json(node_labels)
            node.gpu_model = gpu_model_of(node_labels.get("nvidia_com_gpu_product"))
            node.instance_type = node_labels.get("node_kubernetes_io_instance_type")
            node.zone = node_labels.get("topology_kubernetes_io_zone")
            node.capacity_type = node_labels.get("karpenter_sh_capacity_type")
            node.pool = node_labels.get("cloud_google_com_gke_nodepool") or node.instance_type
        for labels, values, where in self.each("kube_node_created"):
            found = nodes.get(labels.get("node", ""))
            sample = _last(values, where) if found is not None else None
            if found is not None and sample is not None:
                found.created = checked_unix(sample[1], where, f"node {found.node}")
        for name, seen in last_seen.items():
            if seen < self.end - 2 * self.step:  # its series stopped: the node went away
                nodes[name].deleted = seen
        self.data.nodes.extend(nodes[n] for n in sorted(nodes))

    def _finish(self) -> SourceData:
        jobs: dict[str, JobAcc] = {}
        utils: dict[str, tuple[float, int, float | None]] = {}
        for pod_key in sorted(self.pods):
            self._add(self.pods[pod_key], jobs, utils)
        models = {n.node: n.gpu_model for n in self.data.nodes}
        for job_key in sorted(jobs):
            record = job_record(jobs[job_key], models, self.data)
            if record is None:
                continue
            util_sum, util_n, fb = utils.get(job_key, (0.0, 0, None))
            record.gpu_util_mean = util_sum / util_n / 100.0 if util_n else None
            record.gpu_mem_used_max = fb
            self.data.jobs.append(record)
        return self.data

    def _add(
        self, pod: PromPod, jobs: dict[str, JobAcc], utils: dict[str, tuple[float, int, float | None]]
    ) -> None:
        created = pod.times.get("created")
        if created is None:
            self.data.skip("pod without kube_pod_created")
            return
        started, done = pod.times.get("started"), pod.times.get("completed")
        if started is not None and done is not None and done < started:
            self.data.skip("pod finished before it started (clocks went backwards)")
            return
        kind, name = pod.owner or ("Pod", pod.name)
        if kind == "Job" and (pod.namespace, name) in self.job_owner:
            kind, name = self.job_owner[(pod.namespace, name)]
        key = f"{pod.namespace}/{kind}/{name}"
        job = jobs.get(key)
        if job is None:
            job = jobs[key] = JobAcc(key=key, kind=kind, namespace=pod.namespace, name=name)
        job.take_min("created", created)
        job.take_min("scheduled", pod.times.get("scheduled"))
        job.take_min("running", started)
        job.pods_seen += 1
        gpus = sum(v for k, v in pod.requests.items() if k.startswith("gpus:"))
        job.gpus = max(job.gpus, gpus)
        cpu_milli = round(1000 * sum(v for k, v in pod.requests.items() if k.startswith("cpu:")))
        memory = int(sum(v for k, v in pod.requests.items() if k.startswith("memory:")))
        if gpus > 0 and pod.phase != "Failed":
            job.gpu_pods += 1
            job.gpu_cpu_milli = max(job.gpu_cpu_milli, cpu_milli)
            job.gpu_memory = max(job.gpu_memory, memory)
        slices = max((int(k[3]) for k, v in pod.requests.items() if k.startswith("mig") and v > 0), default=0)
        if slices and not gpus:
            job.gpu_milli = max(job.gpu_milli or 0, round(1000 * slices / 7))
        job.cpu_milli = max(job.cpu_milli, cpu_milli)
        job.memory = max(job.memory, memory)
        if pod.node:
            job.nodes.add(pod.node)
        gone = pod.last_seen is not None and pod.last_seen < self.end - 2 * self.step
        if pod.phase == "Succeeded":
            job.pods_succeeded += 1
            job.take_max("end", done if done is not None else pod.last_seen)
        elif pod.phase == "Failed":
            job.pods_failed += 1
            job.pod_failure_reason = job.pod_failure_reason or "Failed"
            job.take_max("end", done if done is not None else pod.last_seen)
        elif gone:
            job.pods_deleted += 1
            job.take_max("end", pod.last_seen)
        elif pod.phase == "Pending" or started is None:
            job.pods_waiting += 1
        else:
            job.pods_active += 1
        self.data.saw(created, started, done)
        util_sum, util_n, fb = utils.get(key, (0.0, 0, None))
        fb = pod.fb_max if fb is None else (fb if pod.fb_max is None else max(fb, pod.fb_max))
        utils[key] = (util_sum + pod.util_sum, util_n + pod.util_n, fb)


def read_prometheus(
    url: str, start: float, end: float, token: str | None = None, step_s: float = DEFAULT_STEP_S,
    timeout_s: float = 30.0, progress: Callable[[int], None] | None = None,
    window_s: float = DEFAULT_WINDOW_S, deadline_s: float = DEFAULT_IMPORT_DEADLINE_S,
) -> SourceData:  # fmt: skip
    """Pods, jobs and nodes between ``start`` and ``end`` (Unix seconds) from a Prometheus server, each
    query within ``timeout_s`` and all of them within ``deadline_s``."""
    for value, name in ((start, "--start"), (end, "--end")):
        checked_unix(value, name, "the range")
    if not end > start:
        raise SpecError("--prometheus", [f"the range must have end after start (got {start:g} .. {end:g})"])
    if not 1 <= step_s <= 86400:
        raise SpecError("--step", [f"{step_s:g}s: allowed 1s..1d"])
    if not (end - start) / step_s <= MAX_RANGE_POINTS:
        raise SpecError(
            "--prometheus",
            [f"the range holds {(end - start) / step_s:,.0f} steps of {step_s:g}s; at most "
             f"{MAX_RANGE_POINTS:,} (import a shorter range or a larger --step)"],
        )  # fmt: skip
    client = PrometheusClient(url, token, timeout_s, deadline_s)
    if not window_s >= step_s:
        raise SpecError("--prometheus", [f"the query window ({window_s:g}s) must be at least one step"])
    return PromHistory(client, start, end, step_s, window_s).read(progress)
