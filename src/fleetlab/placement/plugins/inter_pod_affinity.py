"""InterPodAffinity: required terms filter, preferred terms score, for pod affinity and anti-affinity.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity (filtering.go, scoring.go). Filter, in upstream's
order (the first failing check names the reason):
1. pod affinity: the node must carry every required term's topology key, and each term's domain there must
   hold a pod matching *all* the required terms — unless no pod anywhere matches them and the incoming pod
   matches all its own terms (the first pod of a group with affinity to itself may go anywhere with the keys);
2. the pod's own anti-affinity: no pod matching a required term runs in the node's domain of its key (a node
   without the key cannot violate it);
3. existing pods' anti-affinity: no bound pod whose required anti-affinity term matches the incoming pod runs
   in that term's domain of the node.
Score (scoring.go): each of the pod's preferred affinity terms adds ``weight`` per matching pod in the
node's domain, each preferred anti-affinity term takes it off; symmetrically, each bound pod whose own term
matches the incoming pod adds to (or takes from) every node in its domain of that term's key:
``hardPodAffinityWeight`` (1) for a required affinity term, ``weight`` for a preferred affinity term,
``-weight`` for a preferred anti-affinity term. Then min-max normalised to 0..100 (0 when all equal).
A term looks in its ``namespaces`` and those its ``namespaceSelector`` selects (by the Namespace objects'
labels, or the name label every namespace has), else in its pod's own namespace.
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.pod_constraints import (
    LabelSelector,
    LabelSelectorRequirement,
    PodAffinityTerm,
    PodAntiAffinityTerm,
)
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, ScorePlugin
from fleetlab.placement.pod_labels import selector_matches
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
MAX_NODE_SCORE = 100
#: InterPodAffinityArgs hardPodAffinityWeight default: what a bound pod's required affinity term matching
#: the incoming pod adds to each node of its domain.
HARD_POD_AFFINITY_WEIGHT = 1


def _term_selector(state: ClusterState, pod: CompiledPod, term: PodAntiAffinityTerm) -> int:
    namespaces = state.pod_labels.term_namespaces(term, pod.spec.namespace)
    return state.pod_labels.selector(term.label_selector, namespaces, count_empty=True)


def _occupied(state: ClusterState, key: str, per_domain: IntArray) -> BoolArray:
    """Nodes whose domain of ``key`` holds at least one counted pod."""
    codes = state.labels.codes(key)
    hit = np.zeros(state.n, dtype=bool)
    has = codes >= 0
    hit[has] = per_domain[codes[has]] > 0
    return hit


def _all_terms_selector(terms: tuple[PodAntiAffinityTerm, ...]) -> LabelSelector | None:
    """One selector matching exactly the pods every term's selector matches (None: no pod can)."""
    labels: dict[str, str] = {}
    expressions: list[LabelSelectorRequirement] = []
    for term in terms:
        selector = term.label_selector
        if selector is None:
            return None
        for key, value in selector.match_labels.items():
            if labels.setdefault(key, value) != value:
                return None
        expressions.extend(selector.match_expressions)
    return LabelSelector(match_labels=labels, match_expressions=tuple(expressions))


def affinity_blocked(state: ClusterState, pod: CompiledPod) -> BoolArray:
    """Nodes failing the required pod affinity terms (filtering.go satisfyPodAffinity)."""
    spec = pod.spec
    terms = tuple(t for t in spec.pod_affinity if t.required)
    blocked = np.zeros(state.n, dtype=bool)
    if not terms:
        return blocked
    namespaces = frozenset.intersection(*(state.pod_labels.term_namespaces(t, spec.namespace) for t in terms))
    merged = _all_terms_selector(terms)
    has_keys = np.ones(state.n, dtype=bool)
    can_match = merged is not None and bool(namespaces)
    pods_exist = np.full(state.n, can_match, dtype=bool)
    sid = state.pod_labels.selector(merged, namespaces, count_empty=True) if can_match else -1
    matching_anywhere = 0
    for term in terms:
        has_keys &= state.labels.codes(term.topology_key) >= 0
        if can_match:
            per_domain = state.pod_labels.domain_counts(sid, term.topology_key)
            matching_anywhere += int(per_domain.sum())
            pods_exist &= _occupied(state, term.topology_key, per_domain)
    own = dict(spec.labels)
    first_of_group = (
        matching_anywhere == 0
        and merged is not None
        and spec.namespace in namespaces
        and selector_matches(merged, own)
    )
    return ~has_keys | (~pods_exist & (not first_of_group))


