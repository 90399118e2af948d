"""PodTopologySpread: DoNotSchedule constraints as a filter, ScheduleAnyway constraints as a score.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread (filtering.go, scoring.go, common.go;
kubernetes/kubernetes @01c2588b / @7d6a59c1). Filter: on a node whose domain holds ``matchNum`` matching
pods, ``matchNum + selfMatch - globalMin > maxSkew`` rejects, where the global minimum is taken over the
eligible domains (nodes carrying every constraint's key and passing the node inclusion policies) and is 0
while fewer than minDomains domains exist. Score: per constraint ``count * ln(domains + 2) + maxSkew - 1``
summed, rounded, then reversed against the max (``100 * (max + min - s) / max``); nodes missing a key get 0.
Terminating pods (deletionTimestamp set) are not counted (common.go countPodsMatchSelector).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fleetlab.model.cluster import HOSTNAME_LABEL
from fleetlab.model.pod_constraints import LabelSelector, TopologySpreadConstraint
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, ScorePlugin
from fleetlab.placement.plugins.node_affinity import NodeAffinityFilter
from fleetlab.placement.plugins.taint_toleration import TaintTolerationFilter
from fleetlab.placement.pod_labels import selector_matches
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

REASON_SKEW = "node(s) didn't match pod topology spread constraints"
REASON_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
MAX_NODE_SCORE = 100


@dataclass(frozen=True)
class ResolvedConstraint:
    """A constraint with its selector final (matchLabelKeys merged), registered with the pod counts."""

    constraint: TopologySpreadConstraint
    selector_id: int
    self_match: int

    @property
    def key(self) -> str:
        """The topology key."""
        return self.constraint.topology_key


def _merged_selector(c: TopologySpreadConstraint, labels: dict[str, str]) -> LabelSelector | None:
    """matchLabelKeys: the pod's values for those keys are ANDed into the selector (common.go)."""
    extra = {k: labels[k] for k in c.match_label_keys if k in labels}
    if not extra or c.label_selector is None:
        return c.label_selector
    merged = dict(c.label_selector.match_labels)
    merged.update(extra)
    return LabelSelector(match_labels=merged, match_expressions=c.label_selector.match_expressions)


def constraints_for(
    state: ClusterState,
    pod: CompiledPod,
    action: str,
    defaults: tuple[TopologySpreadConstraint, ...],
) -> list[ResolvedConstraint]:
    """The pod's constraints for ``action`` (DoNotSchedule or ScheduleAnyway), else the profile defaults
    with the owner's selector (buildDefaultConstraints); cached per pod."""
    cache_key = f"spread_{action}"
    found: list[ResolvedConstraint] | None = pod.cache.get(cache_key)
    if found is not None:
        return found
    spec = pod.spec
    labels = dict(spec.labels)
    chosen: list[TopologySpreadConstraint] = []
    if spec.topology_spread:
        chosen = [c for c in spec.topology_spread if c.when_unsatisfiable == action]
    elif spec.default_spread_selector is not None and not spec.default_spread_selector.is_empty:
        chosen = [
            c.model_copy(update={"label_selector": spec.default_spread_selector})
            for c in defaults
            if c.when_unsatisfiable == action
        ]
    out = []
    for c in chosen:
        selector = _merged_selector(c, labels)
        sid = state.pod_labels.selector(
            selector, frozenset({spec.namespace}), count_empty=False, count_terminating=False
        )
        out.append(ResolvedConstraint(c, sid, 1 if selector_matches(selector, labels) else 0))
    pod.cache[cache_key] = out
    return out


def _has_all_keys(state: ClusterState, constraints: list[ResolvedConstraint]) -> BoolArray:
    mask = np.ones(state.n, dtype=bool)
    for rc in constraints:
        mask &= state.labels.has(rc.key)
    return mask


def _eligible(state: ClusterState, pod: CompiledPod, rc: ResolvedConstraint, base: BoolArray) -> BoolArray:
    """Nodes whose pods count for the constraint: ``base`` and the node inclusion policies."""
    policy = (rc.constraint.node_affinity_policy == "Honor", rc.constraint.node_taints_policy == "Honor")
    cache_key = ("spread_inclusion", policy)
    cached: tuple[int, BoolArray] | None = pod.cache.get(str(cache_key))
    if cached is None or cached[0] != state.topology_generation:
        mask = np.ones(state.n, dtype=bool)
        if policy[0]:
            mask &= NodeAffinityFilter().passes(state, pod)
        if policy[1]:
            mask &= TaintTolerationFilter().passes(state, pod)
        cached = (state.topology_generation, mask)
        pod.cache[str(cache_key)] = cached
    return base & cached[1]


@dataclass
class _FilterPrep:
    """Per pod and node topology: which nodes count, which domains exist, whether counts can be reused."""

    generation: int
    has_keys: BoolArray
    eligible: list[BoolArray]
    present: list[BoolArray]
    reuse_all: list[bool]


