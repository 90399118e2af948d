"""Kueue admission: the quota tree (queues.md §1.2), flavor fungibility (§1.4) and the cycle (§1.3).

Worked examples W1, W2, W3 and W6 of queues.md §8 are reproduced number by number; each test names the
upstream behaviour it follows (kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go``,
``pkg/scheduler/flavorassigner/flavorassigner.go``, ``pkg/scheduler/scheduler.go``, ``pkg/cache/queue``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetlab.admission.flavors import (
    AssignmentMode,
    PreemptionMode,
    PreemptionOutcome,
    assign_flavors,
)
from fleetlab.admission.manager import (
    NO_LONGER_FITS,
    AdmissionManager,
    Nominee,
    PodSetRequest,
    Workload,
)
from fleetlab.admission.tree import FlavorResource, ResourceTree
from fleetlab.model.queues import QueueConfig, queue_config_from_objects

GPU = "nvidia.com/gpu"
G = FlavorResource("default", GPU)
#: Kueue's pending message (flavorassigner.go) for a one-podset GPU workload 2 GPUs short.
SHORT_BY_2 = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor default, "
    "2 more needed"
)


def quota(nominal: int, bl: int | None = None, ll: int | None = None, resource: str = GPU) -> dict[str, Any]:
    limits = {"borrowingLimit": bl, "lendingLimit": ll}
    return {"name": resource, "nominalQuota": nominal, **{k: v for k, v in limits.items() if v is not None}}


Flavors = Mapping[str, dict[str, Any]]


def groups(flavors: Flavors) -> list[dict[str, Any]]:
    """One resource group covering GPUs: ``{flavor: quota(...)}`` in try order."""
    return [
        {"coveredResources": [GPU], "flavors": [{"name": f, "resources": [q]} for f, q in flavors.items()]}
    ]


def cq(name: str, cohort: str | None = None, flavors: Flavors | None = None, **spec: Any) -> dict[str, Any]:
    body = {"resourceGroups": groups(flavors or {"default": quota(8)}), **spec}
    body.update({"cohortName": cohort} if cohort else {})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": body,
    }


def cohort(name: str, parent: str | None = None, flavors: Flavors | None = None) -> dict[str, Any]:
    body = ({"parentName": parent} if parent else {}) | (
        {"resourceGroups": groups(flavors)} if flavors else {}
    )
    return {"kind": "Cohort", "metadata": {"name": name}, "spec": body}


def config(*objects: dict[str, Any]) -> QueueConfig:
    """The objects plus every ResourceFlavor they name and one LocalQueue ``default/<cq>`` per ClusterQueue."""
    flavors = {"default"} | {
        f["name"] for o in objects for g in o["spec"].get("resourceGroups", []) for f in g["flavors"]
    }
    extra = [{"kind": "ResourceFlavor", "metadata": {"name": f}} for f in sorted(flavors)]
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    lqs = [{"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in names]
    return queue_config_from_objects([*extra, *objects, *lqs])


def wl(wid: str, queue: str, gpus: int, priority: int = 0, t: int = 0, count: int = 1) -> Workload:
    return Workload(wid, "default", queue, priority, t, (PodSetRequest("main", count, {GPU: gpus}),))


def admit_ids(m: AdmissionManager, now: int = 0) -> list[str]:
    return [a.workload_id for a in m.cycle(now)]


def reasons(m: AdmissionManager) -> dict[str, str]:
    return dict(m.pending())


# ---- W1, W2, W3: the resource tree -----------------------------------------------------------------------------


def test_w1_flat_cohort_no_limits() -> None:
    """W1: flat cohort, no limits; a borrows 4 of b's nominal, so b can admit only 4 (resource_node.go)."""
    m = AdmissionManager(config(cq("a", "c"), cq("b", "c")))
    t = m.tree
    a, b, c = t.cluster_queue("a"), t.cluster_queue("b"), t.cohorts["c"]
    assert (a.subtree_quota[G], a.local_quota.get(G, 0), c.subtree_quota[G]) == (8, 0, 16)
    assert t.available(a, G) == 16 and t.potential_available(a, G) == 16
    m.submit(wl("a1", "a", 12))
    [admission] = m.cycle(0)
    assert admission.borrowing and admission.flavors == {"main": {GPU: "default"}}
    assert (a.usage[G], c.usage[G]) == (12, 12)
    assert t.available(b, G) == 4 and t.is_borrowing(a, G)
    status = m.queue_status()
    assert status["a"]["default/nvidia.com/gpu"] == {"nominal": 8, "usage": 12, "borrowed": 4, "lent": 0}
    assert status["b"]["default/nvidia.com/gpu"] == {"nominal": 8, "usage": 0, "borrowed": 0, "lent": 4}
    m.submit(wl("b1", "b", 6))
    assert m.cycle(1) == []
    # 6 > 4 but within b's nominal: preemption could apply (W4); without a strategy there are no candidates.
    assert reasons(m)["b1"] == SHORT_BY_2


