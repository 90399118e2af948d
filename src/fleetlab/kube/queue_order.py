"""The pending set judged together, as kube-scheduler would place it: one pod at a time, in queue order.

kube-scheduler's default QueueSort plugin (PrioritySort) pops the pod with the highest priority first and,
among equals, the one that entered the queue first (creation time here). Each pod that fits is bound on a
working copy of the snapshot's placement state with the simulator's own ``Scheduler.select`` (filters,
scores, tie-break), so the next pod sees the room the earlier ones took (and, where spread or inter-pod
rules count pods, the earlier pods themselves): three pods asking for
``nvidia.com/mig-1g.12gb`` on a node with two free give two placements and one pod that waits, not three
"a node fits now". A gang whose waiting pods all fit is bound whole (all or nothing) when its first pod
comes up; gated pods and pods whose Kueue Workload is not admitted are not bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from fleetlab.kube.cluster import LiveCluster, pod_spec
from fleetlab.placement.framework import CompiledPod
from fleetlab.spec.kube_snapshot import KubePod

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def queue_key(pod: KubePod) -> tuple[int, datetime, str]:
    """PrioritySort: higher priority first, then earlier creation, then name (stable output)."""
    return (-pod.priority, pod.created or _EPOCH, pod.key)


@dataclass
class _Bound:
    """A pending pod placed by the joint pass: where, and its compiled requests (to undo the bind)."""

    pod: str
    node: int
    compiled: CompiledPod
    #: The pod's label set when spread / inter-pod rules count pods (-1 otherwise), as in build_live_cluster.
    label_set: int = -1


class JointPlacer:
    """Binds pending pods into the live state in queue order and says who took a later pod's room."""

    def __init__(self, live: LiveCluster) -> None:
        self.live = live
        self.bound: list[_Bound] = []
        pods = live.snapshot.pods
        self.counting = any(p.topology_spread or p.anti_affinity or p.pod_affinity for p in pods)

    def place(self, pod: KubePod) -> str | None:
        """Bind the pod where the scheduler would put it now; the node's name, or None if none fits."""
        scheduler, state = self.live.scheduler, self.live.state
        compiled = scheduler.compile(pod_spec(pod))
        row = scheduler.select(compiled)
        if row < 0:
            return None
        labels = (
            state.pod_labels.intern(pod.labels, pod.namespace, pod.anti_affinity) if self.counting else -1
        )
        state.bind(row, compiled.request, compiled.nonzero, labels)
        if scheduler.dra is not None and compiled.spec.claims is not None:
            scheduler.dra.reserve(compiled, row)  # the devices are taken for the pods behind it
        self.bound.append(_Bound(pod.key, row, compiled, labels))
        return state.node_names[row]

    def place_all(self, pods: list[KubePod]) -> dict[str, str] | None:
        """Bind a gang's pods one by one (all or nothing): pod key -> node, or None with nothing bound."""
        mark = len(self.bound)
        out: dict[str, str] = {}
        for pod in pods:
            node = self.place(pod)
            if node is None:
                for b in self.bound[mark:]:
                    self.live.state.release(b.node, b.compiled.request, b.compiled.nonzero, b.label_set)
                    if self.live.scheduler.dra is not None:
                        self.live.scheduler.dra.release(b.compiled)
                del self.bound[mark:]
                return None
            out[pod.key] = node
        return out

    def taken_by(self, pod: KubePod) -> list[str]:
        """Pods placed earlier in this pass without which ``pod`` would fit now (``a -> node``), else []."""
        scheduler, state = self.live.scheduler, self.live.state
        compiled = scheduler.compile(pod_spec(pod))
        eligible = scheduler.static_mask(compiled)
        rivals = [b for b in self.bound if eligible[b.node]]
        if rivals and not compiled.spec.pod_dependent:
            rivals = self._where_room_returns(compiled, rivals)
        if not rivals:
            return []
        for b in rivals:
            state.release(b.node, b.compiled.request, b.compiled.nonzero, b.label_set)
        try:
            fits = bool(np.any(scheduler.fits_now(compiled)))
        finally:
            for b in rivals:
                state.bind(b.node, b.compiled.request, b.compiled.nonzero, b.label_set)
        return [f"{b.pod} -> {state.node_names[b.node]}" for b in rivals] if fits else []

    def _where_room_returns(self, pod: CompiledPod, rivals: list[_Bound]) -> list[_Bound]:
        """The rivals on nodes whose free capacity, with the rivals' requests given back, holds the pod:
        for a pod whose fit depends on no other pod, only those nodes can change its verdict."""
        state = self.live.state
        rows = np.asarray([b.node for b in rivals], dtype=np.int64)
        returned = np.zeros((state.n, state.free.shape[1]), dtype=state.free.dtype)
        np.add.at(returned, rows, np.stack([b.compiled.request for b in rivals]))
        cols = pod.request_cols
        room = np.asarray(
            ((state.free[rows][:, cols] + returned[rows][:, cols]) >= pod.request[cols]).all(axis=1),
            dtype=bool,
        )
        return [b for b, ok in zip(rivals, room, strict=True) if ok]
