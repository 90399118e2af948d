"""Kueue topology-aware scheduling: the assignment of a PodSet to topology domains.

Upstream table: kubernetes-sigs/kueue ``pkg/cache/tas_cache_test.go`` at commit
02eb5698e49cd440d2509af78545084cecdfe11e, ``TestFindTopologyAssignment`` (63 cases, ported below with
upstream's names; node trees drawn as in upstream's comments) and ``TestFindTopologyAssignmentForTwoPodSets``
(1 case). As upstream's harness does, the expected domains are compared in lexicographic order, the
flavor's topology is named "default", and the case's tolerations are given to both the flavor and the
PodSet.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetlab.model.kube import Taint, Toleration
from fleetlab.model.resources import parse_resource_list
from fleetlab.model.tas_request import TopologyRequest
from fleetlab.placement.tas.assign import (
    DomainAssignment,
    Profile,
    TasPodSet,
    TopologyAssignment,
    find_assignments,
)
from fleetlab.placement.tas.snapshot import HOSTNAME, TasFlavor, TasNode, TasSnapshot, non_tas_usage

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
ONE = (HOSTNAME,)
TWO = (BLOCK, RACK)
THREE = (BLOCK, RACK, HOSTNAME)


def node(
    name: str,
    cpu: str,
    pods: str = "10",
    memory: str | None = None,
    *,
    block: str | None = None,
    rack: str | None = None,
    host: str | None = None,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    taints: tuple[Taint, ...] = (),
) -> TasNode:
    all_labels = dict(labels or {})
    for key, value in ((BLOCK, block), (RACK, rack), (HOSTNAME, host)):
        if value is not None:
            all_labels[key] = value
    allocatable = {"cpu": cpu, "pods": pods} | ({"memory": memory} if memory else {})
    return TasNode(name, all_labels, parse_resource_list(allocatable), taints, ready, unschedulable)


def brh(block: str, rack: str, host: str, cpu: str, pods: str = "10", memory: str | None = None) -> TasNode:
    return node(f"{block}-{rack}-{host}", cpu, pods, memory, block=block, rack=rack, host=host)


#      b1                   b2
#   /      \             /      \
#  r1       r2          r1       r2
#  |      /  |  \       |         |
#  x1    x2  x3  x4     x5       x6
DEFAULT = [
    brh("b1", "r1", "x1", "1", memory="1Gi"),
    brh("b1", "r2", "x2", "1", memory="1Gi"),
    brh("b1", "r2", "x3", "1", memory="1Gi"),
    brh("b1", "r2", "x4", "1", memory="1Gi"),
    node("b2-r2-x5", "1", "10", "1Gi", block="b2", rack="r1", host="x5"),
    node("b2-r2-x6", "2", "40", "4Gi", block="b2", rack="r2", host="x6"),
]
#       b1           b2
#       |             |
#       r1           r1
#     /  |  \       /  \
#   x1  x2  x3     x4  x5
SCATTERED = [
    brh("b1", "r1", "x1", "4", memory="1Gi"),
    brh("b1", "r1", "x2", "1", memory="1Gi"),
    brh("b1", "r1", "x3", "1", memory="1Gi"),
    brh("b2", "r1", "x4", "2", memory="1Gi"),
    brh("b2", "r1", "x5", "1", memory="1Gi"),
]
#           b1                    b2
#       /        \             /      \
#      r1         r2          r1       r2
#     /  \      /   \        /   \    /   \
#    x1   x2   x3    x4     x5   x6  x7    x8
BINARY = [
    brh(b, r, x, "1", memory="1Gi")
    for b, r, x in (
        ("b1", "r1", "x1"), ("b1", "r1", "x2"), ("b1", "r2", "x3"), ("b1", "r2", "x4"),
        ("b2", "r1", "x5"), ("b2", "r1", "x6"), ("b2", "r2", "x7"), ("b2", "r2", "x8"),
    )
]  # fmt: skip


def rack_tree(*hosts: tuple[str, str, str, str]) -> list[TasNode]:
    return [brh(b, r, x, cpu) for b, r, x, cpu in hosts]


GPU_TAINT = Taint(key="example.com/gpu", value="present", effect="NoSchedule")
ZONE_A = {"zone": "zone-a", HOSTNAME: "x1"}


def req(**kw: Any) -> TopologyRequest:
    return TopologyRequest(**kw)


def hosts(*pairs: tuple[str, int]) -> tuple[tuple[tuple[str, ...], int], ...]:
    return tuple(((h,), c) for h, c in pairs)


def racks(*triples: tuple[str, str, int]) -> tuple[tuple[tuple[str, ...], int], ...]:
    return tuple(((b, r), c) for b, r, c in triples)


# name, nodes, levels, topology request (None: implied), cpu milli per pod, count, want (domains or
# reason), options: profile, node_labels, node_selector, tolerations, pods (node, phase, cpu), memory
CASES: list[tuple[str, list[TasNode], tuple[str, ...], TopologyRequest | None, int, int, Any, dict[str, Any]]] = [
    (
        "minimize the number of used racks before optimizing the number of nodes; BestFit",
        # b1: r1 (x1:2), r2 (x2:2), r3 (x3..x6: 1 each) — racks optimised first: r3
        rack_tree(("b1", "r1", "x1", "2"), ("b1", "r2", "x2", "2"), ("b1", "r3", "x3", "1"),
                  ("b1", "r3", "x4", "1"), ("b1", "r3", "x5", "1"), ("b1", "r3", "x6", "1")),
        THREE, req(required=BLOCK), 1000, 4, hosts(("x3", 1), ("x4", 1), ("x5", 1), ("x6", 1)), {},
    ),
    (
        "minimize resource fragmentation; LeastFreeCapacityFit",
        rack_tree(("b1", "r1", "x1", "2"), ("b1", "r1", "x2", "1"), ("b1", "r1", "x3", "1")),
        THREE, req(required=BLOCK), 1000, 2, hosts(("x2", 1), ("x3", 1)), {"profile": "LeastFreeCapacity"},
    ),
    (
        "choose the node that can accommodate all Pods",
        rack_tree(("b1", "r1", "x1", "2"), ("b1", "r1", "x2", "1"), ("b1", "r1", "x3", "1")),
        THREE, req(required=BLOCK), 1000, 2, hosts(("x1", 2)), {},
    ),
    (
        "unconstrained; 2 pods fit into hosts scattered across the whole datacenter even they could fit "
        "into single rack; LeastFreeCapacity",
        SCATTERED, THREE, req(unconstrained=True), 1000, 2, hosts(("x2", 1), ("x3", 1)),
        {"profile": "LeastFreeCapacity"},
    ),
    (
        "no annotation; implied default to unconstrained; 6 pods fit into hosts scattered across the whole "
        "datacenter even they could fit into single rack; BestFit",
        SCATTERED, THREE, None, 1000, 6, hosts(("x1", 4), ("x4", 2)), {},
    ),
    (
        "unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit "
        "into single rack; BestFit",
        SCATTERED, THREE, req(unconstrained=True), 1000, 6, hosts(("x1", 4), ("x4", 2)), {},
    ),
    (
        "unconstrained; a single pod fits into each host; BestFit",
        DEFAULT, THREE, req(unconstrained=True), 1000, 1, hosts(("x1", 1)), {},
    ),
    (
        "unconstrained; a single pod fits into each host; LeastFreeCapacity; TASProfileLeastFreeCapacity",
        DEFAULT, THREE, req(unconstrained=True), 1000, 1, hosts(("x1", 1)), {"profile": "LeastFreeCapacity"},
    ),
    (
        "unconstrained; a single pod fits into each host; LeastFreeCapacity; TASProfileMixed",
        DEFAULT, THREE, req(unconstrained=True), 1000, 1, hosts(("x1", 1)), {"profile": "Mixed"},
    ),
    (
        "block required; 4 pods fit into one host each; BestFit",
        BINARY, THREE, req(required=BLOCK), 1000, 4, hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)), {},
    ),
    (
        "host required; single Pod fits in the host; LeastFreeCapacityFit",
        DEFAULT, THREE, req(required=HOSTNAME), 1000, 1, hosts(("x1", 1)), {"profile": "LeastFreeCapacity"},
    ),
    ("host required; single Pod fits in the host; BestFit", DEFAULT, THREE, req(required=HOSTNAME), 1000, 1,
     hosts(("x1", 1)), {}),
    (
        "host required; single Pod fits in the host; BestFit; TASProfileMixed",
        DEFAULT, THREE, req(required=HOSTNAME), 1000, 1, hosts(("x1", 1)), {"profile": "Mixed"},
    ),
    (
        "host preferred; single Pod fits in the host; BestFit; TASProfileMixed",  # upstream sets Required
        DEFAULT, THREE, req(required=HOSTNAME), 1000, 1, hosts(("x1", 1)), {"profile": "Mixed"},
    ),
    ("rack required; single Pod fits in a rack; BestFit", DEFAULT, TWO, req(required=RACK), 1000, 1,
     racks(("b1", "r1", 1)), {}),
    (
        "rack required; single Pod fits in a rack; LeastFreeCapacityFit",
        DEFAULT, THREE, req(required=RACK), 1000, 1, hosts(("x1", 1)), {"profile": "LeastFreeCapacity"},
    ),
    (
        "rack preferred; multiple Pods fits in multiple racks; LeastFreeCapacityFit",
        DEFAULT, TWO, req(preferred=RACK), 1000, 2, racks(("b2", "r1", 1), ("b2", "r2", 1)),
        {"profile": "LeastFreeCapacity"},
    ),
    ("rack required; multiple Pods fit in a rack; BestFit", DEFAULT, TWO, req(required=RACK), 1000, 3,
     racks(("b1", "r2", 3)), {}),
    (
        "block preferred; Pods fit in 2 blocks; BestFit",
        [node("b1", "2", "20", block="b1"), node("b2", "1", "10", block="b2"), node("b3", "4", "40", block="b3")],
        (BLOCK,), req(preferred=BLOCK), 1000, 5, ((("b2",), 1), (("b3",), 4)), {},
    ),
    ("rack required; multiple Pods fit in some racks; BestFit", DEFAULT, TWO, req(required=RACK), 1000, 2,
     racks(("b2", "r2", 2)), {}),
    ("rack required; too many pods to fit in any rack; BestFit", DEFAULT, TWO, req(required=RACK), 1000, 4,
     'topology "default" allows to fit only 3 out of 4 pod(s)', {}),
    (
        "block required; single Pod fits in a block; LeastFreeCapacityFit",
        DEFAULT, THREE, req(required=BLOCK), 1000, 1, hosts(("x5", 1)), {"profile": "LeastFreeCapacity"},
    ),
    (
        "block required; two Pods fits in a block; LeastFreeCapacityFit",
        DEFAULT, THREE, req(required=BLOCK), 1000, 2, hosts(("x5", 1), ("x6", 1)), {"profile": "LeastFreeCapacity"},
    ),
    ("block required; single Pod fits in a block and a single rack; BestFit", DEFAULT, TWO, req(required=BLOCK),
     1000, 1, racks(("b2", "r1", 1)), {}),
    (
        "block required; single Pod fits in a block spread across two racks; BestFit",
        DEFAULT, TWO, req(required=BLOCK), 1000, 4, racks(("b1", "r2", 3), ("b1", "r1", 1)), {},
    ),
    (
        "block required; Pods fit in a block spread across two racks; BestFit",
        DEFAULT, TWO, req(required=BLOCK), 1000, 4, racks(("b1", "r2", 3), ("b1", "r1", 1)), {},
    ),
    ("block required; single Pod which cannot be split; BestFit", DEFAULT, TWO, req(required=BLOCK), 4000, 1,
     'topology "default" doesn\'t allow to fit any of 1 pod(s)', {}),
    ("block required; too many Pods to fit requested; BestFit", DEFAULT, TWO, req(required=BLOCK), 1000, 5,
     'topology "default" allows to fit only 4 out of 5 pod(s)', {}),
    # 1024 bytes of memory a pod: the pods limit (10 per node, 40 on x6) binds, not memory.
    ("rack required; single Pod requiring memory; BestFit", DEFAULT, TWO, req(required=RACK), 0, 4,
     racks(("b1", "r1", 4)), {"memory": 1024}),
    (
        "rack preferred; but only block can accommodate the workload; BestFit",
        DEFAULT, TWO, req(preferred=RACK), 1000, 4, racks(("b1", "r2", 3), ("b1", "r1", 1)), {},
    ),
    (
        "rack preferred; but only multiple blocks can accommodate the workload; BestFit",
        DEFAULT, TWO, req(preferred=RACK), 1000, 6, racks(("b1", "r2", 3), ("b2", "r2", 2), ("b1", "r1", 1)), {},
    ),
    (
        "block preferred; but only multiple blocks can accommodate the workload; BestFit",
        DEFAULT, TWO, req(preferred=BLOCK), 1000, 6, racks(("b1", "r2", 3), ("b2", "r2", 2), ("b1", "r1", 1)), {},
    ),
    (
        "block preferred; but the workload cannot be accommodate in entire topology; BestFit",
        DEFAULT, TWO, req(preferred=BLOCK), 1000, 10, 'topology "default" allows to fit only 7 out of 10 pod(s)', {},
    ),
    (
        "only nodes with matching labels are considered; no matching node; BestFit",
        [node("b1-r1-x1", "1", "10", "1Gi", labels=ZONE_A, ready=False)],
        ONE, req(required=HOSTNAME), 1000, 1, "no topology domains at level: kubernetes.io/hostname",
        {"node_labels": {"zone": "zone-b"}},
    ),
    (
        "only nodes with matching labels are considered; matching node is found; BestFit",
        [node("b1-r1-x1", "1", "10", "1Gi", labels=ZONE_A)],
        ONE, req(required=HOSTNAME), 1000, 1, hosts(("x1", 1)), {"node_labels": {"zone": "zone-a"}},
    ),
    (
        "only nodes with matching levels are considered; no host label on node; BestFit",
        [node("b1-r1-x1", "1", "10", "1Gi", block="b1", rack="r1")],
        THREE, req(required=RACK), 1000, 1, "no topology domains at level: cloud.com/topology-rack", {},
    ),
    (
        "don't consider unscheduled Pods when computing capacity; BestFit",
        [node("x1", "1", "10", "1Gi", host="x1")], ONE, req(required=HOSTNAME), 600, 1, hosts(("x1", 1)),
        {"pods": [(None, "Pending", 600)]},
    ),
    (
        "don't consider terminal pods when computing the capacity; BestFit",
        [node("x1", "1", "10", "1Gi", host="x1")], ONE, req(required=HOSTNAME), 600, 1, hosts(("x1", 1)),
        {"pods": [("x1", "Failed", 600), ("x1", "Succeeded", 600)]},
    ),
    (
        "include usage from pending scheduled non-TAS pods, blocked assignment; BestFit",
        [node("x1", "1", "10", "1Gi", host="x1")], ONE, req(required=HOSTNAME), 600, 1,
        'topology "default" doesn\'t allow to fit any of 1 pod(s)', {"pods": [("x1", "Pending", 600)]},
    ),
    (
        "include usage from running non-TAS pods, blocked assignment; BestFit",
        [node("x1", "1", "10", "1Gi", host="x1")], ONE, req(required=HOSTNAME), 600, 1,
        'topology "default" doesn\'t allow to fit any of 1 pod(s)', {"pods": [("x1", "Running", 600)]},
    ),
    (
        "include usage from running non-TAS pods, found free capacity on another node; BestFit",
        [node("x1", "1", "10", "1Gi", host="x1"), node("x2", "1", "10", "1Gi", host="x2")],
        ONE, req(required=HOSTNAME), 600, 1, hosts(("x2", 1)), {"pods": [("x1", "Running", 600)]},
    ),
    (
        "no assignment as node is not ready; BestFit",
        [node("b1-r1-x1", "1", "10", "1Gi", labels=ZONE_A, ready=False)],
        ONE, req(required=HOSTNAME), 1000, 1, "no topology domains at level: kubernetes.io/hostname",
        {"node_labels": {"zone": "zone-a"}},
    ),
    (
        "no assignment as node is unschedulable; BestFit",
        [node("b1-r1-x1", "1", "10", "1Gi", labels=ZONE_A, unschedulable=True)],
        ONE, req(required=HOSTNAME), 1000, 1, "no topology domains at level: kubernetes.io/hostname",
        {"node_labels": {"zone": "zone-a"}},
    ),
    (
        "skip node which has untolerated taint; BestFit",
        [node("x1", "1", "10", "1Gi", labels=ZONE_A, taints=(GPU_TAINT,))],
        ONE, req(required=HOSTNAME), 1000, 1, 'topology "default" doesn\'t allow to fit any of 1 pod(s)',
        {"node_labels": {"zone": "zone-a"}},
    ),
    (
        "allow to schedule on node with tolerated taint; BestFit",
        [node("b1-r1-x1", "1", "10", "1Gi", labels=ZONE_A, taints=(GPU_TAINT,))],
        ONE, req(required=HOSTNAME), 1000, 1, hosts(("x1", 1)),
        {"node_labels": {"zone": "zone-a"}, "tolerations": (Toleration(key="example.com/gpu", value="present"),)},
    ),
    (
        "no assignment as node does not have enough allocatable pods (.status.allocatable['pods']); BestFit",
        [node("b1-r1-x1", "1000m", "1", labels=ZONE_A)],
        ONE, req(required=HOSTNAME), 300, 1, 'topology "default" doesn\'t allow to fit any of 1 pod(s)',
        {"node_labels": {"zone": "zone-a"}, "pods": [("b1-r1-x1", "Running", 300)]},
    ),
    (
        "skip node which doesn't match node selector, missing label; BestFit",
        [node("x1", "1", "10", "1Gi", labels=ZONE_A)],
        ONE, req(required=HOSTNAME), 300, 1, 'topology "default" doesn\'t allow to fit any of 1 pod(s)',
        {"node_labels": {"zone": "zone-a"}, "node_selector": {"custom-label-1": "custom-value-1"}},
    ),
    (
        "skip node which doesn't match node selector, label exists, value doesn't match; BestFit",
        [node("x1", "1", "10", "1Gi", labels={**ZONE_A, "custom-label-1": "value-1"})],
        ONE, req(required=HOSTNAME), 300, 1, 'topology "default" doesn\'t allow to fit any of 1 pod(s)',
        {"node_labels": {"zone": "zone-a"}, "node_selector": {"custom-label-1": "value-2"}},
    ),
    (
        "allow to schedule on node which matches node; BestFit",
        [
            node("b1-r1-x1", "1", "10", "1Gi", labels={**ZONE_A, "custom-label-1": "value-1"}),
            node("b1-r1-x2", "1", "10", "1Gi", labels={"zone": "zone-a", HOSTNAME: "x2", "custom-label-1": "value-2"}),
        ],
        ONE, req(required=HOSTNAME), 1000, 1, hosts(("x2", 1)),
        {"node_labels": {"zone": "zone-a"}, "node_selector": {"custom-label-1": "value-2"}},
    ),
    (
        "block required for podset; host required for slices; BestFit",
        rack_tree(("b1", "r1", "x1", "3"), ("b1", "r1", "x2", "3"), ("b1", "r1", "x3", "3")),
        THREE, req(required=BLOCK, slice_required=HOSTNAME, slice_size=2), 1000, 6,
        hosts(("x3", 2), ("x2", 2), ("x1", 2)), {},
    ),
    (
        "block required for podset; host required for slices; prioritize more free slice capacity first and "
        "then tight fit; BestFit",
        rack_tree(("b1", "r1", "x1", "6"), ("b1", "r1", "x2", "5"), ("b1", "r1", "x3", "4"), ("b1", "r1", "x4", "2")),
        THREE, req(required=BLOCK, slice_required=HOSTNAME, slice_size=2), 1000, 12,
        hosts(("x1", 6), ("x3", 4), ("x4", 2)), {},
    ),
    (
        "block required for podset; host required for slices; select domains with tight fit; BestFit",
        rack_tree(("b1", "r1", "x1", "3"), ("b1", "r1", "x2", "2"), ("b1", "r1", "x3", "2")),
        THREE, req(required=BLOCK, slice_required=HOSTNAME, slice_size=2), 1000, 4, hosts(("x2", 2), ("x3", 2)), {},
    ),
    (
        "block required for podset; rack required for slices; BestFit",
        rack_tree(("b1", "r1", "x1", "1"), ("b1", "r1", "x2", "1"), ("b1", "r2", "x3", "1"), ("b1", "r2", "x4", "1"),
                  ("b1", "r2", "x5", "1"), ("b2", "r1", "x6", "1"), ("b2", "r1", "x7", "1")),
        THREE, req(required=BLOCK, slice_required=RACK, slice_size=2), 1000, 4,
        hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)), {},
    ),
    (
        "block preferred for podset; rack required for slices; BestFit",
        DEFAULT, THREE, req(preferred=BLOCK, slice_required=RACK, slice_size=2), 1000, 4,
        hosts(("x2", 1), ("x3", 1), ("x6", 2)), {},
    ),
    (
        "block required for podset; host required for slices; optimize last domain; BestFit",
        rack_tree(("b1", "r1", "x1", "4"), ("b1", "r1", "x2", "3"), ("b1", "r1", "x3", "2")),
        THREE, req(required=BLOCK, slice_required=HOSTNAME, slice_size=2), 1000, 6, hosts(("x1", 4), ("x3", 2)), {},
    ),
    (
        "block required for podset; host required for slices; LeastFreeCapacity",
        rack_tree(("b1", "r1", "x1", "4"), ("b1", "r1", "x2", "3"), ("b1", "r1", "x3", "2")),
        THREE, req(required=BLOCK, slice_required=HOSTNAME, slice_size=2), 1000, 4, hosts(("x2", 2), ("x3", 2)),
        {"profile": "LeastFreeCapacity"},
    ),
    (
        "block preferred for podset; host required for slices; LeastFreeCapacity",
        rack_tree(("b1", "r1", "x1", "4"), ("b1", "r1", "x2", "3"), ("b1", "r1", "x3", "2"), ("b2", "r1", "x4", "4"),
                  ("b2", "r1", "x5", "2")),
        THREE, req(preferred=BLOCK, slice_required=HOSTNAME, slice_size=2), 1000, 8,
        hosts(("x2", 2), ("x3", 2), ("x1", 2), ("x5", 2)), {"profile": "LeastFreeCapacity"},
    ),
    (
        "block preferred for podset; host required for slices; 2 blocks with unbalanced subdomains; BestFit",
        rack_tree(("b1", "r1", "x1", "3"), ("b1", "r1", "x2", "3"), ("b1", "r1", "x3", "3"), ("b2", "r1", "x4", "6")),
        THREE, req(preferred=BLOCK, slice_required=HOSTNAME, slice_size=3), 1000, 12,
        hosts(("x1", 3), ("x2", 3), ("x4", 6)), {},
    ),
    (
        "block required for podset; rack required for slices; podset fits in a block, but slices do not fit in "
        "racks",
        rack_tree(("b1", "r1", "x1", "2"), ("b1", "r2", "x2", "2"), ("b1", "r3", "x3", "2")),
        THREE, req(required=BLOCK, slice_required=RACK, slice_size=3), 1000, 6,
        'topology "default" doesn\'t allow to fit any of 2 slice(s)', {},
    ),
    (
        "block required for podset; rack required for slices; podset fits in both block, but slices fit in only "
        "one block",
        rack_tree(("b1", "r1", "x1", "2"), ("b1", "r2", "x2", "2"), ("b1", "r3", "x3", "2"), ("b2", "r4", "x4", "3"),
                  ("b2", "r5", "x5", "3")),
        THREE, req(required=BLOCK, slice_required=RACK, slice_size=3), 1000, 6, hosts(("x4", 3), ("x5", 3)), {},
    ),
    (
        "slice required topology level cannot be above the main required topology level",
        DEFAULT, THREE, req(required=HOSTNAME, slice_required=BLOCK, slice_size=1), 1000, 1,
        "podset slice topology cloud.com/topology-block is above the podset topology kubernetes.io/hostname", {},
    ),
    (
        "slice size is required when slice topology is requested",
        DEFAULT, THREE, req(required=BLOCK, slice_required=HOSTNAME), 1000, 1,
        "slice topology requested, but slice size not provided", {},
    ),
    (
        "cannot request not existing slice topology",
        DEFAULT, THREE, req(required=BLOCK, slice_required="not-existing-topology-level", slice_size=1), 1000, 1,
        "no requested topology level: not-existing-topology-level", {},
    ),
]  # fmt: skip


def _snapshot(nodes: list[TasNode], levels: tuple[str, ...], opts: dict[str, Any]) -> TasSnapshot:
    flavor = TasFlavor("default", levels, opts.get("node_labels", {}), opts.get("tolerations", ()))
    usage = non_tas_usage((n, phase, {"cpu": cpu}) for n, phase, cpu in opts.get("pods", ()))
    return TasSnapshot(flavor, nodes, usage)


@pytest.mark.parametrize(("name", "nodes", "levels", "request_", "cpu", "count", "want", "opts"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_find_topology_assignment(
    name: str,
    nodes: list[TasNode],
    levels: tuple[str, ...],
    request_: TopologyRequest | None,
    cpu: int,
    count: int,
    want: Any,
    opts: dict[str, Any],
) -> None:
    snap = _snapshot(nodes, levels, opts)
    requests = {"cpu": cpu} if cpu else {}
    if "memory" in opts:
        requests["memory"] = opts["memory"]
    podset = TasPodSet(
        "main", count, requests, request_, opts.get("tolerations", ()), opts.get("node_selector", {})
    )
    profile: Profile = opts.get("profile", "BestFit")
    got = find_assignments(snap, [podset], profile=profile)["main"]
    if isinstance(want, str):
        assert got == want
        return
    assert isinstance(got, TopologyAssignment), got
    assignment_levels = levels[-1:] if levels[-1] == HOSTNAME else levels
    assert got.levels == assignment_levels
    assert got.domains == tuple(DomainAssignment(v, c) for v, c in sorted(want))


def test_find_topology_assignment_for_two_podsets() -> None:
    """TestFindTopologyAssignmentForTwoPodSets: three blocks of 2 CPUs, two PodSets of 3 × 1 CPU with
    block preferred. The first takes b1:2 and b2:1 (b2 is the BestFit for the last pod); the second sees
    b1:0, b2:1, b3:2 and takes b3:2, b2:1."""
    nodes = [node(b, "2", "10", block=b) for b in ("b1", "b2", "b3")]
    snap = TasSnapshot(TasFlavor("default", (BLOCK,)), nodes)
    podsets = [
        TasPodSet(n, 3, {"cpu": 1000}, TopologyRequest(preferred=BLOCK)) for n in ("podset1", "podset2")
    ]
    got = find_assignments(snap, podsets)
    assert got["podset1"] == TopologyAssignment(
        (BLOCK,), (DomainAssignment(("b1",), 2), DomainAssignment(("b2",), 1))
    )
    assert got["podset2"] == TopologyAssignment(
        (BLOCK,), (DomainAssignment(("b2",), 1), DomainAssignment(("b3",), 2))
    )
