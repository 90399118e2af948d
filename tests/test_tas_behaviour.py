"""Kueue TAS around the assignment: the PodSet annotations, failed-node replacement, and fleetlab's gangs
and flavors as TAS inputs. Each case is worked by hand from kubernetes-sigs/kueue ``pkg/cache/
tas_flavor_snapshot.go`` (``findReplacementAssignment``, ``requiredReplacementDomain``, ``deleteDomain``;
commit 0060e03bdaad6e39ce06ed4a7c0a1e10e68580cd) and the webhook's annotation rules."""

from __future__ import annotations

import pytest

from fleetlab.model.job import Job
from fleetlab.model.queues import ResourceFlavor
from fleetlab.model.tas_request import (
    PREFERRED,
    REQUIRED,
    SLICE_REQUIRED,
    SLICE_SIZE,
    UNCONSTRAINED,
    TopologyRequest,
    TopologyRequestError,
    topology_request,
)
from fleetlab.placement.tas.assign import (
    DomainAssignment,
    TasPodSet,
    TopologyAssignment,
    find_assignments,
    replace_node,
)
from fleetlab.placement.tas.from_model import job_podset, tas_flavor
from fleetlab.placement.tas.snapshot import HOSTNAME, TasFlavor, TasNode, TasSnapshot

BLOCK, RACK = "cloud.com/topology-block", "cloud.com/topology-rack"
LEVELS = (BLOCK, RACK, HOSTNAME)


def tree(free: dict[str, tuple[str, str, int]], gone: tuple[str, ...] = ()) -> list[TasNode]:
    """Nodes host -> (block, rack, cpus); hosts in ``gone`` are NotReady."""
    return [
        TasNode(h, {BLOCK: b, RACK: r, HOSTNAME: h}, {"cpu": c * 1000, "pods": 10}, ready=h not in gone)
        for h, (b, r, c) in free.items()
    ]


NODES = {"x1": ("b1", "r1", 2), "x2": ("b1", "r2", 1), "x3": ("b1", "r2", 1), "x4": ("b1", "r2", 2)}
PODSET = TasPodSet("main", 4, {"cpu": 1000}, TopologyRequest(required=RACK))


def hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return TopologyAssignment((HOSTNAME,), tuple(DomainAssignment((h,), c) for h, c in pairs))


def admitted(nodes: list[TasNode], assignment: TopologyAssignment) -> TasSnapshot:
    snap = TasSnapshot(TasFlavor("default", LEVELS), nodes)
    for dom in assignment.domains:
        snap.add_tas_usage(dom.values, PODSET.requests, dom.count)
    return snap


def test_required_rack_assignment_before_the_failure() -> None:
    # r1 holds 2, r2 holds 4 → r2 (BestFit: the only rack with room for 4); inside it x4 (2) first,
    # then x2 and x3 one each.
    snap = TasSnapshot(TasFlavor("default", LEVELS), tree(NODES))
    assert find_assignments(snap, [PODSET])["main"] == hosts(("x2", 1), ("x3", 1), ("x4", 2))


def test_failed_node_replaced_inside_the_required_rack() -> None:
    # x3 fails; x2 and x4 are full with the workload's own pods; a new node x5 in r2 has room, x1 in r1
    # has room too but is outside the required rack: the pod goes to x5.
    nodes = tree({**NODES, "x5": ("b1", "r2", 1)}, gone=("x3",))
    snap = admitted(nodes, hosts(("x2", 1), ("x3", 1), ("x4", 2)))
    got = replace_node(snap, PODSET, hosts(("x2", 1), ("x3", 1), ("x4", 2)), "x3")
    assert got == hosts(("x2", 1), ("x4", 2), ("x5", 1))


def test_no_room_in_the_required_rack_fails_the_replacement() -> None:
    # Without x5 the only free capacity is x1, in rack r1: Kueue gives up (and evicts the workload).
    snap = admitted(tree(NODES, gone=("x3",)), hosts(("x2", 1), ("x3", 1), ("x4", 2)))
    got = replace_node(snap, PODSET, hosts(("x2", 1), ("x3", 1), ("x4", 2)), "x3")
    assert got == 'topology "default" doesn\'t allow to fit any of 1 pod(s)'


