"""The structured allocator's beta features against upstream's table: prioritized lists (``firstAvailable``),
partitionable devices (shared counters, per-device node selection) and device taints.

Source: kubernetes/kubernetes ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/
allocatortesting/allocator_testing.go``, ``TestAllocator``, at commit 008b3652959ca58af8be3fb5b6ecfe9ae7638282.
Case names are upstream's. Features are on (v1.35 defaults) unless the case turns one off.
"""

from __future__ import annotations

from typing import Any

import pytest

from dra_builders import (
    ALL_NODES,
    PER_DEVICE,
    allocate,
    claim,
    dev,
    first,
    klass,
    label_selector,
    memory_at_least,
    node,
    opaque,
    req,
    slice_,
    sub,
)
from fleetlab.placement.dra.allocator import AllocationError, Features
from test_upstream_dra_allocator import _norm, local, one, r

A, B = "driver-a", "driver-b"
N1 = node("node-1", "region-1")
CLASS_A, CLASS_B = klass("class-a", A), klass("class-b", B)
TAINT_NS = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TOL_NS = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOL_NE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
NO_TAINTS = Features(device_taints=False)
NO_PARTITIONS = Features(partitionable_devices=False)


def tol(t: dict[str, str]) -> str:
    return str({k: v for k, v in t.items()})


