"""NodeUnschedulable: cordoned nodes reject pods that do not tolerate the unschedulable taint.

Upstream: pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go.
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.kube import Taint
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin
from fleetlab.placement.plugins.taint_toleration import tolerates
from fleetlab.placement.state import BoolArray, ClusterState

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
REASON = "node(s) were unschedulable"


class NodeUnschedulableFilter(FilterPlugin):
    """``spec.unschedulable`` nodes fail unless the pod tolerates node.kubernetes.io/unschedulable."""

    name = "NodeUnschedulable"
    static = True

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return np.ones(state.n, dtype=bool)
        return ~state.unschedulable

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        n = int(np.count_nonzero(failing))
        return FilterFailure(self.name, {REASON: n} if n else {}, n, unresolvable=True)
