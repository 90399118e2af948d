"""Upstream Kueue's flavor-assignment table, ported case by case.

Source: kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner_test.go``, ``TestAssignFlavors``,
at commit 003722419b984db84107b513905656c4be81631c. Each case keeps upstream's name and checks what the
assignment decides: the representative mode, each podset's flavor and mode per resource, the borrowing
level and the status reasons. Upstream's preemption oracle is stubbed the same way (``simulationResult``
per flavor/resource, default Preempt at borrowing level 0). Flavor names with ``_`` use ``-`` (Kueue's API
refuses ``_``). Units: cpu in milli-cores, memory in bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from fleetlab.admission.flavors import (
    AssignmentMode,
    PodSetRequest,
    PreemptionMode,
    PreemptionOutcome,
    assign_flavors,
)
from fleetlab.admission.manager import AdmissionManager
from fleetlab.admission.tree import FlavorResource
from fleetlab.model.kube import NodeSelectorTerm, Toleration
from fleetlab.model.kueue_config import FairSharingConfig
from fleetlab.model.queues import queue_config_from_objects

UPSTREAM = (
    "kubernetes-sigs/kueue pkg/scheduler/flavorassigner/flavorassigner_test.go TestAssignFlavors @00372241"
)
CPU, MEM, GPU = "cpu", "memory", "example.com/gpu"
MI, GI = 1 << 20, 1 << 30
FIT, PREEMPT, NO_FIT = AssignmentMode.FIT, AssignmentMode.PREEMPT, AssignmentMode.NO_FIT

_SPOT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
FLAVORS = [
    {"kind": "ResourceFlavor", "metadata": {"name": "default"}},
    {"kind": "ResourceFlavor", "metadata": {"name": "one"}, "spec": {"nodeLabels": {"type": "one"}}},
    {"kind": "ResourceFlavor", "metadata": {"name": "two"}, "spec": {"nodeLabels": {"type": "two"}}},
    {"kind": "ResourceFlavor", "metadata": {"name": "b-one"}, "spec": {"nodeLabels": {"b_type": "one"}}},
    {"kind": "ResourceFlavor", "metadata": {"name": "b-two"}, "spec": {"nodeLabels": {"b_type": "two"}}},
    {"kind": "ResourceFlavor", "metadata": {"name": "tainted"}, "spec": {"nodeTaints": [_SPOT]}},
    {
        "kind": "ResourceFlavor",
        "metadata": {"name": "taint-and-toleration"},
        "spec": {"nodeTaints": [_SPOT], "tolerations": [{**_SPOT, "operator": "Equal"}]},
    },
    {"kind": "ResourceFlavor", "metadata": {"name": "label-x-a"}, "spec": {"nodeLabels": {"x": "a"}}},
    {
        "kind": "ResourceFlavor",
        "metadata": {"name": "label-xy-b"},
        "spec": {"nodeLabels": {"x": "b", "y": "k"}},
    },
]


def fq(flavor: str, **quotas: Any) -> dict[str, Any]:
    """One flavor's quotas: ``cpu="2"`` or ``cpu=("2", borrowingLimit, lendingLimit)``."""
    resources = []
    for key, value in quotas.items():
        name = {"cpu": CPU, "memory": MEM, "gpu": GPU}[key]
        nominal, bl, ll = (value, None, None) if isinstance(value, str) else (*value, None)[:3]
        entry: dict[str, Any] = {"name": name, "nominalQuota": nominal}
        if bl is not None:
            entry["borrowingLimit"] = bl
        if ll is not None:
            entry["lendingLimit"] = ll
        resources.append(entry)
    return {"name": flavor, "resources": resources}


def group(*flavors: dict[str, Any]) -> dict[str, Any]:
    covered = list(dict.fromkeys(r["name"] for f in flavors for r in f["resources"]))
    return {"coveredResources": covered, "flavors": list(flavors)}


