"""Per-node filter verdicts for one pod, from the simulator's own filter plugins.

kube-scheduler stops at the first failing filter per node; so does this. Nodes are grouped by what makes
them fail (resource columns short, taint class) so each plugin's ``failure`` runs once per group, not once
per node, and the result is kept as groups of node names: the cost stays a few array operations on
clusters of thousands of nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.plugins.node_resources_fit import NodeResourcesFitFilter
from fleetlab.placement.plugins.taint_toleration import TaintTolerationFilter
from fleetlab.placement.rule_blame import big_enough, rule_headline
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import IntArray


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


def rule_block(scheduler: Scheduler, pod: CompiledPod, verdicts: Verdicts) -> tuple[str, str] | None:
    """When rules (not capacity) keep a pod off every node big enough for it: the rule whose removal
    would let it onto a node, and why (see ``placement.rule_blame.rule_headline``)."""
    state = scheduler.state
    big = big_enough(scheduler, pod)
    targets = np.flatnonzero(big) if big.any() else np.arange(state.n)
    if np.any(verdicts.first_failing[targets] < 0):
        return None  # some big-enough node fits
    scope = "node(s) large enough for the pod" if big.any() else "node(s) for the pod"
    return rule_headline(scheduler, pod, targets, scope)