def test_w2_borrowing_limit_and_lending_limit() -> None:
    """W2: a's borrowingLimit 2 caps it at 10; b's lendingLimit 4 keeps 4 private (resource_node.go)."""
    m = AdmissionManager(
        config(cq("a", "c", {"default": quota(8, bl=2)}), cq("b", "c", {"default": quota(8, ll=4)}))
    )
    t = m.tree
    a, b, c = t.cluster_queue("a"), t.cluster_queue("b"), t.cohorts["c"]
    assert (a.local_quota.get(G, 0), b.local_quota[G], c.subtree_quota[G]) == (0, 4, 12)
    assert (t.available(a, G), t.available(b, G)) == (10, 16)
    assert (t.potential_available(a, G), t.potential_available(b, G)) == (10, 16)
    m.submit(wl("a1", "a", 10))
    assert admit_ids(m) == ["a1"]
    assert (a.usage[G], c.usage[G], t.available(a, G), t.available(b, G)) == (10, 10, 0, 6)
    m.submit(wl("b1", "b", 6))
    assert admit_ids(m) == ["b1"]
    assert (b.usage[G], c.usage[G], t.available(b, G)) == (6, 12, 0)
    m.submit(wl("b2", "b", 2))
    assert m.cycle(2) == []  # b at 6 + 2 = nominal still does not fit: a holds 2 of b's lendable 4
    assert m.queue_status()["b"]["default/nvidia.com/gpu"]["lent"] == 2
    # Without a's borrowingLimit: a reaches its 8 plus b's lendable 4, never b's private 4.
    free = AdmissionManager(config(cq("a", "c"), cq("b", "c", {"default": quota(8, ll=4)})))
    assert free.tree.available(free.tree.cluster_queue("a"), G) == 12


def w3_objects(d_borrowing_limit: int | None = 0) -> list[dict[str, Any]]:
    return [
        cohort("r", flavors={"default": quota(4)}),
        cohort("x", parent="r", flavors={"default": quota(0, ll=2)}),
        cq("a", "x", {"default": quota(6)}),
        cq("b", "x", {"default": quota(2)}),
        cq("d", "r", {"default": quota(8, bl=d_borrowing_limit)}),
    ]


def test_w3_two_level_tree_with_cohort_quota_and_cohort_lending_limit() -> None:
    """W3: r's own quota 4 joins the pool, x lends only 2 upward; d keeps only 4 of its 8 when a holds 16."""
    m = AdmissionManager(config(*w3_objects()))
    t = m.tree
    a, b, d = (t.cluster_queue(n) for n in "abd")
    x, r = t.cohorts["x"], t.cohorts["r"]
    assert (x.subtree_quota[G], x.local_quota[G], r.subtree_quota[G]) == (8, 6, 14)
    assert t.available(a, G) == 20
    assert (t.available(d, G), t.potential_available(d, G), t.potential_available(x, G)) == (8, 8, 20)
    m.submit(wl("a1", "a", 10))
    assert admit_ids(m) == ["a1"]
    assert (a.usage[G], x.usage[G], r.usage[G]) == (10, 10, 4)
    assert (t.available(b, G), t.available(d, G), t.available(a, G)) == (10, 8, 10)
    m.submit(wl("a2", "a", 6))
    assert admit_ids(m) == ["a2"]
    assert (a.usage[G], x.usage[G], r.usage[G]) == (16, 16, 10)
    assert (t.available(d, G), t.available(b, G)) == (4, 4)
    assert t.is_borrowing(a, G) and t.is_borrowing(x, G)
    assert m.queue_status()["d"]["default/nvidia.com/gpu"]["lent"] == 4  # a holds 4 of d's nominal
    assert m.queue_status()["b"]["default/nvidia.com/gpu"]["lent"] == 2
    m.submit(wl("d1", "d", 5))
    assert m.cycle(2) == []


