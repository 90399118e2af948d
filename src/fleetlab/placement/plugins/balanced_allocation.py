"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced.

Upstream: pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go (v1.22–v1.35 form; the
v1.36 form of PR #135573 scores the change in balance). True requests, no non-zero defaults; PreScore
skips best-effort pods.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fleetlab.placement.framework import CompiledPod, NodeRows, ScorePlugin
from fleetlab.placement.plugins.node_resources_fit import ScoreColumns, cached_columns, rows_by_columns
from fleetlab.placement.scoring import balanced_allocation, balanced_allocation_v136
from fleetlab.placement.scoring_scalar import balanced_allocation_one, balanced_allocation_v136_one
from fleetlab.placement.state import ClusterState, IntArray


class BalancedAllocationScore(ScorePlugin):
    """Scores 100 × (1 − std of the requested/allocatable fractions)."""

    name = "NodeResourcesBalancedAllocation"
    per_node = True

    def __init__(self, resources: Sequence[str], kubernetes_version: str = "1.35") -> None:
        self.names = list(resources)
        self.v136 = kubernetes_version >= "1.36"

    def _columns(self, state: ClusterState, pod: CompiledPod) -> ScoreColumns:
        return cached_columns(state, pod, "balanced_cols", self.names, nonzero=False)

    def score_one(self, state: ClusterState, pod: CompiledPod, rows: NodeRows) -> int | None:
        cols = self._columns(state, pod)
        if not cols.any_requested:
            return None
        requested, allocatable = cols.row(rows)
        if not self.v136:
            return balanced_allocation_one(requested, allocatable)
        without, _ = cols.row(rows, with_pod=False)
        return balanced_allocation_v136_one(requested, without, allocatable)

    rows_batched = True

    def score_rows(self, state: ClusterState, pods: Sequence[CompiledPod], nodes: IntArray) -> IntArray:
        columns = [self._columns(state, pod) for pod in pods]
        scored = [i for i, cols in enumerate(columns) if cols.any_requested]  # best-effort pods skip
        out = np.zeros((len(pods), len(nodes)), dtype=np.int64)
        if scored:

            def score(requested: IntArray, without: IntArray, allocatable: IntArray) -> IntArray:
                if not self.v136:
                    return balanced_allocation(requested, allocatable)
                return balanced_allocation_v136(requested, without, allocatable)

            out[scored] = rows_by_columns(state, [columns[i] for i in scored], nodes, score)
        return out

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        cols = self._columns(state, pod)
        if not cols.any_requested:
            return None  # best-effort pod: PreScore returns Skip
        requested, allocatable = cols.arrays(state, nodes)
        if not self.v136:
            return balanced_allocation(requested, allocatable)
        without, _ = cols.arrays(state, nodes, with_pod=False)
        return balanced_allocation_v136(requested, without, allocatable)
