"""InterPodAffinity, the anti-affinity half: required terms filter, preferred terms score.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity (filtering.go, scoring.go). Filter: a node fails
when a pod matching one of the incoming pod's required terms runs in the node's domain of that term's key
(checked first, so that reason wins, as upstream's Filter orders them), or when a bound pod whose required
anti-affinity term matches the incoming pod runs there ("existing pods anti-affinity"). Nodes without the
term's key cannot violate it. Score: each preferred term takes ``weight`` off per matching pod in the node's
domain, then min-max normalised to 0..100 (0 when all equal).
Pod affinity (attraction) is not modelled.
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.pod_constraints import PodAntiAffinityTerm
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, ScorePlugin
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
MAX_NODE_SCORE = 100


def _term_selector(state: ClusterState, pod: CompiledPod, term: PodAntiAffinityTerm) -> int:
    namespaces = frozenset(term.namespaces or (pod.spec.namespace,))
    return state.pod_labels.selector(term.label_selector, namespaces, count_empty=True)


def _occupied(state: ClusterState, key: str, per_domain: IntArray) -> BoolArray:
    """Nodes whose domain of ``key`` holds at least one counted pod."""
    codes = state.labels.codes(key)
    hit = np.zeros(state.n, dtype=bool)
    has = codes >= 0
    hit[has] = per_domain[codes[has]] > 0
    return hit


class InterPodAffinityFilter(FilterPlugin):
    """Rejects nodes that break a required anti-affinity term, the pod's own or an existing pod's."""

    name = "InterPodAffinity"

    def _verdict(self, state: ClusterState, pod: CompiledPod) -> tuple[BoolArray, BoolArray]:
        """(blocked by existing pods' terms, blocked by the pod's own terms) per node; a node blocked by
        both counts under the pod's own terms (upstream checks those first)."""
        existing = np.zeros(state.n, dtype=bool)
        own = np.zeros(state.n, dtype=bool)
        spec = pod.spec
        if not spec.pod_dependent:  # a pod without labels here is one the scheduler places regardless
            return existing, own
        for key, owners in state.pod_labels.existing_anti_terms(dict(spec.labels), spec.namespace):
            existing |= _occupied(state, key, owners)
        for term in spec.anti_affinity:
            if term.required:
                sid = _term_selector(state, pod, term)
                own |= _occupied(
                    state, term.topology_key, state.pod_labels.domain_counts(sid, term.topology_key)
                )
        return existing & ~own, own

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        existing, own = self._verdict(state, pod)
        return ~(existing | own)

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        existing, own = self._verdict(state, pod)
        counts = {
            REASON_EXISTING: int(np.count_nonzero(failing & existing)),
            REASON_ANTI: int(np.count_nonzero(failing & own)),
        }
        reasons = {r: n for r, n in counts.items() if n}
        return FilterFailure(self.name, reasons, sum(reasons.values()), unresolvable=False)


class InterPodAffinityScore(ScorePlugin):
    """Preferred anti-affinity: fewer weighted matching pods in a node's domains score higher."""

    name = "InterPodAffinity"

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        preferred = [t for t in pod.spec.anti_affinity if not t.required]
        if not preferred:
            return None
        raw = np.zeros(len(nodes), dtype=np.int64)
        for term in preferred:
            sid = _term_selector(state, pod, term)
            per_domain = state.pod_labels.domain_counts(sid, term.topology_key)
            codes = state.labels.codes(term.topology_key)[nodes]
            has = codes >= 0
            raw[has] -= term.weight * per_domain[codes[has]]
        return normalize_min_max(raw)


def normalize_min_max(raw: IntArray) -> IntArray:
    """scoring.go NormalizeScore: ``float(100) * (float(s - min) / float(max - min))`` truncated to an
    integer (the float order matters: 100 * 0.29 truncates to 28), all 0 when max == min."""
    if len(raw) == 0:
        return raw
    low, high = int(raw.min()), int(raw.max())
    if high == low:
        return np.zeros(len(raw), dtype=np.int64)
    ratio = (raw - low).astype(np.float64) / float(high - low)
    return np.trunc(float(MAX_NODE_SCORE) * ratio).astype(np.int64)
