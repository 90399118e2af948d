"""The DynamicResources scheduler plugin against upstream's plugin table.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go``,
``TestPlugin`` (the resource.k8s.io/v1 version of the file, 130,794 characters, as stored by the search index;
the index records no commit for that version). Ported: the cases on PreEnqueue / PreFilter / Filter status
messages and on what Reserve records. Not ported: PreBind / PostBind API writes and finalizers (fleetlab
writes no objects), PostFilter deallocation (fleetlab's DefaultPreemption does not deallocate claims),
binding conditions, extended-resource mapping (alpha), scoring and metrics cases.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetlab.kube.cluster import build_live_cluster, pod_spec
from fleetlab.model.dra import DraObjects
from fleetlab.placement.dra.allocator import Features
from fleetlab.spec.dra_objects import read_dra_objects
from fleetlab.spec.kube_snapshot import Snapshot, parse_node, parse_pod

DRIVER, CLASS, CLAIM, NS = "some-driver", "my-resource-class", "my-pod-my-resource", "default"
BROKEN = {"cel": {"expression": f'device.attributes["{DRIVER}"].healthy'}}  # no such attribute on worker


def node(name: str) -> Any:
    return parse_node({"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                       "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                                  "conditions": [{"type": "Ready", "status": "True"}]}}, "t")  # fmt: skip


def node_slice(name: str, healthy: bool = False, taint: bool = False) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "instance-1"}
    if healthy:
        device["attributes"] = {"healthy": {"bool": True}}
    if taint:
        device["taints"] = [{"key": "example.com/taint", "value": "tainted", "effect": "NoSchedule"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-slice"},
            "spec": {"driver": DRIVER, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "nodeName": name, "devices": [device]}}  # fmt: skip


def device_class(broken: bool = False) -> dict[str, Any]:
    spec = {"selectors": [BROKEN]} if broken else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": spec,
    }


def claim(
    name: str = CLAIM, cls: str = CLASS, allocated: str | None = None, reserved: str | None = None,
    admin: bool = False, selectors: list[dict[str, Any]] | None = None, prioritized: bool = False,
    topology: str | None = None, owner_uid: str = "1234", deleting: bool = False,
) -> dict[str, Any]:  # fmt: skip
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if admin:
        exactly["adminAccess"] = True
    if selectors:
        exactly["selectors"] = selectors
    request = {"name": "req-1", "firstAvailable": [{"name": "subreq-1", "deviceClassName": cls}]} if prioritized else {
        "name": "req-1", "exactly": exactly}  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}",
                            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": owner_uid, "controller": True}]}  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T10:00:00Z"
    out: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
                           "spec": {"devices": {"requests": [request]}}}  # fmt: skip
    status: dict[str, Any] = {}
    if allocated is not None:
        result = {"request": "req-1", "driver": DRIVER, "pool": allocated, "device": "instance-1"}
        if admin:
            result["adminAccess"] = True
        allocation: dict[str, Any] = {"devices": {"results": [result]}}
        if topology is not None:
            allocation["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": topology.split("=")[0], "operator": "In", "values": [topology.split("=")[1]]}]}]}  # fmt: skip
        status["allocation"] = allocation
    if reserved is not None:
        status["reservedFor"] = [
            {"resource": "pods", "name": reserved, "uid": "1234" if reserved == "my-pod" else "9"}
        ]
    if status:
        out["status"] = status
    return out


def pod(template: bool = False, in_status: bool = True) -> Any:
    entry = {"name": "my-resource", "resourceClaimTemplateName": CLAIM} if template else {
        "name": "my-resource", "resourceClaimName": CLAIM}  # fmt: skip
    status: dict[str, Any] = {"phase": "Pending"}
    if template and in_status:
        status["resourceClaimStatuses"] = [{"name": "my-resource", "resourceClaimName": CLAIM}]
    return parse_pod({"kind": "Pod", "metadata": {"name": "my-pod", "namespace": NS, "uid": "1234"},
                      "spec": {"containers": [{"name": "c"}], "resourceClaims": [entry]}, "status": status}, "t")  # fmt: skip


OTHER = claim("another-claim", allocated="worker", reserved="other")
TWO_NODES = ["worker", "worker-2"]

# (name, pod kwargs, objects, nodes, features, outcome): outcome is ("prefilter", msg), ("filter", {node: msg}),
# ("reserve", (pool, device, admin)) for a pending claim, or ("fits", None) for an allocated one.
CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[str], Features, Any]] = [
    ("claim-reference", {}, [claim(allocated="worker"), claim("not-my-claim")], ["worker"], Features(), ("fits", None)),
    ("claim-template", {"template": True}, [claim(allocated="worker")], ["worker"], Features(), ("fits", None)),
    ("missing-claim", {"template": True, "in_status": False}, [claim(allocated="worker")], ["worker"], Features(),
     ("prefilter", 'pod "default/my-pod": ResourceClaim not created yet')),
    ("deleted-claim", {"template": True}, [claim(allocated="worker", deleting=True)], ["worker"], Features(),
     ("prefilter", 'resourceclaim "my-pod-my-resource" is being deleted')),
    ("wrong-claim", {"template": True}, [claim(allocated="worker", owner_uid="1234123")], ["worker"], Features(),
     ("prefilter", "ResourceClaim default/my-pod-my-resource was not created for pod default/my-pod (pod is not owner)")),
    ("no-resources", {}, [claim(), device_class()], ["worker"], Features(), ("filter", {"worker": "cannot allocate all claims"})),
    ("with-resources", {}, [claim(), device_class(), node_slice("worker")], ["worker"], Features(),
     ("reserve", ("worker", "instance-1", False))),
    ("exhausted-resources", {}, [claim(), OTHER, device_class(), node_slice("worker")], ["worker"], Features(),
     ("filter", {"worker": "cannot allocate all claims"})),
    ("tainted-device-disabled", {}, [claim(), device_class(), node_slice("worker", taint=True)], ["worker"],
     Features(device_taints=False), ("reserve", ("worker", "instance-1", False))),
    ("tainted-device-enabled", {}, [claim(), device_class(), node_slice("worker", taint=True)], ["worker"], Features(),
     ("filter", {"worker": "cannot allocate all claims"})),
    ("request-admin-access-with-DRAAdminAccess-featuregate", {}, [claim(admin=True), OTHER, device_class(), node_slice("worker")],
     ["worker"], Features(), ("reserve", ("worker", "instance-1", True))),
    ("request-admin-access-without-DRAAdminAccess-featuregate", {}, [claim(admin=True), OTHER, device_class(), node_slice("worker")],
     ["worker"], Features(admin_access=False),
     ("filter", {"worker": "claim default/my-pod-my-resource, request req-1: admin access is requested, but the feature is disabled"})),
    ("structured-ignore-allocated-admin-access", {},
     [claim(), claim("another-claim", allocated="worker", reserved="other", admin=True), device_class(), node_slice("worker")],
     ["worker"], Features(), ("reserve", ("worker", "instance-1", False))),
    ("claim-parameters-CEL-runtime-error", {}, [claim(selectors=[BROKEN]), device_class(), node_slice("worker")], ["worker"], Features(),
     ("filter", {"worker": "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: CEL runtime error: no such key: healthy"})),
    ("class-parameters-CEL-runtime-error", {}, [claim(), device_class(broken=True), node_slice("worker")], ["worker"], Features(),
     ("filter", {"worker": "class my-resource-class: selector #0 on device some-driver/worker/instance-1: CEL runtime error: no such key: healthy"})),
    # worker-2's device has the attribute, worker's not: the error on worker keeps the pod off both
    ("CEL-runtime-error-for-one-of-two-nodes", {},
     [claim(selectors=[BROKEN]), device_class(), node_slice("worker"), node_slice("worker-2", healthy=True)], TWO_NODES, Features(),
     ("filter", {"worker": "claim default/my-pod-my-resource: selector #0 on device some-driver/worker/instance-1: CEL runtime error: no such key: healthy"})),
    ("missing-class", {}, [claim()], ["worker"], Features(), ("prefilter", "request req-1: device class my-resource-class does not exist")),
    ("wrong-topology", {}, [claim(allocated="worker", topology="no-such-label=no-such-value")], ["worker"], Features(),
     ("filter", {"worker": "resourceclaim not available on the node"})),
    ("good-topology", {}, [claim(allocated="worker", topology="kubernetes.io/hostname=worker")], ["worker"], Features(), ("fits", None)),
    ("reserved-okay", {}, [claim(allocated="worker", reserved="my-pod")], ["worker"], Features(), ("fits", None)),
    ("claim-with-request-with-unknown-device-class", {}, [claim(cls="does-not-exist")], ["worker"], Features(),
     ("prefilter", "request req-1: device class does-not-exist does not exist")),
    ("claim-with-prioritized-list-feature-disabled", {}, [claim(prioritized=True), device_class()], ["worker"],
     Features(prioritized_list=False),
     ("prefilter", "claim default/my-pod-my-resource, request req-1: has subrequests, but the DRAPrioritizedList feature is disabled")),
    ("claim-with-prioritized-list-unknown-device-class", {}, [claim(prioritized=True, cls="does-not-exist")], ["worker"], Features(),
     ("prefilter", "request req-1/subreq-1: device class does-not-exist does not exist")),
    ("claim-with-prioritized-list", {}, [claim(prioritized=True), device_class(), node_slice("worker")], ["worker"], Features(),
     ("reserve", ("worker", "instance-1", False))),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "pod_args", "objects", "nodes", "features", "outcome"), CASES, ids=[c[0] for c in CASES]
)
def test_plugin(
    name: str,
    pod_args: dict[str, Any],
    objects: list[dict[str, Any]],
    nodes: list[str],
    features: Features,
    outcome: Any,
) -> None:
    dra: DraObjects = read_dra_objects(objects, "t")
    live = build_live_cluster(Snapshot([node(n) for n in nodes], [], None, [], dra=dra))
    plugin = live.scheduler.dra
    assert plugin is not None
    plugin.dra.features = features
    compiled = live.scheduler.compile(pod_spec(pod(**pod_args)))
    kind, want = outcome
    if kind == "prefilter":
        assert plugin.pre_filter(live.state, compiled) == want
        assert live.scheduler.explain(compiled).message == f"0/{len(nodes)} nodes are available: {want}."
        return
    assert plugin.pre_filter(live.state, compiled) is None
    passes = plugin.passes(live.state, compiled).tolist()
    if kind == "filter":
        for i, node_name in enumerate(nodes):
            if node_name in want:
                assert not passes[i]
                assert plugin.reason_at(live.state, compiled, i) == want[node_name]
        failure = plugin.failure(live.state, compiled, ~plugin.passes(live.state, compiled))
        assert failure.unresolvable
        return
    assert passes == [True] * len(nodes)
    allocations = plugin.reserve(compiled, 0)
    stored = plugin.dra.claims[f"{NS}/{CLAIM}"]
    assert [r.uid for r in stored.status.reserved_for][-1] == "1234"
    if kind == "reserve":
        pool, device, admin = want
        (allocation,) = allocations
        (result,) = allocation.devices.results
        assert (result.pool, result.device, bool(result.admin_access)) == (pool, device, admin)
        assert stored.status.allocation == allocation
    else:
        assert allocations == []
