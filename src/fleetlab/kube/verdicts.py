"""Per-node filter verdicts for one pod, from the simulator's own filter plugins.

kube-scheduler stops at the first failing filter per node; so does this. Nodes are grouped by what makes
them fail (resource columns short, taint class) so each plugin's ``failure`` runs once per group, not once
per node, and the result is kept as groups of node names: the cost stays a few array operations on
clusters of thousands of nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.plugins.inter_pod_affinity import affinity_blocked
from fleetlab.placement.plugins.node_resources_fit import NodeResourcesFitFilter
from fleetlab.placement.plugins.taint_toleration import TaintTolerationFilter, first_untolerated
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, IntArray

NOT_READY_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
#: Filters that reject a node by rule rather than by free capacity, and the block each one names.
RULE_PLUGINS = {
    "NodeUnschedulable": "cordoned",
    "TaintToleration": "taint",
    "NodeAffinity": "selector/affinity",
    "PodTopologySpread": "topology-spread",
    "InterPodAffinity": "anti-affinity",
}


@dataclass
class NodeGroup:
    """Nodes with the same verdict for one pod: the first failing plugin (None: the pod fits) and its
    reason strings."""

    plugin: str | None
    reasons: list[str]
    nodes: list[str]

    @property
    def fits(self) -> bool:
        """Whether the pod fits on these nodes now."""
        return self.plugin is None


@dataclass
class Verdicts:
    """Per-node results of one pod's filter pass, grouped; ``first_failing`` indexes the filters."""

    groups: list[NodeGroup]
    first_failing: IntArray  # per node: index of the first failing filter plugin, -1 where the pod fits


def _group_keys(scheduler: Scheduler, pod: CompiledPod, plugin: object, nodes: IntArray) -> IntArray:
    """Per failing node, a group id such that nodes in one group get the same reasons."""
    state = scheduler.state
    if isinstance(plugin, NodeResourcesFitFilter):
        cols = pod.request_cols
        short = state.free[np.ix_(nodes, cols)] < pod.request[cols]
        _, inverse = np.unique(short, axis=0, return_inverse=True)
        return np.asarray(inverse, dtype=np.int64).reshape(-1)
    if isinstance(plugin, TaintTolerationFilter):
        return np.asarray(state.taint_classes.of_node[nodes], dtype=np.int64)
    return np.zeros(len(nodes), dtype=np.int64)


def per_node_verdicts(scheduler: Scheduler, pod: CompiledPod) -> Verdicts:
    """Every node's verdict, grouped by (plugin, reasons); reasons are kube-scheduler's strings."""
    state = scheduler.state
    names = state.node_names
    remaining = np.ones(state.n, dtype=bool)
    first = np.full(state.n, -1, dtype=np.int64)
    merged: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for p_index, plugin in enumerate(scheduler.filters):
        passed = plugin.passes(state, pod)
        failing = np.flatnonzero(remaining & ~passed)
        remaining &= passed
        if not len(failing):
            continue
        first[failing] = p_index
        keys = _group_keys(scheduler, pod, plugin, failing)
        for key in np.unique(keys):
            members = failing[keys == key]
            mask = np.zeros(state.n, dtype=bool)
            mask[members] = True
            reasons = tuple(sorted(plugin.failure(state, pod, mask).reasons))
            merged.setdefault((plugin.name, reasons), []).extend(members.tolist())
    groups = [
        NodeGroup(plugin, list(reasons), [names[i] for i in sorted(members)])
        for (plugin, reasons), members in merged.items()
    ]
    fits = np.flatnonzero(remaining)
    if len(fits):
        groups.append(NodeGroup(None, [], [names[i] for i in fits.tolist()]))
    groups.sort(key=lambda g: (-len(g.nodes), g.plugin or "", g.reasons))
    return Verdicts(groups, first)


def big_enough(scheduler: Scheduler, pod: CompiledPod) -> BoolArray:
    """Nodes whose allocatable (empty) holds the pod's requests: where it could go if rules allowed."""
    state = scheduler.state
    cols = pod.request_cols
    return np.asarray((state.allocatable[:, cols] >= pod.request[cols]).all(axis=1), dtype=bool)


#: When several single changes would each let the pod in, the one named first: the pod's own node choice
#: (selector/affinity) is what the user meant, so changing it is the last resort.
_PREFERENCE = ("taint", "not-ready", "cordoned", "topology-spread", "anti-affinity", "pod-affinity")
_KINDS = (*_PREFERENCE, "selector/affinity")


