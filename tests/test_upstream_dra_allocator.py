"""The structured allocator against upstream's shared allocator table.

Source: kubernetes/kubernetes ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/
allocatortesting/allocator_testing.go``, ``TestAllocator``, at commit 008b3652959ca58af8be3fb5b6ecfe9ae7638282
(the table every allocator variant runs). This file ports the basic, "All", admin-access, constraint,
configuration and CEL-error cases; ``test_upstream_dra_allocator_features.py`` the prioritized-list,
partitionable-device and device-taint cases. Each case keeps upstream's name. The features are v1.35's
defaults unless the case names them (upstream sets them per case).

Not expressible (the API server refuses the object before any allocator sees it, and so does fleetlab's
reader — tested at the end as refusals): ``empty-class``, ``unknown-selector``, ``unknown-allocation-mode``,
``unknown-constraint``.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from dra_builders import (
    ALL_NODES,
    allocate,
    claim,
    dev,
    klass,
    label_selector,
    local_selector,
    memory_at_least,
    node,
    opaque,
    req,
    slice_,
)
from fleetlab.model.dra import ResourceClaim
from fleetlab.model.kube import NodeSelector
from fleetlab.placement.dra.allocator import AllocationError, Features, NodeAllocationError

A, B = "driver-a", "driver-b"
N1, N2 = node("node-1", "region-1"), node("node-2", "region-2")
CLASS_A, CLASS_B = klass("class-a", A), klass("class-b", B)


def one(name: str, where: Any, pool: str, driver: str, **kw: Any) -> Any:
    """A slice with the single device ``device-1``."""
    return slice_(name, where, pool, driver, dev("device-1"), **kw)


def r(request: str, driver: str, pool: str, device: str, admin: bool = False, *tol: str) -> tuple[Any, ...]:
    return (request, driver, pool, device, admin, tuple(sorted(tol)))


def local(
    *results: tuple[Any, ...], at: str = "node-1", config: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"results": sorted(results), "nodeSelector": _norm(local_selector(at)), "config": config or []}


def _norm(selector: dict[str, Any] | None) -> dict[str, Any] | None:
    if selector is None:
        return None
    return NodeSelector.model_validate(selector).model_dump(by_alias=True, exclude_none=True)


def numa(value: int) -> dict[str, Any]:
    return {"numa": {"int": value}}


ATTRS_ALL = {
    "driverVersion": {"version": "1.0.0"},
    "numa": {"int": 1},
    "stringAttribute": {"string": "stringAttributeValue"},
    "boolAttribute": {"bool": True},
}


def constraint(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": f"{A}/{attribute}"}
    if requests:
        out["requests"] = list(requests)
    return out


def all_mode(name: str, cls: str, admin: bool | None = None) -> dict[str, Any]:
    return req(name, cls, None, mode="All", admin=admin)


# (name, claims, classes, slices, node, allocated, expected results | None | error substring)
CASES: list[tuple[str, list[ResourceClaim], list[Any], list[Any], Any, tuple[Any, ...], Any]] = [
    ("empty", [], [], [], N1, (), []),
    ("simple", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"))]),
    ("other-node", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", B), one("slice-2", "node-2", "pool-2", A)], N2, (),
     [local(r("req-0", A, "pool-2", "device-1"), at="node-2")]),
    ("small-and-large",
     [claim("claim-0", req("req-0", "class-a", 1, memory_at_least(A, "1Gi")), req("req-1", "class-a", 1, memory_at_least(A, "2Gi")))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", {"memory": "1Gi"}), dev("device-2", {"memory": "2Gi"}))],
     N1, (), [local(r("req-0", A, "pool-1", "device-1"), r("req-1", A, "pool-1", "device-2"))]),
    # the large device comes first: it goes to the small request, then must be taken back
    ("small-and-large-backtrack-requests",
     [claim("claim-0", req("req-0", "class-a", 1, memory_at_least(A, "1Gi")), req("req-1", "class-a", 1, memory_at_least(A, "2Gi")))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-2", {"memory": "2Gi"}), dev("device-1", {"memory": "1Gi"}))],
     N1, (), [local(r("req-0", A, "pool-1", "device-1"), r("req-1", A, "pool-1", "device-2"))]),
    ("small-and-large-backtrack-claims",
     [claim("claim-0", req("req-0", "class-a", 1, memory_at_least(A, "1Gi"))), claim("claim-1", req("req-1", "class-a", 1, memory_at_least(A, "2Gi")))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-2", {"memory": "2Gi"}), dev("device-1", {"memory": "1Gi"}))],
     N1, (), [local(r("req-0", A, "pool-1", "device-1")), local(r("req-1", A, "pool-1", "device-2"))]),
    ("devices-split-across-different-slices", [claim("claim-0", req("req-0", "class-a", 2))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A), one("slice-2", "node-1", "pool-2", A)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-0", A, "pool-2", "device-1"))]),
    # generation 2 replaces generation 1, but only one of its two slices exists: incomplete, nothing to allocate
    ("obsolete-slice", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1-obsolete", "node-1", "pool-1", A, dev("device-1"), count=2),
      slice_("slice-1-obsolete", "node-1", "pool-1", A, dev("device-2"), count=2, generation=2)], N1, (), None),
    ("duplicate-slice", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A, count=2), one("slice-1-2", "node-1", "pool-1", A, count=2)], N1, (),
     "invalid resource pools were encountered"),
    ("no-slices", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A], [], N1, (), None),
    ("not-enough-suitable-devices", [claim("claim-0", req("req-0", "class-a")), claim("claim-0", req("req-1", "class-a"))],
     [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1, (), None),
    ("no-classes", [claim("claim-0", req("req-0", "class-a"))], [], [one("slice-1", "node-1", "pool-1", A)], N1, (),
     "could not retrieve device class class-a"),
    ("unknown-class", [claim("claim-0", req("req-0", "unknown-class"))], [CLASS_A], [one("slice-1", "node-1", "pool-1", A)],
     N1, (), "could not retrieve device class unknown-class"),
    ("no-claims-to-allocate", [], [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1, (), []),
    ("all-devices-single", [claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A], [one("slice-1", "node-1", "pool-1", A)],
     N1, (), [local(r("req-0", A, "pool-1", "device-1"))]),
    ("all-devices-many", [claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A), one("slice-1", "node-1", "pool-2", A)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-0", A, "pool-2", "device-1"))]),
    ("all-devices-of-the-incomplete-pool", [claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A, count=2)], N1, (),
     "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated"),
    ("all-devices-plus-another",
     [claim("claim-0", all_mode("req-0", "class-a")), claim("claim-1", req("req-0", "class-b"))], [CLASS_A, CLASS_B],
     [one("slice-1", "node-1", "pool-1", A), one("slice-1", "node-1", "pool-1", B)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1")), local(r("req-0", B, "pool-1", "device-1"))]),
    ("all-devices-plus-another-reversed",
     [claim("claim-1", req("req-0", "class-b")), claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A, CLASS_B],
     [one("slice-1", "node-1", "pool-1", A), one("slice-1", "node-1", "pool-1", B)], N1, (),
     [local(r("req-0", B, "pool-1", "device-1")), local(r("req-0", A, "pool-1", "device-1"))]),
    ("all-devices-many-plus-another",
     [claim("claim-0", all_mode("req-0", "class-a")), claim("claim-1", req("req-0", "class-b"))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2")), one("slice-1", "node-1", "pool-1", B)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-0", A, "pool-1", "device-2")), local(r("req-0", B, "pool-1", "device-1"))]),
    ("all-devices-many-plus-another-reversed",
     [claim("claim-1", req("req-0", "class-b")), claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2")), one("slice-1", "node-1", "pool-1", B)], N1, (),
     [local(r("req-0", B, "pool-1", "device-1")), local(r("req-0", A, "pool-1", "device-1"), r("req-0", A, "pool-1", "device-2"))]),
    ("all-devices-no-solution", [claim("claim-1", req("req-0", "class-a")), claim("claim-0", all_mode("req-0", "class-a"))],
     [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1, (), None),
    ("all-devices-no-solution-reversed", [claim("claim-0", all_mode("req-0", "class-a")), claim("claim-1", req("req-0", "class-a"))],
     [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1, (), None),
    ("all-devices-slice-without-devices", [claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A)], N1, (), None),
    ("all-devices-no-slices", [claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A], [], N1, (), None),
    ("all-devices-some-allocated", [claim("claim-0", all_mode("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], N1, ((A, "pool-1", "device-1"),), None),
    ("all-devices-some-allocated-admin-access", [claim("claim-0", all_mode("req-0", "class-a", admin=True))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], N1, ((A, "pool-1", "device-1"),),
     [local(r("req-0", A, "pool-1", "device-1", True), r("req-0", A, "pool-1", "device-2", True))]),
    # the All request cannot take device-1, which the first request of the same claim holds
    ("all-devices-some-allocating-admin-access",
     [claim("claim-0", req("req-0", "class-a", admin=True), all_mode("req-1", "class-a", admin=True))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], N1, (), None),
    ("count-devices-some-allocated-admin-access", [claim("claim-0", req("req-0", "class-a", 2, admin=True))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], N1, ((A, "pool-1", "device-1"),),
     [local(r("req-0", A, "pool-1", "device-1", True), r("req-0", A, "pool-1", "device-2", True))]),
    ("separate-claims-share-device-admin-access",
     [claim("claim-0", req("req-0", "class-a", admin=True)), claim("claim-1", req("req-0", "class-a", admin=True))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], N1, (),
     [local(r("req-0", A, "pool-1", "device-1", True)), local(r("req-0", A, "pool-1", "device-1", True))]),
    ("admin-access-claims-device-allocating-for-non-admin-access",
     [claim("claim-0", req("req-0", "class-a")), claim("claim-1", req("req-0", "class-a", admin=True))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], N1, (),
     [local(r("req-0", A, "pool-1", "device-1")), local(r("req-0", A, "pool-1", "device-1", True))]),
    ("network-attached-device", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [one("slice-1", label_selector("region", "region-1"), "pool-1", A)], N1, (),
     [{"results": [r("req-0", A, "pool-1", "device-1")], "nodeSelector": _norm(label_selector("region", "region-1")), "config": []}]),
    ("unsuccessful-allocation-network-attached-device", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [one("slice-1", label_selector("region", "region-1"), "pool-1", A)], N2, (), None),
    ("many-network-attached-devices", [claim("claim-0", req("req-0", "class-a", 4))], [CLASS_A],
     [one("slice-1", label_selector("region", "region-1"), "pool-1", A), one("slice-1", ALL_NODES, "pool-2", A),
      one("slice-1", label_selector("planet", "earth"), "pool-3", A), one("slice-1", local_selector("node-1"), "pool-4", A)], N1, (),
     [{"results": sorted([r("req-0", A, f"pool-{i}", "device-1") for i in (1, 2, 3, 4)]),
       "nodeSelector": _norm({"nodeSelectorTerms": [{
           "matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]},
                                {"key": "planet", "operator": "In", "values": ["earth"]}],
           "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}),
       "config": []}]),
    ("local-and-network-attached-devices", [claim("claim-0", req("req-0", "class-a", 2))], [CLASS_A],
     [one("slice-1", label_selector("region", "region-1"), "pool-1", A), one("slice-1", "node-1", "pool-2", A)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-0", A, "pool-2", "device-1"))]),
    ("several-different-drivers", [claim("claim-0", req("req-0", "class-a")), claim("claim-0", req("req-0", "class-b"))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2")), one("slice-1", "node-1", "pool-1", B)],
     N1, (), [local(r("req-0", A, "pool-1", "device-1")), local(r("req-0", B, "pool-1", "device-1"))]),
    ("already-allocated-devices", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A], [one("slice-1", "node-1", "pool-1", A)],
     N1, ((A, "pool-1", "device-1"), (A, "pool-1", "device-2")), None),
    ("admin-access-enabled", [claim("claim-0", req("req-0", "class-a", admin=True))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A)], N1, ((A, "pool-1", "device-1"), (A, "pool-1", "device-2")),
     [local(r("req-0", A, "pool-1", "device-1", True))]),
    ("with-constraint",
     [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"), constraints=(
         constraint("numa"), constraint("driverVersion"), constraint("stringAttribute"), constraint("boolAttribute")))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", attributes=ATTRS_ALL), dev("device-2", attributes=ATTRS_ALL))],
     N1, (), [local(r("req-0", A, "pool-1", "device-1"), r("req-1", A, "pool-1", "device-2"))]),
    ("with-constraint-non-existent-attribute",
     [claim("claim-0", req("req-0", "class-a"), constraints=(constraint("NonExistentAttribute"),))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A)], N1, (), None),
    ("with-constraint-not-matching-int-attribute", [claim("claim-0", req("req-0", "class-a", 2), constraints=(constraint("numa"),))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", attributes=numa(1)), dev("device-2", attributes=numa(2)))],
     N1, (), None),
    ("with-constraint-not-matching-int-attribute-all-devices",
     [claim("claim-0", all_mode("req-0", "class-a"), constraints=(constraint("numa"),))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", attributes=numa(1)), dev("device-2", attributes=numa(2)))], N1, (),
     "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied"),
    ("with-constraint-not-matching-string-attribute", [claim("claim-0", req("req-0", "class-a", 2), constraints=(constraint("stringAttribute"),))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A,
         dev("device-1", attributes={"stringAttribute": {"string": "stringAttributeValue"}}),
         dev("device-2", attributes={"stringAttribute": {"string": "stringAttributeValue2"}}))], N1, (), None),
    ("with-constraint-not-matching-bool-attribute", [claim("claim-0", req("req-0", "class-a", 2), constraints=(constraint("boolAttribute"),))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A,
         dev("device-1", attributes={"boolAttribute": {"bool": True}}), dev("device-2", attributes={"boolAttribute": {"bool": False}}))],
     N1, (), None),
    ("with-constraint-not-matching-version-attribute", [claim("claim-0", req("req-0", "class-a", 2), constraints=(constraint("driverVersion"),))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A,
         dev("device-1", attributes={"driverVersion": {"version": "1.0.0"}}), dev("device-2", attributes={"driverVersion": {"version": "2.0.0"}}))],
     N1, (), None),
    ("with-constraint-for-request",
     [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"), constraints=(constraint("driverVersion", "req-0"),))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A,
         dev("device-1", attributes={"driverVersion": {"version": "1.0.0"}}), dev("device-2", attributes={"driverVersion": {"version": "2.0.0"}}))],
     N1, (), [local(r("req-0", A, "pool-1", "device-1"), r("req-1", A, "pool-1", "device-2"))]),
    # device-1 breaks the second constraint with any partner: the allocator backtracks to device-2
    ("with-constraint-for-request-retry",
     [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"),
            constraints=(constraint("driverVersion", "req-0"), constraint("stringAttribute")))],
     [CLASS_A, CLASS_B], [slice_("slice-1", "node-1", "pool-1", A,
         dev("device-1", attributes={"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}}),
         dev("device-2", attributes={"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}}),
         dev("device-3", attributes={"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}}))],
     N1, (), [local(r("req-0", A, "pool-1", "device-2"), r("req-1", A, "pool-1", "device-3"))]),
    ("with-class-device-config", [claim("claim-0", req("req-0", "class-a"))], [klass("class-a", A, config="classAttribute")],
     [one("slice-1", "node-1", "pool-1", A)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"), config=[
         {"source": "FromClass", "requests": ["req-0"], "opaque": {"driver": A, "parameters": {"classAttribute": "classAttributeValue"}}}])]),
    ("with-class-device-config-with-multiple-request-and-configs",
     [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"), req("req-2", "class-b"))],
     [klass("class-a", A, config="classAttribute-A"), klass("class-b", B, config="classAttribute-B")],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-0"), dev("device-1")), one("slice-2", "node-1", "pool-1", B)], N1, (),
     [local(r("req-0", A, "pool-1", "device-0"), r("req-1", A, "pool-1", "device-1"), r("req-2", B, "pool-1", "device-1"), config=[
         {"source": "FromClass", "requests": ["req-0", "req-1"], "opaque": {"driver": A, "parameters": {"classAttribute-A": "classAttribute-AValue"}}},
         {"source": "FromClass", "requests": ["req-2"], "opaque": {"driver": B, "parameters": {"classAttribute-B": "classAttribute-BValue"}}}])]),
    # a claim config without requests applies to all of them; upstream's result keeps Requests empty
    ("claim-with-device-config", [claim("claim-0", req("req-0", "class-a"), config=(opaque(A, "deviceAttribute"),))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A)], N1, (),
     [local(r("req-0", A, "pool-1", "device-1"), config=[
         {"source": "FromClaim", "requests": [], "opaque": {"driver": A, "parameters": {"deviceAttribute": "deviceAttributeValue"}}}])]),
    ("invalid-CEL-one-device", [claim("claim-0", req("req-0", "class-a", 1, {"cel": {"expression": "noSuchVar"}}))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A)], N1, (), "undeclared reference"),
    ("invalid-CEL-one-device-class", [claim("claim-0", req("req-0", "class-a"))], [klass("class-a", A, "noSuchVar")],
     [one("slice-1", "node-1", "pool-1", A)], N1, (), "undeclared reference"),
    ("invalid-CEL-all-devices", [claim("claim-0", req("req-0", "class-a", None, {"cel": {"expression": "noSuchVar"}}, mode="All"))],
     [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1, (), "undeclared reference"),
    ("too-many-devices-single-request", [claim("claim-0", req("req-0", "class-a", 500))], [CLASS_A], [], N1, (), "exceeds the claim limit"),
    ("many-devices-okay", [claim("claim-0", req("req-0", "class-a", 32))], [CLASS_A], [], N1, (), None),
    ("too-many-devices-total", [claim("claim-0", req("req-0", "class-a", 32), req("req-1", "class-a", 1))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, *[dev(f"device-{i}") for i in range(33)])], N1, (), "exceeds the claim limit"),
    ("all-devices-invalid-CEL", [claim("claim-0", req("req-0", "class-a", 500))], [CLASS_A], [], N1, (), "exceeds the claim limit"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "claims", "classes", "slices", "at", "allocated", "want"), CASES, ids=[c[0] for c in CASES]
)
def test_allocator(
    name: str, claims: Any, classes: Any, slices: Any, at: Any, allocated: Any, want: Any
) -> None:
    if isinstance(want, str):
        with pytest.raises(AllocationError, match=_literal(want)):
            allocate(claims, classes, slices, at, allocated)
        return
    assert allocate(claims, classes, slices, at, allocated) == want


def _literal(text: str) -> str:
    import re

    return re.escape(text)


def test_invalid_pool_fails_only_this_node() -> None:
    """``duplicate-slice``: the error is node-local (upstream wraps ErrFailedAllocationOnNode)."""
    slices = [
        one("slice-1", "node-1", "pool-1", A, count=2),
        one("slice-1-2", "node-1", "pool-1", A, count=2),
    ]
    with pytest.raises(NodeAllocationError):
        allocate([claim("claim-0", req("req-0", "class-a"))], [CLASS_A], slices, N1)


def test_admin_access_disabled() -> None:
    """``admin-access-disabled``: with the feature off an admin request is an error."""
    with pytest.raises(
        AllocationError,
        match="claim claim-0, request req-0: admin access is requested, but the feature is disabled",
    ):
        allocate([claim("claim-0", req("req-0", "class-a", admin=True))], [CLASS_A], [one("slice-1", "node-1", "pool-1", A)], N1,
                 features=Features(admin_access=False))  # fmt: skip


@pytest.mark.parametrize(
    ("name", "claim_doc"),
    [
        ("empty-class", {"requests": [{"name": "req-0", "exactly": {"deviceClassName": ""}}]}),
        ("unknown-selector", {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": [{}]}}]}),
        ("unknown-allocation-mode",
         {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "allocationMode": "future-mode"}}]}),
        ("unknown-constraint", {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}], "constraints": [{}]}),
    ],
)  # fmt: skip
def test_objects_the_api_refuses_are_refused_at_read(name: str, claim_doc: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ResourceClaim.model_validate({"metadata": {"name": "claim-0"}, "spec": {"devices": claim_doc}})
