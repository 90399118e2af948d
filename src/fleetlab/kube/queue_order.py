"""The pending set judged together, as kube-scheduler would place it: one pod at a time, in queue order.

kube-scheduler's default QueueSort plugin (PrioritySort) pops the pod with the highest priority first and,
among equals, the one that entered the queue first (creation time here). Each pod that fits is bound on a
working copy of the snapshot's placement state with the simulator's own ``Scheduler.select`` (filters,
scores, tie-break), so the next pod sees the room the earlier ones took: three pods asking for
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


class JointPlacer:
    """Binds pending pods into the live state in queue order and says who took a later pod's room."""

    def __init__(self, live: LiveCluster) -> None:
        self.live = live
        self.bound: list[_Bound] = []

    def place(self, pod: KubePod) -> str | None:
        """Bind the pod where the scheduler would put it now; the node's name, or None if none fits."""
        scheduler, state = self.live.scheduler, self.live.state
        compiled = scheduler.compile(pod_spec(pod))
        row = scheduler.select(compiled)
        if row < 0:
            return None
        state.bind(row, compiled.request, compiled.nonzero)
        self.bound.append(_Bound(pod.key, row, compiled))
        return state.node_names[row]

    def place_all(self, pods: list[KubePod]) -> dict[str, str] | None:
        """Bind a gang's pods one by one (all or nothing): pod key -> node, or None with nothing bound."""
        mark = len(self.bound)
        out: dict[str, str] = {}
        for pod in pods:
            node = self.place(pod)
            if node is None:
                for b in self.bound[mark:]:
                    self.live.state.release(b.node, b.compiled.request, b.compiled.nonzero)
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
        if not rivals:
            return []
        for b in rivals:
            state.release(b.node, b.compiled.request, b.compiled.nonzero)
        try:
            fits = bool(np.any(scheduler.fits_now(compiled)))
        finally:
            for b in rivals:
                state.bind(b.node, b.compiled.request, b.compiled.nonzero)
        return [f"{b.pod} -> {state.node_names[b.node]}" for b in rivals] if fits else []
