"""fleetlab diagnose on real pods carrying topologySpreadConstraints / podAntiAffinity: the snapshot's bound
pods are counted, and the pending pod gets kube-scheduler's PodTopologySpread / InterPodAffinity reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetlab.experiment.run import run_one
from fleetlab.kube.cluster import build_live_cluster
from fleetlab.kube.diagnose import diagnose
from fleetlab.kube.to_scenario import snapshot_pools, snapshot_scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import container, node, pod, write_list

ZONE = "topology.kubernetes.io/zone"


def zoned(name: str, zone: str) -> dict[str, Any]:
    obj = node(name, gpus=None)
    obj["metadata"]["labels"][ZONE] = zone
    return obj


def web(name: str, on: str | None, **spec: Any) -> dict[str, Any]:
    obj = pod(name, [container("c", {"cpu": "1"})], node=on, phase="Running" if on else "Pending", **spec)
    obj["metadata"]["labels"] = {"app": "web"}
    return obj


SELECTOR = {"matchLabels": {"app": "web"}}


def run(tmp_path: Path, items: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    return diagnose(build_live_cluster(snap), snap.newest)


def test_pending_pod_blocked_by_zone_skew(tmp_path: Path) -> None:
    """Two web pods run in zone a, none in b; b's only node is full. A third web pod with maxSkew 1 on zone
    may not go to zone a (skew 2) and does not fit in zone b."""
    spread = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": SELECTOR}
    ]
    full = pod("filler", [container("c", {"cpu": "64"})], node="b1", phase="Running")
    items = [zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b"), web("w1", "a1"), web("w2", "a2"), full]
    items.append(web("w3", None, topologySpreadConstraints=spread))
    d = run(tmp_path, items)
    (p,) = d.pending
    assert p.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match pod topology spread constraints."
    )


def test_pending_pod_blocked_by_required_anti_affinity(tmp_path: Path) -> None:
    """One replica per hostname: with both nodes holding a replica the third is blocked by anti-affinity."""
    term = {"labelSelector": SELECTOR, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    items = [zoned("a1", "a"), zoned("a2", "a"), web("w1", "a1"), web("w2", "a2")]
    items.append(web("w3", None, affinity=anti))
    (p,) = run(tmp_path, items).pending
    assert p.message == "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    assert p.blocked_by == "anti-affinity"


def test_bad_spread_constraint_is_a_spec_error(tmp_path: Path) -> None:
    bad = web("w3", None, topologySpreadConstraints=[{"maxSkew": 0, "topologyKey": ZONE}])
    path = write_list(tmp_path / "snap.json", [zoned("a1", "a"), bad])
    with pytest.raises(SpecError) as info:
        load_snapshot([path])
    assert "topologySpreadConstraints[0]" in str(info.value) and "maxSkew" in str(info.value)


def test_snapshot_scenario_keeps_anti_affinity_and_labels(tmp_path: Path) -> None:
    """kube to scenario: the running replica and the pending one keep their labels and required
    anti-affinity, so the simulated pending replica avoids the node holding the running one."""
    term = {"labelSelector": SELECTOR, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    items = [
        zoned("a1", "a"),
        zoned("a2", "a"),
        web("w1", "a1", affinity=anti),
        web("w2", None, affinity=anti),
    ]
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    resolved = snapshot_scenario(snap, remaining_s=3600, runtime_s=600)
    jobs = {j.id: j for j in resolved.jobs}
    assert jobs["default/w2"].labels == {"app": "web"}
    assert jobs["default/w2"].anti_affinity[0].topology_key == "kubernetes.io/hostname"
    result = run_one(resolved, "most-allocated").result
    node_names = result.nodes.names
    placed = {
        result.jobs.ids[int(j)]: node_names[int(result.pods.node[p])] for p, j in enumerate(result.pods.job)
    }
    built = snapshot_pools(snap)
    assert placed["default/w1"] == built.node_of["a1"]
    assert placed["default/w2"] != placed["default/w1"]


def test_pending_pod_blocked_by_required_pod_affinity(tmp_path: Path) -> None:
    """podAffinity to app=db in the same zone with no db pod running (and the pod not matching its own
    term): every node fails with kube-scheduler's affinity reason, and the block is named pod-affinity."""
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    items = [zoned("a1", "a"), zoned("b1", "b"), web("w1", "a1"), web("w2", None, affinity=affinity)]
    (p,) = run(tmp_path, items).pending
    assert p.message == "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."
    assert p.blocked_by == "pod-affinity"


def test_pending_replicas_see_each_other_in_queue_order(tmp_path: Path) -> None:
    """One web replica per hostname, two nodes, one running replica on a1, and two pending replicas w2
    (created first) and w3: w2 goes to a2; then both nodes hold a replica, so w3 is blocked by
    anti-affinity, the earlier pending replica counted like a running one."""
    term = {"labelSelector": SELECTOR, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    w2, w3 = web("w2", None, affinity=anti), web("w3", None, affinity=anti)
    w3["metadata"]["creationTimestamp"] = "2026-11-30T09:05:00Z"
    d = run(tmp_path, [zoned("a1", "a"), zoned("a2", "a"), web("w1", "a1"), w2, w3])
    by = {p.pod: p for p in d.pending}
    assert by["default/w2"].placed_on == "a2"
    assert (
        by["default/w3"].message == "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )
    assert by["default/w3"].blocked_by == "anti-affinity"
