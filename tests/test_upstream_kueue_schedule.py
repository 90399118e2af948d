"""Upstream Kueue's scheduling-cycle table, ported case by case (the cases fleetlab can express).

Source: kubernetes-sigs/kueue ``pkg/scheduler/scheduler_test.go``, ``TestSchedule``, at commit
005e97cfe1cce0acdb52e8ee3f06136503d6333d. The ClusterQueues and LocalQueues are upstream's shared ones
(``sales``, ``eng-alpha``, ``eng-beta``, ``lend-a``, ``lend-b``) plus a case's own; workloads with
``ReserveQuota`` are reserved as listed, the others are queued; then one cycle runs (with classic
preemption, or fair sharing and its preemption). Each case checks what upstream checks: which workloads are admitted and on which flavors, which
are left pending, and which are preempted. Units: cpu in milli-cores.

Of the first 47 cases of the table, 33 are ported (fair sharing on where upstream enables it). Not ported:
admission-check states (2; admission checks are not modelled), a workload whose LocalQueue or ClusterQueue
does not exist and a ClusterQueue naming a missing flavor (3; fleetlab refuses such input when it is loaded),
an injected admission error, the ClusterQueue ``namespaceSelector`` case (accepted, not applied), the
LendingLimit feature gate turned off, 3 partial admission cases (not modelled; the 2 whose answer does not
depend on it are ported), a LimitRange case (not modelled), and "multiple preemptions within cq when fair
sharing" and "multiple preemptions skip overlapping preemption targets": their ClusterQueues leave
``reclaimWithinCohort`` unset, which the unit test's objects keep as "" (so fair sharing may preempt while
borrowing) but the API defaults to Never (so it may not); fleetlab reads objects as applied. Upstream's
``sales`` and ``other-alpha`` carry a ``borrowingLimit`` without a cohort, which Kueue's API refuses
("borrowingLimit must be nil when cohort is empty"); it is left out (a ClusterQueue without a cohort cannot
borrow either way).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import pytest

from fleetlab.admission.flavors import PodSetRequest
from fleetlab.admission.manager import AdmissionManager, Workload
from fleetlab.admission.preemption import ClassicPreemption, FairSharingPreemption
from fleetlab.model.kueue_config import FairSharingConfig
from fleetlab.model.queues import queue_config_from_objects

UPSTREAM = "kubernetes-sigs/kueue pkg/scheduler/scheduler_test.go TestSchedule @005e97cf"
CPU, GPU = "cpu", "example.com/gpu"


def quota(flavor: str, resource: str, nominal: str, borrowing: str = "", lending: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
    if borrowing:
        entry["borrowingLimit"] = borrowing
    if lending:
        entry["lendingLimit"] = lending
    return {"name": flavor, "resources": [entry]}


def cq(name: str, cohort: str | None, *groups: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "resourceGroups": [
            {"coveredResources": sorted({r["name"] for f in g for r in f["resources"]}), "flavors": g}
            for g in groups
        ],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def lq(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


STRICT = {"queueingStrategy": "StrictFIFO"}
FLAVORS = [
    {"kind": "ResourceFlavor", "metadata": {"name": f}} for f in ("default", "on-demand", "spot", "model-a")
]
CLUSTER_QUEUES = [
    cq("sales", None, [quota("default", CPU, "50")], **STRICT),  # upstream: borrowingLimit 0, see above
    cq("eng-alpha", "eng", [quota("on-demand", CPU, "50", "50"), quota("spot", CPU, "100", "0")], **STRICT),
    cq(
        "eng-beta",
        "eng",
        [quota("on-demand", CPU, "50", "10"), quota("spot", CPU, "0", "100")],
        [quota("model-a", GPU, "20", "0")],
        preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        **STRICT,
    ),
    cq("lend-a", "lend", [quota("default", CPU, "3", lending="2")]),
    cq("lend-b", "lend", [quota("default", CPU, "2", lending="2")]),
]
LOCAL_QUEUES = [
    lq("main", "sales", "sales"),
    lq("main", "eng-alpha", "eng-alpha"),
    lq("main", "eng-beta", "eng-beta"),
    lq("lend-a-queue", "lend", "lend-a"),
    lq("lend-b-queue", "lend", "lend-b"),
]
OTHER_QUEUES = [
    cq("other-alpha", "other", [quota("on-demand", CPU, "50", "50")]),
    cq(
        "other-beta",
        "other",
        [quota("on-demand", CPU, "50", "10")],
        preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    ),
    lq("other", "eng-alpha", "other-alpha"),
    lq("other", "eng-beta", "other-beta"),
]

#: A workload: (namespace/name, local queue or "", priority, [(podset, count, {resource: per-pod})],
#: reserved as {podset: {resource: flavor}} in a ClusterQueue, or None when it is queued).
Wl = tuple[str, str, int, list[tuple[str, int, dict[str, int]]], tuple[str, dict[str, dict[str, str]]] | None]


def one(cpu: int, count: int = 1, name: str = "main", **more: int) -> list[tuple[str, int, dict[str, int]]]:
    return [(name, count, {CPU: cpu, **{GPU if k == "gpu" else k: v for k, v in more.items()}})]


def reserved(cluster_queue: str, flavor: str, podset: str = "main") -> tuple[str, dict[str, dict[str, str]]]:
    return (cluster_queue, {podset: {CPU: flavor}})


def run(
    workloads: list[Wl],
    extra: Sequence[dict[str, Any]] = (),
    created: dict[str, int] | None = None,
    fair: bool = False,
) -> tuple[AdmissionManager, dict[str, Any], set[str]]:
    """One cycle: returns the manager, the admissions of this cycle by id, and the preempted ids
    (``created``: creation times in ms, 0 when absent; ``fair``: fair sharing on, as upstream's
    ``enableFairSharing``)."""
    config = queue_config_from_objects([*FLAVORS, *CLUSTER_QUEUES, *LOCAL_QUEUES, *extra])
    if fair:
        fs = FairSharingConfig()
        strategy: Any = FairSharingPreemption(fs.preemption_strategies)
        m = AdmissionManager(config, fair_sharing=fs, preemption=strategy)
    else:
        m = AdmissionManager(config, preemption=ClassicPreemption())
    for key, queue, priority, podsets, reservation in workloads:
        namespace = key.split("/")[0]
        sets = tuple(PodSetRequest(n, c, r) for n, c, r in podsets)
        if reservation is None:
            m.submit(Workload(key, namespace, queue, priority, (created or {}).get(key, 0), sets))
            continue
        cluster_queue, flavors = reservation
        # A reserved workload needs a LocalQueue of its ClusterQueue in its namespace to be submitted.
        local = next(
            o["metadata"]["name"]
            for o in [*LOCAL_QUEUES, *extra]
            if o["kind"] == "LocalQueue"
            and o["spec"]["clusterQueue"] == cluster_queue
            and o["metadata"]["namespace"] == namespace
        )
        m.reserve(Workload(key, namespace, local, priority, 0, sets), cluster_queue, flavors, 0)
    admitted = {a.workload_id: a for a in m.cycle(1)}
    preempted = {v for request in m.take_preemptions() for v in request.victims}
    return m, admitted, preempted


def check(
    result: tuple[AdmissionManager, dict[str, Any], set[str]],
    scheduled: dict[str, tuple[str, dict[str, dict[str, str]]]],
    left: set[str],
    preempted: AbstractSet[str] = frozenset(),
) -> None:
    m, admitted, got_preempted = result
    assert {k: (a.cluster_queue, a.flavors) for k, a in admitted.items()} == scheduled, UPSTREAM
    assert {w for w, _ in m.pending()} == left, UPSTREAM
    assert got_preempted == preempted, UPSTREAM


def test_single_cluster_queue_full() -> None:
    wls: list[Wl] = [
        ("sales/new", "main", 0, one(1000, 11, "one"), None),
        ("sales/assigned", "", 0, one(1000, 40, "one"), reserved("sales", "default", "one")),
    ]
    check(run(wls), {}, {"sales/new"})


def test_admit_in_different_cohorts() -> None:
    wls: list[Wl] = [
        ("sales/new", "main", 0, one(1000, 1, "one"), None),
        ("eng-alpha/new", "main", 0, one(1000, 51, "one"), None),  # will borrow
    ]
    check(
        run(wls),
        {
            "sales/new": ("sales", {"one": {CPU: "default"}}),
            "eng-alpha/new": ("eng-alpha", {"one": {CPU: "on-demand"}}),
        },
        set(),
    )


@pytest.mark.parametrize(
    ("alpha", "beta", "beta_admitted"),
    [
        pytest.param(40, 40, True, id="admit in same cohort with no borrowing"),
        pytest.param(
            45, 56, False, id="cannot borrow if cohort was assigned and would result in overadmission"
        ),
        pytest.param(
            45, 55, True, id="can borrow if cohort was assigned and will not result in overadmission"
        ),
    ],
)
def test_same_cohort(alpha: int, beta: int, beta_admitted: bool) -> None:
    """Both heads are nominated on the same state; eng-alpha (not borrowing) is processed first, then
    eng-beta is re-checked: 45 + 56 = 101 > 100 on-demand in the cohort no longer fits."""
    wls: list[Wl] = [
        ("eng-alpha/new", "main", 0, one(1000, alpha, "one"), None),
        ("eng-beta/new", "main", 0, one(1000, beta, "one"), None),
    ]
    want = {"eng-alpha/new": ("eng-alpha", {"one": {CPU: "on-demand"}})}
    if beta_admitted:
        want["eng-beta/new"] = ("eng-beta", {"one": {CPU: "on-demand"}})
    check(run(wls), want, set() if beta_admitted else {"eng-beta/new"})


def test_assign_multiple_resources_and_flavors() -> None:
    """Podset one takes 60 cpu on on-demand (50 + 10 borrowed) and 10 GPUs on model-a; podset two's 40 cpu
    no longer fit on-demand (max 60) and go to spot (0 nominal, borrowed from eng-alpha's 100)."""
    podsets = [("one", 10, {CPU: 6000, GPU: 1}), ("two", 40, {CPU: 1000})]
    want = {"eng-beta/new": ("eng-beta", {"one": {CPU: "on-demand", GPU: "model-a"}, "two": {CPU: "spot"}})}
    check(run([("eng-beta/new", "main", 0, podsets, None)]), want, set())


def test_can_borrow_if_needs_reclaim_from_cohort_in_different_flavor() -> None:
    wls: list[Wl] = [
        ("eng-alpha/can-reclaim", "main", 0, one(100_000), None),
        ("eng-beta/needs-to-borrow", "main", 0, one(1000), None),
        ("eng-beta/user-on-demand", "", 0, one(50_000), reserved("eng-beta", "on-demand")),
        ("eng-beta/user-spot", "", 0, one(1000), reserved("eng-beta", "spot")),
    ]
    want = {"eng-beta/needs-to-borrow": ("eng-beta", {"main": {CPU: "on-demand"}})}
    check(run(wls), want, {"eng-alpha/can-reclaim"})


def test_workload_exceeds_lending_limit_when_borrow_in_cohort() -> None:
    """lend-b may use its 2 plus lend-a's lendable 2: 2 reserved + 3 asked = 5 > 4."""
    wls: list[Wl] = [
        ("lend/a", "", 0, one(2000), reserved("lend-b", "default")),
        ("lend/b", "lend-b-queue", 0, one(3000), None),
    ]
    check(run(wls), {}, {"lend/b"})


def test_preempt_workloads_in_cluster_queue_and_cohort() -> None:
    """eng-beta needs 20 on-demand: it reclaims from eng-alpha's borrower (60 on 50 nominal) and preempts its
    own lowest-priority workload; the preemptor waits for them."""
    wls: list[Wl] = [
        ("eng-beta/preemptor", "main", 0, one(20_000), None),
        ("eng-alpha/use-all-spot", "", 0, one(100_000), reserved("eng-alpha", "spot")),
        ("eng-beta/low-1", "", -1, one(30_000), reserved("eng-beta", "on-demand")),
        ("eng-beta/low-2", "", -2, one(10_000), reserved("eng-beta", "on-demand")),
        ("eng-alpha/borrower", "", 0, one(60_000), reserved("eng-alpha", "on-demand")),
    ]
    check(run(wls), {}, {"eng-beta/preemptor"}, {"eng-alpha/borrower", "eng-beta/low-2"})


def test_multiple_cluster_queues_need_preemption() -> None:
    """other-beta reclaims from other-alpha's borrower; other-alpha's pending head (no preemption policy)
    cannot fit and waits."""
    wls: list[Wl] = [
        ("eng-beta/preemptor", "other", -1, one(1000), None),
        ("eng-alpha/pending", "other", 1, one(1000), None),
        ("eng-alpha/use-all", "", 0, one(100_000), reserved("other-alpha", "on-demand")),
    ]
    check(run(wls, OTHER_QUEUES), {}, {"eng-beta/preemptor", "eng-alpha/pending"}, {"eng-alpha/use-all"})


def test_cannot_borrow_resource_not_listed_in_cluster_queue() -> None:
    wls: list[Wl] = [("eng-alpha/new", "main", 0, [("main", 1, {GPU: 1})], None)]
    check(run(wls), {}, {"eng-alpha/new"})


def test_no_overadmission_while_borrowing() -> None:
    """eng-gamma already borrows (51 on-demand on 50 nominal, all 100 spot); its new 50 would reach 101 >
    50 + 10 and nobody may be preempted for it, while eng-beta's 50 and eng-alpha's 1 fit (cohort on-demand:
    51 + 50 + 1 = 102 <= 150)."""
    gamma = [
        cq(
            "eng-gamma",
            "eng",
            [quota("on-demand", CPU, "50", "10"), quota("spot", CPU, "0", "100")],
            preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        ),
        lq("main", "eng-gamma", "eng-gamma"),
    ]
    existing = [("borrow-on-demand", 51, {CPU: 1000}), ("use-all-spot", 100, {CPU: 1000})]
    wls: list[Wl] = [
        ("eng-beta/new", "main", 0, one(1000, 50, "one"), None),
        ("eng-alpha/new-alpha", "main", 0, one(1000, 1, "one"), None),
        ("eng-gamma/new-gamma", "main", 0, one(1000, 50, "one"), None),
        (
            "eng-gamma/existing",
            "",
            0,
            existing,
            ("eng-gamma", {"borrow-on-demand": {CPU: "on-demand"}, "use-all-spot": {CPU: "spot"}}),
        ),
    ]
    created = {"eng-beta/new": -2000, "eng-alpha/new-alpha": -1000}
    want = {
        "eng-beta/new": ("eng-beta", {"one": {CPU: "on-demand"}}),
        "eng-alpha/new-alpha": ("eng-alpha", {"one": {CPU: "on-demand"}}),
    }
    check(run(wls, gamma, created), want, {"eng-gamma/new-gamma"})


R_QUEUES = [
    cq(
        f"cq{i}",
        "co",
        [
            {
                "name": "default",
                "resources": [
                    {"name": r, "nominalQuota": "10", "borrowingLimit": "10"} for r in ("r1", "r2")
                ],
            }
        ],
        preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    )
    for i in (1, 2, 3)
] + [lq(f"lq{i}", "sales", f"cq{i}") for i in (1, 2, 3)]


@pytest.mark.parametrize(
    ("second", "amount"),
    [
        pytest.param(
            "r2", 16, id="two workloads can borrow different resources from the same flavor in the same cycle"
        ),
        pytest.param(
            "r1",
            14,
            id="two workloads can borrow the same resources from the same flavor in the same cycle if fits in the "
            "cohort quota",
        ),
        pytest.param(
            "r1",
            16,
            id="only one workload can borrow one resources from the same flavor in the same cycle if cohort quota "
            "cannot fit",
        ),
    ],
)
def test_two_workloads_borrow_in_the_same_cycle(second: str, amount: int) -> None:
    """Three ClusterQueues of 10 each: 16 + 14 of r1 is the cohort's 30 exactly; 16 + 16 is not, and the
    second (lower priority) is left."""
    wls: list[Wl] = [
        ("sales/wl1", "lq1", -1, [("main", 1, {"r1": 16})], None),
        ("sales/wl2", "lq2", -2, [("main", 1, {second: amount})], None),
    ]
    want = {
        "sales/wl1": ("cq1", {"main": {"r1": "default"}}),
        "sales/wl2": ("cq2", {"main": {second: "default"}}),
    }
    left: set[str] = set()
    if (second, amount) == ("r1", 16):
        del want["sales/wl2"]
        left = {"sales/wl2"}
    check(run(wls, R_QUEUES), want, left)


def test_not_enough_resources_to_borrow_fallback_to_next_flavor() -> None:
    """ "...; WhenCanPreempt: TryNextFlavor": 60 on on-demand would borrow 10 but the cohort has only
    100 - 45 = 55 left, and eng-alpha may not preempt: spot (100 nominal) takes it."""
    wls: list[Wl] = [
        ("eng-alpha/new", "main", 0, one(1000, 60, "one"), None),
        ("eng-beta/existing", "", 0, one(1000, 45, "one"), reserved("eng-beta", "on-demand", "one")),
    ]
    check(run(wls), {"eng-alpha/new": ("eng-alpha", {"one": {CPU: "spot"}})}, set())


def test_partial_admission_disabled_multiple_variable_pod_sets() -> None:
    """fleetlab has no partial admission, as with the feature off: 20 + 30 + 15 = 65 > 50 stays pending."""
    podsets = [("one", 20, {CPU: 1000}), ("two", 30, {CPU: 1000}), ("three", 15, {CPU: 1000})]
    check(run([("sales/new", "main", 0, podsets, None)]), {}, {"sales/new"})


def test_partial_admission_single_variable_pod_set_preempt_first() -> None:
    """The full 20 GPUs fit once the priority -4 workload's 10 are preempted, so Kueue preempts before it
    would ever shrink the podset (its minimum count, 10, plays no part)."""
    wls: list[Wl] = [
        ("eng-beta/new", "main", 4, [("one", 20, {GPU: 1})], None),
        ("eng-beta/old", "", -4, [("one", 10, {GPU: 1})], ("eng-beta", {"one": {GPU: "model-a"}})),
    ]
    check(run(wls), {}, {"eng-beta/new"}, {"eng-beta/old"})


def test_use_second_flavor_when_the_first_has_no_preemption_candidates() -> None:
    """ "...; WhenCanPreempt: Preempt" (the old spelling of MayStopSearch): on-demand is full with a
    workload of the same priority, so preemption has no candidates and the search moves on to spot.
    Upstream's other-alpha has no cohort but borrowingLimit 50, which Kueue's API refuses; it is left out."""
    other = [
        cq(
            "other-alpha",
            None,
            [quota("on-demand", CPU, "50"), quota("spot", CPU, "100")],
            preemption={"withinClusterQueue": "LowerPriority"},
            flavorFungibility={"whenCanPreempt": "Preempt"},
        ),
        lq("other", "eng-alpha", "other-alpha"),
    ]
    wls: list[Wl] = [
        ("eng-alpha/admitted", "", 0, one(50_000), reserved("other-alpha", "on-demand")),
        ("eng-alpha/new", "other", 0, one(20_000), None),
    ]
    check(run(wls, other), {"eng-alpha/new": ("other-alpha", {"main": {CPU: "spot"}})}, set())


def test_workload_waiting_for_preemption_does_not_block_a_borrowing_workload_in_another_cluster_queue() -> (
    None
):
    """ "preemption while borrowing, ...": cq-a may borrow at most 3 and already holds 2, so ``a`` (3) cannot
    fit and has no lower-priority victim; ``b`` (1) borrows from cq-shared's 4 (2 left). Upstream's
    underscores (cq_a) become dashes (Kueue's API refuses them)."""
    bwc = {"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": {"policy": "LowerPriority"}}
    cohort = "preemption-while-borrowing"
    queues = [
        cq("cq-shared", cohort, [quota("default", CPU, "4", "0")]),
        cq("cq-a", cohort, [quota("default", CPU, "0", "3")], preemption=bwc),
        cq("cq-b", cohort, [quota("default", CPU, "0")], preemption=bwc),
        lq("lq-a", "eng-alpha", "cq-a"),
        lq("lq-b", "eng-beta", "cq-b"),
    ]
    wls: list[Wl] = [
        ("eng-alpha/a", "lq-a", 0, one(3000), None),
        ("eng-beta/b", "lq-b", 0, one(1000), None),
        ("eng-alpha/admitted-a", "", 0, one(2000), reserved("cq-a", "default")),
    ]
    created = {"eng-alpha/a": 1000, "eng-beta/b": 2000}
    check(run(wls, queues, created), {"eng-beta/b": ("cq-b", {"main": {CPU: "default"}})}, {"eng-alpha/a"})


def test_with_fair_sharing_schedule_workload_with_lowest_share_first() -> None:
    """eng-alpha (50 used of 50) asking 5 would borrow 5; eng-beta (55 used) asking 1 would borrow 6: alpha
    has the lower share and goes first, after which the cohort's 110 on-demand is full."""
    shared = [cq("eng-shared", "eng", [quota("on-demand", CPU, "10", "0")])]
    wls: list[Wl] = [
        ("eng-alpha/all-nominal", "main", 0, one(1000, 50, "one"), reserved("eng-alpha", "on-demand", "one")),
        ("eng-beta/borrowing", "main", 0, one(1000, 55, "one"), reserved("eng-beta", "on-demand", "one")),
        ("eng-beta/older-new", "main", 0, one(1000, 1, "one"), None),
        ("eng-alpha/new", "main", 0, one(1000, 5, "one"), None),
    ]
    got = run(wls, shared, {"eng-beta/older-new": -60_000}, fair=True)
    check(got, {"eng-alpha/new": ("eng-alpha", {"one": {CPU: "on-demand"}})}, {"eng-beta/older-new"})


def _cohort(name: str, parent: str | None = None, cpu: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if cpu:
        spec["resourceGroups"] = [{"coveredResources": [CPU], "flavors": [quota("on-demand", CPU, cpu)]}]
    return {"kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def test_hierarchical_fair_sharing_schedule_workload_which_wins_tournament() -> None:
    """Cohort A (200) over B {d: 10, e: 20} and C {f: 0, g: 100}: d1 (70) leaves B at 100, e1 (61) at 91,
    f1 or g1 (1) leave C at 101. d beats e inside B (80 < 81), then B (100) beats C (101); after d1 nothing
    else fits in A's 200. The cohorts are cohort-a/-b/-c (Kueue's API refuses upper case)."""
    leaves = (("d", "b"), ("e", "b"), ("f", "c"), ("g", "c"))
    queues = [
        _cohort("cohort-a", cpu="200"),
        _cohort("cohort-b", "cohort-a"),
        _cohort("cohort-c", "cohort-a"),
        *(cq(n, f"cohort-{c}", [quota("on-demand", CPU, "0")]) for n, c in leaves),
        *(lq(f"lq-{n}", "eng-alpha", n) for n in "defg"),
    ]
    wls: list[Wl] = [
        ("eng-alpha/d0", "lq-d", 0, one(10_000, 1, "one"), reserved("d", "on-demand", "one")),
        ("eng-alpha/e0", "lq-e", 0, one(20_000, 1, "one"), reserved("e", "on-demand", "one")),
        ("eng-alpha/g0", "lq-g", 0, one(100_000, 1, "one"), reserved("g", "on-demand", "one")),
        ("eng-alpha/d1", "lq-d", 0, one(70_000, 1, "one"), None),
        ("eng-alpha/e1", "lq-e", 0, one(61_000, 1, "one"), None),
        ("eng-alpha/f1", "lq-f", 0, one(1000, 1, "one"), None),
        ("eng-alpha/g1", "lq-g", 0, one(1000, 1, "one"), None),
    ]
    want = {"eng-alpha/d1": ("d", {"one": {CPU: "on-demand"}})}
    check(run(wls, queues, fair=True), want, {"eng-alpha/e1", "eng-alpha/f1", "eng-alpha/g1"})


def test_fair_sharing_schedule_workload_with_lowest_drf_after_admission() -> None:
    """Cohort A (100): b holds 10, b1 (50) would bring b to 60, c1 (75) c to 75: b1 goes first, then c1 no
    longer fits."""
    queues = [
        _cohort("cohort-a", cpu="100"),
        cq("b", "cohort-a", [quota("on-demand", CPU, "0")]),
        cq("c", "cohort-a", [quota("on-demand", CPU, "0")]),
        lq("lq-b", "eng-alpha", "b"),
        lq("lq-c", "eng-alpha", "c"),
    ]
    wls: list[Wl] = [
        ("eng-alpha/b0", "lq-b", 0, one(10_000, 1, "one"), reserved("b", "on-demand", "one")),
        ("eng-alpha/b1", "lq-b", 0, one(50_000, 1, "one"), None),
        ("eng-alpha/c1", "lq-c", 0, one(75_000, 1, "one"), None),
    ]
    check(run(wls, queues, fair=True), {"eng-alpha/b1": ("b", {"one": {CPU: "on-demand"}})}, {"eng-alpha/c1"})


def _ab_fair(*extra_cohorts: dict[str, Any]) -> list[dict[str, Any]]:
    """Cohort A (10 on-demand) over ClusterQueues b and c without quota of their own."""
    return [
        _cohort("cohort-a", cpu="10"),
        *extra_cohorts,
        cq("b", "cohort-a", [quota("on-demand", CPU, "0")]),
        cq("c", "cohort-a", [quota("on-demand", CPU, "0")]),
        lq("lq-b", "eng-alpha", "b"),
        lq("lq-c", "eng-alpha", "c"),
    ]


def test_fair_sharing_schedule_singleton_cqs_and_cq_without_cohort() -> None:
    """a draws on cohort A's 10, b on its own 10 in cohort B, c (no cohort) on its own 10: all admitted."""
    queues = [
        _cohort("cohort-a", cpu="10"),
        _cohort("cohort-b"),
        cq("a", "cohort-a", [quota("on-demand", CPU, "0")]),
        cq("b", "cohort-b", [quota("on-demand", CPU, "10")]),
        cq("c", None, [quota("on-demand", CPU, "10")]),
        *(lq(f"lq-{n}", "eng-alpha", n) for n in "abc"),
    ]
    wls: list[Wl] = [(f"eng-alpha/{n}1", f"lq-{n}", 0, one(10_000, 1, "one"), None) for n in "abc"]
    want = {f"eng-alpha/{n}1": (n, {"one": {CPU: "on-demand"}}) for n in "abc"}
    check(run(wls, queues, fair=True), want, set())


@pytest.mark.parametrize(
    ("b1", "c1"),
    [
        pytest.param((99, 0), (101, 0), id="fair sharing schedule highest priority first"),
        pytest.param((101, 1000), (101, 0), id="fair sharing schedule earliest timestamp first"),
    ],
)
def test_fair_sharing_tie_break(b1: tuple[int, int], c1: tuple[int, int]) -> None:
    """Equal shares after admission (10 each of cohort A's 10): priority, then creation time decides."""
    wls: list[Wl] = [
        ("eng-alpha/b1", "lq-b", b1[0], one(10_000, 1, "one"), None),
        ("eng-alpha/c1", "lq-c", c1[0], one(10_000, 1, "one"), None),
    ]
    created = {"eng-alpha/b1": b1[1], "eng-alpha/c1": c1[1]}
    got = run(wls, _ab_fair(_cohort("cohort-b")), created, fair=True)
    check(got, {"eng-alpha/c1": ("c", {"one": {CPU: "on-demand"}})}, {"eng-alpha/b1"})


def _other_queues(names: str, **preemption: Any) -> list[dict[str, Any]]:
    """other-<name> ClusterQueues of 2 cpu each in cohort ``other``; the first gets ``preemption``."""
    out: list[dict[str, Any]] = []
    for i, name in enumerate(names.split()):
        spec = {"preemption": preemption} if i == 0 else {}
        out += [
            cq(f"other-{name}", "other", [quota("on-demand", CPU, "2")], **spec),
            lq("other", f"eng-{name}", f"other-{name}"),
        ]
    return out


def test_minimal_preemptions_when_target_queue_is_exhausted() -> None:
    """other-alpha holds 3 (one borrowed) and needs 2 more: its two priority -2 workloads go, not a3 (-1) and
    not other-beta's."""
    queues = _other_queues("alpha beta gamma", reclaimWithinCohort="Any", withinClusterQueue="LowerPriority")
    wls: list[Wl] = [
        ("eng-alpha/a1", "other", -2, one(1000), reserved("other-alpha", "on-demand")),
        ("eng-alpha/a2", "other", -2, one(1000), reserved("other-alpha", "on-demand")),
        ("eng-alpha/a3", "other", -1, one(1000), reserved("other-alpha", "on-demand")),
        *((f"eng-beta/b{i}", "other", 0, one(1000), reserved("other-beta", "on-demand")) for i in (1, 2, 3)),
        ("eng-alpha/incoming", "other", 0, one(2000), None),
    ]
    check(run(wls, queues), {}, {"eng-alpha/incoming"}, {"eng-alpha/a1", "eng-alpha/a2"})


def test_workload_only_eligible_to_preempt_if_it_fits_within_nominal_quota() -> None:
    """ "A workload is only eligible to do preemptions if it fits fully within nominal quota": 3 > other-alpha's
    2 means borrowing, and without borrowWithinCohort it may not preempt to borrow."""
    queues = _other_queues("alpha beta", reclaimWithinCohort="Any", withinClusterQueue="LowerPriority")
    wls: list[Wl] = [
        ("eng-alpha/a1", "other", -1, one(1000), reserved("other-alpha", "on-demand")),
        ("eng-beta/b1", "other", -1, one(1000), reserved("other-beta", "on-demand")),
        ("eng-alpha/incoming", "other", 1, one(3000), None),
    ]
    check(run(wls, queues), {}, {"eng-alpha/incoming"})


def test_with_fair_sharing_preempt_workload_from_cq_with_the_highest_share() -> None:
    """eng-beta needs 30 on-demand; eng-alpha (80 on 50) and eng-gamma (70 on 50) borrow: one workload of
    each goes (alpha1, then gamma1 as gamma's share becomes the highest)."""
    gamma = [
        cq("eng-gamma", "eng", [quota("on-demand", CPU, "50", "0")]),
        lq("main", "eng-gamma", "eng-gamma"),
    ]
    alpha = [
        (f"eng-alpha/alpha{i}", "", 0, one(20_000), reserved("eng-alpha", "on-demand")) for i in (1, 2, 3, 4)
    ]
    gammas = [
        (f"eng-gamma/gamma{i}", "", 0, one(10_000 if i == 1 else 20_000), reserved("eng-gamma", "on-demand"))
        for i in (1, 2, 3, 4)
    ]
    wls: list[Wl] = [
        ("eng-alpha/all-spot", "", 0, one(100_000), reserved("eng-alpha", "spot")),
        *alpha,
        *gammas,
        ("eng-beta/preemptor", "main", 0, one(30_000), None),
    ]
    got = run(wls, gamma, fair=True)
    check(got, {}, {"eng-beta/preemptor"}, {"eng-alpha/alpha1", "eng-gamma/gamma1"})


def test_multiple_preemptions_without_borrowing() -> None:
    """Two ClusterQueues of the same cohort each preempt inside themselves in one cycle."""
    queues = _other_queues("alpha beta", withinClusterQueue="LowerPriority")
    queues[2]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    wls: list[Wl] = [
        ("eng-alpha/a1", "other", 0, one(2000), reserved("other-alpha", "on-demand")),
        ("eng-beta/b1", "other", 0, one(2000), reserved("other-beta", "on-demand")),
        ("eng-alpha/preemptor", "other", 100, one(2000), None),
        ("eng-beta/preemptor", "other", 100, one(2000), None),
    ]
    left = {"eng-alpha/preemptor", "eng-beta/preemptor"}
    check(run(wls, queues), {}, left, {"eng-alpha/a1", "eng-beta/b1"})


def _default_queues(quotas: dict[str, dict[str, str]], preemption: dict[str, Any]) -> list[dict[str, Any]]:
    """ClusterQueues of cohort ``other`` on flavor ``default`` (``quotas``: name -> resource -> nominal);
    those named other-<team> get ``preemption`` and a LocalQueue ``other`` in namespace eng-<team>."""
    out: list[dict[str, Any]] = []
    for name, resources in quotas.items():
        flavor = {
            "name": "default",
            "resources": [{"name": r, "nominalQuota": v} for r, v in sorted(resources.items())],
        }
        spec = {"preemption": preemption} if name.startswith("other-") else {}
        out.append(cq(name, "other", [flavor], **spec))
        if name.startswith("other-"):
            out.append(lq("other", "eng-" + name.removeprefix("other-"), name))
    return out


WITHIN = {"withinClusterQueue": "LowerPriority"}


def test_multiple_preemptions_preemption_possible_after_earlier_workload_fits() -> None:
    queues = _default_queues({"other-alpha": {CPU: "1"}, "other-beta": {CPU: "2"}}, WITHIN)
    wls: list[Wl] = [
        ("eng-beta/b1", "other", 0, one(2000), reserved("other-beta", "default")),
        ("eng-alpha/fit", "other", 100, one(1000), None),
        ("eng-beta/preemptor", "other", 99, one(2000), None),
    ]
    want = {"eng-alpha/fit": ("other-alpha", {"main": {CPU: "default"}})}
    check(run(wls, queues), want, {"eng-beta/preemptor"}, {"eng-beta/b1"})


def test_multiple_preemptions_skip_preemption_when_shared_limited_resource() -> None:
    """Both preemptors ask 3 (2 own + 1 borrowed) and the cohort has 5: after alpha's preemption of a1 only
    one can fit, so beta's is skipped rather than wasted. Upstream's object sets borrowWithinCohort with
    reclaimWithinCohort unset, which the API defaults to Never and then refuses ("reclaimWithinCohort=Never
    and borrowWithinCohort.Policy!=Never"); here it is LowerPriority, which changes nothing in this case (no
    other ClusterQueue borrows)."""
    bwc = {
        **WITHIN,
        "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    }
    queues = _default_queues(
        {"other-alpha": {CPU: "2"}, "other-beta": {CPU: "2"}, "resource-bank": {CPU: "1"}}, bwc
    )
    wls: list[Wl] = [
        ("eng-alpha/a1", "other", 0, one(2000), reserved("other-alpha", "default")),
        ("eng-beta/b1", "other", 0, one(2000), reserved("other-beta", "default")),
        ("eng-alpha/preemptor", "other", 100, one(3000), None),
        ("eng-beta/pretending-preemptor", "other", 99, one(3000), None),
    ]
    left = {"eng-alpha/preemptor", "eng-beta/pretending-preemptor"}
    check(run(wls, queues), {}, left, {"eng-alpha/a1"})


def test_not_enough_resources() -> None:
    check(run([("sales/new", "main", 0, one(100_000, 1, "one"), None)]), {}, {"sales/new"})
