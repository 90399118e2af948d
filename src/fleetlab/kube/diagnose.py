"""Why GPU pods are not running, staged as an operator checks: GPUs advertised, pods placed, pods started.

Stage (b) runs the simulator's own filter plugins against the snapshot, so the per-node reasons and the
``0/N nodes are available: ...`` line are those kube-scheduler writes into the FailedScheduling event,
and the shortage/fragmentation verdict is the one the simulator reports for its pending jobs. On top,
it says what kube-scheduler cannot: which rule (taint, selector, cordon, NotReady), which missing
device plugin or which volume is the real block, and whether a gang waits for its siblings. Pending pods
are judged together, in the scheduler's queue order, each after the ones ahead of it are placed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from fleetlab.kube.cluster import LiveCluster, pod_spec
from fleetlab.kube.events import PodEvent, pod_events
from fleetlab.kube.gpu_nodes import (
    GFD_LABELS,
    GpuNode,
    allocated_by_node,
    cloud_gpu_machine,
    gpu_node_report,
    schedulable,
    unknown_products,
)
from fleetlab.kube.preemption_check import PreemptionCheck
from fleetlab.kube.queue_order import JointPlacer, queue_key
from fleetlab.kube.queues import KueueView, QueuedWorkload, queued_workloads
from fleetlab.kube.starting import StartingPod, diagnose_starting, seconds_between
from fleetlab.kube.storage import StorageView, storage_block
from fleetlab.kube.verdicts import NodeGroup, Verdicts, per_node_verdicts, rule_block
from fleetlab.model.resources import GPU, format_amount, is_extended
from fleetlab.placement.dra.verdict import dra_block
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.state import BoolArray
from fleetlab.sim.pending import classify_blamed, classify_gang
from fleetlab.spec.kube_snapshot import KubeNode, KubePod

#: What the gang verdict says when every waiting pod of the group fits at once.
GANG_READY = "room for all of them exists"
#: Verdicts where evicting lower-priority pods could make room (capacity, not rules, is short).
PREEMPTION_MAY_HELP = frozenset({"shortage", "fragmentation", "gang", "queued-behind"})


@dataclass
class PendingPod:
    """Stage (b): an unbound Pending pod, the scheduler's message and the verdict behind it."""

    pod: str
    requests: dict[str, str]
    message: str
    blocked_by: str
    detail: str
    waiting_s: float | None
    #: Nodes grouped by verdict (first failing filter and its reasons), largest group first.
    nodes: list[NodeGroup] = field(default_factory=list)
    #: What the cluster last said (FailedScheduling event, else the PodScheduled condition message).
    reported: str = ""
    #: DefaultPreemption's dry run over the snapshot: who would be evicted, or why nobody.
    preemption: str = ""
    #: 1-based place in kube-scheduler's queue (priority, then creation) among the pending pods.
    queue_position: int = 0
    #: Where the joint pass placed the pod (it fits once the pods ahead of it are placed), if anywhere.
    placed_on: str | None = None
    #: When a rule keeps the pod off nodes with room (the headline), what capacity alone says on the nodes
    #: the pod may use: "shortage" or "fragmentation" ("" otherwise).
    capacity_verdict: str = ""


@dataclass
class Diagnosis:
    """The three stages, plus the moment durations are measured against."""

    now: str | None
    nodes: int
    #: nvidia.com/gpu summed over all nodes: allocatable (healthy), on schedulable nodes, capacity
    #: (advertised), requested by bound running pods, and free (allocatable minus allocated, per node).
    gpus_allocatable: int
    gpus_schedulable: int
    gpu_nodes: list[GpuNode]
    pending: list[PendingPod]
    starting: list[StartingPod]
    notes: list[str]
    #: Kueue Workloads not admitted (only when Kueue objects were given).
    workloads: list[QueuedWorkload] = field(default_factory=list)
    gpus_advertised: int = 0
    gpus_allocated: int = 0
    gpus_free: int = 0

    @property
    def anything_pending(self) -> bool:
        """Whether any pod waits (unplaced or not yet running): exit status 1."""
        return bool(self.pending or self.starting or self.workloads)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def _advertised_anywhere(live: LiveCluster, name: str) -> bool:
    """Whether some node has ``name`` in allocatable (one column of the placement state)."""
    col = live.state.column.get(name)
    return col is not None and bool((live.state.allocatable[:, col] > 0).any())


