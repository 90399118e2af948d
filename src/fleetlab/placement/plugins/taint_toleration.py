"""TaintToleration: filter on NoSchedule/NoExecute taints, score by untolerated PreferNoSchedule taints.

Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go (v1.35 wording after
PR #134740: ``node(s) had untolerated taint(s)``; earlier releases name the first taint ``{key: value}``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from fleetlab.model.kube import Taint, first_untolerated, tolerates
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin, ScorePlugin
from fleetlab.placement.scoring import default_normalize_score
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

#: ``tolerates`` and ``first_untolerated`` live in :mod:`fleetlab.model.kube` (admission needs them too).
__all__ = ["TaintTolerationFilter", "TaintTolerationScore", "first_untolerated", "tolerates"]


class TaintTolerationFilter(FilterPlugin):
    """Rejects nodes with a NoSchedule/NoExecute taint the pod does not tolerate (unresolvable)."""

    name = "TaintToleration"
    static = True

    def __init__(self, kubernetes_version: str = "1.35") -> None:
        self.named_taint = kubernetes_version < "1.35"

    def _per_class(self, state: ClusterState, pod: CompiledPod) -> list[Taint | None]:
        cached = pod.cache.get("taint_first_untolerated")
        if cached is None:
            cached = [first_untolerated(ts, pod.tolerations) for ts in state.taint_classes.sets]
            pod.cache["taint_first_untolerated"] = cached
        return list(cached)

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        ok = np.asarray([t is None for t in self._per_class(state, pod)], dtype=bool)
        return ok[state.taint_classes.of_node]

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        per_class = self._per_class(state, pod)
        counts: Counter[str] = Counter()
        classes = state.taint_classes.of_node[failing]
        for cls, n in zip(*np.unique(classes, return_counts=True), strict=True):
            taint = per_class[int(cls)]
            if taint is None:
                continue
            if self.named_taint:
                counts[f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"] += int(n)
            else:
                counts["node(s) had untolerated taint(s)"] += int(n)
        return FilterFailure(self.name, dict(counts), int(np.count_nonzero(failing)), unresolvable=True)


class TaintTolerationScore(ScorePlugin):
    """Fewer untolerated PreferNoSchedule taints score higher (DefaultNormalizeScore, reversed)."""

    name = "TaintToleration"

    def uniform_for(self, state: ClusterState, pod: CompiledPod) -> bool:
        """No node has a PreferNoSchedule taint the pod does not tolerate: every node scores 100."""
        self._prefer_counts(state, pod)
        return not pod.cache["taint_prefer_any"]

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | int | None:
        raw = self._prefer_counts(state, pod)
        if not pod.cache["taint_prefer_any"]:
            # Every node counts 0 untolerated taints: reverse-normalised, every node scores 100.
            return 100
        return default_normalize_score(raw[nodes], reverse=True)

    def _prefer_counts(self, state: ClusterState, pod: CompiledPod) -> IntArray:
        """Per node, the PreferNoSchedule taints the pod does not tolerate (static: cached per pod)."""
        raw: IntArray | None = pod.cache.get("taint_prefer_counts")
        if raw is None:
            relevant = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
            per_class = np.asarray(
                [
                    sum(
                        1
                        for taint in ts
                        if taint.effect == "PreferNoSchedule"
                        and not any(tolerates(t, taint) for t in relevant)
                    )
                    for ts in state.taint_classes.sets
                ],
                dtype=np.int64,
            )
            raw = per_class[state.taint_classes.of_node]
            pod.cache["taint_prefer_counts"] = raw
            pod.cache["taint_prefer_any"] = bool(raw.any())
        return raw