def _rank(kind: str) -> int:
    return _PREFERENCE.index(kind) if kind in _PREFERENCE else len(_PREFERENCE)


_BIT = {kind: 1 << i for i, kind in enumerate(_KINDS)}


def _rule_kinds(
    scheduler: Scheduler, pod: CompiledPod, targets: IntArray
) -> tuple[Counter[frozenset[str]], Counter[str]] | None:
    """How many target nodes each set of rules rejects (all rule filters run, not only the first
    failing), and the untolerated taints by name; None when some target node is rejected by no rule."""
    state = scheduler.state
    masks = np.zeros(len(targets), dtype=np.int64)
    taint_names: Counter[str] = Counter()
    for plugin in scheduler.filters:
        if plugin.name not in RULE_PLUGINS:
            continue
        failing = ~plugin.passes(state, pod)[targets]
        if not failing.any():
            continue
        if plugin.name == "InterPodAffinity":
            attracted = affinity_blocked(state, pod)[targets]
            masks[failing & attracted] |= _BIT["pod-affinity"]
            masks[failing & ~attracted] |= _BIT["anti-affinity"]
        elif plugin.name == "TaintToleration":
            classes = state.taint_classes.of_node[targets]
            for cls in np.unique(classes[failing]).tolist():
                taint = first_untolerated(state.taint_classes.sets[int(cls)], pod.tolerations)
                if taint is None:
                    continue
                hit = failing & (classes == cls)
                masks[hit] |= _BIT["not-ready" if taint.key in NOT_READY_KEYS else "taint"]
                taint_names[f"{taint.key}={taint.value}:{taint.effect}"] += int(hit.sum())
        else:
            masks[failing] |= _BIT[RULE_PLUGINS[plugin.name]]
    if not masks.all():
        return None
    values, counts = np.unique(masks, return_counts=True)
    sets: Counter[frozenset[str]] = Counter()
    for value, n in zip(values.tolist(), counts.tolist(), strict=True):
        sets[frozenset(k for k in _KINDS if value & _BIT[k])] += n
    return sets, taint_names


def rule_block(scheduler: Scheduler, pod: CompiledPod, verdicts: Verdicts) -> tuple[str, str] | None:
    """When rules (not capacity) keep a pod off every node big enough for it: the rule whose removal
    would let it onto a node, and why.

    Every rule filter runs on every node big enough for the pod, so a node that fails two rules counts
    for both. The headline is the one rule that, lifted alone, opens the most nodes (a taint, cordon or
    NotReady before the pod's own selector/affinity); when no single rule is enough, the pair that opens
    the most nodes, and the detail says both must change. Returns ("taint" | "not-ready" | "cordoned" |
    "selector/affinity" | "topology-spread" | "pod-affinity" | "anti-affinity", detail) or None.
    """
    state = scheduler.state
    big = big_enough(scheduler, pod)
    targets = np.flatnonzero(big) if big.any() else np.arange(state.n)
    if np.any(verdicts.first_failing[targets] < 0):
        return None  # some big-enough node fits
    found = _rule_kinds(scheduler, pod, targets)
    if found is None:
        return None  # some big-enough node is short of free capacity only: not a rule problem
    sets, taint_names = found
    counts: Counter[str] = Counter()
    for kinds, n in sets.items():
        for k in kinds:
            counts[k] += n
    singles: Counter[str] = Counter({next(iter(k)): n for k, n in sets.items() if len(k) == 1})
    scope = f"all {len(targets)} node(s) large enough" if big.any() else f"all {len(targets)} node(s)"
    parts = [f"{n} {k}" for k, n in sorted(counts.items())]
    detail = f"{scope} for the pod are ruled out: {', '.join(parts)}"
    if singles:
        kind = min(singles, key=lambda k: (_rank(k), -singles[k], k))
        detail += f"; lifting the {kind} rule alone opens {singles[kind]} node(s)"
    else:
        pairs = {tuple(sorted(k, key=_rank)): n for k, n in sets.items() if len(k) == 2}
        if pairs:
            pair = min(pairs, key=lambda p: (-pairs[p], p))
            kind = pair[0]
            detail += (
                f"; no single rule is enough: {pair[0]} and {pair[1]} must both change "
                f"({pairs[pair]} node(s))"
            )
        else:
            kind = min(counts, key=lambda k: (_rank(k), -counts[k], k))
            detail += "; no node is blocked by fewer than three rules"
    if taint_names:
        named = ", ".join(f"{t} ({n})" for t, n in sorted(taint_names.items()))
        detail += f"; untolerated taints: {named}"
    return kind, detail