def _not_advertised(live: LiveCluster, pod: KubePod) -> tuple[str, str] | None:
    """A requested extended resource that no node offers at all (device plugin missing, MIG layout)."""
    for name, amount in sorted(pod.requests.items()):
        if amount <= 0 or not is_extended(name) or _advertised_anywhere(live, name):
            continue
        capacity = [n.name for n in live.snapshot.nodes if n.capacity.get(name, 0) > 0]
        machines = [n.name for n in live.snapshot.nodes if _unplugged_gpu_machine(n)]
        if capacity:
            why = f"{len(capacity)} node(s) have it in capacity but 0 allocatable (unhealthy devices)"
        elif machines and name.startswith("nvidia.com/"):
            shown = ", ".join(machines[:3]) + (f" and {len(machines) - 3} more" if len(machines) > 3 else "")
            why = (
                f"{len(machines)} GPU machine(s) run no NVIDIA device plugin (or driver): {shown}; "
                "install or fix it there"
            )
        else:
            why = (
                "no node has it even in capacity (device plugin not running, or a different MIG/sharing "
                "resource name is advertised)"
            )
        return "not-advertised", f"no node advertises {name}: {why}"
    return None


def _unplugged_gpu_machine(node: KubeNode) -> bool:
    """A node its cloud or NFD calls a GPU machine that advertises no ``nvidia.com/*`` resource."""
    if any(r.startswith("nvidia.com/") for r in (*node.allocatable, *node.capacity)):
        return False
    return cloud_gpu_machine(node) is not None or any(k in node.labels for k in GFD_LABELS)


def _selector_detail(live: LiveCluster, pod: KubePod) -> str:
    """Which nodeSelector pair matches no node, and the values the cluster does have for that key."""
    parts: list[str] = []
    for key, value in pod.node_selector:
        values = sorted({n.labels[key] for n in live.snapshot.nodes if key in n.labels})
        if value not in values:
            have = ", ".join(values[:6]) if values else "no node has this label"
            parts.append(f"nodeSelector {key}={value} matches no node (values present: {have})")
    return "; ".join(parts)


def _gang(live: LiveCluster, pod: KubePod, spec: PodSpec, siblings: list[KubePod]) -> tuple[str, str] | None:
    alive = [p for p in siblings if not p.terminated]
    if pod.group_size is not None and len(alive) < pod.group_size:
        return "gang", (
            f"pod group {pod.group}: {len(alive)} of {pod.group_size} pods exist; "
            "the rest are not created yet"
        )
    waiting = [p for p in alive if p.node_name is None and p.phase == "Pending"]
    if len(waiting) > 1:
        verdict = classify_gang(live.scheduler, spec, len(waiting))
        if verdict is not None:
            return verdict[0], f"pod group {pod.group}: {verdict[1]}"
        return "gang", (
            f"pod group {pod.group}: {len(waiting)} pods pending; {GANG_READY}, so the gang "
            "scheduler (or Kueue) has not released them yet"
        )
    return None


@dataclass
class _Placement:
    """What placement says about one pod spec (shared by every pod of that spec)."""

    message: str
    verdicts: Verdicts
    blocked_by: str
    detail: str
    capacity_verdict: str = ""


class PlacementCache:
    """Placement verdicts per pod spec, kept across the joint pass's binds while no bind lands on a node
    the spec may use: a bind elsewhere changes nothing the verdict reads (statically ineligible nodes
    report their static filter; capacity is read on eligible nodes only). Specs whose verdict depends on
    other pods (spread, inter-pod affinity) are recomputed after any bind."""

    # "may use": passes the static filters ahead of NodeResourcesFit (see _eligible)

    def __init__(self, live: LiveCluster) -> None:
        self.live = live
        self.entries: dict[PodSpec, tuple[_Placement, int]] = {}
        self.binds: list[int] = []

    def get(self, spec: PodSpec) -> _Placement | None:
        found = self.entries.get(spec)
        if found is None:
            return None
        placement, mark = found
        since = self.binds[mark:]
        if since and (spec.pod_dependent or self._eligible(spec)[since].any()):
            return None
        return placement

    def put(self, spec: PodSpec, placement: _Placement) -> None:
        self.entries[spec] = (placement, len(self.binds))

    def bound(self, nodes: list[str]) -> None:
        """The joint pass bound pods to these nodes."""
        self.binds += [self.live.index[n] for n in nodes]

    def _eligible(self, spec: PodSpec) -> BoolArray:
        """Nodes passing the static filters that run before the first capacity filter: the others
        report a static reason whatever their free capacity."""
        scheduler, state = self.live.scheduler, self.live.state
        compiled = scheduler.compile(spec)
        mask = state.ready.copy()
        for plugin in scheduler.filters:
            if not plugin.static:
                break
            mask &= plugin.passes(state, compiled)
        return mask


