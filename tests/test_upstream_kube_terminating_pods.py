"""Terminating pods (metadata.deletionTimestamp set) and PodTopologySpread, ported from upstream.

Sources: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go``
``TestSingleConstraint`` @e7827879 and ``scoring_test.go`` ``TestPodTopologySpreadScore`` @38f68d59, case
"terminating Pods should be excluded" in each: common.go ``countPodsMatchSelector`` skips a pod with a
deletion timestamp. InterPodAffinity has no such exclusion (a terminating pod still repels), and the pod
still holds its node's resources until it is gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fleetlab.kube.cluster import build_live_cluster, pod_spec
from fleetlab.placement.plugins.inter_pod_affinity import InterPodAffinityFilter
from fleetlab.placement.plugins.pod_topology_spread import PodTopologySpreadFilter
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import container, node, pod, write_list
from spread_builders import anti, make_cluster, make_node, place_existing, spread
from spread_builders import pod as spread_pod

UPSTREAM = "kubernetes/kubernetes pkg/scheduler/framework/plugins/podtopologyspread @e7827879 / @38f68d59"
HOST = "kubernetes.io/hostname"


def two_nodes():  # type: ignore[no-untyped-def]
    """node-a holds a terminating ``foo`` pod, node-b a running one."""
    state, sched = make_cluster([make_node("node-a", None), make_node("node-b", None)])
    place_existing(state, {"node-a": 1}, terminating=True)
    place_existing(state, {"node-b": 1})
    return state, sched


def test_filter_terminating_pods_should_be_excluded() -> None:
    """maxSkew 1 on ``node``: counts are a 0 (its pod is terminating), b 1; a passes, b would make skew 2."""
    state, sched = two_nodes()
    compiled = spread_pod(sched, topology_spread=(spread(1, "node"),))
    passes = PodTopologySpreadFilter().passes(state, compiled)
    assert [bool(v) for v in passes] == [True, False], UPSTREAM


def test_score_terminating_pods_should_be_excluded() -> None:
    """ScheduleAnyway on hostname: a counts 0, b 1, so a scores 100 and b 0."""
    state, sched = two_nodes()
    compiled = spread_pod(sched, topology_spread=(spread(1, HOST, "ScheduleAnyway"),))
    plugin = next(p for p, _ in sched.scorers if p.name == "PodTopologySpread")
    assert [int(s) for s in plugin.score(state, compiled, np.arange(state.n))] == [100, 0], UPSTREAM


def test_terminating_pod_still_counts_for_anti_affinity() -> None:
    """interpodaffinity filtering.go counts every bound pod: the terminating ``foo`` pod on node-a still
    blocks a pod with required hostname anti-affinity to ``foo`` there."""
    state, sched = two_nodes()
    compiled = spread_pod(sched, anti_affinity=(anti(HOST),))
    assert [bool(v) for v in InterPodAffinityFilter().passes(state, compiled)] == [False, False]


def web(name: str, on: str | None, deleting: bool = False, **spec: Any) -> dict[str, Any]:
    obj = pod(name, [container("c", {"cpu": "1"})], node=on, phase="Running" if on else "Pending", **spec)
    obj["metadata"]["labels"] = {"app": "web"}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def test_snapshot_pod_with_a_deletion_timestamp_is_not_counted_by_spread(tmp_path: Path) -> None:
    """A kubectl snapshot: web replicas run on a1 (terminating) and b1; a third has maxSkew 1 on hostname.
    Counts a1 0, b1 1, minimum 0: a1 gives 0 + 1 - 0 = 1 (passes), b1 1 + 1 - 0 = 2 > 1 (fails). Were w1
    counted, both nodes would give 1 + 1 - 1 = 1 and both would pass."""
    selector = {"matchLabels": {"app": "web"}}
    constraint = {
        "maxSkew": 1,
        "topologyKey": HOST,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": selector,
    }
    items = [node("a1", gpus=None), node("b1", gpus=None), web("w1", "a1", deleting=True), web("w2", "b1")]
    items.append(web("w3", None, topologySpreadConstraints=[constraint]))
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    assert [p.deleting for p in snap.pods] == [True, False, False]
    live = build_live_cluster(snap)
    compiled = live.scheduler.compile(pod_spec(snap.pods[2]))
    assert live.state.node_names == ["a1", "b1"]
    assert [bool(v) for v in PodTopologySpreadFilter().passes(live.state, compiled)] == [True, False]