def parts(*memories: str, cpus: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Devices device-1.. consuming ``memory`` (and ``cpus``) from counter-set-1, capacity from counters."""
    out = []
    for i, memory in enumerate(memories, start=1):
        counters = {"memory": memory} if cpus is None else {"memory": memory, "cpus": cpus[i - 1]}
        out.append(dev(f"device-{i}", counters={"counter-set-1": counters}, from_counters=True))
    return out


def counters(name: str, where: Any, pool: str, driver: str, **sets: dict[str, str]) -> Any:
    return slice_(
        name, where, pool, driver, count=2, counter_sets={k.replace("_", "-"): v for k, v in sets.items()}
    )


def two(name: str, where: Any, pool: str, driver: str, *devices: dict[str, Any]) -> Any:
    return slice_(name, where, pool, driver, *devices, count=2)


# (name, claims, classes, slices, allocated, features, expected)
CASES: list[tuple[str, list[Any], list[Any], list[Any], tuple[Any, ...], Features, Any]] = [
    ("all-devices-slice-without-devices-prioritized-list",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"), sub("subReq-1", "class-b")))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", A), one("slice-2", "node-1", "pool-2", B)], (), Features(),
     [local(r("req-0/subReq-1", B, "pool-2", "device-1"))]),
    ("all-devices-no-slices-prioritized-list",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"), sub("subReq-1", "class-b")))], [CLASS_A, CLASS_B],
     [one("slice-2", "node-1", "pool-2", B)], (), Features(), [local(r("req-0/subReq-1", B, "pool-2", "device-1"))]),
    ("all-devices-some-allocated-prioritized-list",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"), sub("subReq-1", "class-b")))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2")), one("slice-2", "node-1", "pool-2", B)],
     ((A, "pool-1", "device-1"),), Features(), [local(r("req-0/subReq-1", B, "pool-2", "device-1"))]),
    ("prioritized-list-first-unavailable",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-b"), sub("subReq-1", "class-a")))], [CLASS_A, CLASS_B],
     [one("slice-1", "node-1", "pool-1", A)], (), Features(), [local(r("req-0/subReq-1", A, "pool-1", "device-1"))]),
    ("prioritized-list-non-available",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-b", 2), sub("subReq-1", "class-a", 2)))], [CLASS_A, CLASS_B],
     [one("slice-1", "node-1", "pool-1", A), one("slice-2", "node-1", "pool-2", B)], (), Features(), None),
    ("prioritized-list-device-config",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a"), sub("subReq-1", "class-b", 2)),
            config=(opaque(A, "foo", ("req-0/subReq-0",)), opaque(B, "bar", ("req-0/subReq-1",))))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", B, dev("device-1"), dev("device-2"))], (), Features(),
     [local(r("req-0/subReq-1", B, "pool-1", "device-1"), r("req-0/subReq-1", B, "pool-1", "device-2"), config=[
         {"source": "FromClaim", "requests": ["req-0/subReq-1"], "opaque": {"driver": B, "parameters": {"bar": "barValue"}}}])]),
    ("prioritized-list-class-config",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 2), sub("subReq-1", "class-b", 2)))],
     [klass("class-a", A, config="foo"), klass("class-b", B, config="bar")],
     [slice_("slice-1", "node-1", "pool-1", B, dev("device-1"), dev("device-2")), slice_("slice-2", "node-1", "pool-2", A, dev("device-3"))],
     (), Features(),
     [local(r("req-0/subReq-1", B, "pool-1", "device-1"), r("req-0/subReq-1", B, "pool-1", "device-2"), config=[
         {"source": "FromClass", "requests": ["req-0/subReq-1"], "opaque": {"driver": B, "parameters": {"bar": "barValue"}}}])]),
    ("prioritized-list-subrequests-with-expressions",
     [claim("claim-0", req("req-0", "class-a", 1, memory_at_least(A, "1Gi")),
            first("req-1", sub("subReq-0", "class-a", 1, memory_at_least(A, "4Gi")), sub("subReq-1", "class-a", 2, memory_at_least(A, "2Gi"))))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", {"memory": "2Gi"}), dev("device-2", {"memory": "2Gi"}),
                        dev("device-3", {"memory": "1Gi"}))], (), Features(),
     [local(r("req-0", A, "pool-1", "device-3"), r("req-1/subReq-1", A, "pool-1", "device-1"), r("req-1/subReq-1", A, "pool-1", "device-2"))]),
    ("prioritized-list-subrequests-with-constraints-ref-parent-request",
     [claim("claim-0", req("req-0", "class-a", 1, memory_at_least(A, "8Gi")),
            first("req-1", sub("subReq-0", "class-a", 1, memory_at_least(A, "2Gi")), sub("subReq-1", "class-a", 1, memory_at_least(A, "1Gi"))),
            constraints=({"requests": ["req-0", "req-1"], "matchAttribute": f"{A}/driverVersion"},))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", {"memory": "8Gi"}, {"driverVersion": {"version": "1.0.0"}})),
                 slice_("slice-2", "node-1", "pool-2", A, dev("device-2", {"memory": "2Gi"}, {"driverVersion": {"version": "2.0.0"}}),
                        dev("device-3", {"memory": "1Gi"}, {"driverVersion": {"version": "1.0.0"}}))], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-1/subReq-1", A, "pool-2", "device-3"))]),
    ("prioritized-list-subrequests-with-constraints-ref-sub-request",
     [claim("claim-0", req("req-0", "class-a", 1, memory_at_least(A, "8Gi")),
            first("req-1", sub("subReq-0", "class-a", 1, memory_at_least(A, "2Gi")), sub("subReq-1", "class-a", 1, memory_at_least(A, "1Gi"))),
            constraints=({"requests": ["req-0", "req-1/subReq-0"], "matchAttribute": f"{A}/driverVersion"},))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", {"memory": "8Gi"}, {"driverVersion": {"version": "1.0.0"}})),
                 slice_("slice-2", "node-1", "pool-2", A, dev("device-2", {"memory": "2Gi"}, {"driverVersion": {"version": "2.0.0"}}))],
     (), Features(), [local(r("req-0", A, "pool-1", "device-1"), r("req-1/subReq-1", A, "pool-2", "device-2"))]),
    ("prioritized-list-subrequests-with-allocation-mode-all",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"), sub("subReq-1", "class-a")))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], ((A, "pool-1", "device-1"),), Features(),
     [local(r("req-0/subReq-1", A, "pool-1", "device-2"))]),
    ("prioritized-list-allocation-mode-all-multiple-requests",
     [claim("claim-0", req("req-0", "class-a"), first("req-1", sub("subReq-0", "class-a", mode="All"), sub("subReq-1", "class-a")))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-1/subReq-1", A, "pool-1", "device-2"))]),
    ("prioritized-list-disabled", [claim("claim-0", first("req-0", sub("subReq-0", "class-a")))], [CLASS_A],
     [one("slice-1", "node-1", "pool-1", A)], (), Features(prioritized_list=False),
     "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"),
    ("prioritized-list-multi-request",
     [claim("claim-0", req("req-1", "class-a", 1, memory_at_least(A, "8Gi")),
            first("req-0", sub("subReq-0", "class-a", 1, memory_at_least(A, "8Gi")), sub("subReq-1", "class-a", 1, memory_at_least(A, "4Gi"))))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", {"memory": "8Gi"})),
                 slice_("slice-2", "node-1", "pool-2", A, dev("device-2", {"memory": "4Gi"}))], (), Features(),
     [local(r("req-1", A, "pool-1", "device-1"), r("req-0/subReq-1", A, "pool-2", "device-2"))]),
    ("prioritized-list-with-backtracking",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 1, memory_at_least(A, "8Gi")), sub("subReq-1", "class-a", 1, memory_at_least(A, "4Gi"))),
            req("req-1", "class-a", 1, memory_at_least(A, "8Gi")))],
     [CLASS_A], [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", {"memory": "8Gi"})),
                 slice_("slice-2", "node-1", "pool-2", A, dev("device-2", {"memory": "4Gi"}))], (), Features(),
     [local(r("req-0/subReq-1", A, "pool-2", "device-2"), r("req-1", A, "pool-1", "device-1"))]),
    ("prioritized-list-too-many-in-first-subrequest",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-b", 500), sub("subReq-1", "class-a")))], [CLASS_A, CLASS_B],
     [one("slice-1", "node-1", "pool-1", A)], (), Features(), [local(r("req-0/subReq-1", A, "pool-1", "device-1"))]),
    ("partitionable-devices-single-device", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, dev("device-1", counters={"counter-set-1": {"memory": "4Gi"}})),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "8Gi"})], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1"))]),
    # device-1 (4Gi) for req-0; 4 + 6 > 8 refuses device-2 for the first subrequest, device-3 fits the second
    ("partitionable-devices-prioritized-list",
     [claim("claim-0", req("req-0", "class-a"), first("req-1", sub("subReq-0", "class-a", 1, memory_at_least(A, "6Gi")),
                                                     sub("subReq-1", "class-a", 1, memory_at_least(A, "4Gi"))))],
     [CLASS_A], [two("slice-1", "node-1", "pool-1", A, *parts("4Gi", "6Gi", "4Gi")),
                 counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "8Gi"})], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-1/subReq-1", A, "pool-1", "device-3"))]),
    ("partitionable-devices-multiple-devices", [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, *parts("4Gi", "6Gi", "4Gi")),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "8Gi"})], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1"), r("req-1", A, "pool-1", "device-3"))]),
    ("partitionable-devices-multiple-capacity-pools",
     [claim("claim-0", req("req-0", "class-a"), first("req-1", sub("subReq-0", "class-a", 1, memory_at_least(A, "6Gi")),
                                                     sub("subReq-1", "class-a", 1, memory_at_least(A, "4Gi"))))],
     [CLASS_A], [two("slice-1", "node-1", "pool-1", A,
                     *[dev(f"device-{i}", counters={"counter-set-1": {"memory": m}, "counter-set-2": {"cpus": c}}, from_counters=True)
                       for i, m, c in ((1, "4Gi", "4"), (2, "6Gi", "6"), (3, "4Gi", "4"))]),
                 counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "18Gi"}, counter_set_2={"cpus": "8"})],
     (), Features(), [local(r("req-0", A, "pool-1", "device-1"), r("req-1/subReq-1", A, "pool-1", "device-3"))]),
    ("partitionable-devices-multiple-counters", [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A,
          *[dev(f"device-{i}", counters={"counter-set-1": {"memory": m1, "cpus": c1}, "counter-set-2": {"cpus": c2, "memory": m2}})
            for i, m1, c1, c2, m2 in ((1, "4Gi", "6", "4", "2Gi"), (2, "6Gi", "4", "6", "6Gi"), (3, "4Gi", "4", "4", "4Gi"))]),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"cpus": "8", "memory": "18Gi"},
               counter_set_2={"cpus": "12", "memory": "18Gi"})], (), Features(),
     [local(r("req-0", A, "pool-1", "device-2"), r("req-1", A, "pool-1", "device-3"))]),
    ("partitionable-devices-multiple-pools", [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, *parts("4Gi", "6Gi", "4Gi", cpus=("6", "4", "4"))),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"cpus": "8", "memory": "18Gi"}),
      two("slice-3", "node-1", "pool-2", A, *parts("4Gi", "7Gi", "7Gi", cpus=("6", "1", "1"))),
      counters("slice-4", "node-1", "pool-2", A, counter_set_1={"cpus": "8", "memory": "18Gi"})],
     ((A, "pool-1", "device-2"), (A, "pool-1", "device-3"), (A, "pool-2", "device-1")), Features(),
     [local(r("req-0", A, "pool-2", "device-2"), r("req-1", A, "pool-2", "device-3"))]),
    ("partitionable-devices-unused-counters-in-counter-set", [claim("claim-0", req("req-0", "class-a", 2))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, *[dev(f"device-{i}", counters={"counter-set-1": {"memory": m}}) for i, m in ((1, "5Gi"), (2, "4Gi"), (3, "4Gi"))]),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "8Gi", "unused": "1Gi"})], (), Features(),
     [local(r("req-0", A, "pool-1", "device-2"), r("req-0", A, "pool-1", "device-3"))]),
    ("partitionable-devices-no-capacity-available", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, *parts("4Gi", "16Gi")), counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "18Gi"})],
     ((A, "pool-1", "device-2"),), Features(), None),
    ("partitionable-devices-overallocated-capacity-pool", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, *parts("4Gi", "20Gi")), counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "18Gi"})],
     ((A, "pool-1", "device-2"),), Features(), None),
    ("partitionable-devices-disabled-device-consumes-counters", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, dev("device-1", counters={"counter-set-1": {"memory": "4Gi"}})),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "18Gi"})], (), NO_PARTITIONS, None),
    ("partitionable-devices-disabled-other-device-do-not-consume-counters", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [two("slice-1", "node-1", "pool-1", A, dev("device-1", counters={"counter-set-1": {"memory": "4Gi"}}), dev("device-2")),
      counters("slice-2", "node-1", "pool-1", A, counter_set_1={"memory": "18Gi"})], (), NO_PARTITIONS,
     [local(r("req-0", A, "pool-1", "device-2"))]),
    ("partitionable-devices-disabled-per-device-node-selection", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", PER_DEVICE, "pool-1", A, dev("device-2", where="node-1"))], (), NO_PARTITIONS, None),
    ("partitionable-devices-per-device-node-selection-nodename",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 1, memory_at_least(A, "6Gi")), sub("subReq-1", "class-a", 1, memory_at_least(A, "4Gi"))))],
     [CLASS_A], [two("slice-1", PER_DEVICE, "pool-1", A,
                     dev("device-1", counters={"counter-set-1": {"memory": "4Gi"}}, from_counters=True, where="node-1"),
                     dev("device-2", counters={"counter-set-1": {"memory": "6Gi"}}, from_counters=True, where="node-2")),
                 counters("slice-2", PER_DEVICE, "pool-1", A, counter_set_1={"memory": "18Gi"})], (), Features(),
     [local(r("req-0/subReq-1", A, "pool-1", "device-1"))]),
    ("partitionable-devices-per-device-node-selection-node-selector", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [two("slice-1", PER_DEVICE, "pool-1", A,
          dev("device-1", counters={"counter-set-1": {"memory": "4Gi"}}, from_counters=True, where=label_selector("region", "region-1"))),
      counters("slice-2", PER_DEVICE, "pool-1", A, counter_set_1={"memory": "18Gi"})], (), Features(),
     [{"results": [r("req-0", A, "pool-1", "device-1")], "nodeSelector": _norm(label_selector("region", "region-1")), "config": []}]),
    ("partitionable-devices-per-device-node-selection-node-selector-multiple-devices",
     [claim("claim-0", req("req-0", "class-a", 3), req("req-1", "class-b", 3))], [CLASS_A, CLASS_B],
     [two("slice-1", PER_DEVICE, "pool-1", A,
          dev("device-1", counters={"counter-set-1": {"memory": "4Gi"}}, from_counters=True, where=label_selector("region", "region-1")),
          dev("device-2", counters={"counter-set-1": {"memory": "4Gi"}}, from_counters=True, where="node-1"),
          dev("device-3", counters={"counter-set-1": {"memory": "4Gi"}}, from_counters=True, where=ALL_NODES)),
      counters("slice-2", PER_DEVICE, "pool-1", A, counter_set_1={"memory": "18Gi"}),
      two("slice-3", "node-1", "pool-2", B, *[dev(f"device-{i}", counters={"counter-set-2": {"memory": "4Gi"}}, from_counters=True) for i in (1, 2, 3)]),
      counters("slice-4", "node-1", "pool-2", B, counter_set_2={"memory": "12Gi"})], (), Features(),
     [local(*[r("req-0", A, "pool-1", f"device-{i}") for i in (1, 2, 3)], *[r("req-1", B, "pool-2", f"device-{i}") for i in (1, 2, 3)])]),
    ("tainted-two-devices", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS,)), dev("device-2", taints=(TAINT_NE,)))], (), Features(), None),
    ("tainted-one-device-two-taints", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS, TAINT_NE)))], (), Features(), None),
    ("tainted-two-devices-tolerated", [claim("claim-0", req("req-0", "class-a", tolerations=(TOL_NE,)))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS,)), dev("device-2", taints=(TAINT_NE,)))], (), Features(),
     [local(r("req-0", A, "pool-1", "device-2", False, "NE"))]),
    ("tainted-two-devices-prioritized-list-tolerated",
     [claim("claim-0", first("req-0", sub("subReq-0", "class-a"), sub("subReq-1", "class-a", tolerations=(TOL_NE,))))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS,)), dev("device-2", taints=(TAINT_NE,)))], (), Features(),
     [local(r("req-0/subReq-1", A, "pool-1", "device-2", False, "NE"))]),
    ("tainted-no-effect", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NONE,)))], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1"))]),
    ("tainted-one-device-two-taints-both-tolerated", [claim("claim-0", req("req-0", "class-a", tolerations=(TOL_NS, TOL_NE)))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS, TAINT_NE)))], (), Features(),
     [local(r("req-0", A, "pool-1", "device-1", False, "NS", "NE"))]),
    ("tainted-disabled", [claim("claim-0", req("req-0", "class-a"))], [CLASS_A],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS, TAINT_NE)))], (), NO_TAINTS,
     [local(r("req-0", A, "pool-1", "device-1"))]),
    ("tainted-prioritized-list", [claim("claim-0", first("req-0", sub("subReq-0", "class-b"), sub("subReq-1", "class-a")))], [CLASS_A, CLASS_B],
     [slice_("slice-1", "node-1", "pool-1", A, dev("device-1", taints=(TAINT_NS,)))], (), Features(), None),
]  # fmt: skip

_TOLERATION_TEXT = {"NE": TOL_NE, "NS": TOL_NS}


def _with_tolerations(expected: Any) -> Any:
    """Replace the short toleration names in expected results by the tolerations as allocate() renders them."""
    if not isinstance(expected, list):
        return expected
    out = []
    for entry in expected:
        results = []
        for row in entry["results"]:
            rendered = tuple(sorted(_render(_TOLERATION_TEXT[t]) for t in row[5]))
            results.append((*row[:5], rendered))
        out.append({**entry, "results": sorted(results)})
    return out


def _render(toleration: dict[str, str]) -> str:
    from fleetlab.model.dra import DeviceToleration

    return str(DeviceToleration.model_validate(toleration).model_dump(by_alias=True, exclude_none=True))


@pytest.mark.parametrize(
    ("name", "claims", "classes", "slices", "allocated", "features", "want"), CASES, ids=[c[0] for c in CASES]
)
def test_allocator_features(
    name: str, claims: Any, classes: Any, slices: Any, allocated: Any, features: Features, want: Any
) -> None:
    if isinstance(want, str):
        with pytest.raises(AllocationError, match=want):
            allocate(claims, classes, slices, N1, allocated, features)
        return
    assert allocate(claims, classes, slices, N1, allocated, features) == _with_tolerations(want)
