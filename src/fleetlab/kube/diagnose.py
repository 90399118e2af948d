"""Why GPU pods are not running, staged as an operator checks: GPUs advertised, pods placed, pods started.

Stage (b) runs the simulator's own filter plugins against the snapshot, so the per-node reasons and the
``0/N nodes are available: ...`` line are those kube-scheduler writes into the FailedScheduling event,
and the shortage/fragmentation verdict is the one the simulator reports for its pending jobs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from fleetlab.kube.cluster import LiveCluster, pod_spec
from fleetlab.model.resources import GPU, format_amount
from fleetlab.sim.pending import classify
from fleetlab.spec.kube_snapshot import KubeNode, KubePod

NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
GPU_LABEL_HINTS = ("nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count")
#: What each filter plugin's failures mean to an operator.
PLUGIN_BLOCK = {
    "NodeUnschedulable": "cordon",
    "TaintToleration": "taint",
    "NodeAffinity": "selector/affinity",
    "NodeResourcesFit": "resources",
}


@dataclass
class GpuNode:
    """Stage (a): one node that has, or should have, GPUs, and what stops it offering them."""

    node: str
    product: str | None
    gpus_allocatable: int
    gpus_capacity: int
    other_gpu_resources: dict[str, int]
    ready: str
    unschedulable: bool
    problems: list[str]


@dataclass
class NodeVerdict:
    """Stage (b): one node's filter result for one pod."""

    node: str
    fits: bool
    plugin: str | None
    reasons: list[str]


@dataclass
class PendingPod:
    """Stage (b): an unbound Pending pod, the scheduler's message and the verdict behind it."""

    pod: str
    requests: dict[str, str]
    message: str
    blocked_by: str
    detail: str
    constraints: list[str]
    nodes: list[NodeVerdict] = field(default_factory=list)


@dataclass
class StartingPod:
    """Stage (c): a pod bound to a node but not Running: where it is stuck and for how long."""

    pod: str
    node: str
    stage: str
    reason: str
    waiting_s: float | None


@dataclass
class Diagnosis:
    """The three stages, plus the moment durations are measured against."""

    now: str | None
    nodes: int
    gpus_allocatable: int
    gpus_schedulable: int
    gpu_nodes: list[GpuNode]
    pending: list[PendingPod]
    starting: list[StartingPod]
    notes: list[str]

    @property
    def anything_pending(self) -> bool:
        """Whether any pod waits (unplaced or not yet running): exit status 1."""
        return bool(self.pending or self.starting)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def _gpu_resources(node: KubeNode) -> dict[str, int]:
    return {
        name: amount
        for name, amount in node.allocatable.items()
        if name.startswith("nvidia.com/") and name != GPU
    }


def gpu_node_report(node: KubeNode) -> GpuNode | None:
    """What keeps a GPU node's GPUs from the scheduler, or None for a node with no sign of GPUs."""
    alloc = node.allocatable.get(GPU, 0)
    cap = node.capacity.get(GPU, 0)
    others = _gpu_resources(node)
    labelled = any(k in node.labels for k in GPU_LABEL_HINTS)
    if not (alloc or cap or others or labelled or GPU in node.allocatable):
        return None
    problems: list[str] = []
    if GPU not in node.allocatable and GPU not in node.capacity and not others:
        problems.append(
            "GPU labels but no nvidia.com/gpu resource: the NVIDIA device plugin is not running here"
        )
    elif alloc == 0 and not others:
        if cap > 0:
            problems.append(
                f"nvidia.com/gpu allocatable 0 of capacity {cap}: the device plugin marked the GPUs "
                "unhealthy (XID / driver fault); check `nvidia-smi` and the device-plugin log"
            )
        else:
            problems.append("advertises nvidia.com/gpu: 0 (driver not loaded or device plugin found no GPU)")
    elif alloc < cap:
        problems.append(f"{cap - alloc} of {cap} GPUs unhealthy (allocatable {alloc} < capacity {cap})")
    if node.ready != "True":
        problems.append(f"NotReady (Ready={node.ready}): the kubelet is not reporting")
    if node.unschedulable:
        problems.append("cordoned (spec.unschedulable): new pods are not placed here")
    return GpuNode(
        node=node.name,
        product=node.labels.get("nvidia.com/gpu.product"),
        gpus_allocatable=alloc,
        gpus_capacity=cap,
        other_gpu_resources=others,
        ready=node.ready,
        unschedulable=node.unschedulable,
        problems=problems,
    )


def _schedulable(node: KubeNode) -> bool:
    untainted = not any(t.key in NOT_READY_TAINTS and t.effect != "PreferNoSchedule" for t in node.taints)
    return node.ready == "True" and not node.unschedulable and untainted