class PodTopologySpreadFilter(FilterPlugin):
    """Rejects nodes where a DoNotSchedule constraint's skew would exceed maxSkew."""

    name = "PodTopologySpread"

    def __init__(self, defaults: tuple[TopologySpreadConstraint, ...] = ()) -> None:
        self.defaults = defaults

    def _prep(
        self, state: ClusterState, pod: CompiledPod, constraints: list[ResolvedConstraint]
    ) -> _FilterPrep:
        prep: _FilterPrep | None = pod.cache.get("spread_filter_prep")
        if prep is not None and prep.generation == state.topology_generation:
            return prep
        has_keys = state.ready & _has_all_keys(state, constraints)
        eligible, present, reuse = [], [], []
        for rc in constraints:
            mask = _eligible(state, pod, rc, has_keys)
            codes = state.labels.codes(rc.key)
            seen = np.zeros(int(codes.max(initial=-1)) + 1, dtype=bool)
            seen[codes[mask]] = True
            eligible.append(mask)
            present.append(seen)
            reuse.append(bool(np.array_equal(mask, state.labels.has(rc.key))))
        prep = _FilterPrep(state.topology_generation, has_keys, eligible, present, reuse)
        pod.cache["spread_filter_prep"] = prep
        return prep

    def _verdict(self, state: ClusterState, pod: CompiledPod) -> tuple[BoolArray, BoolArray]:
        """(passes, missing-label) per node; the first failing constraint decides, as upstream's loop."""
        constraints = constraints_for(state, pod, "DoNotSchedule", self.defaults)
        passes = np.ones(state.n, dtype=bool)
        missing = np.zeros(state.n, dtype=bool)
        if not constraints:
            return passes, missing
        prep = self._prep(state, pod, constraints)
        undecided = np.ones(state.n, dtype=bool)
        for i, rc in enumerate(constraints):
            codes = state.labels.codes(rc.key)
            lacks = undecided & (codes < 0)
            missing |= lacks
            passes &= ~lacks
            undecided &= ~lacks
            if prep.reuse_all[i]:
                counts = state.pod_labels.domain_counts(rc.selector_id, rc.key)
            else:
                counts = state.pod_labels.counts_within(rc.selector_id, rc.key, prep.eligible[i])
            present = prep.present[i]
            domains = int(np.count_nonzero(present))
            min_domains = rc.constraint.min_domains or 1
            global_min = int(counts[present].min()) if domains >= min_domains and domains else 0
            labelled = undecided & (codes >= 0)
            node_counts = np.zeros(state.n, dtype=np.int64)
            node_counts[labelled] = counts[codes[labelled]]
            skewed = labelled & (node_counts + rc.self_match - global_min > rc.constraint.max_skew)
            passes &= ~skewed
            undecided &= ~skewed
        return passes, missing

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        return self._verdict(state, pod)[0]

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        _, missing = self._verdict(state, pod)
        lacking = int(np.count_nonzero(failing & missing))
        skewed = int(np.count_nonzero(failing & ~missing))
        reasons = {r: n for r, n in ((REASON_LABEL, lacking), (REASON_SKEW, skewed)) if n}
        return FilterFailure(self.name, reasons, lacking + skewed, unresolvable=skewed == 0)


class PodTopologySpreadScore(ScorePlugin):
    """Fewer matching pods in a node's domains score higher (scoring.go), Skip without soft constraints."""

    name = "PodTopologySpread"

    def __init__(
        self, defaults: tuple[TopologySpreadConstraint, ...] = (), system_defaulted: bool = True
    ) -> None:
        self.defaults = defaults
        self.system_defaulted = system_defaulted

    def uniform_for(self, state: ClusterState, pod: CompiledPod) -> bool:
        """No ScheduleAnyway constraint of its own or by default: Skip."""
        return not constraints_for(state, pod, "ScheduleAnyway", self.defaults)

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | None:
        constraints = constraints_for(state, pod, "ScheduleAnyway", self.defaults)
        if not constraints:
            return None
        require_all = bool(pod.spec.topology_spread) or not self.system_defaulted
        has_all = _has_all_keys(state, constraints) if require_all else None
        ignored = ~has_all[nodes] if has_all is not None else np.zeros(len(nodes), dtype=bool)
        # Nodes whose pods count, before each constraint's inclusion policies.
        base = state.ready & has_all if has_all is not None else state.ready
        scored = nodes[~ignored]
        raw = np.zeros(len(nodes), dtype=np.float64)
        for rc in constraints:
            codes = state.labels.codes(rc.key)
            node_codes = codes[nodes]
            if rc.key == HOSTNAME_LABEL:
                size = len(scored)
                cnt = dense_node_counts(state, rc.selector_id)[nodes]
            else:
                size = len(np.unique(codes[scored]))
                eligible = _eligible(state, pod, rc, base)
                counts = state.pod_labels.counts_within(rc.selector_id, rc.key, eligible)
                cnt = np.zeros(len(nodes), dtype=np.int64)
                labelled = node_codes >= 0  # a key on no node has no domains (and an empty ``counts``)
                cnt[labelled] = counts[node_codes[labelled]]
            weight = math.log(size + 2)
            raw += np.where(node_codes >= 0, cnt * weight + (rc.constraint.max_skew - 1), 0.0)
        rounded = np.floor(raw + 0.5).astype(np.int64)  # math.Round on non-negative values
        return normalize_reversed(rounded, ignored)


def dense_node_counts(state: ClusterState, selector_id: int) -> IntArray:
    """Matching pods per node as an array over all nodes."""
    per_node = state.pod_labels.node_counts(selector_id)
    dense = np.zeros(state.n, dtype=np.int64)
    if per_node:
        idx = np.fromiter(per_node.keys(), dtype=np.int64, count=len(per_node))
        dense[idx] = np.fromiter(per_node.values(), dtype=np.int64, count=len(per_node))
    return dense


def normalize_reversed(scores: IntArray, ignored: BoolArray) -> IntArray:
    """NormalizeScore of scoring.go: ``100 * (max + min - s) / max`` over scored nodes; ignored get 0."""
    out = np.zeros(len(scores), dtype=np.int64)
    kept = scores[~ignored]
    if len(kept) == 0:
        return out
    low, high = int(kept.min()), max(0, int(kept.max()))
    if high == 0:
        out[~ignored] = MAX_NODE_SCORE
        return out
    out[~ignored] = MAX_NODE_SCORE * (high + low - kept) // high
    return out