def cq(name: str, *groups: dict[str, Any], cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resourceGroups": list(groups), **spec}
    if cohort:
        body["cohortName"] = cohort
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def ps(
    name: str,
    count: int,
    tolerations: tuple[dict[str, Any], ...] = (),
    selector: Mapping[str, str] | None = None,
    terms: list[list[dict[str, Any]]] | None = None,
    **requests: int,
) -> PodSetRequest:
    names = {"cpu": CPU, "memory": MEM, "gpu": GPU}
    return PodSetRequest(
        name,
        count,
        {names[k]: v for k, v in requests.items()},
        tuple(Toleration.model_validate(t) for t in tolerations),
        tuple(sorted((selector or {}).items())),
        tuple(NodeSelectorTerm.model_validate({"matchExpressions": t}) for t in terms) if terms else None,
    )


def assign(
    main: dict[str, Any],
    podsets: list[PodSetRequest],
    usage: dict[tuple[str, str], int] | None = None,
    secondary: dict[str, Any] | None = None,
    secondary_usage: dict[tuple[str, str], int] | None = None,
    simulation: dict[tuple[str, str], tuple[PreemptionMode, int]] | None = None,
    fair_sharing: bool = False,
) -> Any:
    queues = [main] if secondary is None else [main, secondary]
    fs = FairSharingConfig() if fair_sharing else None
    m = AdmissionManager(queue_config_from_objects([*FLAVORS, *queues]), fair_sharing=fs)
    for queue, amounts in ((main, usage), (secondary, secondary_usage)):
        if queue is not None and amounts:
            m.tree.add_cq_usage(
                queue["metadata"]["name"], {FlavorResource(f, r): v for (f, r), v in amounts.items()}
            )
    results = simulation or {}

    def oracle(_cq: str, amounts: Mapping[FlavorResource, int]) -> PreemptionOutcome:
        [fr] = amounts
        mode, borrow = results.get((fr.flavor, fr.resource), (PreemptionMode.PREEMPT, 0))
        return PreemptionOutcome(mode, borrow)

    return assign_flavors(m.tree, m.rules[main["metadata"]["name"]], podsets, oracle)


def check(
    result: Any,
    mode: AssignmentMode,
    flavors: dict[str, dict[str, tuple[str, AssignmentMode]]],
    reasons: dict[str, list[str]] | None = None,
    borrowing: int = 0,
) -> None:
    assert result.mode == mode, UPSTREAM
    got = {p.name: {r: (a.flavor, a.mode) for r, a in p.flavors.items()} for p in result.podsets if p.flavors}
    assert got == {k: v for k, v in flavors.items() if v}, UPSTREAM
    for name, want in (reasons or {}).items():
        [podset] = [p for p in result.podsets if p.name == name]
        assert sorted(podset.reasons) == sorted(want), UPSTREAM
    if mode != NO_FIT:
        assert result.borrowing == borrowing, UPSTREAM


MAIN = "main"


def test_single_flavor_fits() -> None:
    r = assign(cq("q", group(fq("default", cpu="1", memory="2Mi"))), [ps(MAIN, 1, cpu=1000, memory=MI)])
    check(r, FIT, {MAIN: {CPU: ("default", FIT), MEM: ("default", FIT)}})
    assert r.usage == {FlavorResource("default", CPU): 1000, FlavorResource("default", MEM): MI}


def test_single_flavor_fits_tainted_flavor() -> None:
    tol = ({"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},)
    r = assign(cq("q", group(fq("tainted", cpu="4"))), [ps(MAIN, 1, tol, cpu=1000)])
    check(r, FIT, {MAIN: {CPU: ("tainted", FIT)}})


def test_single_flavor_fits_tainted_flavor_with_toleration() -> None:
    r = assign(cq("q", group(fq("taint-and-toleration", cpu="4"))), [ps(MAIN, 1, cpu=1000)])
    check(r, FIT, {MAIN: {CPU: ("taint-and-toleration", FIT)}})


def test_single_flavor_used_resources_doesnt_fit() -> None:
    r = assign(
        cq("q", group(fq("default", cpu="4"))), [ps(MAIN, 1, cpu=2000)], usage={("default", CPU): 3000}
    )
    check(
        r,
        PREEMPT,
        {MAIN: {CPU: ("default", PREEMPT)}},
        {MAIN: ["insufficient unused quota for cpu in flavor default, 1 more needed"]},
    )


def test_multiple_resource_groups_fits() -> None:
    main = cq(
        "q",
        group(fq("one", cpu="2"), fq("two", cpu="4")),
        group(fq("b-one", memory="1Gi"), fq("b-two", memory="5Gi")),
    )
    r = assign(main, [ps(MAIN, 1, cpu=3000, memory=10 * MI)])
    check(r, FIT, {MAIN: {CPU: ("two", FIT), MEM: ("b-one", FIT)}})


def test_multiple_resource_groups_with_multiple_resources_fits() -> None:
    main = cq(
        "q",
        group(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="15Mi")),
        group(fq("b-one", gpu="4"), fq("b-two", gpu="2")),
    )
    r = assign(main, [ps(MAIN, 1, cpu=3000, memory=10 * MI, gpu=3)])
    check(r, FIT, {MAIN: {CPU: ("two", FIT), MEM: ("two", FIT), GPU: ("b-one", FIT)}})


def test_multiple_resource_groups_with_multiple_resources_fits_with_different_modes() -> None:
    """The oracle answers Preempt at borrowing level 1 for two/memory: the assignment borrows (level 1)."""
    main = cq(
        "q",
        group(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="15Mi")),
        group(fq("b-one", gpu="4")),
        cohort="test-cohort",
    )
    secondary = cq("q2", group(fq("b-one", gpu="0")), cohort="test-cohort")
    r = assign(
        main,
        [ps(MAIN, 1, cpu=3000, memory=10 * MI, gpu=3)],
        usage={("two", MEM): 10 * MI},
        secondary=secondary,
        secondary_usage={("b-one", GPU): 2},
        simulation={("two", MEM): (PreemptionMode.PREEMPT, 1)},
    )
    check(
        r,
        PREEMPT,
        {MAIN: {CPU: ("two", FIT), MEM: ("two", PREEMPT), GPU: ("b-one", PREEMPT)}},
        {
            MAIN: [
                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current "
                "podset request (3) > maximum capacity (2)",
                "insufficient unused quota for memory in flavor two, 5Mi more needed",
                "insufficient unused quota for example.com/gpu in flavor b-one, 1 more needed",
            ]
        },
        borrowing=1,
    )


def test_multiple_resources_in_a_group_doesnt_fit() -> None:
    main = cq("q", group(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="5Mi")))
    r = assign(main, [ps(MAIN, 1, cpu=3000, memory=10 * MI)])
    check(
        r,
        NO_FIT,
        {MAIN: {}},
        {
            MAIN: [
                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current "
                "podset request (3) > maximum capacity (2)",
                "insufficient quota for memory in flavor two, previously considered podsets requests (0) + "
                "current podset request (10Mi) > maximum capacity (5Mi)",
            ]
        },
    )
    assert r.no_fit_reason == "ExceedsMaxQuota"


