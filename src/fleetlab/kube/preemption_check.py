"""Would kube-scheduler's DefaultPreemption make room for a pending pod? The simulator's own dry run
(``placement.preemption.find_preemption``) over the snapshot's bound pods and their priorities."""

from __future__ import annotations

import numpy as np

from fleetlab.kube.cluster import LiveCluster, pod_spec
from fleetlab.placement.preemption import Victim, find_preemption
from fleetlab.spec.kube_snapshot import KubePod


class PreemptionCheck:
    """Bound, non-terminated pods indexed per node with their request vectors, built once per snapshot."""

    def __init__(self, live: LiveCluster) -> None:
        self.live = live
        scheduler, state = live.scheduler, live.state
        self.bound: list[KubePod] = []
        self.node_of: list[int] = []
        self.per_node: dict[int, list[int]] = {}
        for pod in live.snapshot.pods:
            if pod.terminated or pod.node_name is None or pod.node_name not in live.index:
                continue
            node = live.index[pod.node_name]
            self.per_node.setdefault(node, []).append(len(self.bound))
            self.bound.append(pod)
            self.node_of.append(node)
        self.requests = [scheduler.compile(pod_spec(p)).request for p in self.bound]
        self.priorities = np.asarray([p.priority for p in self.bound], dtype=np.int64)
        self.width = state.allocatable.shape[1]

    def _victims(self, node: int, below: int) -> list[Victim]:
        out: list[Victim] = []
        for i in self.per_node.get(node, []):
            pod = self.bound[i]
            if pod.priority < below:
                start = int(pod.started.timestamp() * 1000) if pod.started else 0
                out.append(Victim(i, pod.priority, start, self.requests[i]))
        return out

    def verdict(self, pod: KubePod) -> str:
        """One line: not eligible, nothing to evict, or which pods on which node would be evicted."""
        if pod.preemption_policy == "Never":
            return "not eligible due to preemptionPolicy=Never"
        lower = np.flatnonzero(self.priorities < pod.priority)
        if not len(lower):
            return f"no lower-priority pods run anywhere (this pod has priority {pod.priority})"
        state, scheduler = self.live.state, self.live.scheduler
        reclaimable = np.zeros((state.n, self.width), dtype=np.int64)
        for i in lower.tolist():
            reclaimable[self.node_of[i]] += self.requests[i]
        compiled = scheduler.compile(pod_spec(pod))
        plan = find_preemption(
            scheduler, compiled, pod.priority, lambda n: self._victims(n, pod.priority), reclaimable
        )
        if plan is None:
            return "no preemption victims: evicting every lower-priority pod would not make room on any node"
        names = [self.bound[v].key for v in plan.victims]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        node = state.node_names[plan.node]
        return f"would evict {len(names)} lower-priority pod(s) on {node}: {shown}"
