"""Upstream Kueue's classic preemption table, ported case by case.

Source: kubernetes-sigs/kueue ``pkg/scheduler/preemption/preemption_test.go``, ``TestPreemption``, at commit
cd6c1d08a30a9cd585597cda8ce83e76dc394920. Each case keeps upstream's name; the ClusterQueues are upstream's
``defaultClusterQueues`` (only those a case touches are built), the admitted workloads are reserved in their
ClusterQueue exactly as listed, and the incoming workload's flavor assignment (flavor and mode per resource)
is the one upstream hands to ``GetTargets``. Units: cpu in milli-cores, memory in bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetlab.admission.flavors import (
    Assignment,
    AssignmentMode,
    PodSetAssignment,
    PodSetRequest,
    ResourceAssignment,
)
from fleetlab.admission.manager import AdmissionManager, Nominee, Workload
from fleetlab.admission.preemption import ClassicPreemption
from fleetlab.admission.tree import FlavorResource
from fleetlab.model.queues import queue_config_from_objects

UPSTREAM = "kubernetes-sigs/kueue pkg/scheduler/preemption/preemption_test.go TestPreemption @cd6c1d08"
GI = 1 << 30
CPU, MEM = "cpu", "memory"


def _res(name: str, nominal: str, borrowing: str = "", lending: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing:
        out["borrowingLimit"] = borrowing
    if lending:
        out["lendingLimit"] = lending
    return out


def _dns(name: str) -> str:
    """Upstream's table uses names Kueue's API would refuse (``a_standard``, ``preventStarvation``); the
    port uses their DNS-1123 forms (``a-standard``, ``preventstarvation``)."""
    return name.replace("_", "-").lower()


def _cq(name: str, cohort: str | None, groups: list[Any], **preemption: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceGroups": groups, "preemption": preemption}
    if cohort:
        spec["cohortName"] = _dns(cohort)
    return {"kind": "ClusterQueue", "metadata": {"name": _dns(name)}, "spec": spec}


def _group(resources: list[str], *flavors: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"coveredResources": resources, "flavors": [{"name": f, "resources": r} for f, r in flavors]}


LOWER, ANY, NEVER = "LowerPriority", "Any", "Never"
BWC0 = {"policy": "LowerPriority", "maxPriorityThreshold": 0}

#: Upstream's ``defaultClusterQueues`` (the ones these cases use).
CLUSTER_QUEUES: dict[str, dict[str, Any]] = {
    "standalone": _cq(
        "standalone",
        None,
        [
            _group([CPU], ("default", [_res(CPU, "6")])),
            _group([MEM], ("alpha", [_res(MEM, "3Gi")]), ("beta", [_res(MEM, "3Gi")])),
        ],
        withinClusterQueue=LOWER,
    ),
    "c1": _cq(
        "c1",
        "cohort",
        [_group([CPU, MEM], ("default", [_res(CPU, "6", "6"), _res(MEM, "3Gi", "3Gi")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=LOWER,
    ),
    "c2": _cq(
        "c2",
        "cohort",
        [_group([CPU, MEM], ("default", [_res(CPU, "6", "6"), _res(MEM, "3Gi", "3Gi")]))],
        withinClusterQueue=NEVER,
        reclaimWithinCohort=ANY,
    ),
    "d1": _cq(
        "d1",
        "cohort-no-limits",
        [_group([CPU, MEM], ("default", [_res(CPU, "6"), _res(MEM, "3Gi")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=LOWER,
    ),
    "d2": _cq(
        "d2",
        "cohort-no-limits",
        [_group([CPU, MEM], ("default", [_res(CPU, "6"), _res(MEM, "3Gi")]))],
        withinClusterQueue=NEVER,
        reclaimWithinCohort=ANY,
    ),
    "l1": _cq(
        "l1",
        "legion",
        [_group([CPU, MEM], ("default", [_res(CPU, "6", "12"), _res(MEM, "3Gi", "6Gi")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=LOWER,
    ),
    "a_standard": _cq(
        "a_standard",
        "with_shared_cq",
        [_group([CPU], ("default", [_res(CPU, "1", "12")]))],
        withinClusterQueue=NEVER,
        reclaimWithinCohort=LOWER,
        borrowWithinCohort=BWC0,
    ),
    "b_standard": _cq(
        "b_standard",
        "with_shared_cq",
        [_group([CPU], ("default", [_res(CPU, "1", "12")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=ANY,
        borrowWithinCohort=BWC0,
    ),
    "a_best_effort": _cq(
        "a_best_effort",
        "with_shared_cq",
        [_group([CPU], ("default", [_res(CPU, "1", "12")]))],
        withinClusterQueue=NEVER,
        reclaimWithinCohort=LOWER,
        borrowWithinCohort=BWC0,
    ),
    "b_best_effort": _cq(
        "b_best_effort",
        "with_shared_cq",
        [_group([CPU], ("default", [_res(CPU, "0", "13")]))],
        withinClusterQueue=NEVER,
        reclaimWithinCohort=LOWER,
        borrowWithinCohort=BWC0,
    ),
    "shared": _cq("shared", "with_shared_cq", [_group([CPU], ("default", [_res(CPU, "10")]))]),
    "preventStarvation": _cq(
        "preventStarvation",
        None,
        [_group([CPU], ("default", [_res(CPU, "6")]))],
        withinClusterQueue="LowerOrNewerEqualPriority",
    ),
    "lend1": _cq(
        "lend1",
        "cohort-lend",
        [_group([CPU], ("default", [_res(CPU, "6", "", "4")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=LOWER,
    ),
    "lend2": _cq(
        "lend2",
        "cohort-lend",
        [_group([CPU], ("default", [_res(CPU, "6", "", "2")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=LOWER,
    ),
    "a": _cq(
        "a",
        "cohort-three",
        [_group([CPU, MEM], ("default", [_res(CPU, "2"), _res(MEM, "2")]))],
        withinClusterQueue=LOWER,
        reclaimWithinCohort=ANY,
    ),
    "b": _cq("b", "cohort-three", [_group([CPU, MEM], ("default", [_res(CPU, "2"), _res(MEM, "2")]))]),
    "c": _cq("c", "cohort-three", [_group([CPU, MEM], ("default", [_res(CPU, "2"), _res(MEM, "2")]))]),
}

#: The "long range preemption" case's own ClusterQueues and Cohorts.
LONG_RANGE: list[dict[str, Any]] = [
    _cq("cq-left", "cohort-left", [_group([CPU], ("default", [_res(CPU, "10")]))], reclaimWithinCohort=ANY),
    _cq("cq-right", "cohort-right", [_group([CPU], ("default", [_res(CPU, "0")]))]),
    {"kind": "Cohort", "metadata": {"name": "cohort-left"}, "spec": {"parentName": "root"}},
    {"kind": "Cohort", "metadata": {"name": "cohort-right"}, "spec": {"parentName": "root"}},
]


def _manager(target: str) -> AdmissionManager:
    """Every ClusterQueue of upstream's table (as its cache holds them), or the long-range case's own."""
    queues = LONG_RANGE if target == "cq-left" else list(CLUSTER_QUEUES.values())
    names = [o["metadata"]["name"] for o in queues if o["kind"] == "ClusterQueue"]
    flavors = [{"kind": "ResourceFlavor", "metadata": {"name": f}} for f in ("default", "alpha", "beta")]
    lqs = [{"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in names]
    config = queue_config_from_objects([*flavors, *queues, *lqs])
    return AdmissionManager(config, preemption=ClassicPreemption())


#: An admitted workload: (name, ClusterQueue, priority, {resource: (flavor, amount)}), optionally followed by
#: its quota-reservation time and creation time (ms; both 0, upstream's ``now``, when absent).
Admitted = tuple[Any, ...]
#: One incoming podset: (name, count, {resource: (flavor, per-pod amount, mode)}).
PodSet = tuple[str, int, dict[str, tuple[str, int, AssignmentMode]]]


def _reserve(m: AdmissionManager, admitted: list[Admitted]) -> None:
    """Reserve each workload's quota in its ClusterQueue, as upstream's ``ReserveQuotaAt`` does."""
    for name, cq, priority, usage, *times in admitted:
        at, created = (*times, 0, 0)[:2]
        requests = {r: v for r, (_, v) in usage.items()}
        wl = Workload(name, "default", _dns(cq), priority, created, (PodSetRequest("main", 1, requests),))
        m.reserve(wl, _dns(cq), {"main": {r: f for r, (f, _) in usage.items()}}, at)


def _targets(
    target: str,
    admitted: list[Admitted],
    priority: int,
    podsets: dict[str, tuple[str, int, AssignmentMode]] | list[PodSet],
    created_ms: int = 10,
) -> set[str]:
    m = _manager(target)
    _reserve(m, admitted)
    shaped = [("main", 1, podsets)] if isinstance(podsets, dict) else podsets
    requests = tuple(PodSetRequest(n, c, {r: v for r, (_, v, _) in res.items()}) for n, c, res in shaped)
    target = _dns(target)
    wl = Workload("in", "default", target, priority, created_ms, requests)
    assigned: list[PodSetAssignment] = []
    usage: dict[FlavorResource, int] = {}
    for name, count, res in shaped:
        psa = PodSetAssignment(name, count, {r: v * count for r, (_, v, _) in res.items()})
        psa.flavors = {r: ResourceAssignment(f, mode, 0) for r, (f, _, mode) in res.items()}
        psa.reasons = (
            ["needs preemption"] if any(mode != AssignmentMode.FIT for *_, mode in res.values()) else []
        )
        assigned.append(psa)
        for r, (f, v, _) in res.items():
            usage[FlavorResource(f, r)] = usage.get(FlavorResource(f, r), 0) + v * count
    nominee = Nominee(wl, target, created_ms, Assignment(assigned, usage, 0))
    before = {n: dict(node.usage) for n, node in m.tree.cluster_queues.items()}
    found = set(ClassicPreemption().targets(m, nominee))
    assert {n: dict(node.usage) for n, node in m.tree.cluster_queues.items()} == before  # snapshot untouched
    return found


P, F = AssignmentMode.PREEMPT, AssignmentMode.FIT
STANDALONE_3 = [
    ("low", "standalone", -1, {CPU: ("default", 2000)}),
    ("mid", "standalone", 0, {CPU: ("default", 2000)}),
    ("high", "standalone", 1, {CPU: ("default", 2000)}),
]

#: "a1".."a3" (priorities -2, -2, -1) and "b1".."b3" (0) of 1 cpu each, in cohort-three.
A3_B3: list[Admitted] = [
    *((f"a{i}", "a", p, {CPU: ("default", 1000)}) for i, p in ((1, -2), (2, -2), (3, -1))),
    *((f"b{i}", "b", 0, {CPU: ("default", 1000)}) for i in (1, 2, 3)),
]

CASES: list[tuple[Any, ...]] = [
    ("preempt lowest priority", "standalone", STANDALONE_3, 1, {CPU: ("default", 2000, P)}, {"low"}),
    ("preempt multiple", "standalone", STANDALONE_3, 1, {CPU: ("default", 3000, P)}, {"low", "mid"}),
    (
        "no preemption for low priority",
        "standalone",
        [
            ("low", "standalone", -1, {CPU: ("default", 3000)}),
            ("mid", "standalone", 0, {CPU: ("default", 3000)}),
        ],
        -1,
        {CPU: ("default", 1000, P)},
        set(),
    ),
    (
        "not enough low priority workloads",
        "standalone",
        [
            ("low", "standalone", -1, {CPU: ("default", 3000)}),
            ("mid", "standalone", 0, {CPU: ("default", 3000)}),
        ],
        0,
        {CPU: ("default", 4000, P)},
        set(),
    ),
    (
        "some free quota, preempt low priority",
        "standalone",
        [
            ("low", "standalone", -1, {CPU: ("default", 1000)}),
            ("mid", "standalone", 0, {CPU: ("default", 1000)}),
            ("high", "standalone", 1, {CPU: ("default", 3000)}),
        ],
        1,
        {CPU: ("default", 2000, P)},
        {"low"},
    ),
    (
        "minimal set excludes low priority",
        "standalone",
        [
            ("low", "standalone", -1, {CPU: ("default", 1000)}),
            ("mid", "standalone", 0, {CPU: ("default", 2000)}),
            ("high", "standalone", 1, {CPU: ("default", 3000)}),
        ],
        1,
        {CPU: ("default", 2000, P)},
        {"mid"},
    ),
    (
        "only preempt workloads using the chosen flavor",
        "standalone",
        [
            ("low", "standalone", -1, {MEM: ("alpha", 2 * GI)}),
            ("mid", "standalone", 0, {MEM: ("beta", GI)}),
            ("high", "standalone", 1, {MEM: ("beta", GI)}),
        ],
        1,
        {CPU: ("default", 1000, F), MEM: ("beta", 2 * GI, P)},
        {"mid"},
    ),
    (
        "reclaim quota from borrower",
        "c1",
        [
            ("c1-low", "c1", -1, {CPU: ("default", 3000)}),
            ("c2-mid", "c2", 0, {CPU: ("default", 3000)}),
            ("c2-high", "c2", 1, {CPU: ("default", 6000)}),
        ],
        1,
        {CPU: ("default", 3000, P)},
        {"c2-mid"},
    ),
    (
        "reclaim quota if workload requests 0 resources for a resource at nominal quota",
        "c1",
        [
            ("c1-low", "c1", -1, {CPU: ("default", 3000), MEM: ("default", 3 * GI)}),
            ("c2-mid", "c2", 0, {CPU: ("default", 3000)}),
            ("c2-high", "c2", 1, {CPU: ("default", 6000)}),
        ],
        1,
        {CPU: ("default", 3000, P), MEM: ("default", 0, F)},
        {"c2-mid"},
    ),
    (
        "no workloads borrowing",
        "c1",
        [("c1-high", "c1", 1, {CPU: ("default", 4000)}), ("c2-low-1", "c2", -1, {CPU: ("default", 4000)})],
        1,
        {CPU: ("default", 4000, P)},
        set(),
    ),
    (
        "not enough workloads borrowing",
        "c1",
        [
            ("c1-high", "c1", 1, {CPU: ("default", 4000)}),
            ("c2-low-1", "c2", -1, {CPU: ("default", 4000)}),
            ("c2-low-2", "c2", -1, {CPU: ("default", 4000)}),
        ],
        1,
        {CPU: ("default", 4000, P)},
        set(),
    ),
    (
        "preempting locally and borrowing other resources in cohort, without cohort candidates",
        "c1",
        [
            ("c1-low", "c1", -1, {CPU: ("default", 4000)}),
            ("c2-low-1", "c2", -1, {CPU: ("default", 4000)}),
            ("c2-high-2", "c2", 1, {CPU: ("default", 4000)}),
        ],
        1,
        {CPU: ("default", 4000, P), MEM: ("default", 5 * GI, P)},
        {"c1-low"},
    ),
    (
        "preempting locally and borrowing same resource in cohort",
        "c1",
        [
            ("c1-med", "c1", 0, {CPU: ("default", 4000)}),
            ("c1-low", "c1", -1, {CPU: ("default", 4000)}),
            ("c2-low-1", "c2", -1, {CPU: ("default", 4000)}),
        ],
        1,
        {CPU: ("default", 4000, P)},
        {"c1-low"},
    ),
    (
        "preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort",
        "d1",
        [
            ("d1-med", "d1", 0, {CPU: ("default", 4000)}),
            ("d1-low", "d1", -1, {CPU: ("default", 4000)}),
            ("d2-low-1", "d2", -1, {CPU: ("default", 4000)}),
        ],
        1,
        {CPU: ("default", 4000, P)},
        {"d1-low"},
    ),
    (
        "preempting locally and borrowing other resources in cohort, with cohort candidates",
        "c1",
        [
            ("c1-med", "c1", 0, {CPU: ("default", 4000)}),
            ("c2-low-1", "c2", -1, {CPU: ("default", 5000)}),
            ("c2-low-2", "c2", -1, {CPU: ("default", 1000)}),
            ("c2-low-3", "c2", -1, {CPU: ("default", 1000)}),
        ],
        1,
        {CPU: ("default", 2000, P), MEM: ("default", 5 * GI, P)},
        {"c1-med"},
    ),
    (
        "preempting locally and not borrowing same resource in 1-queue cohort",
        "l1",
        [("l1-med", "l1", 0, {CPU: ("default", 4000)}), ("l1-low", "l1", -1, {CPU: ("default", 2000)})],
        1,
        {CPU: ("default", 4000, P)},
        {"l1-med"},
    ),
    (
        "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority",
        "c1",
        [
            ("c1", "c1", 0, {CPU: ("default", 2000)}),
            ("c2-1", "c2", 0, {CPU: ("default", 4000)}),
            ("c2-2", "c2", 0, {CPU: ("default", 4000)}),
        ],
        0,
        {CPU: ("default", 4000, P)},
        set(),
    ),
    (
        "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny",
        "c2",
        [
            ("c1-1", "c1", 0, {CPU: ("default", 4000)}),
            ("c1-2", "c1", 1, {CPU: ("default", 4000)}),
            ("c2", "c2", 0, {CPU: ("default", 2000)}),
        ],
        0,
        {CPU: ("default", 4000, P)},
        {"c1-1"},
    ),
    (
        "preempt from all ClusterQueues in cohort",
        "c1",
        [
            ("c1-low", "c1", -1, {CPU: ("default", 3000)}),
            ("c1-mid", "c1", 0, {CPU: ("default", 2000)}),
            ("c2-low", "c2", -1, {CPU: ("default", 3000)}),
            ("c2-mid", "c2", 0, {CPU: ("default", 4000)}),
        ],
        0,
        {CPU: ("default", 4000, P)},
        {"c1-low", "c2-low"},
    ),
    (
        "can't preempt workloads in ClusterQueue for withinClusterQueue=Never",
        "c2",
        [("c2-low", "c2", -1, {CPU: ("default", 3000)})],
        1,
        {CPU: ("default", 4000, P)},
        set(),
    ),
    (
        "each podset preempts a different flavor",
        "standalone",
        [
            ("low-alpha", "standalone", -1, {MEM: ("alpha", 2 * GI)}),
            ("low-beta", "standalone", -1, {MEM: ("beta", 2 * GI)}),
        ],
        0,
        [("launcher", 1, {MEM: ("alpha", 2 * GI, P)}), ("workers", 2, {MEM: ("beta", GI, P)})],
        {"low-alpha", "low-beta"},
    ),
    (
        "preempt newer workloads with the same priority",
        "preventStarvation",
        [
            ("wl1", "preventStarvation", 2, {CPU: ("default", 2000)}, 0, 15_000),
            ("wl2", "preventStarvation", 1, {CPU: ("default", 2000)}, 1_000, 15_000),
            ("wl3", "preventStarvation", 1, {CPU: ("default", 2000)}, 0, 15_000),
        ],
        1,
        [("launcher", 1, {CPU: ("default", 2000, P)})],
        {"wl2"},
        0,  # created 15 s before the others: an older equal-priority preemptor
    ),
    (
        "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while "
        "borrowing",
        "a_standard",
        [
            ("a_best_effort_low", "a_best_effort", -1, {CPU: ("default", 10_000)}),
            ("b_best_effort_low", "b_best_effort", -1, {CPU: ("default", 1000)}),
        ],
        0,
        {CPU: ("default", 10_000, P)},
        {"a_best_effort_low"},
    ),
    (
        "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
        "MaxPriorityThreshold, if borrowing is required even after the preemption",
        "a_standard",
        [("b_standard", "b_standard", 1, {CPU: ("default", 10_000)})],
        2,
        {CPU: ("default", 10_000, P)},
        set(),
    ),
    (
        "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above "
        "MaxPriorityThreshold, if borrowing is not required after the preemption",
        "a_standard",
        [("b_standard", "b_standard", 1, {CPU: ("default", 13_000)})],
        2,
        {CPU: ("default", 1000, P)},
        {"b_standard"},
    ),
    (
        "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same "
        "ClusterQueue",
        "a_standard",
        [("a_standard", "a_standard", 1, {CPU: ("default", 13_000)})],
        2,
        {CPU: ("default", 1000, P)},
        set(),
    ),
    (
        "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal",
        "b_standard",
        [
            ("a_standard_1", "a_standard", 1, {CPU: ("default", 10_000)}),
            ("a_standard_2", "a_standard", 1, {CPU: ("default", 1000)}),
            ("b_standard_1", "b_standard", 1, {CPU: ("default", 1000)}),
            ("b_standard_2", "b_standard", 2, {CPU: ("default", 1000)}),
        ],
        3,
        {CPU: ("default", 1000, P)},
        {"b_standard_1"},
    ),
    (
        "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold",
        "b_standard",
        [
            ("b_standard_high", "b_standard", 2, {CPU: ("default", 10_000)}),
            ("b_standard_mid", "b_standard", 1, {CPU: ("default", 1000)}),
            ("a_best_effort_low", "a_best_effort", -1, {CPU: ("default", 1000)}),
            ("a_best_effort_lower", "a_best_effort", -2, {CPU: ("default", 1000)}),
        ],
        2,
        {CPU: ("default", 2000, P)},
        {"b_standard_mid", "a_best_effort_lower"},
    ),
    (
        "reclaim quota from lender",
        "lend1",
        [
            ("lend1-low", "lend1", -1, {CPU: ("default", 3000)}),
            ("lend2-mid", "lend2", 0, {CPU: ("default", 3000)}),
            ("lend2-high", "lend2", 1, {CPU: ("default", 4000)}),
        ],
        1,
        {CPU: ("default", 3000, P)},
        {"lend2-mid"},
    ),
    (
        "preempt from all ClusterQueues in cohort-lend",
        "lend1",
        [
            ("lend1-low", "lend1", -1, {CPU: ("default", 3000)}),
            ("lend1-mid", "lend1", 0, {CPU: ("default", 2000)}),
            ("lend2-low", "lend2", -1, {CPU: ("default", 3000)}),
            ("lend2-mid", "lend2", 0, {CPU: ("default", 4000)}),
        ],
        0,
        {CPU: ("default", 4000, P)},
        {"lend1-low", "lend2-low"},
    ),
    (
        "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit",
        "lend1",
        [("lend2-low", "lend2", -1, {CPU: ("default", 10_000)})],
        0,
        {CPU: ("default", 9000, P)},
        set(),
    ),
    (
        "preemptions from cq when target queue is exhausted for the single requested resource",
        "a",
        A3_B3,
        0,
        {CPU: ("default", 2000, P)},
        {"a1", "a2"},
    ),
    (
        "preemptions from cq when target queue is exhausted for two requested resources",
        "a",
        [
            ("a1", "a", -2, {CPU: ("default", 1000), MEM: ("default", 1)}),
            ("a2", "a", -2, {CPU: ("default", 1000), MEM: ("default", 1)}),
            ("a3", "a", -1, {CPU: ("default", 1000), MEM: ("default", 1)}),
            ("b1", "b", 0, {CPU: ("default", 1000), MEM: ("default", 1)}),
            ("b2", "b", 0, {CPU: ("default", 1000), MEM: ("default", 1)}),
            ("b3", "b", 0, {CPU: ("default", 1000), MEM: ("default", 1)}),
        ],
        0,
        {CPU: ("default", 2000, P), MEM: ("default", 2, P)},
        {"a1", "a2"},
    ),
    (
        "preemptions from cq when target queue is exhausted for one requested resource, but not the other",
        "a",
        A3_B3,
        0,
        {CPU: ("default", 2000, P), MEM: ("default", 2, P)},
        {"a1", "a2"},
    ),
    (
        "allow preemption from other cluster queues if target cq is not exhausted for the requested resource",
        "a",
        [
            ("a1", "a", -1, {CPU: ("default", 1000)}),
            ("b1", "b", 0, {CPU: ("default", 1000)}),
            ("b2", "b", 0, {CPU: ("default", 1000)}),
            ("b3", "b", 0, {CPU: ("default", 1000)}),
            ("b4", "b", 0, {CPU: ("default", 1000)}),
            ("b5", "b", -1, {CPU: ("default", 1000)}),
        ],
        0,
        {CPU: ("default", 2000, P)},
        {"a1", "b5"},
    ),
    (
        "long range preemption",
        "cq-left",
        [("to-be-preempted", "cq-right", 0, {CPU: ("default", 5000)})],
        0,
        {CPU: ("default", 8000, P)},
        {"to-be-preempted"},
    ),
]


@pytest.mark.parametrize(
    ("target", "admitted", "priority", "podsets", "expected", "created_ms"),
    [pytest.param(*case[1:6], case[6] if len(case) > 6 else 10, id=str(case[0])) for case in CASES],
)
def test_upstream_preemption_table(
    target: str,
    admitted: list[Admitted],
    priority: int,
    podsets: dict[str, tuple[str, int, AssignmentMode]] | list[PodSet],
    expected: set[str],
    created_ms: int,
) -> None:
    """One ``TestPreemption`` case (name in the test id): the victims are upstream's ``wantPreempted``."""
    assert _targets(target, admitted, priority, podsets, created_ms) == expected, UPSTREAM