def test_multiple_flavors_fits_while_skipping_tainted_flavor() -> None:
    r = assign(cq("q", group(fq("tainted", cpu="4"), fq("two", cpu="4"))), [ps(MAIN, 1, cpu=3000)])
    check(r, FIT, {MAIN: {CPU: ("two", FIT)}})


def test_multiple_flavors_fits_a_node_selector() -> None:
    """Selector keys and expressions no flavor labels (``ignored1``, ``ignored2``) are dropped."""
    terms = [[{"key": "ignored2", "operator": "In", "values": ["bar"]}]]
    r = assign(
        cq("q", group(fq("one", cpu="4"), fq("two", cpu="4"))),
        [ps(MAIN, 1, selector={"type": "two", "ignored1": "foo"}, terms=terms, cpu=1000)],
    )
    check(r, FIT, {MAIN: {CPU: ("two", FIT)}})


def test_multiple_flavors_fits_with_node_affinity() -> None:
    terms = [[{"key": "type", "operator": "In", "values": ["two"]}]]
    r = assign(
        cq("q", group(fq("one", cpu="4", memory="1Gi"), fq("two", cpu="4", memory="1Gi"))),
        [ps(MAIN, 1, selector={"ignored1": "foo"}, terms=terms, cpu=1000, memory=MI)],
    )
    check(r, FIT, {MAIN: {CPU: ("two", FIT), MEM: ("two", FIT)}})


