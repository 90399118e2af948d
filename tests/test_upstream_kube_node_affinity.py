"""Upstream kube-scheduler's NodeAffinity filter table, ported case by case, and PodTopologySpread scoring
with a topology key no node carries.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go``,
``TestNodeAffinity`` (Filter status), at commit 17bae91f207a5f2b101e581c90f7a72fc9adef96. One node named
``node1`` with the case's labels; a failing case is ``UnschedulableAndUnresolvable`` with "node(s) didn't
match Pod's node affinity/selector".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fleetlab.model.kube import Affinity
from fleetlab.placement.plugins.node_affinity import REASON, NodeAffinityFilter
from spread_builders import make_cluster, make_node, pod, spread

UPSTREAM = "kubernetes/kubernetes nodeaffinity/node_affinity_test.go TestNodeAffinity @17bae91f"


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def _term(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


def _fields(*values: str) -> dict[str, Any]:
    return {"matchFields": [_expr("metadata.name", "In", v) for v in values]}


CASES: list[tuple[str, dict[str, str], dict[str, Any] | None, dict[str, str], str, bool]] = [
    ("missing labels", {"foo": "bar"}, None, {}, "node1", False),
    ("same labels", {"foo": "bar"}, None, {"foo": "bar"}, "node1", True),
    ("node labels are superset", {"foo": "bar"}, None, {"foo": "bar", "baz": "blah"}, "node1", True),
    ("node labels are subset", {"foo": "bar", "baz": "blah"}, None, {"foo": "bar"}, "node1", False),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        {},
        _required(_term(_expr("foo", "In", "bar", "value2"))),
        {"foo": "bar"},
        "node1",
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        {},
        _required(_term(_expr("kernel-version", "Gt", "0204"))),
        {"kernel-version": "0206"},
        "node1",
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        {},
        _required(_term(_expr("mem-type", "NotIn", "DDR", "DDR2"))),
        {"mem-type": "DDR3"},
        "node1",
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        {},
        _required(_term(_expr("GPU", "Exists"))),
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        {},
        _required(_term(_expr("foo", "In", "value1", "value2"))),
        {"foo": "bar"},
        "node1",
        False,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto "
        "the node",
        {},
        _required({"matchExpressions": []}),
        {"foo": "bar"},
        "node1",
        False,
    ),
    ("Pod with no Affinity will schedule onto a node", {}, None, {"foo": "bar"}, "node1", True),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {},
        {"nodeAffinity": {}},
        {"foo": "bar"},
        "node1",
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        {},
        _required(_term(_expr("GPU", "Exists"), _expr("GPU", "NotIn", "AMD", "INTER"))),
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        {},
        _required(_term(_expr("GPU", "Exists"), _expr("GPU", "In", "AMD", "INTER"))),
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        False,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto "
        "the node",
        {},
        _required(
            _term(_expr("foo", "In", "bar", "value2")), _term(_expr("diffkey", "In", "wrong", "value2"))
        ),
        {"foo": "bar"},
        "node1",
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
        "satisfied, will schedule onto the node",
        {"foo": "bar"},
        _required(_term(_expr("foo", "Exists"))),
        {"foo": "bar"},
        "node1",
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are "
        "deprecating) is not satisfied, won't schedule onto the node",
        {"foo": "bar"},
        _required(_term(_expr("foo", "Exists"))),
        {"foo": "barrrrrr"},
        "node1",
        False,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        {},
        _required(_term(_expr("foo", "NotIn", "invalid value: ___@#$%^"))),
        {"foo": "bar"},
        "node1",
        False,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        {},
        _required(_fields("node1")),
        {},
        "node1",
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        {},
        _required(_fields("node1")),
        {},
        "node2",
        False,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        {},
        _required(_fields("node1", "node2"), _term(_expr("foo", "In", "bar"))),
        {"foo": "bar"},
        "node2",
        True,
    ),
]


@pytest.mark.parametrize(
    ("selector", "affinity", "labels", "node_name", "fits"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_upstream_node_affinity_filter(
    selector: dict[str, str],
    affinity: dict[str, Any] | None,
    labels: dict[str, str],
    node_name: str,
    fits: bool,
) -> None:
    """One ``TestNodeAffinity`` case (name in the test id): passes, or fails unresolvable with the reason."""
    state, sched = make_cluster([make_node(node_name, None, **labels)])
    parsed = Affinity.model_validate(affinity) if affinity is not None else None
    compiled = pod(sched, node_selector=tuple(sorted(selector.items())), affinity=parsed)
    plugin = NodeAffinityFilter()
    passes = plugin.passes(state, compiled)
    assert bool(passes[0]) == fits, UPSTREAM
    if not fits:
        failure = plugin.failure(state, compiled, ~passes)
        assert failure.unresolvable and failure.reasons == {REASON: 1}


def test_spread_score_with_a_topology_key_on_no_node() -> None:
    """scoring.go ``initPreScoreState``: a pod's own ScheduleAnyway constraint on a key no node carries makes
    every node ignored (requireAllTopologies), so every score is 0 — no crash on the empty domain table."""
    nodes = [make_node(n, "zone1") for n in ("node-a", "node-b")]
    state, sched = make_cluster(nodes)
    compiled = pod(sched, topology_spread=(spread(1, "rack", "ScheduleAnyway"),))
    plugin = next(p for p, _ in sched.scorers if p.name == "PodTopologySpread")
    assert [int(s) for s in plugin.score(state, compiled, np.arange(state.n))] == [0, 0]
