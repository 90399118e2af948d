"""NodeAffinity: nodeSelector and required affinity as a filter, preferred terms as a score.

Upstream: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go and
component-helpers/scheduling/corev1/nodeaffinity (terms ORed, expressions ANDed, Gt/Lt as integers).
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.kube import NodeSelectorRequirement, NodeSelectorTerm, selector_values_valid
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, ScorePlugin
from fleetlab.placement.scoring import default_normalize_score
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

REASON = "node(s) didn't match Pod's node affinity/selector"


def requirement_mask(state: ClusterState, req: NodeSelectorRequirement, field: bool = False) -> BoolArray:
    """Nodes satisfying one requirement; ``field`` evaluates it against metadata.name."""
    if field:
        names = np.asarray(state.node_names)
        hit = np.isin(names, np.asarray(req.values))
        return (
            hit
            if req.operator == "In"
            else ~hit
            if req.operator == "NotIn"
            else np.zeros(state.n, dtype=bool)
        )
    labels = state.labels
    op = req.operator
    if op == "In":
        return labels.equals_any(req.key, req.values)
    if op == "NotIn":
        return ~labels.equals_any(req.key, req.values)
    if op == "Exists":
        return labels.has(req.key)
    if op == "DoesNotExist":
        return ~labels.has(req.key)
    numeric = labels.as_int(req.key)
    bound = float(int(req.values[0]))
    with np.errstate(invalid="ignore"):
        return np.asarray(numeric > bound if op == "Gt" else numeric < bound, dtype=bool)


def term_mask(state: ClusterState, term: NodeSelectorTerm) -> BoolArray:
    """Nodes matching every expression of a term; an empty term matches nothing (upstream rule)."""
    if not term.match_expressions and not term.match_fields:
        return np.zeros(state.n, dtype=bool)
    if not all(selector_values_valid(r) for r in term.match_expressions):
        return np.zeros(state.n, dtype=bool)  # upstream: a term that fails to parse matches no node
    mask = np.ones(state.n, dtype=bool)
    for req in term.match_expressions:
        mask &= requirement_mask(state, req)
    for req in term.match_fields:
        mask &= requirement_mask(state, req, field=True)
    return mask


class NodeAffinityFilter(FilterPlugin):
    """nodeSelector (every pair) AND required node affinity (any term); failures are unresolvable."""

    name = "NodeAffinity"
    static = True

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        mask = np.ones(state.n, dtype=bool)
        for key, value in pod.spec.node_selector:
            mask &= state.labels.equals_any(key, [value])
        affinity = pod.spec.affinity
        required = affinity.node_affinity.required if affinity and affinity.node_affinity else None
        if required is not None:
            any_term = np.zeros(state.n, dtype=bool)
            for term in required.node_selector_terms:
                any_term |= term_mask(state, term)
            mask &= any_term
        return mask

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        n = int(np.count_nonzero(failing))
        return FilterFailure(self.name, {REASON: n} if n else {}, n, unresolvable=True)


class NodeAffinityScore(ScorePlugin):
    """Sum of matching preferred-term weights, normalised to 0..100; Skip without preferred terms."""

    name = "NodeAffinity"

    def uniform_for(self, state: ClusterState, pod: CompiledPod) -> bool:
        """No preferred term: Skip."""
        affinity = pod.spec.affinity
        return not (affinity.node_affinity.preferred if affinity and affinity.node_affinity else ())

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        affinity = pod.spec.affinity
        preferred = affinity.node_affinity.preferred if affinity and affinity.node_affinity else ()
        if not preferred:
            return None
        raw = pod.cache.get("affinity_preferred")
        if raw is None:
            raw = np.zeros(state.n, dtype=np.int64)
            for term in preferred:
                raw += np.where(term_mask(state, term.preference), term.weight, 0)
            pod.cache["affinity_preferred"] = raw
        return default_normalize_score(raw[nodes], reverse=False)
