"""Bound pods counted by label selector: per node and per topology domain, kept current on bind and unbind.

PodTopologySpread and InterPodAffinity ask "how many pods matching S run in each domain of key K?". Instead of
recounting every bound pod per scheduling cycle (upstream's PreFilter walks all nodes' pods), each distinct
selector is registered once and its counts move with every bind and release: a sparse node -> pods map and,
per topology key asked for, a dense per-domain array. Pods are interned as label sets (labels, namespace and
the affinity terms they carry that bear on other pods: required anti-affinity for the Filter, pod affinity
and preferred anti-affinity for the symmetric score), so matching a pod against selectors happens once per
set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.pod_constraints import LabelSelector, PodAffinityTerm, PodAntiAffinityTerm
from fleetlab.placement.label_index import LabelIndex

IntArray = NDArray[np.int64]
#: The label the API server sets on every Namespace (1.21+): a namespaceSelector can always name one by it.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: Per-domain arrays are kept (and bumped on every bind) only for keys with at most this many values, such
#: as zones; hostname-like keys are summed from the sparse per-node counts on demand, so memory does not
#: grow with selectors x nodes.
MAX_KEPT_DOMAINS = 1024


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector semantics: None matches nothing, an empty selector everything."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        if req.operator == "In" and not (present and labels[req.key] in req.values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in req.values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def _index_pair(selector: LabelSelector | None) -> tuple[str, str] | None:
    """A matchLabels pair every pod matching ``selector`` must carry (the smallest), if any."""
    if selector is None or not selector.match_labels:
        return None
    return min(selector.match_labels.items())


#: What a registered selector is keyed by: the selector, the namespaces it looks in, whether an empty
#: selector counts pods and whether terminating pods count (InterPodAffinity: yes and yes;
#: PodTopologySpread's countPodsMatchSelector: no and no).
SelectorKey = tuple[LabelSelector | None, frozenset[str], bool, bool]


@dataclass(frozen=True)
class LabelSet:
    """The scheduling-relevant identity of a bound pod."""

    labels: tuple[tuple[str, str], ...]
    namespace: str
    anti_terms: tuple[PodAntiAffinityTerm, ...] = ()
    #: metadata.deletionTimestamp is set: PodTopologySpread no longer counts the pod (upstream #87621).
    terminating: bool = False
    #: Terms that score incoming pods (upstream processExistingPod): required and preferred pod affinity
    #: (``PodAffinityTerm``) and preferred anti-affinity.
    score_terms: tuple[PodAntiAffinityTerm, ...] = ()


@dataclass
class _Counts:
    """Matching pods of one selector (or owners of one anti-affinity term): per node, per domain."""

    nodes: dict[int, int] = field(default_factory=dict)
    domains: dict[str, IntArray] = field(default_factory=dict)


class PodLabelCounts:
    """Registered selectors and their live counts over the bound pods of one cluster state."""

    def __init__(self, labels: LabelIndex) -> None:
        self._labels = labels
        self._sets: list[LabelSet] = []
        self._set_ids: dict[LabelSet, int] = {}
        self._bound: list[dict[int, int]] = []
        #: Per label set, the selectors matching it (None until the set is first bound).
        self._matches: list[list[int] | None] = []
        #: Selectors indexed by one of their matchLabels pairs (those without any are always candidates),
        #: and the resolved label sets by each of their pairs: matching never scans every selector.
        self._selectors_by_pair: dict[tuple[str, str], list[int]] = {}
        self._unindexed: list[int] = []
        self._resolved_by_pair: dict[tuple[str, str], list[int]] = {}
        self._resolved: list[int] = []
        self._selectors: list[SelectorKey] = []
        self._selector_ids: dict[SelectorKey, int] = {}
        self._counts: list[_Counts] = []
        #: Affinity terms carried by bound pods (required anti-affinity, and the score terms): term key ->
        #: owners' counts. The key tells pod affinity from anti-affinity (equal fields hash alike).
        self._term_ids: dict[tuple[PodAntiAffinityTerm, str, bool], int] = {}
        self._terms: list[tuple[PodAntiAffinityTerm, str]] = []
        self._term_counts: list[_Counts] = []
        self._live_terms: dict[int, int] = {}
        self._terms_by_pair: dict[tuple[str, str], set[int]] = {}
        self._unindexed_terms: set[int] = set()
        #: Labels of Namespace objects (set before pods are bound); every namespace also carries its
        #: ``kubernetes.io/metadata.name`` label.
        self.namespace_labels: dict[str, Mapping[str, str]] = {}
        self._namespaces: set[str] = set()

    # -- interning ---------------------------------------------------------------------------------------
    def intern(
        self,
        labels: Mapping[str, str],
        namespace: str,
        anti_terms: tuple[PodAntiAffinityTerm, ...] = (),
        affinity_terms: tuple[PodAffinityTerm, ...] = (),
        terminating: bool = False,
    ) -> int:
        """Id of a pod label set (stable for the life of the state). Required ``anti_terms`` are checked
        against incoming pods; preferred ones and all ``affinity_terms`` add to their score."""
        key = LabelSet(
            tuple(sorted(labels.items())),
            namespace,
            tuple(t for t in anti_terms if t.required),
            terminating,
            (*affinity_terms, *(t for t in anti_terms if not t.required)),
        )
        found = self._set_ids.get(key)
        if found is not None:
            return found
        sid = len(self._sets)
        self._namespaces.add(namespace)
        self._set_ids[key] = sid
        self._sets.append(key)
        self._bound.append({})
        self._matches.append(None)
        return sid

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        """A namespace's labels, its name label included."""
        return {**self.namespace_labels.get(namespace, {}), NAMESPACE_NAME_LABEL: namespace}

    def term_namespaces(self, term: PodAntiAffinityTerm, own: str) -> frozenset[str]:
        """The namespaces a term of a pod in ``own`` looks in (upstream GetNamespacesFromPodAffinityTerm
        plus the namespaceSelector resolved over the namespaces known here, as PreFilter resolves it over
        the Namespace lister)."""
        if not term.namespaces and term.namespace_selector is None:
            return frozenset((own,))
        names = set(term.namespaces)
        if term.namespace_selector is not None:
            known = self._namespaces | self.namespace_labels.keys()
            names.update(
                n for n in known if selector_matches(term.namespace_selector, self.labels_of_namespace(n))
            )
        return frozenset(names)

    def label_set(self, set_id: int) -> LabelSet:
        """The interned label set."""
        return self._sets[set_id]

    def selector(
        self,
        selector: LabelSelector | None,
        namespaces: frozenset[str],
        count_empty: bool,
        count_terminating: bool = True,
    ) -> int:
        """Id of a selector, registering it (and counting the pods already bound) on first use."""
        key: SelectorKey = (selector, namespaces, count_empty, count_terminating)
        found = self._selector_ids.get(key)
        if found is not None:
            return found
        sel = len(self._selectors)
        self._selector_ids[key] = sel
        self._selectors.append(key)
        counts = _Counts()
        self._counts.append(counts)
        pair = _index_pair(selector)
        if pair is None:
            self._unindexed.append(sel)
            candidates: list[int] = self._resolved
        else:
            self._selectors_by_pair.setdefault(pair, []).append(sel)
            candidates = self._resolved_by_pair.get(pair, [])
        for set_id in candidates:
            if not self._matches_set(sel, set_id):
                continue
            matches = self._matches[set_id]
            assert matches is not None
            matches.append(sel)
            for node, pods in self._bound[set_id].items():
                counts.nodes[node] = counts.nodes.get(node, 0) + pods
        return sel

    def _matches_set(self, sel: int, set_id: int) -> bool:
        selector, namespaces, count_empty, count_terminating = self._selectors[sel]
        if selector is None or (selector.is_empty and not count_empty):
            return False
        pod = self._sets[set_id]
        if pod.terminating and not count_terminating:
            return False
        return pod.namespace in namespaces and selector_matches(selector, dict(pod.labels))

    def _resolve(self, set_id: int) -> list[int]:
        """The selectors matching a label set, computed on its first bind from the pair index."""
        found = self._matches[set_id]
        if found is not None:
            return found
        pairs = self._sets[set_id].labels
        candidates = set(self._unindexed)
        for pair in pairs:
            candidates.update(self._selectors_by_pair.get(pair, ()))
            self._resolved_by_pair.setdefault(pair, []).append(set_id)
        self._resolved.append(set_id)
        matches = [sel for sel in sorted(candidates) if self._matches_set(sel, set_id)]
        self._matches[set_id] = matches
        return matches

    # -- bind / unbind -----------------------------------------------------------------------------------
    def add(self, node: int, set_id: int, delta: int) -> None:
        """A pod of ``set_id`` was bound to (``delta`` 1) or released from (``delta`` -1) ``node``."""
        bound = self._bound[set_id]
        now = bound.get(node, 0) + delta
        if now:
            bound[node] = now
        else:
            bound.pop(node, None)
        for sel in self._resolve(set_id):
            self._bump(self._counts[sel], node, delta)
        pod = self._sets[set_id]
        for term in (*pod.anti_terms, *pod.score_terms):
            tid = self._term(term, pod.namespace)
            self._bump(self._term_counts[tid], node, delta)
            live = self._live_terms.get(tid, 0) + delta
            if live:
                self._live_terms[tid] = live
            else:
                self._live_terms.pop(tid, None)

    def _term(self, term: PodAntiAffinityTerm, namespace: str) -> int:
        key = (term, namespace, isinstance(term, PodAffinityTerm))
        tid = self._term_ids.get(key)
        if tid is None:
            tid = self._term_ids[key] = len(self._terms)
            self._terms.append((term, namespace))
            self._term_counts.append(_Counts())
            pair = _index_pair(term.label_selector)
            if pair is None:
                self._unindexed_terms.add(tid)
            else:
                self._terms_by_pair.setdefault(pair, set()).add(tid)
        return tid

    def _bump(self, counts: _Counts, node: int, delta: int) -> None:
        now = counts.nodes.get(node, 0) + delta
        if now:
            counts.nodes[node] = now
        else:
            counts.nodes.pop(node, None)
            if not counts.nodes:  # no matching pod left (a finished job): free its per-domain arrays
                counts.domains.clear()
                return
        for key, per_domain in counts.domains.items():
            code = int(self._labels.codes(key)[node])
            if code >= 0:
                per_domain[code] += delta

    # -- queries -----------------------------------------------------------------------------------------
    def node_counts(self, sel: int) -> dict[int, int]:
        """Matching pods per node (nodes without any are absent)."""
        return self._counts[sel].nodes

    def domain_counts(self, sel: int, key: str) -> IntArray:
        """Matching pods per value code of label ``key`` over all nodes (kept current from now on)."""
        return self._domains(self._counts[sel], key)

    def _domains(self, counts: _Counts, key: str) -> IntArray:
        per_domain = counts.domains.get(key)
        if per_domain is None:
            per_domain = self._sum_by_domain(counts.nodes, key, None)
            if len(per_domain) <= MAX_KEPT_DOMAINS and counts.nodes:
                counts.domains[key] = per_domain  # kept current by _bump from now on
        return per_domain

    def counts_within(self, sel: int, key: str, eligible: NDArray[np.bool_]) -> IntArray:
        """Matching pods per value code of ``key``, counting only pods on ``eligible`` nodes."""
        return self._sum_by_domain(self._counts[sel].nodes, key, eligible)

    def _sum_by_domain(self, nodes: dict[int, int], key: str, eligible: NDArray[np.bool_] | None) -> IntArray:
        """Pods per value code of ``key`` from a sparse node -> pods map (vectorised)."""
        codes = self._labels.codes(key)
        out = np.zeros(int(codes.max(initial=-1)) + 1, dtype=np.int64)
        if nodes:
            idx = np.fromiter(nodes.keys(), dtype=np.int64, count=len(nodes))
            pods = np.fromiter(nodes.values(), dtype=np.int64, count=len(nodes))
            node_codes = codes[idx]
            keep = node_codes >= 0 if eligible is None else eligible[idx] & (node_codes >= 0)
            np.add.at(out, node_codes[keep], pods[keep])
        return out

    def existing_anti_terms(self, labels: Mapping[str, str], namespace: str) -> list[tuple[str, IntArray]]:
        """(topology key, owners per domain) of bound pods' required anti-affinity terms matching a pod."""
        return [
            (term.topology_key, owners)
            for term, owners in self._existing_terms(labels, namespace)
            if term.required and not isinstance(term, PodAffinityTerm)
        ]

    def existing_score_terms(
        self, labels: Mapping[str, str], namespace: str
    ) -> list[tuple[PodAntiAffinityTerm, IntArray]]:
        """(term, owners per domain of its topology key) of bound pods' pod-affinity and preferred
        anti-affinity terms matching a pod."""
        return [
            (term, owners)
            for term, owners in self._existing_terms(labels, namespace)
            if isinstance(term, PodAffinityTerm) or not term.required
        ]

    def _existing_terms(
        self, labels: Mapping[str, str], namespace: str
    ) -> list[tuple[PodAntiAffinityTerm, IntArray]]:
        """Bound pods' terms (term namespaces, else the owner's) whose selector matches a pod."""
        out = []
        candidates = set(self._unindexed_terms)
        for pair in labels.items():
            candidates.update(self._terms_by_pair.get(pair, ()))
        for tid in sorted(candidates):
            if tid not in self._live_terms:
                continue
            term, owner_ns = self._terms[tid]
            if self._term_covers(term, owner_ns, namespace) and selector_matches(term.label_selector, labels):
                out.append((term, self._domains(self._term_counts[tid], term.topology_key)))
        return out

    def _term_covers(self, term: PodAntiAffinityTerm, owner: str, namespace: str) -> bool:
        """Whether a bound pod's term (the pod in ``owner``) looks in ``namespace`` (upstream
        AffinityTerm.Matches: the listed names, or the namespaceSelector against the namespace's labels)."""
        if not term.namespaces and term.namespace_selector is None:
            return namespace == owner
        if namespace in term.namespaces:
            return True
        selector = term.namespace_selector
        return selector is not None and selector_matches(selector, self.labels_of_namespace(namespace))
