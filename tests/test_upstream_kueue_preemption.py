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


def _cq(name: str, cohort: str | None, groups: list[Any], **preemption: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceGroups": groups, "preemption": preemption}
    if cohort:
        spec["cohortName"] = cohort
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


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
    "shared": _cq("shared", "with_shared_cq", [_group([CPU], ("default", [_res(CPU, "10")]))]),
}

#: The cohort each ClusterQueue's case needs built around it.
_COHORT_MEMBERS = {
    "cohort": ["c1", "c2"],
    "cohort-no-limits": ["d1", "d2"],
    "legion": ["l1"],
    "with_shared_cq": ["a_standard", "b_standard", "shared"],
}


def _manager(target: str) -> AdmissionManager:
    cohort = CLUSTER_QUEUES[target]["spec"].get("cohortName")
    names = _COHORT_MEMBERS[cohort] if cohort else [target]
    flavors = [{"kind": "ResourceFlavor", "metadata": {"name": f}} for f in ("default", "alpha", "beta")]
    lqs = [{"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in names]
    config = queue_config_from_objects([*flavors, *(CLUSTER_QUEUES[n] for n in names), *lqs])
    return AdmissionManager(config, preemption=ClassicPreemption())


#: An admitted workload: (name, ClusterQueue, priority, {resource: (flavor, amount)}).
Admitted = tuple[str, str, int, dict[str, tuple[str, int]]]


def _reserve(m: AdmissionManager, admitted: list[Admitted]) -> None:
    """Reserve each workload's quota in its ClusterQueue, as upstream's ``ReserveQuotaAt`` does."""
    for i, (name, cq, priority, usage) in enumerate(admitted):
        requests = {r: v for r, (_, v) in usage.items()}
        wl = Workload(name, "default", cq, priority, 0, (PodSetRequest("main", 1, requests),))
        m.reserve(wl, cq, {"main": {r: f for r, (f, _) in usage.items()}}, i)


def _targets(
    target: str,
    admitted: list[Admitted],
    priority: int,
    assignment: dict[str, tuple[str, int, AssignmentMode]],
) -> set[str]:
    m = _manager(target)
    _reserve(m, admitted)
    requests = {r: v for r, (_, v, _) in assignment.items()}
    wl = Workload("in", "default", target, priority, 10, (PodSetRequest("main", 1, requests),))
    psa = PodSetAssignment("main", 1, requests)
    psa.flavors = {r: ResourceAssignment(f, mode, 0) for r, (f, _, mode) in assignment.items()}
    psa.reasons = (
        ["needs preemption"] if any(mode != AssignmentMode.FIT for *_, mode in assignment.values()) else []
    )
    usage = {FlavorResource(f, r): v for r, (f, v, _) in assignment.items()}
    nominee = Nominee(wl, target, 10, Assignment([psa], usage, 0))
    return set(ClassicPreemption().targets(m, nominee))


P, F = AssignmentMode.PREEMPT, AssignmentMode.FIT
STANDALONE_3 = [
    ("low", "standalone", -1, {CPU: ("default", 2000)}),
    ("mid", "standalone", 0, {CPU: ("default", 2000)}),
    ("high", "standalone", 1, {CPU: ("default", 2000)}),
]

CASES: list[tuple[str, str, list[Admitted], int, dict[str, tuple[str, int, AssignmentMode]], set[str]]] = [
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
]


@pytest.mark.parametrize(
    ("target", "admitted", "priority", "assignment", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_upstream_preemption_table(
    target: str,
    admitted: list[Admitted],
    priority: int,
    assignment: dict[str, tuple[str, int, AssignmentMode]],
    expected: set[str],
) -> None:
    """One ``TestPreemption`` case (name in the test id): the victims are upstream's ``wantPreempted``."""
    assert _targets(target, admitted, priority, assignment) == expected, UPSTREAM