def test_w3_variant_d_first() -> None:
    """W3 variant: d admits 8 first; a then reaches x's 8 plus r's 4; without d's borrowingLimit d could take
    r's 4 and x's lendable 2, but never x's localQuota 6."""
    m = AdmissionManager(config(*w3_objects()))
    m.submit(wl("d1", "d", 8))
    assert admit_ids(m) == ["d1"]
    t = m.tree
    assert t.cohorts["r"].usage[G] == 8
    assert (t.available(t.cluster_queue("a"), G), t.available(t.cluster_queue("d"), G)) == (12, 0)
    free = AdmissionManager(config(*w3_objects(d_borrowing_limit=None)))
    free.tree.add_cq_usage("d", {G: 8})
    assert free.tree.available(free.tree.cluster_queue("d"), G) == 6


# ---- W6 and fungibility -----------------------------------------------------------------------------------------


def w6_manager(fungibility: dict[str, str] | None, reserved_usage: int) -> AdmissionManager:
    spec = {"flavorFungibility": fungibility} if fungibility else {}
    m = AdmissionManager(
        config(
            cq("a", "c", {"reserved": quota(8), "spot": quota(8)}, **spec),
            cq("b", "c", {"reserved": quota(8), "spot": quota(0)}),
        )
    )
    m.submit(wl("running", "a", reserved_usage))
    assert [a.flavors["main"][GPU] for a in m.cycle(0)] == ["reserved"]
    return m


@pytest.mark.parametrize(
    ("fungibility", "reserved_usage", "flavor", "borrowing"),
    [
        (None, 6, "reserved", True),  # whenCanBorrow: MayStopSearch (default) stops at a borrowing fit
        ({"whenCanBorrow": "MayStopSearch"}, 6, "reserved", True),
        ({"whenCanBorrow": "TryNextFlavor"}, 6, "spot", False),  # goes on to a fit without borrowing
        ({"whenCanBorrow": "Borrow"}, 6, "reserved", True),  # the old name of MayStopSearch
        (None, 4, "reserved", False),  # a fit without borrowing always stops the search
        ({"whenCanBorrow": "TryNextFlavor"}, 4, "reserved", False),
    ],
)
def test_w6_flavor_fungibility(
    fungibility: dict[str, str] | None, reserved_usage: int, flavor: str, borrowing: bool
) -> None:
    """W6: reserved fits only by borrowing 2, spot fits outright; whenCanBorrow picks (shouldTryNextFlavor)."""
    m = w6_manager(fungibility, reserved_usage)
    m.submit(wl("w", "a", 4))
    [admission] = m.cycle(1)
    assert (admission.flavors["main"][GPU], admission.borrowing) == (flavor, borrowing)