def test_preferred_topology_may_leave_the_rack() -> None:
    # Preferred rack: no domain restriction, so the pod lands on x1 in r1.
    podset = TasPodSet("main", 4, {"cpu": 1000}, TopologyRequest(preferred=RACK))
    snap = admitted(tree(NODES, gone=("x3",)), hosts(("x2", 1), ("x3", 1), ("x4", 2)))
    assert replace_node(snap, podset, hosts(("x2", 1), ("x3", 1), ("x4", 2)), "x3") == hosts(
        ("x1", 1), ("x2", 1), ("x4", 2)
    )


def test_a_second_missing_node_makes_the_assignment_stale() -> None:
    snap = admitted(tree(NODES, gone=("x2", "x3")), hosts(("x2", 1), ("x3", 1), ("x4", 2)))
    got = replace_node(snap, PODSET, hosts(("x2", 1), ("x3", 1), ("x4", 2)), "x3")
    assert got == (
        "Cannot replace the node, because the existing topologyAssignment is invalid, as it contains "
        "the stale domain x2"
    )


@pytest.mark.parametrize(
    ("annotations", "pods", "want"),
    [
        ({REQUIRED: RACK}, 4, TopologyRequest(required=RACK)),
        ({PREFERRED: BLOCK}, 4, TopologyRequest(preferred=BLOCK)),
        ({UNCONSTRAINED: "true"}, 4, TopologyRequest(unconstrained=True)),
        ({UNCONSTRAINED: "false"}, 4, None),
        ({}, 4, None),
        (
            {REQUIRED: BLOCK, SLICE_REQUIRED: RACK, SLICE_SIZE: "2"},
            4,
            TopologyRequest(BLOCK, None, False, RACK, 2),
        ),
        ({SLICE_REQUIRED: RACK, SLICE_SIZE: "2"}, 4, TopologyRequest(slice_required=RACK, slice_size=2)),
    ],
)
def test_annotations_read(annotations: dict[str, str], pods: int, want: TopologyRequest | None) -> None:
    assert topology_request(annotations, pods) == want
    if want is not None:
        assert topology_request(want.annotations(), pods) == want


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({REQUIRED: RACK, PREFERRED: BLOCK}, "give at most one of them"),
        ({REQUIRED: RACK, UNCONSTRAINED: "true"}, "give at most one of them"),
        ({UNCONSTRAINED: "yes"}, 'must be "true" or "false"'),
        ({REQUIRED: BLOCK, SLICE_REQUIRED: RACK}, "needs kueue.x-k8s.io/podset-slice-size"),
        ({REQUIRED: BLOCK, SLICE_SIZE: "2"}, "needs kueue.x-k8s.io/podset-slice-required-topology"),
        ({REQUIRED: BLOCK, SLICE_REQUIRED: RACK, SLICE_SIZE: "0"}, "must be a positive integer"),
        ({REQUIRED: BLOCK, SLICE_REQUIRED: RACK, SLICE_SIZE: "3"}, "must divide the PodSet's 4 pods"),
    ],
)
def test_annotations_refused(annotations: dict[str, str], message: str) -> None:
    with pytest.raises(TopologyRequestError, match=message):
        topology_request(annotations, 4)


def test_fleetlab_gang_maps_onto_a_kueue_podset() -> None:
    """A gang with topology_required: rack is the PodSet Kueue would place with podset-required-topology:
    same pods, requests, tolerations and selector; placed in rack r2 as above."""
    job = Job.model_validate(
        {"id": "train", "pods": 4, "gang": True, "topology_required": RACK, "requests": {"cpu": "1"},
         "runtime": 3600, "nodeSelector": {"pool": "a"}}
    )  # fmt: skip
    podset = job_podset(job)
    assert (podset.count, podset.requests, podset.topology) == (
        4,
        {"cpu": 1000},
        TopologyRequest(required=RACK),
    )
    flavor = ResourceFlavor.model_validate(
        {"metadata": {"name": "tas"}, "spec": {"nodeLabels": {"pool": "a"}, "topologyName": "default"}}
    )
    nodes = [TasNode(n.name, {**n.labels, "pool": "a"}, n.allocatable) for n in tree(NODES)]
    snap = TasSnapshot(tas_flavor(flavor, LEVELS), nodes)
    assert find_assignments(snap, [podset])["main"] == hosts(("x2", 1), ("x3", 1), ("x4", 2))
    untopo = ResourceFlavor.model_validate({"metadata": {"name": "plain"}})
    with pytest.raises(ValueError, match="no topologyName"):
        tas_flavor(untopo, LEVELS)
