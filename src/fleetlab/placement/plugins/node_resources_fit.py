"""NodeResourcesFit: the resource filter (incl. pod count) and the LeastAllocated / MostAllocated /
RequestedToCapacityRatio scores.

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go and resource_allocation.go (v1.35 era).
The filter uses true requests; the scores use cpu/memory with the non-zero defaults (100m / 200Mi).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, NodeRows, ScorePlugin
from fleetlab.placement.scoring import least_allocated, most_allocated, requested_to_capacity_ratio
from fleetlab.placement.scoring_scalar import (
    least_allocated_one,
    most_allocated_one,
    requested_to_capacity_ratio_one,
)
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

TOO_MANY_PODS = "Too many pods"


class NodeResourcesFitFilter(FilterPlugin):
    """A node fits when every requested resource (and one more pod) is within allocatable − requested."""

    name = "NodeResourcesFit"
    static = False

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        cols = pod.request_cols
        if len(cols) == 1:
            return np.asarray(state.free[:, cols[0]] >= pod.request[cols[0]], dtype=bool)
        return np.asarray((state.free[:, cols] >= pod.request[cols]).all(axis=1), dtype=bool)

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        counts: Counter[str] = Counter()
        unresolvable = False
        for col in pod.request_cols:
            short = failing & (state.free[:, col] < pod.request[col])
            n = int(np.count_nonzero(short))
            if not n:
                continue
            name = state.resource_names[int(col)]
            counts[TOO_MANY_PODS if col == state.pods_col else f"Insufficient {name}"] += n
            if np.any(short & (state.allocatable[:, col] < pod.request[col])):
                unresolvable = True
        return FilterFailure(
            self.name, dict(counts), int(np.count_nonzero(failing)), unresolvable=unresolvable
        )


class ScoreColumns:
    """Which state columns feed a resource scorer, and what the incoming pod adds to each."""

    def __init__(self, state: ClusterState, pod: CompiledPod, names: Sequence[str], nonzero: bool) -> None:
        alloc_cols: list[int] = []
        req_cols: list[int] = []
        use_nonzero: list[bool] = []
        add: list[int] = []
        for name in names:
            col = state.column.get(name)
            if name in ("cpu", "memory"):
                nz_index = 0 if name == "cpu" else 1
                assert col is not None
                alloc_cols.append(col)
                if nonzero:
                    req_cols.append(nz_index)
                    use_nonzero.append(True)
                    add.append(int(pod.nonzero[nz_index]))
                else:
                    req_cols.append(col)
                    use_nonzero.append(False)
                    add.append(int(pod.request[col]))
            elif col is None or (name != "ephemeral-storage" and pod.request[col] == 0):
                alloc_cols.append(-1)  # not requested, or no node has it: bypassed (0, 0)
                req_cols.append(-1)
                use_nonzero.append(False)
                add.append(0)
            else:
                alloc_cols.append(col)
                req_cols.append(col)
                use_nonzero.append(False)
                add.append(int(pod.request[col]))
        self.alloc_cols = alloc_cols
        self.req_cols = req_cols
        self.use_nonzero = use_nonzero
        self.add = np.asarray(add, dtype=np.int64)
        self.items = list(zip(alloc_cols, req_cols, use_nonzero, add, strict=True))
        self.any_requested = bool(np.any(self.add > 0))
        #: Which columns are read: pods with equal signatures differ only in ``add``.
        self.signature = (tuple(alloc_cols), tuple(req_cols), tuple(use_nonzero))

    def arrays(
        self, state: ClusterState, nodes: IntArray, with_pod: bool = True
    ) -> tuple[IntArray, IntArray]:
        """(requested, allocatable) of shape (len(nodes), len(names)), bypassed columns zero."""
        k, s = len(nodes), len(self.alloc_cols)
        requested = np.zeros((k, s), dtype=np.int64)
        allocatable = np.zeros((k, s), dtype=np.int64)
        for j in range(s):
            col = self.alloc_cols[j]
            if col < 0:
                continue
            allocatable[:, j] = state.allocatable[nodes, col]
            source = state.nonzero_requested if self.use_nonzero[j] else state.requested
            requested[:, j] = source[nodes, self.req_cols[j]]
        if with_pod:
            requested += self.add
        return requested, allocatable

    def row(self, rows: NodeRows, with_pod: bool = True) -> tuple[list[int], list[int]]:
        """(requested, allocatable) of one node as Python ints, for incremental rescoring."""
        alloc_row, req_row, nz_row = rows
        requested: list[int] = []
        allocatable: list[int] = []
        for col, req_col, nz, add in self.items:
            if col < 0:
                requested.append(0)
                allocatable.append(0)
                continue
            allocatable.append(alloc_row[col])
            used = nz_row[req_col] if nz else req_row[req_col]
            requested.append(used + add if with_pod else used)
        return requested, allocatable


def rows_by_columns(
    state: ClusterState,
    columns: Sequence[ScoreColumns],
    nodes: IntArray,
    score: Callable[[IntArray, IntArray, IntArray], IntArray],
) -> IntArray:
    """``score(requested_with_pod, requested_without, allocatable)`` for every pod's columns (rows) on
    ``nodes``, the node arrays read once per distinct column signature (scorers are row by row)."""
    out = np.zeros((len(columns), len(nodes)), dtype=np.int64)
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, cols in enumerate(columns):
        groups.setdefault(cols.signature, []).append(i)
    k = len(nodes)
    for members in groups.values():
        without, allocatable = columns[members[0]].arrays(state, nodes, with_pod=False)
        g, width = len(members), without.shape[1]
        adds = np.stack([columns[i].add for i in members])
        requested = (without[None, :, :] + adds[:, None, :]).reshape(g * k, width)
        base = np.broadcast_to(without, (g, k, width)).reshape(g * k, width)
        alloc = np.broadcast_to(allocatable, (g, k, width)).reshape(g * k, width)
        out[members] = score(requested, base, alloc).reshape(g, k)
    return out


def cached_columns(
    state: ClusterState, pod: CompiledPod, key: str, names: Sequence[str], nonzero: bool
) -> ScoreColumns:
    """The pod's ScoreColumns for one scorer, built once and kept in the pod's cycle cache."""
    cols: ScoreColumns | None = pod.cache.get(key)
    if cols is None:
        cols = ScoreColumns(state, pod, names, nonzero=nonzero)
        pod.cache[key] = cols
    return cols


class NodeResourcesFitScore(ScorePlugin):
    """Scores the node by the configured strategy over the configured resources and weights."""

    name = "NodeResourcesFit"
    per_node = True

    def __init__(
        self,
        strategy: str,
        resources: Sequence[tuple[str, int]],
        shape: Sequence[tuple[int, int]] = (),
    ) -> None:
        self.strategy = strategy
        self.names = [name for name, _ in resources]
        self.weights = np.asarray([w for _, w in resources], dtype=np.int64)
        self.shape = tuple(shape)
        self.weight_list = [int(w) for w in self.weights]

    def _columns(self, state: ClusterState, pod: CompiledPod) -> ScoreColumns:
        return cached_columns(state, pod, "fit_score_cols", self.names, nonzero=True)

    def score_one(self, state: ClusterState, pod: CompiledPod, rows: NodeRows) -> int | None:
        requested, allocatable = self._columns(state, pod).row(rows)
        if self.strategy == "LeastAllocated":
            return least_allocated_one(requested, allocatable, self.weight_list)
        if self.strategy == "MostAllocated":
            return most_allocated_one(requested, allocatable, self.weight_list)
        return requested_to_capacity_ratio_one(requested, allocatable, self.weight_list, self.shape)

    rows_batched = True

    def score_rows(self, state: ClusterState, pods: Sequence[CompiledPod], nodes: IntArray) -> IntArray:
        columns = [self._columns(state, pod) for pod in pods]
        return rows_by_columns(state, columns, nodes, lambda req, _, alloc: self._by_strategy(req, alloc))

    def _by_strategy(self, requested: IntArray, allocatable: IntArray) -> IntArray:
        if self.strategy == "LeastAllocated":
            return least_allocated(requested, allocatable, self.weights)
        if self.strategy == "MostAllocated":
            return most_allocated(requested, allocatable, self.weights)
        return requested_to_capacity_ratio(requested, allocatable, self.weights, self.shape)

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        requested, allocatable = self._columns(state, pod).arrays(state, nodes)
        if self.strategy == "LeastAllocated":
            return least_allocated(requested, allocatable, self.weights)
        if self.strategy == "MostAllocated":
            return most_allocated(requested, allocatable, self.weights)
        return requested_to_capacity_ratio(requested, allocatable, self.weights, self.shape)