@pytest.mark.parametrize(
    ("fungibility", "flavor", "mode"),
    [
        ({}, "lent", AssignmentMode.FIT),  # Preempt → TryNextFlavor (default); borrowing fit → MayStopSearch
        ({"whenCanPreempt": "MayStopSearch"}, "own", AssignmentMode.PREEMPT),
        ({"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}, "lent", AssignmentMode.FIT),
        (
            {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "BorrowingOverPreemption",
            },
            "lent",
            AssignmentMode.FIT,
        ),
        (
            {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "PreemptionOverBorrowing",
            },
            "own",
            AssignmentMode.PREEMPT,
        ),
    ],
)
def test_fungibility_between_preemption_and_borrowing(
    fungibility: dict[str, str], flavor: str, mode: AssignmentMode
) -> None:
    """(Preempt, NoBorrow) on "own" vs (Fit, Borrow) on "lent": whenCanPreempt and preference decide
    (flavorassigner.go isPreferred: BorrowingOverPreemption compares preemption mode first)."""
    m = AdmissionManager(
        config(
            cq("q", "c", {"own": quota(4), "lent": quota(0)}, flavorFungibility=fungibility),
            cq("o", "c", {"own": quota(0), "lent": quota(8)}),
        )
    )
    m.tree.add_cq_usage("o", {FlavorResource("own", GPU): 4})  # o borrowed all of q's "own": q may reclaim it
    reclaim = PreemptionOutcome(PreemptionMode.RECLAIM, 0)  # the victim is o's, so Reclaim, not Preempt
    assignment = assign_flavors(m.tree, m.rules["q"], wl("w", "q", 4).podsets, lambda _cq, _amounts: reclaim)
    assert assignment.flavors() == {"main": {GPU: flavor}}
    assert assignment.mode == mode


def test_uncovered_resource_and_maximum_capacity_messages() -> None:
    """Kueue's wording: "resource R unavailable in ClusterQueue" and the maximum-capacity message; a zero
    request of an uncovered resource is ignored (kueue#8079); a covered ``pods`` counts pods."""
    m = AdmissionManager(config(cq("q", flavors={"default": quota(8)})))
    m.submit(Workload("cpu", "default", "q", 0, 0, (PodSetRequest("main", 1, {"cpu": 1000, GPU: 1}),)))
    m.submit(Workload("zero", "default", "q", 0, 0, (PodSetRequest("main", 1, {"cpu": 0, GPU: 1}),)))
    m.submit(Workload("big", "default", "q", 0, 0, (PodSetRequest("main", 3, {GPU: 4}),)))
    for now in range(3):
        m.cycle(now)
    assert (
        reasons(m)["cpu"]
        == "couldn't assign flavors to pod set main: resource cpu unavailable in ClusterQueue"
    )
    assert reasons(m)["big"] == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor default, "
        "previously considered podsets requests (0) + current podset request (12) > maximum capacity (8)"
    )
    assert "zero" in m.admitted_workloads()
    pods = {
        "coveredResources": [GPU, "pods"],
        "flavors": [{"name": "default", "resources": [quota(8), quota(2, resource="pods")]}],
    }
    p = AdmissionManager(
        config({"kind": "ClusterQueue", "metadata": {"name": "p"}, "spec": {"resourceGroups": [pods]}})
    )
    p.submit(
        Workload(
            "two", "default", "p", 0, 0, (PodSetRequest("a", 1, {GPU: 1}), PodSetRequest("b", 1, {GPU: 1}))
        )
    )
    p.submit(Workload("third", "default", "p", 0, 1, (PodSetRequest("a", 1, {GPU: 1}),)))
    assert admit_ids(p) == ["two"] and p.cycle(1) == []
    assert p.queue_status()["p"]["default/pods"]["usage"] == 2


# ---- the cycle ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "before_release", "after_release"),
    [("StrictFIFO", [], ["big", "small"]), ("BestEffortFIFO", ["small"], ["big"])],
)
def test_strict_fifo_blocks_best_effort_sets_aside(
    strategy: str, before_release: list[str], after_release: list[str]
) -> None:
    """StrictFIFO: the older head that does not fit blocks newer ones; BestEffortFIFO sets it aside and a newer
    workload that fits is admitted; releasing quota requeues it (pkg/cache/queue RequeueIfNotPresent)."""
    m = AdmissionManager(config(cq("q", flavors={"default": quota(8)}, queueingStrategy=strategy)))
    m.submit(wl("running", "q", 6, t=0))
    assert admit_ids(m) == ["running"]
    m.submit(wl("big", "q", 4, t=1))
    m.submit(wl("small", "q", 2, t=2))
    assert [i for now in range(1, 5) for i in admit_ids(m, now)] == before_release
    assert not m.has_work()
    assert reasons(m)["big"] == SHORT_BY_2
    if strategy == "StrictFIFO":
        assert reasons(m)["small"] == "Pending: not yet nominated in ClusterQueue q"
    m.finish("running")
    assert [i for now in range(5, 9) for i in admit_ids(m, now)] == after_release
    assert sorted(m.admitted_workloads()) == ["big", "small"]


def test_classic_order_across_heads() -> None:
    """makeClassicalIterator: not borrowing before borrowing, then higher priority, then FIFO; the borrowing
    head, though of the highest priority, comes last and no longer fits (scheduler.go)."""
    m = AdmissionManager(
        config(
            cq("x", "c", {"default": quota(0)}), *(cq(n, "c", {"default": quota(4)}) for n in ("y", "z", "w"))
        )
    )
    m.submit(wl("borrower", "x", 4, priority=100, t=0))
    m.submit(wl("low", "y", 4, priority=1, t=5))
    m.submit(wl("late", "z", 4, priority=10, t=9))
    m.submit(wl("early", "w", 4, priority=10, t=3))
    assert admit_ids(m) == ["early", "late", "low"]
    assert reasons(m)["borrower"] == NO_LONGER_FITS