def _placement(live: LiveCluster, pod: KubePod, spec: PodSpec) -> _Placement:
    scheduler = live.scheduler
    compiled = scheduler.compile(spec)
    verdicts = per_node_verdicts(scheduler, compiled)
    # Free room a rule keeps away is the rule's doing: the constraint whose removal opens room.
    blocked_by, detail, capacity = classify_blamed(scheduler, spec)
    if blocked_by in ("constraints", "too-large"):
        ruled = rule_block(scheduler, compiled, verdicts)
        if ruled is not None:
            blocked_by, detail = ruled
            nowhere = _selector_detail(live, pod)
            if nowhere:  # a selector no node satisfies must change whatever else does
                blocked_by, detail = "selector/affinity", f"{nowhere}; {detail}"
    first = [scheduler.filters[i].name if i >= 0 else None for i in verdicts.first_failing.tolist()]
    claimed = dra_block(scheduler, compiled, first)
    if claimed is not None:
        blocked_by, detail = claimed
    missing = _not_advertised(live, pod)
    if missing is not None:
        blocked_by, detail = missing
    if any(g.fits for g in verdicts.groups):
        message = "a node fits now: the scheduler has not run for this pod yet, or it uses another scheduler"
    else:
        message = scheduler.explain(compiled).message
    return _Placement(message, verdicts, blocked_by, detail, capacity)


def diagnose_pending(
    live: LiveCluster,
    pod: KubePod,
    siblings: list[KubePod],
    now: datetime | None,
    cache: PlacementCache | None = None,
) -> PendingPod:
    """The scheduler's message for one unbound pod and what really blocks it (``cache`` per pod spec)."""
    spec = pod_spec(pod)
    placed = cache.get(spec) if cache is not None else None
    if placed is None:
        placed = _placement(live, pod, spec)
        if cache is not None:
            cache.put(spec, placed)
    blocked_by, detail, message = placed.blocked_by, placed.detail, placed.message
    if pod.gates:
        blocked_by = "gated"
        detail = f"schedulingGates {', '.join(pod.gates)}: the scheduler does not try the pod until removed"
        if any(g.startswith("kueue.x-k8s.io/") for g in pod.gates):
            detail += " (Kueue removes its gate once the workload is admitted)"
    elif pod.group is not None and blocked_by == "none":
        gang = _gang(live, pod, spec, siblings)
        if gang is not None:
            blocked_by, detail = gang
            message = f"pod group {pod.group}: its pods wait for room to start together"
    return PendingPod(
        pod=pod.key,
        requests=_requests(pod),
        message=message,
        blocked_by=blocked_by,
        detail=detail,
        waiting_s=_waiting(pod, now),
        nodes=placed.verdicts.groups,
        capacity_verdict=placed.capacity_verdict if blocked_by == placed.blocked_by else "",
    )


def _requests(pod: KubePod) -> dict[str, str]:
    return {k: format_amount(k, v) for k, v in sorted(pod.requests.items())}


def _waiting(pod: KubePod, now: datetime | None) -> float | None:
    """Seconds since the pod was created (or since its PodScheduled condition, without a creation time)."""
    scheduled = pod.conditions.get("PodScheduled")
    return seconds_between(now, pod.created or (scheduled[2] if scheduled is not None else None))


def _reported(pod: KubePod, events: dict[str, PodEvent]) -> str:
    event = events.get("FailedScheduling")
    if event is not None:
        return event.message
    return pod.scheduling_message


def _kueue_block(pod: KubePod, by_owner: dict[str, QueuedWorkload]) -> tuple[str, str] | None:
    """A pod whose Workload Kueue has not admitted waits for Kueue, whatever the nodes look like."""
    queued = by_owner.get(pod.uid) or (by_owner.get(pod.owner_uid) if pod.owner_uid else None)
    if queued is None:
        return None
    kind = "kueue-quota" if queued.verdict.startswith("quota:") else "kueue"
    said = f" (Kueue: {queued.message})" if queued.message else ""
    return kind, f"Workload {queued.workload} not admitted: {queued.verdict}{said}"