def test_multiple_flavors_node_affinity_fits_any_flavor() -> None:
    """The first term is empty once reduced to flavor keys, and terms are ORed: any flavor matches."""
    terms = [
        [{"key": "ignored2", "operator": "In", "values": ["bar"]}],
        [{"key": "cpuType", "operator": "In", "values": ["two"]}],
    ]
    r = assign(cq("q", group(fq("one", cpu="4"), fq("two", cpu="4"))), [ps(MAIN, 1, terms=terms, cpu=1000)])
    check(r, FIT, {MAIN: {CPU: ("one", FIT)}})


def test_multiple_flavors_with_different_label_keys_selector_only_uses_flavors_own_keys() -> None:
    r = assign(
        cq("q", group(fq("label-x-a", cpu="4"), fq("label-xy-b", cpu="4"))),
        [ps(MAIN, 1, selector={"x": "a", "y": "g"}, cpu=1000)],
    )
    check(r, FIT, {MAIN: {CPU: ("label-x-a", FIT)}})


def test_labelless_flavor_in_group_with_labeled_flavor_workload_uses_labeled_selector() -> None:
    r = assign(
        cq("q", group(fq("default", cpu="4"), fq("two", cpu="4"))),
        [ps(MAIN, 1, selector={"type": "two"}, cpu=1000)],
    )
    check(r, FIT, {MAIN: {CPU: ("default", FIT)}})


def test_multiple_flavors_doesnt_fit_node_affinity() -> None:
    terms = [[{"key": "type", "operator": "In", "values": ["three"]}]]
    r = assign(cq("q", group(fq("one", cpu="4"), fq("two", cpu="4"))), [ps(MAIN, 1, terms=terms, cpu=1000)])
    check(
        r,
        NO_FIT,
        {MAIN: {}},
        {MAIN: ["flavor one doesn't match node affinity", "flavor two doesn't match node affinity"]},
    )
    assert r.no_fit_reason == "NoMatchingFlavor"


def test_multiple_specs_fit_different_flavors() -> None:
    r = assign(
        cq("q", group(fq("one", cpu="4"), fq("two", cpu="10"))),
        [ps("driver", 1, cpu=5000), ps("worker", 1, cpu=3000)],
    )
    check(r, FIT, {"driver": {CPU: ("two", FIT)}, "worker": {CPU: ("one", FIT)}})
    assert r.usage == {FlavorResource("one", CPU): 3000, FlavorResource("two", CPU): 5000}


def test_multiple_specs_fits_borrowing() -> None:
    main = cq("q", group(fq("default", cpu=("2", "98"), memory="2Gi")), cohort="test-cohort")
    secondary = cq("q2", group(fq("default", cpu="198", memory="198Gi")), cohort="test-cohort")
    r = assign(
        main,
        [ps("driver", 1, cpu=4000, memory=GI), ps("worker", 1, cpu=6000, memory=4 * GI)],
        secondary=secondary,
    )
    check(
        r,
        FIT,
        {
            "driver": {CPU: ("default", FIT), MEM: ("default", FIT)},
            "worker": {CPU: ("default", FIT), MEM: ("default", FIT)},
        },
        borrowing=1,
    )


def test_not_enough_space_to_borrow() -> None:
    main = cq("q", group(fq("one", cpu="1")), cohort="test-cohort")
    secondary = cq("q2", group(fq("one", cpu=("10", None, "0"))), cohort="test-cohort")
    r = assign(main, [ps(MAIN, 1, cpu=2000)], secondary=secondary, secondary_usage={("one", CPU): 9000})
    check(
        r,
        NO_FIT,
        {MAIN: {}},
        {
            MAIN: [
                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current "
                "podset request (2) > maximum capacity (1)"
            ]
        },
    )


def test_past_max_but_can_preempt_in_cluster_queue() -> None:
    main = cq("q", group(fq("one", cpu=("2", "8"))), cohort="test-cohort")
    secondary = cq("q2", group(fq("one", cpu="98")), cohort="test-cohort")
    r = assign(
        main,
        [ps(MAIN, 1, cpu=2000)],
        usage={("one", CPU): 9000},
        secondary=secondary,
        secondary_usage={("one", CPU): 9000},
        simulation={("one", CPU): (PreemptionMode.PREEMPT, 1)},
    )
    check(
        r,
        PREEMPT,
        {MAIN: {CPU: ("one", PREEMPT)}},
        {MAIN: ["insufficient unused quota for cpu in flavor one, 1 more needed"]},
        borrowing=1,
    )