def test_recheck_within_cycle_then_requeue() -> None:
    """Two heads nominated against the same snapshot both fit; after the non-borrowing one is admitted the
    other is re-checked, skipped ("no longer fits"), retried at once, then set aside as it no longer fits."""
    m = AdmissionManager(config(cq("a", "c", {"default": quota(4)}), cq("b", "c", {"default": quota(4)})))
    m.submit(wl("a1", "a", 6, t=0))
    m.submit(wl("b1", "b", 4, t=1))
    assert admit_ids(m) == ["b1"]
    assert reasons(m)["a1"] == NO_LONGER_FITS
    assert m.has_work()
    assert m.cycle(1) == []
    assert reasons(m)["a1"] == SHORT_BY_2
    assert not m.has_work()


@pytest.mark.parametrize(("reclaim", "admitted"), [("Never", []), ("Any", ["a2"])])
def test_preempting_head_without_candidates_reserves_quota_for_the_cycle(
    reclaim: str, admitted: list[str]
) -> None:
    """W1 state; b's 6-GPU head needs preemption but has no candidates: unless reclaimWithinCohort is Any it
    holds its nominal share for the rest of the cycle, so a's borrowing head (ordered after it) does not fit
    (scheduler.go reserveCapacityForUnreclaimablePreempt)."""
    m = AdmissionManager(config(cq("a", "c"), cq("b", "c", preemption={"reclaimWithinCohort": reclaim})))
    m.submit(wl("a1", "a", 12))
    assert admit_ids(m) == ["a1"]
    m.submit(wl("b1", "b", 6, t=1))
    m.submit(wl("a2", "a", 2, t=2))
    assert admit_ids(m, 1) == admitted
    assert m.queue_status()["b"]["default/nvidia.com/gpu"]["usage"] == 0  # the reservation lasted one cycle


def test_finish_and_evict_release_usage_and_eviction_requeues_by_eviction_time() -> None:
    """finish releases quota; evict releases it and requeues the workload ordered by the eviction time
    (Kueue's Eviction requeuing timestamp), so a workload created in between goes first."""
    m = AdmissionManager(config(cq("q", flavors={"default": quota(4)})))
    m.submit(wl("first", "q", 4, t=0))
    assert admit_ids(m) == ["first"]
    m.submit(wl("second", "q", 4, t=10))
    assert m.cycle(1) == []
    m.evict("first", 20)
    assert m.queue_status()["q"]["default/nvidia.com/gpu"]["usage"] == 0
    assert admit_ids(m, 21) == ["second"]
    m.finish("second")
    assert m.queue_status()["q"]["default/nvidia.com/gpu"]["usage"] == 0
    assert admit_ids(m, 22) == ["first"]
    m.finish("first")
    assert m.pending() == [] and not m.has_work()
    # Preempted workloads keep their creation time in Kueue: opt in with keep_creation_timestamp.
    m.submit(wl("old", "q", 4, t=30))
    assert admit_ids(m, 30) == ["old"]
    m.submit(wl("new", "q", 4, t=40))
    m.cycle(41)
    m.evict("old", 50, keep_creation_timestamp=True)
    assert admit_ids(m, 51) == ["old"]


def test_input_errors_are_clear() -> None:
    """Unknown LocalQueue, duplicate id, finishing an unknown workload, evicting a pending one."""
    m = AdmissionManager(config(cq("q")))
    with pytest.raises(
        ValueError, match=r"LocalQueue default/nope doesn't exist \(known LocalQueues: default/q\)"
    ):
        m.submit(wl("w", "nope", 1))
    m.submit(wl("w", "q", 1))
    with pytest.raises(ValueError, match="already submitted"):
        m.submit(wl("w", "q", 1))
    with pytest.raises(ValueError, match="is not admitted"):
        m.evict("w", 0)
    with pytest.raises(ValueError, match="unknown workload 'x'"):
        m.finish("x")
    m.finish("w")  # a pending workload is simply dropped
    assert m.pending() == []


