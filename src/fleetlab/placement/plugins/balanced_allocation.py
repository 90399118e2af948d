"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced.

Upstream: pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go (v1.22–v1.35 form; the
v1.36 form of PR #135573 scores the change in balance). True requests, no non-zero defaults; PreScore
skips best-effort pods.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetlab.placement.framework import CompiledPod, ScorePlugin
from fleetlab.placement.plugins.node_resources_fit import ScoreColumns
from fleetlab.placement.scoring import balanced_allocation, balanced_allocation_v136
from fleetlab.placement.state import ClusterState, IntArray


class BalancedAllocationScore(ScorePlugin):
    """Scores 100 × (1 − std of the requested/allocatable fractions)."""

    name = "NodeResourcesBalancedAllocation"

    def __init__(self, resources: Sequence[str], kubernetes_version: str = "1.35") -> None:
        self.names = list(resources)
        self.v136 = kubernetes_version >= "1.36"

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        cols = pod.cache.get("balanced_cols")
        if cols is None:
            cols = ScoreColumns(state, pod, self.names, nonzero=False)
            pod.cache["balanced_cols"] = cols
        if not cols.any_requested:
            return None  # best-effort pod: PreScore returns Skip
        requested, allocatable = cols.arrays(state, nodes)
        if not self.v136:
            return balanced_allocation(requested, allocatable)
        without, _ = cols.arrays(state, nodes, with_pod=False)
        return balanced_allocation_v136(requested, without, allocatable)