def test_past_min_but_can_preempt_in_cluster_queue() -> None:
    r = assign(cq("q", group(fq("one", cpu="2"))), [ps(MAIN, 1, cpu=2000)], usage={("one", CPU): 1000})
    check(
        r,
        PREEMPT,
        {MAIN: {CPU: ("one", PREEMPT)}},
        {MAIN: ["insufficient unused quota for cpu in flavor one, 1 more needed"]},
    )


def test_past_min_but_can_preempt_in_cohort_and_cluster_queue() -> None:
    main = cq("q", group(fq("one", cpu="3")), cohort="test-cohort")
    secondary = cq("q2", group(fq("one", cpu="7")), cohort="test-cohort")
    r = assign(
        main,
        [ps(MAIN, 1, cpu=2000)],
        usage={("one", CPU): 2000},
        secondary=secondary,
        secondary_usage={("one", CPU): 8000},
        simulation={("one", CPU): (PreemptionMode.PREEMPT, 1)},
    )
    check(
        r,
        PREEMPT,
        {MAIN: {CPU: ("one", PREEMPT)}},
        {MAIN: ["insufficient unused quota for cpu in flavor one, 2 more needed"]},
        borrowing=1,
    )


def test_can_only_preempt_flavors_that_match_affinity() -> None:
    r = assign(
        cq("q", group(fq("one", cpu="4"), fq("two", cpu="4"))),
        [ps(MAIN, 1, selector={"type": "two"}, cpu=2000)],
        usage={("one", CPU): 3000, ("two", CPU): 3000},
    )
    check(
        r,
        PREEMPT,
        {MAIN: {CPU: ("two", PREEMPT)}},
        {
            MAIN: [
                "flavor one doesn't match node affinity",
                "insufficient unused quota for cpu in flavor two, 1 more needed",
            ]
        },
    )