def test_unchanged_state_makes_cycle_cheap() -> None:
    """Heads known to be inadmissible are not nominated again until usage changes in their tree."""
    m = AdmissionManager(
        config(
            cq("s", flavors={"default": quota(2)}, queueingStrategy="StrictFIFO"),
            cq("e", flavors={"default": quota(2)}),
        )
    )
    for i in range(5):
        m.submit(wl(f"s{i}", "s", 4, t=i))
        m.submit(wl(f"e{i}", "e", 4, t=i))
    for now in range(10):
        m.cycle(now)
    assert not m.has_work()
    before = m.cycles
    for now in range(10, 100):
        assert m.cycle(now) == []
    assert m.cycles == before


class _EvictLowest:
    """A stand-in preemption strategy: preempt the lowest-priority admitted workload of the same CQ."""

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> PreemptionOutcome | None:
        found = any(
            a.cluster_queue == cluster_queue and a.workload.priority < workload.priority
            for a in manager.admitted_workloads().values()
        )
        return PreemptionOutcome(PreemptionMode.PREEMPT, 0) if found else None

    def targets(self, manager: AdmissionManager, nominee: Nominee) -> Sequence[str]:
        mine = [a for a in manager.admitted_workloads().values() if a.cluster_queue == nominee.cluster_queue]
        return [min(mine, key=lambda a: a.workload.priority).workload.id] if mine else []


def test_preemption_hook_issues_requests_and_admits_after_eviction() -> None:
    """A strategy's targets are requested, not admitted in the same cycle ("Pending the preemption of N
    workload(s)"); after the victim is evicted the preemptor is admitted in a later cycle (scheduler.go)."""
    m = AdmissionManager(
        config(cq("q", flavors={"default": quota(4)}, preemption={"withinClusterQueue": "LowerPriority"})),
        preemption=_EvictLowest(),
    )
    m.submit(wl("low", "q", 4, priority=0))
    assert admit_ids(m) == ["low"]
    m.submit(wl("high", "q", 4, priority=10, t=1))
    assert m.cycle(1) == []
    [request] = m.take_preemptions()
    assert (request.preemptor_id, request.victims) == ("high", ("low",))
    assert reasons(m)["high"].endswith(". Pending the preemption of 1 workload(s)")
    assert not m.has_work()  # nothing changes until the victim releases its quota
    m.evict("low", 2, keep_creation_timestamp=True)
    assert admit_ids(m, 3) == ["high"]
    assert m.take_preemptions() == []


def test_multiple_podsets_accumulate_usage_across_podsets() -> None:
    """Later podsets see the usage earlier podsets put on a flavor (flavorassigner assumedUsage), so a
    workload whose podsets fit one by one but not together takes the next flavor."""
    m = AdmissionManager(config(cq("q", flavors={"small": quota(4), "large": quota(8)})))
    podsets = (PodSetRequest("driver", 1, {GPU: 2}), PodSetRequest("workers", 2, {GPU: 2}))
    m.submit(Workload("w", "default", "q", 0, 0, podsets))
    [admission] = m.cycle(0)
    assert admission.flavors == {"driver": {GPU: "small"}, "workers": {GPU: "large"}}
    assert m.queue_status()["q"] == {
        "small/nvidia.com/gpu": {"nominal": 4, "usage": 2, "borrowed": 0, "lent": 0},
        "large/nvidia.com/gpu": {"nominal": 8, "usage": 4, "borrowed": 0, "lent": 0},
    }


def test_tree_rejects_cycles_built_by_hand() -> None:
    """ResourceTree refuses a cycle of parents even when built without a validated config."""
    with pytest.raises(ValueError, match="cycle"):
        ResourceTree({}, {"p": ("q", {}), "q": ("p", {})})


# ---- properties ---------------------------------------------------------------------------------------------

