"""Which rule keeps a pod off nodes that could hold it: the constraint whose removal opens room.

kube-scheduler stops at the first failing filter per node; to blame a constraint, every rule filter
(cordon, taints, nodeSelector/affinity, topology spread, inter-pod affinity) runs on every candidate node, so
a node failing two rules counts for both. A pod whose nodes with room are all ruled out is blocked by a
constraint, not by a shortage: free capacity a taint keeps away is the taint's doing. ``diagnose`` and the
simulator's pending table both ask :func:`room_rule_block` before they report a shortage or fragmentation
(``sim/pending.classify_blamed``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.plugins.inter_pod_affinity import affinity_blocked
from fleetlab.placement.plugins.taint_toleration import first_untolerated
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, IntArray

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"
NOT_READY_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
#: Filters that reject a node by rule rather than by free capacity, and the block each one names.
RULE_PLUGINS = {
    "NodeUnschedulable": "cordoned",
    "TaintToleration": "taint",
    "NodeAffinity": "selector/affinity",
    "PodTopologySpread": "topology-spread",
    "InterPodAffinity": "anti-affinity",
}


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
                if taint.key == UNSCHEDULABLE_KEY:  # the node controller's mark of a cordon: one constraint
                    masks[hit] |= _BIT["cordoned"]
                    continue
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


def room_rule_block(scheduler: Scheduler, pod: CompiledPod) -> tuple[str, str] | None:
    """When the pod fits nowhere but some ready node has its requests free now and only rules keep the pod
    off it: the rule whose removal opens that room (a taint in front of idle GPUs is the taint, not a
    shortage). A NotReady or unreachable node's free capacity is not room. None when no node has room,
    some node with room passes every filter, or some node with room fails for another reason than a rule."""
    state = scheduler.state
    cols = pod.request_cols
    room = state.ready & ~_node_down(scheduler) & (state.free[:, cols] >= pod.request[cols]).all(axis=1)
    if not room.any() or len(scheduler.feasible_nodes(pod)):
        return None
    return rule_headline(scheduler, pod, np.flatnonzero(room), "node(s) with room for the pod now")


def _node_down(scheduler: Scheduler) -> BoolArray:
    """Nodes carrying a not-ready / unreachable taint: their free capacity is not room anyone can use."""
    classes = scheduler.state.taint_classes
    down = np.asarray(
        [
            any(t.key in NOT_READY_KEYS and t.effect != "PreferNoSchedule" for t in taints)
            for taints in classes.sets
        ],
        dtype=bool,
    )
    return down[classes.of_node] if len(down) else np.zeros(scheduler.state.n, dtype=bool)


def rule_headline(
    scheduler: Scheduler, pod: CompiledPod, targets: IntArray, scope: str
) -> tuple[str, str] | None:
    """The rule that, lifted alone, opens the most ``targets`` nodes (a taint, cordon or NotReady before
    the pod's own selector/affinity); when no single rule is enough, the pair that opens the most, and the
    detail says both must change. Returns ("taint" | "not-ready" | "cordoned" | "selector/affinity" |
    "topology-spread" | "pod-affinity" | "anti-affinity", detail), or None when some target node is
    rejected by no rule."""
    found = _rule_kinds(scheduler, pod, targets)
    if found is None:
        return None
    sets, taint_names = found
    counts: Counter[str] = Counter()
    for kinds, n in sets.items():
        for k in kinds:
            counts[k] += n
    singles: Counter[str] = Counter({next(iter(k)): n for k, n in sets.items() if len(k) == 1})
    parts = [f"{n} {k}" for k, n in sorted(counts.items())]
    detail = f"all {len(targets)} {scope} are ruled out: {', '.join(parts)}"
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
