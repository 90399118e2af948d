"""Per-node filter verdicts for one pod, from the simulator's own filter plugins.

kube-scheduler stops at the first failing filter per node; so does this. Nodes are grouped by what makes
them fail (resource columns short, taint class) so each plugin's ``failure`` runs once per group, not once
per node: the cost stays a few array operations on clusters of thousands of nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.plugins.node_resources_fit import NodeResourcesFitFilter
from fleetlab.placement.plugins.taint_toleration import TaintTolerationFilter, first_untolerated
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, IntArray

NOT_READY_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


@dataclass
class NodeVerdict:
    """One node's result for one pod: the first failing plugin and its reason strings."""

    node: str
    fits: bool
    plugin: str | None
    reasons: list[str]


def _group_keys(scheduler: Scheduler, pod: CompiledPod, plugin: object, nodes: IntArray) -> IntArray:
    """Per failing node, a group id such that nodes in one group get the same reasons."""
    state = scheduler.state
    if isinstance(plugin, NodeResourcesFitFilter):
        cols = pod.request_cols
        short = state.free[np.ix_(nodes, cols)] < pod.request[cols]
        weights = (1 << np.arange(len(cols), dtype=np.int64)) if len(cols) < 62 else None
        if weights is not None:
            return np.asarray(short.astype(np.int64) @ weights, dtype=np.int64)
        _, inverse = np.unique(short, axis=0, return_inverse=True)
        return np.asarray(inverse, dtype=np.int64).reshape(-1)
    if isinstance(plugin, TaintTolerationFilter):
        return np.asarray(state.taint_classes.of_node[nodes], dtype=np.int64)
    return np.zeros(len(nodes), dtype=np.int64)


def per_node_verdicts(scheduler: Scheduler, pod: CompiledPod) -> list[NodeVerdict]:
    """Every node's verdict, in node order; reasons are kube-scheduler's strings for that node."""
    state = scheduler.state
    remaining = np.ones(state.n, dtype=bool)
    plugin_of: list[str | None] = [None] * state.n
    reasons_of: list[list[str]] = [[] for _ in range(state.n)]
    for plugin in scheduler.filters:
        passed = plugin.passes(state, pod)
        failing = np.flatnonzero(remaining & ~passed)
        remaining &= passed
        if not len(failing):
            continue
        keys = _group_keys(scheduler, pod, plugin, failing)
        for key in np.unique(keys):
            members = failing[keys == key]
            mask = np.zeros(state.n, dtype=bool)
            mask[members] = True
            reasons = sorted(plugin.failure(state, pod, mask).reasons)
            for i in members.tolist():
                plugin_of[i] = plugin.name
                reasons_of[i] = reasons
    return [
        NodeVerdict(name, plugin_of[i] is None, plugin_of[i], reasons_of[i])
        for i, name in enumerate(state.node_names)
    ]


def big_enough(scheduler: Scheduler, pod: CompiledPod) -> BoolArray:
    """Nodes whose allocatable (empty) holds the pod's requests: where it could go if rules allowed."""
    state = scheduler.state
    cols = pod.request_cols
    return np.asarray((state.allocatable[:, cols] >= pod.request[cols]).all(axis=1), dtype=bool)


def rule_block(scheduler: Scheduler, pod: CompiledPod, verdicts: list[NodeVerdict]) -> tuple[str, str] | None:
    """When rules (not capacity) keep a pod off every node big enough for it: the dominant rule and why.

    Returns ("taint" | "not-ready" | "cordoned" | "selector/affinity", detail) or None.
    """
    state = scheduler.state
    big = big_enough(scheduler, pod)
    targets = np.flatnonzero(big) if big.any() else np.arange(state.n)
    counts: Counter[str] = Counter()
    taint_names: Counter[str] = Counter()
    for i in targets.tolist():
        verdict = verdicts[i]
        if verdict.plugin == "NodeUnschedulable":
            counts["cordoned"] += 1
        elif verdict.plugin == "NodeAffinity":
            counts["selector/affinity"] += 1
        elif verdict.plugin == "TaintToleration":
            taints = state.taint_classes.sets[int(state.taint_classes.of_node[i])]
            taint = first_untolerated(taints, pod.tolerations)
            if taint is None:
                continue
            kind = "not-ready" if taint.key in NOT_READY_KEYS else "taint"
            counts[kind] += 1
            taint_names[f"{taint.key}={taint.value}:{taint.effect}"] += 1
        else:
            return None  # some big-enough node fails only on free capacity: not a rule problem
    if not counts:
        return None
    kind, _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    scope = f"all {len(targets)} node(s) large enough" if big.any() else f"all {len(targets)} node(s)"
    parts = [f"{n} {k}" for k, n in sorted(counts.items())]
    detail = f"{scope} for the pod are ruled out: {', '.join(parts)}"
    if taint_names:
        named = ", ".join(f"{t} ({n})" for t, n in sorted(taint_names.items()))
        detail += f"; untolerated taints: {named}"
    return kind, detail