class InterPodAffinityFilter(FilterPlugin):
    """Rejects nodes that break a required affinity or anti-affinity term, the pod's own or an existing
    pod's."""

    name = "InterPodAffinity"

    def _verdict(self, state: ClusterState, pod: CompiledPod) -> tuple[BoolArray, BoolArray, BoolArray]:
        """Per node, blocked by (the pod's affinity, its own anti-affinity, existing pods' anti-affinity),
        each node under the first check it fails (upstream's order)."""
        affinity = np.zeros(state.n, dtype=bool)
        existing = np.zeros(state.n, dtype=bool)
        own = np.zeros(state.n, dtype=bool)
        spec = pod.spec
        if not spec.pod_dependent:  # a pod without labels here is one the scheduler places regardless
            return affinity, own, existing
        affinity = affinity_blocked(state, pod)
        for key, owners in state.pod_labels.existing_anti_terms(dict(spec.labels), spec.namespace):
            existing |= _occupied(state, key, owners)
        for term in spec.anti_affinity:
            if term.required:
                sid = _term_selector(state, pod, term)
                own |= _occupied(
                    state, term.topology_key, state.pod_labels.domain_counts(sid, term.topology_key)
                )
        own &= ~affinity
        return affinity, own, existing & ~own & ~affinity

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        affinity, own, existing = self._verdict(state, pod)
        return ~(affinity | own | existing)

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        affinity, own, existing = self._verdict(state, pod)
        counts = {
            REASON_AFFINITY: int(np.count_nonzero(failing & affinity)),
            REASON_EXISTING: int(np.count_nonzero(failing & existing)),
            REASON_ANTI: int(np.count_nonzero(failing & own)),
        }
        reasons = {r: n for r, n in counts.items() if n}
        # filtering.go: a failed pod affinity is UnschedulableAndUnresolvable (evicting pods cannot create
        # a partner), anti-affinity only Unschedulable; unresolvable when every failing node is the former.
        only_affinity = counts[REASON_ANTI] == 0 and counts[REASON_EXISTING] == 0
        return FilterFailure(self.name, reasons, sum(reasons.values()), unresolvable=only_affinity)


class InterPodAffinityScore(ScorePlugin):
    """Preferred affinity and anti-affinity: more weighted attracting and fewer weighted repelling matching
    pods in a node's domains score higher."""

    name = "InterPodAffinity"

    def uniform_for(self, state: ClusterState, pod: CompiledPod) -> bool:
        """A pod without labels or terms of its own (not ``pod_dependent``) counts nothing: Skip."""
        return not pod.spec.pod_dependent

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        spec = pod.spec
        weighted = [
            (t, -t.weight, _term_selector(state, pod, t)) for t in spec.anti_affinity if not t.required
        ]
        weighted += [
            (t, t.weight, _term_selector(state, pod, t)) for t in spec.pod_affinity if not t.required
        ]
        counted = [
            (t.topology_key, w, state.pod_labels.domain_counts(sid, t.topology_key)) for t, w, sid in weighted
        ]
        if spec.pod_dependent:  # bound pods' own terms can only select a pod whose labels are modelled
            for term, owners in state.pod_labels.existing_score_terms(dict(spec.labels), spec.namespace):
                counted.append((term.topology_key, _symmetric_weight(term), owners))
        if not counted:
            return None
        raw = np.zeros(len(nodes), dtype=np.int64)
        for key, weight, per_domain in counted:
            codes = state.labels.codes(key)[nodes]
            has = codes >= 0
            raw[has] += weight * per_domain[codes[has]]
        return normalize_min_max(raw)


def _symmetric_weight(term: PodAntiAffinityTerm) -> int:
    """What one bound pod's term matching the incoming pod adds to each node of its domain."""
    if isinstance(term, PodAffinityTerm):
        return HARD_POD_AFFINITY_WEIGHT if term.required else term.weight
    return -term.weight


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