FLAVORS = ("f1", "f2")
_limit = st.none() | st.integers(0, 6)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """A random cohort forest (cohort quota and limits included), ClusterQueues in it, and operations."""
    objects: list[dict[str, Any]] = []
    cohorts = [f"c{i}" for i in range(draw(st.integers(1, 3)))]
    for i, name in enumerate(cohorts):
        parent = draw(st.sampled_from([None, *cohorts[:i]]))
        flavors = {}
        for f in FLAVORS:
            if draw(st.booleans()):
                limits = (draw(_limit), draw(_limit)) if parent else (None, None)
                flavors[f] = quota(draw(st.integers(0, 4)), *limits)
        objects.append(cohort(name, parent, flavors or None))
    n_cqs = draw(st.integers(1, 5))
    for j in range(n_cqs):
        home = draw(st.sampled_from([*cohorts, *cohorts, None]))
        flavors = {}
        for f in draw(st.permutations(FLAVORS)):
            nominal = draw(st.integers(0, 8))
            bl = draw(_limit) if home else None
            ll = draw(st.none() | st.integers(0, nominal)) if home else None
            flavors[f] = quota(nominal, bl, ll)
        spec = {
            "queueingStrategy": draw(st.sampled_from(["StrictFIFO", "BestEffortFIFO"])),
            "flavorFungibility": {"whenCanBorrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"]))},
        }
        objects.append(cq(f"q{j}", home, flavors, **spec))
    submit = st.tuples(
        st.just("submit"), st.integers(0, n_cqs - 1), st.integers(1, 9), st.integers(0, 2), st.integers(1, 2)
    )
    release = st.tuples(st.sampled_from(["finish", "evict"]), st.integers(0, 50))
    return objects, draw(st.lists(st.one_of(submit, submit, release), min_size=4, max_size=40))


def _subtree(node: Any) -> list[Any]:
    out = [node]
    for child in node.children:
        out += _subtree(child)
    return out


def check_invariants(m: AdmissionManager) -> None:
    t = m.tree
    # The tree's incremental usage equals a from-scratch recomputation (accumulateFromChild).
    recomputed = t.recomputed_usage()
    for name, node in t.cohorts.items():
        assert {fr: v for fr, v in node.usage.items() if v} == recomputed[name], name
    # Each ClusterQueue's usage is the sum of its admitted workloads' usage.
    totals: dict[str, dict[FlavorResource, int]] = {n: {} for n in t.cluster_queues}
    for admitted in m.admitted_workloads().values():
        for fr, v in admitted.usage.items():
            totals[admitted.cluster_queue][fr] = totals[admitted.cluster_queue].get(fr, 0) + v
    for name, node in t.cluster_queues.items():
        assert {fr: v for fr, v in node.usage.items() if v} == {fr: v for fr, v in totals[name].items() if v}
    for root in t.roots():
        members = _subtree(root)
        for node in members:
            for fr, q in node.quotas.items():
                used = node.usage.get(fr, 0)
                assert used >= 0
                # Never beyond nominal + borrowingLimit (a CQ), SubtreeQuota + borrowingLimit (a cohort).
                if q.borrowing_limit is not None:
                    assert used <= node.subtree_quota[fr] + q.borrowing_limit, (node, fr)
                # A lendingLimit is never breached: what the rest of the tree uses beyond its own quota
                # comes out of this node's lendable share, min(lendingLimit, SubtreeQuota).
                if q.lending_limit is not None:
                    inside = {id(n) for n in _subtree(node)}
                    outside = [n for n in members if id(n) not in inside]
                    outside_use = sum(n.usage.get(fr, 0) for n in outside if not n.is_cohort)
                    outside_quota = sum(n.quotas[fr].nominal for n in outside if fr in n.quotas)
                    assert outside_use - outside_quota <= min(q.lending_limit, node.subtree_quota[fr]), (
                        node,
                        fr,
                    )
            if node.parent is None and not node.is_cohort:
                for fr, q in node.quotas.items():
                    assert node.usage.get(fr, 0) <= q.nominal
        for fr, sq in root.subtree_quota.items():
            assert root.usage.get(fr, 0) <= sq


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_properties_quota_limits_and_incremental_usage(
    world: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    """For random trees and random submit/finish/evict sequences, with cycles in between: usage never exceeds nominal +
    borrowingLimit, no lendingLimit is breached, roots never over-admit, and incremental usage equals a
    from-scratch recomputation (resource_node.go addUsage/removeUsage vs updateCohortResourceNode)."""
    objects, ops = world
    m = AdmissionManager(config(*objects))
    now, serial = 0, 0
    for op in ops:
        now += 1
        if op[0] == "submit":
            _, q, gpus, priority, count = op
            serial += 1
            m.submit(wl(f"w{serial}", f"q{q}", gpus, priority=priority, t=now, count=count))
        else:
            admitted = sorted(m.admitted_workloads())
            if admitted:
                victim = admitted[op[1] % len(admitted)]
                m.finish(victim) if op[0] == "finish" else m.evict(victim, now)
        check_invariants(m)
        for _ in range(2):
            m.cycle(now)
            check_invariants(m)
    while m.has_work():  # a cycle loop always settles
        m.cycle(now)
    check_invariants(m)