def per_node_verdicts(live: LiveCluster, pod: KubePod) -> list[NodeVerdict]:
    """Each node's first failing filter (kube-scheduler stops at the first), with its reason strings."""
    scheduler, state = live.scheduler, live.state
    compiled = scheduler.compile(pod_spec(pod))
    passes = [(plugin, plugin.passes(state, compiled)) for plugin in scheduler.filters]
    out: list[NodeVerdict] = []
    for i, name in enumerate(state.node_names):
        verdict = NodeVerdict(name, True, None, [])
        for plugin, mask in passes:
            if not mask[i]:
                only = np.zeros(state.n, dtype=bool)
                only[i] = True
                failure = plugin.failure(state, compiled, only)
                verdict = NodeVerdict(name, False, plugin.name, sorted(failure.reasons))
                break
        out.append(verdict)
    return out


def diagnose_pending(live: LiveCluster, pod: KubePod) -> PendingPod:
    """The scheduler's message for one unbound pod and whether shortage, fragmentation or a rule blocks it."""
    scheduler = live.scheduler
    spec = pod_spec(pod)
    error = scheduler.explain(scheduler.compile(spec))
    blocked_by, detail = classify(scheduler, spec)
    constraints = sorted(
        {PLUGIN_BLOCK.get(f.plugin, f.plugin) for f in error.failures if f.plugin != "NodeResourcesFit"}
    )
    message = error.message
    if blocked_by == "none":
        message = "a node fits now: the scheduler has not run for this pod yet, or it uses another scheduler"
    return PendingPod(
        pod=pod.key,
        requests={k: format_amount(k, v) for k, v in sorted(pod.requests.items())},
        message=message,
        blocked_by=blocked_by,
        detail=detail,
        constraints=constraints,
        nodes=per_node_verdicts(live, pod),
    )


def _since(now: datetime | None, then: datetime | None) -> float | None:
    if now is None or then is None:
        return None
    return max(0.0, (now - then).total_seconds())


IMAGE_PULL_FAILING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})


def diagnose_starting(pod: KubePod, now: datetime | None) -> StartingPod:
    """Where a bound pod stands: initialising, pulling its image, failing the pull, or waiting."""
    scheduled = pod.conditions.get("PodScheduled")
    since = scheduled[2] if scheduled and scheduled[0] == "True" else pod.created
    init_pending = [c for c in pod.container_states if c.init and c.state != "terminated"]
    waiting = [c for c in pod.container_states if not c.init and c.state == "waiting"]
    stage, reason = "waiting", "no container status reported yet (kubelet has not started the pod)"
    failed_pull = next((c for c in pod.container_states if c.reason in IMAGE_PULL_FAILING), None)
    if failed_pull is not None:
        stage, reason = "image pull failing", f"{failed_pull.name}: {failed_pull.reason}"
    elif init_pending:
        c = init_pending[0]
        stage = "initialising"
        reason = f"init container {c.name} {c.state}" + (f" ({c.reason})" if c.reason else "")
        if c.state == "running":
            since = c.since or since
    elif waiting:
        c = waiting[0]
        if c.reason in ("ContainerCreating", "PodInitializing", ""):
            stage = "pulling image / creating"
            reason = f"{c.name}: {c.reason or 'waiting'} (image pull or volume mount in progress)"
        else:
            reason = f"{c.name}: {c.reason}"
    return StartingPod(pod.key, pod.node_name or "", stage, reason, _since(now, since))


def diagnose(live: LiveCluster, now: datetime | None) -> Diagnosis:
    """All three stages over the snapshot, in a stable order (nodes and pods by name)."""
    snapshot = live.snapshot
    gpu_nodes = [r for r in (gpu_node_report(n) for n in snapshot.nodes) if r is not None]
    gpu_nodes.sort(key=lambda r: r.node)
    schedulable = sum(n.allocatable.get(GPU, 0) for n in snapshot.nodes if _schedulable(n))
    pending: list[PendingPod] = []
    starting: list[StartingPod] = []
    notes: list[str] = []
    for pod in sorted(snapshot.pods, key=lambda p: p.key):
        if pod.terminated or pod.phase != "Pending":
            continue
        if pod.node_name is None:
            pending.append(diagnose_pending(live, pod))
            if pod.scheduler_name != "default-scheduler":
                notes.append(
                    f"{pod.key} uses schedulerName {pod.scheduler_name}; checked against the defaults"
                )
        else:
            starting.append(diagnose_starting(pod, now))
    for orphan in live.orphans:
        notes.append(f"{orphan.key} is bound to node {orphan.node_name}, which is not in the snapshot")
    total = sum(n.allocatable.get(GPU, 0) for n in snapshot.nodes)
    if not any(r.gpus_allocatable for r in gpu_nodes) and not any(r.other_gpu_resources for r in gpu_nodes):
        notes.append("no node advertises nvidia.com/gpu: GPU pods cannot be placed anywhere")
    return Diagnosis(
        now=now.isoformat().replace("+00:00", "Z") if now else None,
        nodes=len(snapshot.nodes),
        gpus_allocatable=total,
        gpus_schedulable=schedulable,
        gpu_nodes=gpu_nodes,
        pending=pending,
        starting=starting,
        notes=notes,
    )
