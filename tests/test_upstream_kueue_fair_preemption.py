"""Upstream Kueue's fair-sharing preemption table, ported case by case.

Source: kubernetes-sigs/kueue ``pkg/scheduler/preemption/preemption_fair_test.go``, ``TestFairPreemptions``,
at commit 054bf63476ae9203a912522cf9daea8960811ad1 (v1beta2, ``FairSharingPreemptWithinNominal`` on by
default). Each case keeps upstream's name; cohort names are lower-cased (Kueue's API refuses ``ROOT``).
Every admitted workload is reserved at the same instant and ordered by name (upstream sets UID = name);
the incoming workload's assignment is upstream's: its cpu on the case's flavor, mode Preempt. cpu in
milli-cores.
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
from fleetlab.admission.preemption import FairSharingPreemption
from fleetlab.admission.tree import FlavorResource
from fleetlab.model.kueue_config import FairSharingConfig
from fleetlab.model.queues import queue_config_from_objects

UPSTREAM = (
    "kubernetes-sigs/kueue pkg/scheduler/preemption/preemption_fair_test.go TestFairPreemptions @054bf634"
)
CPU = "cpu"
LOWER, ANY = "LowerPriority", "Any"
BWC = {"policy": "LowerPriority", "maxPriorityThreshold": -3}


def cq(
    name: str,
    cohort: str | None,
    quotas: dict[str, str] | None = None,
    weight: str | None = None,
    fungibility: dict[str, str] | None = None,
    **preemption: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"preemption": preemption}
    if quotas:
        spec["resourceGroups"] = [
            {
                "coveredResources": [CPU],
                "flavors": [
                    {"name": f, "resources": [{"name": CPU, "nominalQuota": q}]} for f, q in quotas.items()
                ],
            }
        ]
    if cohort:
        spec["cohortName"] = cohort.lower()
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    if fungibility:
        spec["flavorFungibility"] = fungibility
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def cohort(
    name: str, parent: str | None = None, cpu: str | None = None, weight: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent.lower()
    if cpu:
        spec["resourceGroups"] = [
            {
                "coveredResources": [CPU],
                "flavors": [{"name": "default", "resources": [{"name": CPU, "nominalQuota": cpu}]}],
            }
        ]
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"kind": "Cohort", "metadata": {"name": name.lower()}, "spec": spec}


BASE = [
    *(
        cq(
            n,
            "all",
            {"default": "3"},
            withinClusterQueue=LOWER,
            reclaimWithinCohort=ANY,
            borrowWithinCohort=BWC,
        )
        for n in "abc"
    ),
    cq("preemptible", "all", {"default": "0"}),
]
ABC_PLAIN = [cq(n, "all", {"default": "3"}, withinClusterQueue=LOWER, reclaimWithinCohort=ANY) for n in "abc"]


def units(cq_name: str, *names: str, priority: int = 0) -> list[tuple[str, str, int, int]]:
    """Workloads of 1 cpu each (upstream's ``unitWl``)."""
    return [(n, cq_name, priority, 1000) for n in names]


#: (name, ClusterQueue, priority, cpu milli[, flavor])
Admitted = tuple[Any, ...]


def victims(
    objects: list[dict[str, Any]],
    admitted: list[Admitted],
    target: str,
    incoming_cpu: int,
    strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
    flavor: str = "default",
    incoming_priority: int = 0,
) -> set[str]:
    flavors = sorted(
        {
            f
            for o in objects
            for g in o["spec"].get("resourceGroups", [])
            for f in [x["name"] for x in g["flavors"]]
        }
    )
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    lqs = [{"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in names]
    rfs = [{"kind": "ResourceFlavor", "metadata": {"name": f}} for f in flavors or ["default"]]
    config = queue_config_from_objects([*rfs, *objects, *lqs])
    fs = FairSharingConfig.model_validate({"preemptionStrategies": list(strategies)})
    strategy = FairSharingPreemption(fs.preemption_strategies)
    m = AdmissionManager(config, preemption=strategy, fair_sharing=fs)
    for name, cq_name, prio, milli, *rest in admitted:
        f = rest[0] if rest else "default"
        wl = Workload(name, "default", cq_name, prio, 0, (PodSetRequest("main", 1, {CPU: milli}),))
        m.reserve(wl, cq_name, {"main": {CPU: f}}, 0)
    wl = Workload(
        "incoming", "default", target, incoming_priority, 10, (PodSetRequest("main", 1, {CPU: incoming_cpu}),)
    )
    psa = PodSetAssignment("main", 1, {CPU: incoming_cpu})
    psa.flavors = {CPU: ResourceAssignment(flavor, AssignmentMode.PREEMPT, 0)}
    psa.reasons = ["needs preemption"]
    nominee = Nominee(wl, target, 10, Assignment([psa], {FlavorResource(flavor, CPU): incoming_cpu}, 0))
    before = {n: dict(node.usage) for n, node in m.tree.cluster_queues.items()}
    found = set(strategy.targets(m, nominee))
    assert {n: dict(node.usage) for n, node in m.tree.cluster_queues.items()} == before
    return found


HIERARCHY = [
    cq("a", "LEFT", {"default": "1"}, weight="2", reclaimWithinCohort=ANY),
    cq("b", "LEFT", {"default": "1"}),
    cq("c", "ROOT", {"default": "1"}),
    cq("d", "RIGHT", {"default": "1"}),
    cq("e", "RIGHT", {"default": "1"}, weight="0.99"),
    cohort("ROOT", cpu="5"),
    cohort("LEFT", "ROOT", cpu="5", weight="2"),
    cohort("RIGHT", "ROOT", cpu="5"),
]
DEEP = [
    cq("a", "AAA", {"default": "0"}, reclaimWithinCohort=ANY),
    cq("b", "BBB", {"default": "0"}),
    cohort("ROOT"),
    cohort("A", "ROOT", weight="1.01"),
    cohort("AA", "A"),
    cohort("AAA", "AA"),
    cohort("B", "ROOT", weight="0.99"),
    cohort("BB", "B"),
    cohort("BBB", "BB"),
    cohort("C", "ROOT"),
    cohort("CC", "C"),
    cohort("CCC", "CC"),
    cohort("CCCC", "CCC", cpu="1"),
]

CASES: list[tuple[Any, ...]] = [
    (
        "reclaim nominal from user using the most",
        BASE,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"),
        "c",
        1000,
        {"b1"},
    ),
    (
        "can reclaim from queue using less, if taking the latest workload from user using the most isn't enough",
        BASE,
        [("a1", "a", 0, 3000), ("a2", "a", 0, 1000), ("b1", "b", 0, 2000), ("b2", "b", 0, 3000)],
        "c",
        3000,
        {"a1"},
    ),
    (
        "reclaim borrowable quota from user using the most",
        BASE,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"),
        "a",
        1000,
        {"b1"},
    ),
    (
        "preempt one from each CQ borrowing",
        BASE,
        [
            ("a1", "a", 0, 500),
            ("a2", "a", 0, 500),
            ("a3", "a", 0, 3000),
            ("b1", "b", 0, 500),
            ("b2", "b", 0, 500),
            ("b3", "b", 0, 3000),
        ],
        "c",
        2000,
        {"a1", "b1"},
    ),
    (
        "can't preempt when everyone under nominal",
        BASE,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3") + units("c", "c1", "c2", "c3"),
        "c",
        1000,
        set(),
    ),
    (
        "can't preempt when it would switch the imbalance",
        BASE,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5"),
        "a",
        2000,
        set(),
    ),
    (
        "can preempt lower priority workloads from same CQ",
        BASE,
        units("a", "a1_low", "a2_low", priority=-1)
        + units("a", "a3", "a4")
        + units("b", "b1", "b2", "b3", "b4", "b5"),
        "a",
        2000,
        {"a1_low", "a2_low"},
    ),
    (
        "can preempt a combination of same CQ and highest user",
        BASE,
        units("a", "a_low", priority=-1)
        + units("a", "a2", "a3")
        + units("b", "b1", "b2", "b3", "b4", "b5", "b6"),
        "a",
        2000,
        {"a_low", "b1"},
    ),
    (
        "preempt huge workload if there is no other option, as long as the target CQ gets a lower share",
        BASE,
        [("b1", "b", 0, 9000)],
        "a",
        2000,
        {"b1"},
    ),
    (
        "can't preempt huge workload if the incoming is also huge",
        BASE,
        [("a1", "a", 0, 2000), ("b1", "b", 0, 7000)],
        "a",
        5000,
        set(),
    ),
    (
        "can't preempt 2 smaller workloads if the incoming is huge",
        BASE,
        [("b1", "b", 0, 2000), ("b2", "b", 0, 2000), ("b3", "b", 0, 3000)],
        "a",
        6000,
        set(),
    ),
    (
        "preempt from target and others even if over nominal",
        BASE,
        [("a1_low", "a", -1, 2000), ("a2_low", "a", -1, 1000), ("b1", "b", 0, 3000), ("b2", "b", 0, 3000)],
        "a",
        4000,
        {"a1_low", "b1"},
    ),
    (
        "prefer to preempt workloads that don't make the target CQ have the biggest share",
        BASE,
        [("b1", "b", 0, 2000), ("b2", "b", 0, 1000), ("b3", "b", 0, 2000), ("c1", "c", 0, 1000)],
        "a",
        3500,
        {"b2"},
    ),
    (
        "preempt from different cluster queues if the end result has a smaller max share",
        BASE,
        [("b1", "b", 0, 2000), ("b2", "b", 0, 2500), ("c1", "c", 0, 2000), ("c2", "c", 0, 2500)],
        "a",
        3500,
        {"b1", "c1"},
    ),
    (
        "scenario above does not flap",
        BASE,
        [("a1", "a", 0, 3500), ("b2", "b", 0, 2500), ("c2", "c", 0, 2500)],
        "b",
        2000,
        set(),
    ),
    (
        "cannot preempt if it would make the candidate CQ go under nominal after preempting one element",
        BASE,
        [("b1", "b", 0, 3000), ("b2", "b", 0, 3000), ("c1", "c", 0, 3000)],
        "a",
        4000,
        set(),
    ),
    (
        "workloads under priority threshold not capriciously preempted",
        BASE,
        units("a", "a1", "a2", "a3")
        + units("b", "b1", "b2", "b3")
        + units("preemptible", "preemptible1", "preemptible2", "preemptible3", priority=-3),
        "a",
        2000,
        set(),
    ),
    (
        "preempt lower priority first, even if big",
        BASE,
        [("a1", "a", 0, 3000), ("b_low", "b", 0, 5000), ("b_high", "b", 1, 1000)],
        "a",
        1000,
        {"b_low"},
        ("LessThanInitialShare",),
    ),
    (
        "preempt workload that doesn't transfer the imbalance, even if high priority",
        BASE,
        [("a1", "a", 0, 3000), ("b_low", "b", 0, 5000), ("b_high", "b", 1, 1000)],
        "a",
        1000,
        {"b_high"},
        ("LessThanOrEqualToFinalShare",),
    ),
    (
        "CQ with higher weight can preempt more",
        [
            cq("a", "all", {"default": "3"}, weight="2", withinClusterQueue=LOWER, reclaimWithinCohort=ANY),
            *ABC_PLAIN[1:],
        ],
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"),
        "a",
        2000,
        {"b1", "b2"},
    ),
    (
        "can preempt anything borrowing from CQ with 0 weight",
        [
            ABC_PLAIN[0],
            cq("b", "all", {"default": "3"}, weight="0", withinClusterQueue=LOWER, reclaimWithinCohort=ANY),
            ABC_PLAIN[2],
        ],
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"),
        "a",
        3000,
        {"b1", "b2", "b3"},
    ),
    (
        "can't preempt nominal from CQ with 0 weight",
        [
            ABC_PLAIN[0],
            cq("b", "all", {"default": "3"}, weight="0", withinClusterQueue=LOWER, reclaimWithinCohort=ANY),
        ],
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3"),
        "a",
        1000,
        set(),
    ),
    (
        "can't preempt nominal from Cohort with 0 weight",
        [
            cq("left-cq", "ROOT", {"default": "0"}, reclaimWithinCohort=ANY),
            cq("right-cq", "right-cohort", {"default": "0"}, weight="0", reclaimWithinCohort=ANY),
            cohort("right-cohort", "ROOT", cpu="1", weight="0"),
        ],
        units("right-cq", "right-1"),
        "left-cq",
        1000,
        set(),
    ),
    (
        "can preempt within cluster queue when no cohort",
        [cq("a", None, {"default": "1"}, withinClusterQueue=LOWER)],
        units("a", "a1"),
        "a",
        1000,
        {"a1"},
        ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
        "default",
        1000,
    ),
    (
        "hierarchical preemption",
        HIERARCHY,
        [(f"{q}{i}", q, i, 1000) for q in "bcde" for i in range(1, 6)],
        "a",
        5000,
        {"b1", "b2", "c1", "c2", "e1"},
    ),
    (
        "borrowing cq in non-borrowing cohort is protected",
        [
            cq("a", "ROOT", {"default": "5"}, weight="10", reclaimWithinCohort=ANY, withinClusterQueue=LOWER),
            cq("b", "RIGHT", None, weight="0.1"),
            cohort("ROOT"),
            cohort("RIGHT", "ROOT", cpu="1", weight="0.1"),
        ],
        units("a", "a1", "a2", "a3", priority=-1) + units("b", "b1", priority=-1),
        "a",
        5000,
        {"a1", "a2", "a3"},
    ),
    (
        "forced to preempt within clusterqueue because borrowing workload too important",
        [
            cq(
                "a",
                "ROOT",
                {"default": "5"},
                weight="10",
                reclaimWithinCohort=LOWER,
                withinClusterQueue=LOWER,
            ),
            cq("b", "RIGHT", None, weight="0.1"),
            cohort("ROOT"),
            cohort("RIGHT", "ROOT", cpu="3", weight="0.1"),
        ],
        [*units("a", "a1", "a2", "a3", priority=-1), ("b1", "b", 100, 4000)],
        "a",
        4000,
        {"a1", "a2", "a3"},
    ),
    ("deep preemption", DEEP, units("b", "b1"), "a", 1000, {"b1"}),
    (
        "cq with zero weight can reclaim nominal quota",
        [
            cq("a", "ROOT", {"default": "1"}, weight="0.0", reclaimWithinCohort=ANY),
            cq("b", "ROOT", {"default": "0"}, weight="1.0"),
        ],
        units("b", "b1"),
        "a",
        1000,
        {"b1"},
    ),
    (
        "cohort with zero weight can reclaim nominal quota",
        [
            cq("a", "A", {"default": "0"}, weight="0.0", reclaimWithinCohort=ANY),
            cq("b", "ROOT", {"default": "0"}, weight="1.0"),
            cohort("A", "ROOT", cpu="1", weight="0.0"),
        ],
        units("b", "b1"),
        "a",
        1000,
        {"b1"},
    ),
    (
        "nominal first: workload fitting within nominal can preempt despite high aggregate DRS",
        [
            cq(
                "a",
                "all",
                {"premium": "3", "cheap": "0"},
                fungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
                reclaimWithinCohort=ANY,
            ),
            cq("b", "all", {"premium": "0", "cheap": "6"}),
        ],
        [
            ("a_prem1", "a", 0, 1000, "premium"),
            ("a_prem2", "a", 0, 1000, "premium"),
            *[(f"a_cheap{i}", "a", 0, 1000, "cheap") for i in range(1, 6)],
            ("b_prem1", "b", 0, 1000, "premium"),
        ],
        "a",
        1000,
        {"b_prem1"},
        ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
        "premium",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c[0]) for c in CASES])
def test_upstream_fair_preemption_table(case: tuple[Any, ...]) -> None:
    """One ``TestFairPreemptions`` case (name in the test id): the victims are upstream's ``wantPreempted``."""
    _, objects, admitted, target, cpu, expected, *rest = case
    strategies = rest[0] if rest else ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    flavor = rest[1] if len(rest) > 1 else "default"
    priority = rest[2] if len(rest) > 2 else 0
    assert victims(objects, admitted, target, cpu, strategies, flavor, priority) == expected, UPSTREAM