def test_each_podset_requires_preemption_on_a_different_flavor() -> None:
    tol = ({"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},)
    r = assign(
        cq("q", group(fq("one", cpu="4"), fq("tainted", cpu="10"))),
        [ps("launcher", 1, cpu=2000), ps("workers", 10, tol, cpu=1000)],
        usage={("one", CPU): 3000, ("tainted", CPU): 3000},
    )
    check(
        r,
        PREEMPT,
        {"launcher": {CPU: ("one", PREEMPT)}, "workers": {CPU: ("tainted", PREEMPT)}},
        {
            "launcher": [
                "insufficient unused quota for cpu in flavor one, 1 more needed",
                "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted",
            ],
            "workers": [
                "insufficient quota for cpu in flavor one, previously considered podsets requests (2) + current "
                "podset request (10) > maximum capacity (4)",
                "insufficient unused quota for cpu in flavor tainted, 3 more needed",
            ],
        },
    )


def test_resource_not_listed_in_cluster_queue() -> None:
    r = assign(cq("q", group(fq("one", cpu="4"))), [ps(MAIN, 1, gpu=2)])
    check(r, NO_FIT, {MAIN: {}}, {MAIN: ["resource example.com/gpu unavailable in ClusterQueue"]})
    assert r.no_fit_reason == "NoMatchingFlavor"


def test_zero_resource_request_not_in_cluster_queue_should_succeed() -> None:
    r = assign(cq("q", group(fq("default", cpu="4"))), [ps(MAIN, 1, cpu=1000, gpu=0)])
    check(r, FIT, {MAIN: {CPU: ("default", FIT)}})


def test_zero_resource_request_defined_in_cluster_queue_should_get_flavor_assigned() -> None:
    r = assign(cq("q", group(fq("default", cpu="4", gpu="4"))), [ps(MAIN, 1, cpu=1000, gpu=0)])
    check(r, FIT, {MAIN: {CPU: ("default", FIT), GPU: ("default", FIT)}})


@pytest.mark.parametrize(
    ("name", "one", "two", "usage", "flavor"),
    [
        ("zero-count PodSet prefers a flavor with capacity", "0", "4", {}, "two"),
        ("zero-count PodSet retains its probe with explicit counts", "0", "4", {}, "two"),
        (
            "zero-count PodSet uses potential capacity even when quota is exhausted",
            "0",
            "4",
            {("two", GPU): 4},
            "two",
        ),
        ("zero-count PodSet falls back when no flavor has capacity", "0", "0", {}, "one"),
    ],
)
def test_zero_count_podset_probe(
    name: str, one: str, two: str, usage: dict[tuple[str, str], int], flavor: str
) -> None:
    """A podset of count 0 probes with one pod's requests against each flavor's maximum capacity."""
    r = assign(cq("q", group(fq("one", gpu=one), fq("two", gpu=two))), [ps(MAIN, 0, gpu=1)], usage=usage)
    check(r, FIT, {MAIN: {GPU: (flavor, FIT)}})


def test_zero_count_podset_prefers_a_flavor_with_pod_capacity() -> None:
    main = cq(
        "q",
        {
            "coveredResources": ["pods"],
            "flavors": [
                {"name": "one", "resources": [{"name": "pods", "nominalQuota": "0"}]},
                {"name": "two", "resources": [{"name": "pods", "nominalQuota": "4"}]},
            ],
        },
    )
    r = assign(main, [ps(MAIN, 0)])
    check(r, FIT, {MAIN: {"pods": ("two", FIT)}})


def _pods_cpu(pods: str, cpu: str, flavor: str = "default", **cpu_limits: str) -> dict[str, Any]:
    """A flavor with ``pods`` and ``cpu`` quotas; ``cpu_limits`` adds borrowingLimit/lendingLimit to cpu."""
    return {
        "name": flavor,
        "resources": [
            {"name": "pods", "nominalQuota": pods},
            {"name": CPU, "nominalQuota": cpu, **cpu_limits},
        ],
    }


def test_num_pods_fit() -> None:
    main = cq("q", {"coveredResources": ["pods", CPU], "flavors": [_pods_cpu("3", "10")]})
    r = assign(main, [ps(MAIN, 3, cpu=1000)])
    check(r, FIT, {MAIN: {CPU: ("default", FIT), "pods": ("default", FIT)}})
    assert r.usage == {FlavorResource("default", "pods"): 3, FlavorResource("default", CPU): 3000}


def test_num_pods_dont_fit() -> None:
    main = cq("q", {"coveredResources": ["pods", CPU], "flavors": [_pods_cpu("2", "10")]})
    r = assign(main, [ps(MAIN, 3, cpu=1000)])
    check(
        r,
        NO_FIT,
        {MAIN: {}},
        {
            MAIN: [
                "insufficient quota for pods in flavor default, previously considered podsets requests (0) + "
                "current podset request (3) > maximum capacity (2)"
            ]
        },
    )


@pytest.mark.parametrize(
    ("fungibility", "flavor", "mode"),
    [
        pytest.param(
            {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
            "one",
            PREEMPT,
            id="preempt before try next flavor",
        ),
        pytest.param({}, "two", FIT, id="preempt try next flavor"),
    ],
)
def test_preempt_or_try_next_flavor(fungibility: dict[str, str], flavor: str, mode: AssignmentMode) -> None:
    """whenCanPreempt: MayStopSearch keeps "one" (Preempt); the default TryNextFlavor takes "two" (Fit)."""
    groups = {
        "coveredResources": ["pods", CPU],
        "flavors": [_pods_cpu("10", "10", "one"), _pods_cpu("10", "10", "two")],
    }
    spec = {"flavorFungibility": fungibility} if fungibility else {}
    r = assign(cq("q", groups, **spec), [ps(MAIN, 1, cpu=9000)], usage={("one", CPU): 2000})
    check(r, mode, {MAIN: {CPU: (flavor, mode), "pods": (flavor, FIT)}})


def test_borrow_try_next_flavor_found_the_first_flavor() -> None:
    one = _pods_cpu("10", "10", "one", borrowingLimit="1")
    main = cq(
        "q",
        {"coveredResources": ["pods", CPU], "flavors": [one, _pods_cpu("10", "1", "two")]},
        cohort="test-cohort",
        flavorFungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
    )
    secondary = cq("q2", group(fq("one", cpu="1")), cohort="test-cohort")
    r = assign(main, [ps(MAIN, 1, cpu=9000)], usage={("one", CPU): 2000}, secondary=secondary)
    check(r, FIT, {MAIN: {CPU: ("one", FIT), "pods": ("one", FIT)}}, borrowing=1)


COHORT = "test-cohort"
MAY_STOP = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
TRY_NEXT = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
BORROW_LOWER = {"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": {"policy": "LowerPriority"}}


def _pods_cpu_group(*flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": ["pods", CPU], "flavors": list(flavors)}


def test_borrow_before_try_next_flavor() -> None:
    """Default fungibility (whenCanBorrow MayStopSearch): "one" fits by borrowing 1 cpu and is kept."""
    groups = _pods_cpu_group(_pods_cpu("10", "10", "one", borrowingLimit="1"), _pods_cpu("10", "10", "two"))
    secondary = cq("q2", group(fq("one", cpu="1")), cohort=COHORT)
    r = assign(cq("q", groups, cohort=COHORT), [ps(MAIN, 1, cpu=9000)], {("one", CPU): 2000}, secondary)
    check(r, FIT, {MAIN: {CPU: ("one", FIT), "pods": ("one", FIT)}}, borrowing=1)


@pytest.mark.parametrize(
    ("one_quota", "fungibility", "flavor", "mode", "borrowing"),
    [
        pytest.param(("0", "12"), MAY_STOP, "one", PREEMPT, 1, id="WhenCanBorrow=MayStopSearch"),
        pytest.param("0", MAY_STOP, "one", PREEMPT, 1, id="no borrowingLimit; WhenCanBorrow=MayStopSearch"),
        pytest.param(
            ("0", "12"),
            {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"},
            "two",
            FIT,
            0,
            id="WhenCanBorrow=TryNextFlavor",
        ),
    ],
)
def test_when_borrowing_while_preemption_is_needed_for_flavor_one(
    one_quota: Any, fungibility: dict[str, str], flavor: str, mode: AssignmentMode, borrowing: int
) -> None:
    """Upstream gives the TryNextFlavor case no usage in the cohort: "one" fits by borrowing, "two" without.

    Upstream repeats each case word for word under a name ending "...,WhenCanPreempt=MayStopSearch";
    each is ported once.
    """
    main = cq(
        "q",
        group(fq("one", cpu=one_quota), fq("two", cpu="12")),
        cohort=COHORT,
        preemption=BORROW_LOWER,
        flavorFungibility=fungibility,
    )
    secondary = cq("q2", group(fq("one", cpu="12")), cohort=COHORT)
    used = {("one", CPU): 10_000} if mode == PREEMPT else None
    sim = {("one", CPU): (PreemptionMode.PREEMPT, 1)}
    r = assign(main, [ps(MAIN, 1, cpu=12_000)], None, secondary, used, sim)
    reasons = (
        {MAIN: ["insufficient unused quota for cpu in flavor one, 10 more needed"]} if mode == PREEMPT else {}
    )
    check(r, mode, {MAIN: {CPU: (flavor, mode)}}, reasons, borrowing)


def test_when_borrowing_while_preemption_is_needed_but_borrowing_limit_exceeds_cohort_quota() -> None:
    main = cq("q", group(fq("one", cpu=("0", "12"))), cohort=COHORT, preemption=BORROW_LOWER)
    secondary = cq("q2", group(fq("one", cpu="11")), cohort=COHORT)
    r = assign(main, [ps(MAIN, 1, cpu=12_000)], None, secondary, {("one", CPU): 10_000})
    reason = (
        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + "
        "current podset request (12) > maximum capacity (11)"
    )
    check(r, NO_FIT, {MAIN: {}}, {MAIN: [reason]})


@pytest.mark.parametrize(
    ("two_cpu", "flavor", "borrowing"),
    [
        pytest.param("10", "two", 0, id="lend try next flavor, found the second flavor"),
        pytest.param("1", "one", 1, id="lend try next flavor, found the first flavor"),
    ],
)
def test_lend_try_next_flavor(two_cpu: str, flavor: str, borrowing: int) -> None:
    """ "one" lends 1 of its 10 cpu, so 2 used + 9 asked borrows; "two" (lends nothing) is taken if it fits."""
    groups = _pods_cpu_group(
        _pods_cpu("10", "10", "one", lendingLimit="1"), _pods_cpu("10", two_cpu, "two", lendingLimit="0")
    )
    main = cq("q", groups, cohort=COHORT, flavorFungibility=TRY_NEXT)
    secondary = cq("q2", group(fq("one", cpu="1")), cohort=COHORT)
    r = assign(main, [ps(MAIN, 1, cpu=9000)], {("one", CPU): 2000}, secondary)
    check(r, FIT, {MAIN: {CPU: (flavor, FIT), "pods": (flavor, FIT)}}, borrowing=borrowing)


def test_cannot_preempt_in_cohort_for_the_first_flavor_tries_the_second() -> None:
    """The oracle says NoCandidates for "one": the search goes on and "two" fits by borrowing.

    Upstream repeats this case word for word under a second name ("... using deprecated
    WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch"); it is ported once.
    """
    main = cq(
        "q",
        group(fq("one", cpu=("0", "2")), fq("two", cpu=("0", "2"))),
        cohort=COHORT,
        preemption=BORROW_LOWER,
        flavorFungibility=MAY_STOP,
    )
    secondary = cq("q2", group(fq("one", cpu="2"), fq("two", cpu="2")), cohort=COHORT)
    sim = {("one", CPU): (PreemptionMode.NO_CANDIDATES, 0)}
    r = assign(main, [ps(MAIN, 1, cpu=2000)], None, secondary, {("one", CPU): 2000}, sim)
    check(r, FIT, {MAIN: {CPU: ("two", FIT)}}, borrowing=1)


def test_quota_exhausted_but_can_preempt_in_cohort_and_cluster_queue() -> None:
    main = cq("q", _pods_cpu_group(_pods_cpu("10", "10", "one", lendingLimit="0")), cohort=COHORT)
    secondary = cq("q2", _pods_cpu_group(_pods_cpu("0", "0", "one")), cohort=COHORT)
    sim = {("one", CPU): (PreemptionMode.PREEMPT, 1)}
    r = assign(main, [ps(MAIN, 1, cpu=9000)], {("one", CPU): 2000}, secondary, None, sim)
    reasons = {MAIN: ["insufficient unused quota for cpu in flavor one, 1 more needed"]}
    check(r, PREEMPT, {MAIN: {CPU: ("one", PREEMPT), "pods": ("one", FIT)}}, reasons, borrowing=1)


@pytest.mark.parametrize(
    ("reclaim", "outcome", "flavor", "mode", "borrowing"),
    [
        pytest.param("Any", PreemptionMode.PREEMPT, "one", PREEMPT, 1, id="reclaimWithinCohort=Any"),
        pytest.param("Never", PreemptionMode.NO_CANDIDATES, "two", FIT, 0, id="reclaimWithinCohort=Never"),
    ],
)
def test_when_borrowing_while_preemption_is_needed_for_flavor_one_fair_sharing_enabled(
    reclaim: str, outcome: PreemptionMode, flavor: str, mode: AssignmentMode, borrowing: int
) -> None:
    """With fair sharing on, reclaimWithinCohort (not borrowWithinCohort) decides whether a flavor that
    needs borrowing may preempt: Any keeps "one" (Preempt), Never goes on to "two".

    Upstream repeats both cases word for word under "...; using deprecated WhenCanBorrow=MayStopSearch,
    WhenCanPreempt=MayStopSearch"; each is ported once.
    """
    main = cq(
        "q",
        group(fq("one", cpu="0"), fq("two", cpu="12")),
        cohort=COHORT,
        preemption={"reclaimWithinCohort": reclaim},
        flavorFungibility=MAY_STOP,
    )
    secondary = cq("q2", group(fq("one", cpu="12")), cohort=COHORT)
    sim = {("one", CPU): (outcome, 1 if outcome == PreemptionMode.PREEMPT else 0)}
    r = assign(
        main, [ps(MAIN, 1, cpu=12_000)], None, secondary, {("one", CPU): 10_000}, sim, fair_sharing=True
    )
    reasons = (
        {MAIN: ["insufficient unused quota for cpu in flavor one, 10 more needed"]} if mode == PREEMPT else {}
    )
    check(r, mode, {MAIN: {CPU: (flavor, mode)}}, reasons, borrowing)