def _starting(
    live: LiveCluster, pod: KubePod, now: datetime | None, events: dict[str, PodEvent]
) -> StartingPod:
    """Stage (c) for one pod; a pod bound to a NotReady node waits for the kubelet, whatever else it shows."""
    entry = diagnose_starting(pod, now, events)
    row = live.index.get(pod.node_name or "")
    node = live.snapshot.nodes[row] if row is not None else None
    if node is not None and node.ready != "True":
        entry.stage = "node NotReady"
        entry.reason = f"the kubelet on {node.name} is not reporting (Ready={node.ready}); {entry.reason}"
    return entry


def _pending_notes(pod: KubePod, entry: PendingPod) -> list[str]:
    """What the reader should know before trusting the verdict: another scheduler, a stale message."""
    notes: list[str] = []
    if pod.scheduler_name != "default-scheduler":
        notes.append(f"{pod.key} uses schedulerName {pod.scheduler_name}; checked against the defaults")
    if entry.reported.startswith("0/") and not entry.reported.startswith(entry.message):
        notes.append(
            f"{pod.key}: the cluster last reported {entry.reported!r}; the snapshot gives "
            f"{entry.message!r} (the cluster changed since, or a filter fleetlab does not model "
            "blocks it: volumes, host ports)"
        )
    return notes


def _storage(live: LiveCluster, pod: KubePod, entry: PendingPod, view: StorageView) -> bool:
    """Whether the pod's volumes keep it out (the verdict becomes ``storage``); when something else
    blocks it too, the volume problem is appended to the detail."""
    found = storage_block(live, pod, view, entry.reported) if pod.claims else None
    if found is None:
        return False
    if entry.blocked_by != "none":
        entry.detail += f"; also: {found[1]}"
        return False
    entry.blocked_by, entry.detail = found
    entry.message = "no node with room passes kube-scheduler's volume filters (VolumeBinding, VolumeZone)"
    return True


def _joint(placer: JointPlacer, pod: KubePod, entry: PendingPod, siblings: list[KubePod]) -> dict[str, str]:
    """Place a pod (or its whole gang) that fits in queue order: pod key -> node of what was bound; or
    say which pods ahead of it in the queue took the room it would have had."""
    if entry.blocked_by == "gang" and GANG_READY in entry.detail and not pod.gates:
        waiting = [p for p in siblings if p.node_name is None and p.phase == "Pending" and not p.gates]
        placed = placer.place_all(sorted(waiting, key=queue_key))
        if placed is not None:
            entry.placed_on = placed[pod.key]
            shown = ", ".join(f"{k} -> {n}" for k, n in list(placed.items())[:4])
            more = f" and {len(placed) - 4} more" if len(placed) > 4 else ""
            entry.detail += f"; placed together in queue order: {shown}{more}"
        return placed or {}
    if entry.blocked_by == "none" and not pod.gates and pod.group is None:
        node = placer.place(pod)
        if node is None:
            return {}
        entry.placed_on = node
        entry.detail = (
            f"in queue order (position {entry.queue_position}) the scheduler would bind it to {node}"
        )
        return {pod.key: node}
    if entry.blocked_by in ("shortage", "fragmentation") and placer.bound:
        taken = placer.taken_by(pod)
        if taken:
            shown = ", ".join(taken[:4]) + (f" and {len(taken) - 4} more" if len(taken) > 4 else "")
            entry.blocked_by = "queued-behind"
            entry.detail = (
                f"the cluster has room for it alone, but {len(taken)} pending pod(s) ahead of it in the "
                f"scheduling queue (higher priority, or equal and created earlier) take it: {shown}; "
                f"after them: {entry.detail}"
            )
    return {}


