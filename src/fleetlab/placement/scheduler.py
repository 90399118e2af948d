"""One scheduling cycle for one pod: filter, score, select — kube-scheduler's schedule_one.

The Scheduler compiles each distinct pod spec once into request vectors and cached static masks
(NodeUnschedulable, TaintToleration, NodeAffinity depend only on node facts), so per-pod work is a few
array operations over the nodes that pass, never a Python loop over nodes.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from fleetlab.model.kube import Toleration
from fleetlab.model.resources import CPU, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, MEMORY, is_extended
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, FitError, PodSpec, ScorePlugin
from fleetlab.placement.plugins.balanced_allocation import BalancedAllocationScore
from fleetlab.placement.plugins.image_locality import ImageLocalityScore
from fleetlab.placement.plugins.node_affinity import NodeAffinityFilter, NodeAffinityScore
from fleetlab.placement.plugins.node_resources_fit import NodeResourcesFitFilter, NodeResourcesFitScore
from fleetlab.placement.plugins.node_unschedulable import NodeUnschedulableFilter
from fleetlab.placement.plugins.taint_toleration import TaintTolerationFilter, TaintTolerationScore
from fleetlab.placement.profiles import Profile
from fleetlab.placement.state import BoolArray, ClusterState, IntArray


class Scheduler:
    """Places pods on a ClusterState under one Profile; deterministic for a given seed."""

    def __init__(
        self,
        state: ClusterState,
        profile: Profile,
        seed: int = 0,
        extended_resource_toleration: bool = False,
    ) -> None:
        self.state = state
        self.profile = profile
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.extended_resource_toleration = extended_resource_toleration
        version = profile.kubernetes_version
        #: Filter order of the default profile (MultiPoint order), stopping at the first failing plugin.
        self.filters: list[FilterPlugin] = [
            NodeUnschedulableFilter(),
            TaintTolerationFilter(version),
            NodeAffinityFilter(),
            NodeResourcesFitFilter(),
        ]
        candidates: list[ScorePlugin] = [
            TaintTolerationScore(),
            NodeAffinityScore(),
            NodeResourcesFitScore(profile.strategy, profile.resources, profile.shape),
            BalancedAllocationScore(profile.balanced_resources, version),
            ImageLocalityScore(),
        ]
        self.scorers: list[tuple[ScorePlugin, int]] = [
            (p, profile.plugin_weights.get(p.name, 0))
            for p in candidates
            if profile.plugin_weights.get(p.name, 0) > 0
        ]
        self._compiled: dict[Hashable, CompiledPod] = {}

    # -- compile -------------------------------------------------------------------------------------
    def compile(self, spec: PodSpec) -> CompiledPod:
        """Request vectors and cache slots for a pod spec (memoised per distinct spec)."""
        found = self._compiled.get(spec)
        if found is not None:
            return found
        state = self.state
        request = np.zeros(len(state.resource_names), dtype=np.int64)
        for name, amount in spec.requests:
            request[state.column[name]] += amount
        request[state.pods_col] = 1
        explicit = spec.explicit_keys or frozenset(n for n, _ in spec.requests)
        per = spec.containers
        nonzero = np.asarray(
            [
                request[state.cpu_col] if CPU in explicit else DEFAULT_MILLI_CPU_REQUEST * per,
                request[state.mem_col] if MEMORY in explicit else DEFAULT_MEMORY_REQUEST * per,
            ],
            dtype=np.int64,
        )
        tolerations = spec.tolerations
        if self.extended_resource_toleration:
            added = tuple(
                Toleration(key=name, operator="Exists", effect="NoSchedule")
                for name, amount in spec.requests
                if amount > 0 and is_extended(name)
            )
            tolerations = tolerations + added
        cols = np.flatnonzero(request > 0).astype(np.int64)
        pod = CompiledPod(
            key=spec,
            spec=spec,
            request=request,
            nonzero=nonzero,
            request_cols=cols,
            tolerations=tolerations,
        )
        self._compiled[spec] = pod
        return pod

    # -- filter --------------------------------------------------------------------------------------
    def static_mask(self, pod: CompiledPod) -> BoolArray:
        """Ready nodes passing every static filter, cached until node membership or cordons change."""
        if pod.static_generation != self.state.topology_generation or pod.static_mask is None:
            mask = self.state.ready.copy()
            for plugin in self.filters:
                if plugin.static:
                    mask &= plugin.passes(self.state, pod)
            pod.static_mask = mask
            pod.cache["static_nodes"] = np.flatnonzero(mask)
            pod.static_generation = self.state.topology_generation
        return pod.static_mask

    def feasible_nodes(self, pod: CompiledPod) -> IntArray:
        """Indices of nodes where the pod fits now."""
        self.static_mask(pod)
        nodes: IntArray = pod.cache["static_nodes"]
        if len(nodes) == 0:
            return nodes
        state = self.state
        cols = pod.request_cols
        free = state.free[nodes]
        fits = (free[:, cols] >= pod.request[cols]).all(axis=1)
        return nodes[fits]

    # -- score ---------------------------------------------------------------------------------------
    def score(self, pod: CompiledPod, nodes: IntArray) -> IntArray:
        """Weighted total score per node in ``nodes`` (sum of weight × normalised plugin score)."""
        total = np.zeros(len(nodes), dtype=np.int64)
        for plugin, weight in self.scorers:
            s = plugin.score(self.state, pod, nodes)
            if s is not None:
                total += weight * s
        return total

    def plugin_scores(self, pod: CompiledPod, nodes: IntArray) -> dict[str, IntArray | None]:
        """Each score plugin's normalised scores (None where it skipped), for explanations."""
        return {plugin.name: plugin.score(self.state, pod, nodes) for plugin, _ in self.scorers}

    def select(self, pod: CompiledPod) -> int:
        """The node the pod goes to, or -1 when none is feasible (call ``explain`` for why)."""
        nodes = self.feasible_nodes(pod)
        if len(nodes) == 0:
            return -1
        if len(nodes) == 1:
            return int(nodes[0])
        total = self.score(pod, nodes)
        best = total.max()
        tied = nodes[total == best]
        if len(tied) == 1 or self.profile.tie_break == "first":
            return int(tied[0])
        return int(tied[self.rng.integers(len(tied))])

    # -- explain -------------------------------------------------------------------------------------
    def explain(self, pod: CompiledPod) -> FitError:
        """Why no node fits: the first failing filter per ready node, as kube-scheduler reports it."""
        state = self.state
        remaining = state.ready.copy()
        failures: list[FilterFailure] = []
        for plugin in self.filters:
            passed = plugin.passes(state, pod)
            failing = remaining & ~passed
            if failing.any():
                failures.append(plugin.failure(state, pod, failing))
            remaining &= passed
        return FitError(num_nodes=int(np.count_nonzero(state.ready)), failures=tuple(failures))