def diagnose(live: LiveCluster, now: datetime | None) -> Diagnosis:
    """All three stages over the snapshot: pending pods in scheduling-queue order, each judged after the
    ones ahead of it are placed (see ``queue_order``; those binds stay in ``live.state``, so build a fresh
    LiveCluster to diagnose again); bound pods and nodes by name."""
    snapshot = live.snapshot
    used = allocated_by_node(snapshot.pods)
    gpu_nodes = [r for r in (gpu_node_report(n, used.get(n.name)) for n in snapshot.nodes) if r is not None]
    gpu_nodes.sort(key=lambda r: r.node)
    on_schedulable = sum(n.allocatable.get(GPU, 0) for n in snapshot.nodes if schedulable(n))
    groups: dict[tuple[str, str], list[KubePod]] = {}
    for pod in snapshot.pods:
        if pod.group is not None:
            groups.setdefault((pod.namespace, pod.group), []).append(pod)
    pending: list[PendingPod] = []
    starting: list[StartingPod] = []
    notes: list[str] = []
    workloads = queued_workloads(KueueView(snapshot.queue_objects)) if snapshot.queue_objects else []
    by_owner = {uid: w for w in workloads for uid in w.owners}
    events = pod_events(snapshot.events)
    placements = PlacementCache(live)
    preemption: PreemptionCheck | None = None
    placer = JointPlacer(live)
    storage = StorageView(snapshot.storage_objects)
    active = [p for p in snapshot.pods if not p.terminated and p.phase == "Pending"]
    gang_placed: dict[str, tuple[str, PendingPod]] = {}  # pod key -> (node, the gang's first entry)
    for pod in sorted((p for p in active if p.node_name is None), key=queue_key):
        siblings = groups.get((pod.namespace, pod.group), []) if pod.group else []
        if pod.key in gang_placed:  # bound with its gang when the gang's first pod came up
            node, first = gang_placed[pod.key]
            entry = replace(first, pod=pod.key, requests=_requests(pod), waiting_s=_waiting(pod, now))
            entry.placed_on, entry.preemption = node, ""
        else:
            entry = diagnose_pending(live, pod, siblings, now, placements)
        entry.queue_position = len(pending) + 1
        entry.reported = _reported(pod, events.get(pod.key, {}))
        kueue = _kueue_block(pod, by_owner)
        if kueue is not None:
            entry.blocked_by, entry.detail = kueue
        elif entry.placed_on is None and not _storage(live, pod, entry, storage):
            placed = _joint(placer, pod, entry, siblings)
            if placed:
                placements.bound(list(placed.values()))  # verdicts of specs that may use them go stale
                gang_placed.update({k: (n, entry) for k, n in placed.items() if k != pod.key})
        may_help = entry.blocked_by in PREEMPTION_MAY_HELP or entry.capacity_verdict in PREEMPTION_MAY_HELP
        if may_help and entry.placed_on is None:
            preemption = preemption or PreemptionCheck(live)
            entry.preemption = preemption.verdict(pod)
        if pod.nominated_node is not None:
            entry.preemption = (
                f"nominated to node {pod.nominated_node}: preemption is under way, the pod waits for "
                "its victims to terminate"
            )
        notes.extend(_pending_notes(pod, entry))
        pending.append(entry)
    for pod in sorted((p for p in active if p.node_name is not None), key=lambda p: p.key):
        starting.append(_starting(live, pod, now, events.get(pod.key, {})))
    for orphan in live.orphans:
        notes.append(f"{orphan.key} is bound to node {orphan.node_name}, which is not in the snapshot")
    for name in live.implied:
        notes.append(
            f"node {name} is NotReady but has no not-ready/unreachable taint yet; treated as tainted "
            "(the node lifecycle controller adds it within seconds)"
        )
    notes.extend(unknown_products(gpu_nodes))
    total = int(np.sum([n.allocatable.get(GPU, 0) for n in snapshot.nodes]))
    gpu_rows = [row for r in gpu_nodes for row in r.resources if row.resource == GPU]
    if not any(r.gpus_allocatable for r in gpu_nodes) and not any(r.other_gpu_resources for r in gpu_nodes):
        notes.append("no node advertises nvidia.com/gpu: GPU pods cannot be placed anywhere")
    return Diagnosis(
        now=now.isoformat().replace("+00:00", "Z") if now else None,
        nodes=len(snapshot.nodes),
        gpus_allocatable=total,
        gpus_schedulable=on_schedulable,
        gpu_nodes=gpu_nodes,
        pending=pending,
        starting=starting,
        notes=notes,
        workloads=workloads,
        gpus_advertised=sum(row.advertised for row in gpu_rows),
        gpus_allocated=sum(row.allocated for row in gpu_rows),
        gpus_free=sum(row.free for row in gpu_rows),
    )
