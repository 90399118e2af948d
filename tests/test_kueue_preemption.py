"""Kueue classic preemption (queues.md §1.5; upstream ``pkg/scheduler/preemption/preemption.go``,
``common/ordering.go``, ``classical/``): worked examples W4 and W5 of queues.md §8 number by number, the
three policies, borrowWithinCohort's threshold, fill-back minimality, the end-to-end request/evict/admit
flow through :class:`AdmissionManager`, and a random-sequence property on quota limits and tree usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetlab.admission.flavors import PreemptionOutcome, assign_flavors
from fleetlab.admission.manager import AdmissionManager, Nominee, PodSetRequest, Workload
from fleetlab.admission.preemption import (
    Candidate,
    ClassicPreemption,
    candidate_order_key,
    fill_back,
    find_candidates,
    minimal_preemptions,
    order_candidates,
    over_nominal_below_lca,
    workload_fits,
)
from fleetlab.admission.tree import FlavorResource, Quota, ResourceTree
from fleetlab.model.queues import QueueConfig, queue_config_from_objects

GPU = "nvidia.com/gpu"
G = FlavorResource("default", GPU)


def quota(nominal: int, bl: int | None = None, ll: int | None = None) -> dict[str, Any]:
    limits = {"borrowingLimit": bl, "lendingLimit": ll}
    return {"name": GPU, "nominalQuota": nominal, **{k: v for k, v in limits.items() if v is not None}}


def cq(
    name: str, cohort: str | None = None, q: dict[str, Any] | None = None, **preemption: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "resourceGroups": [
            {"coveredResources": [GPU], "flavors": [{"name": "default", "resources": [q or quota(8)]}]}
        ]
    }
    if cohort:
        body["cohortName"] = cohort
    if preemption:
        body["preemption"] = preemption
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": body,
    }


def cohort(name: str, parent: str | None = None) -> dict[str, Any]:
    return {"kind": "Cohort", "metadata": {"name": name}, "spec": {"parentName": parent} if parent else {}}


def config(*objects: dict[str, Any]) -> QueueConfig:
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    lqs = [{"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in names]
    return queue_config_from_objects(
        [{"kind": "ResourceFlavor", "metadata": {"name": "default"}}, *objects, *lqs]
    )


def wl(wid: str, queue: str, gpus: int, priority: int = 0, t: int = 0) -> Workload:
    return Workload(wid, "default", queue, priority, t, (PodSetRequest("main", 1, {GPU: gpus}),))


def manager(*objects: dict[str, Any]) -> AdmissionManager:
    return AdmissionManager(config(*objects), preemption=ClassicPreemption())


def run(m: AdmissionManager, *workloads: tuple[Workload, int]) -> None:
    """Submit and admit each workload in its own cycle at the given time (its admission time)."""
    for w, now in workloads:
        m.submit(w)
        assert [a.workload_id for a in m.cycle(now)] == [w.id], w.id


def snapshot(tree: ResourceTree) -> dict[str, dict[FlavorResource, int]]:
    nodes = {**tree.cohorts, **tree.cluster_queues}
    return {name: {fr: v for fr, v in n.usage.items() if v} for name, n in nodes.items()}


def nominee(m: AdmissionManager, w: Workload) -> Nominee:
    """What the cycle would nominate for ``w`` (flavor assignment with the strategy's hook)."""
    queue = w.local_queue
    strategy = ClassicPreemption()

    def hook(cluster_queue: str, amounts: Mapping[FlavorResource, int]) -> PreemptionOutcome | None:
        return strategy.can_preempt(m, w, cluster_queue, amounts)

    return Nominee(w, queue, w.created_ms, assign_flavors(m.tree, m.rules[queue], w.podsets, hook))


def targets(m: AdmissionManager, w: Workload) -> tuple[str, ...]:
    """Victims for ``w``; the tree's usage must be exactly what it was before."""
    before = snapshot(m.tree)
    found = tuple(ClassicPreemption().targets(m, nominee(m, w)))
    assert snapshot(m.tree) == before
    return found


# ---- W4 and W5 ------------------------------------------------------------------------------------------------


def w4() -> AdmissionManager:
    m = manager(cq("a", "c", reclaimWithinCohort="Any"), cq("b", "c"))
    run(m, (wl("b1", "b", 4), 1), (wl("b2", "b", 4), 2), (wl("b3", "b", 4), 3), (wl("a1", "a", 2), 4))
    return m


def test_w4_classic_reclaim_within_cohort() -> None:
    """W4: a (reclaimWithinCohort Any, under nominal) reclaims from borrowing b: candidates b3, b2, b1 (most
    recently admitted first); the attempt without borrowing stops at b3, fill-back has nothing to do
    (preemption.go ``getTargets`` / ``minimalPreemptions``)."""
    m = w4()
    t = m.tree
    a, b, c = t.cluster_queue("a"), t.cluster_queue("b"), t.cohorts["c"]
    assert (b.usage[G], a.usage[G], c.usage[G]) == (12, 2, 14)
    a2 = wl("a2", "a", 4)
    assert t.available(a, G) == 2
    cands = order_candidates(find_candidates(m, a2, "a", {G}, 0), "a")
    assert [x.id for x in cands] == ["b3", "b2", "b1"]
    assert targets(m, a2) == ("b3",)
    # Once b3 is gone b is back at nominal: b2 would no longer qualify as a second victim.
    with t.simulate_removal([("b", {G: 4})]):
        assert (b.usage[G], c.usage[G], t.available(a, G)) == (8, 10, 6)
        assert workload_fits(t, "a", {G: 4}, allow_borrowing=False)
        assert not over_nominal_below_lca(t, "b", "a", {G})


def test_w4_end_to_end_request_evict_admit() -> None:
    """W4 through the manager: the cycle admits nothing and requests b3's preemption; after the eviction
    (keeping the creation timestamp, as Kueue does) a2 is admitted: U(a) = 6, U(b) = 8 (scheduler.go)."""
    m = w4()
    m.submit(wl("a2", "a", 4))
    assert m.cycle(10) == []
    [request] = m.take_preemptions()
    assert (request.preemptor_id, request.cluster_queue, request.victims, request.issued_ms) == (
        "a2",
        "a",
        ("b3",),
        10,
    )
    assert "Pending the preemption of 1 workload(s)" in dict(m.pending())["a2"]
    for victim in request.victims:
        m.evict(victim, 11, keep_creation_timestamp=True)
    assert [x.workload_id for x in m.cycle(12)] == ["a2"]
    t = m.tree
    assert (t.cluster_queue("a").usage[G], t.cluster_queue("b").usage[G]) == (6, 8)
    assert m.take_preemptions() == []


def w5() -> AdmissionManager:
    m = manager(cq("q", None, quota(8), withinClusterQueue="LowerPriority"))
    run(m, (wl("w1", "q", 1, 1), 1), (wl("w2", "q", 2, 2), 2), (wl("w3", "q", 4, 3), 3))
    return m


def test_w5_fill_back_minimisation() -> None:
    """W5: greedy removes w1, w2, w3 (lower priority first); fill-back re-adds w2 (avail 6 ≥ 5) then w1
    (avail 5 ≥ 5): only w3 is preempted (preemption.go ``fillBackWorkloads``)."""
    m = w5()
    t, node = m.tree, m.tree.cluster_queue("q")
    assert (node.usage[G], t.available(node, G)) == (7, 1)
    p = wl("p", "q", 5, 10)
    cands = order_candidates(find_candidates(m, p, "q", {G}, 0), "q")
    assert [x.id for x in cands] == ["w1", "w2", "w3"]
    assert targets(m, p) == ("w3",)
    # fill_back alone, from the state with all three removed.
    for x in cands:
        t.remove_cq_usage("q", x.usage)
    assert t.available(node, G) == 8
    kept = fill_back(t, "q", {G: 5}, list(cands), allow_borrowing=True)
    assert [x.id for x in kept] == ["w3"]
    assert (node.usage[G], t.available(node, G)) == (3, 5)  # w1, w2 re-added; w3 still removed
    t.add_cq_usage("q", kept[0].usage)
    assert node.usage[G] == 7


def test_w5_end_to_end() -> None:
    """W5 through the manager: only w3 is requested; after its eviction p is admitted, U = 3 + 5 = 8."""
    m = w5()
    m.submit(wl("p", "q", 5, 10))
    assert m.cycle(10) == []
    assert [r.victims for r in m.take_preemptions()] == [("w3",)]
    m.evict("w3", 11, keep_creation_timestamp=True)
    assert [x.workload_id for x in m.cycle(12)] == ["p"]
    assert m.tree.cluster_queue("q").usage[G] == 8
    assert sorted(m.admitted_workloads()) == ["p", "w1", "w2"]


# ---- policies -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "same_created", "expected"),
    [
        ("Never", 20, ()),
        ("LowerPriority", 20, ()),
        ("LowerOrNewerEqualPriority", 20, ("low", "same")),
        ("LowerOrNewerEqualPriority", 5, ()),
    ],
)
def test_within_cluster_queue_policies(policy: str, same_created: int, expected: tuple[str, ...]) -> None:
    """withinClusterQueue (preemption.go ``findCandidates``): Never takes nothing; LowerPriority only strictly
    lower priorities (not enough here); LowerOrNewerEqualPriority also an equal priority created after the
    preemptor, never an older one."""
    m = manager(cq("q", None, quota(4), withinClusterQueue=policy))
    run(m, (wl("low", "q", 2, 0, t=0), 1), (wl("same", "q", 2, 5, t=same_created), 2))
    p = wl("p", "q", 4, 5, t=10)
    assert set(targets(m, p)) == set(expected)
    assert (ClassicPreemption().can_preempt(m, p, "q", {G: 4}) is not None) == bool(expected)


@pytest.mark.parametrize(
    ("policy", "b2_priority", "expected"),
    [
        ("Never", 10, ()),
        ("LowerPriority", 10, ()),
        ("Any", 10, ("b3",)),
        ("Never", 0, ()),
        ("LowerPriority", 0, ("b2",)),
        ("Any", 0, ("b2",)),
    ],
)
def test_reclaim_within_cohort_policies(policy: str, b2_priority: int, expected: tuple[str, ...]) -> None:
    """reclaimWithinCohort (``findCandidates``, ``CandidatesOrdering``): Never takes nothing from b;
    LowerPriority only priorities below the preemptor's; Any anything, lower priority first, then the most
    recently admitted."""
    m = manager(cq("a", "c", quota(4), reclaimWithinCohort=policy), cq("b", "c", quota(4)))
    run(m, (wl("b1", "b", 2, 10), 1), (wl("b2", "b", 2, b2_priority), 2), (wl("b3", "b", 2, 10), 3))
    assert m.tree.available(m.tree.cluster_queue("a"), G) == 2
    assert targets(m, wl("a1", "a", 4, 5)) == expected


def test_other_queue_not_borrowing_is_never_a_candidate() -> None:
    """A ClusterQueue within its nominal never supplies victims, even under reclaimWithinCohort Any
    (``cqIsBorrowing``): a's own lower-priority workload is taken instead, or nothing."""
    m = manager(
        cq("a", "c", quota(4), reclaimWithinCohort="Any", withinClusterQueue="LowerPriority"),
        cq("b", "c", quota(4)),
    )
    run(m, (wl("b1", "b", 4, 0), 1), (wl("a1", "a", 2, 0), 2))
    a2 = wl("a2", "a", 4, 5)
    assert [x.id for x in find_candidates(m, a2, "a", {G}, 0)] == ["a1"]
    assert targets(m, a2) == ("a1",)
    m2 = manager(cq("a", "c", quota(4), reclaimWithinCohort="Any"), cq("b", "c", quota(4)))
    run(m2, (wl("b1", "b", 4, 0), 1), (wl("a1", "a", 2, 0), 2))
    assert targets(m2, a2) == ()


def test_candidate_ordering() -> None:
    """``CandidatesOrdering``: evicted first, other ClusterQueues before the own one, lower priority, most
    recently admitted, then id."""
    cands = [
        Candidate("own-low", "q", 0, 5, {G: 1}),
        Candidate("other-high-old", "r", 9, 1, {G: 1}),
        Candidate("other-high-new", "r", 9, 2, {G: 1}),
        Candidate("other-low", "r", 1, 0, {G: 1}),
        Candidate("evicted-own", "q", 9, 0, {G: 1}, evicted=True),
        Candidate("other-high-new-b", "r", 9, 2, {G: 1}),
    ]
    assert [c.id for c in order_candidates(cands, "q")] == [
        "evicted-own",
        "other-low",
        "other-high-new",
        "other-high-new-b",
        "other-high-old",
        "own-low",
    ]
    assert candidate_order_key(cands[0], "q") == (1, 1, 0, -5, "own-low")


@pytest.mark.parametrize(
    ("bwc", "expected"),
    [
        (None, ()),
        ({"policy": "LowerPriority"}, ("b1",)),
        ({"policy": "LowerPriority", "maxPriorityThreshold": 2}, ("b1",)),
        ({"policy": "LowerPriority", "maxPriorityThreshold": 1}, ()),
    ],
)
def test_borrow_within_cohort_max_priority_threshold(
    bwc: dict[str, Any] | None, expected: tuple[str, ...]
) -> None:
    """borrowWithinCohort (``canBorrowWithinCohort``, ``minimalPreemptions``): a needs 6 of nominal 4, so it
    must borrow while reclaiming from b. Allowed only with the policy set, and only while every other-queue
    victim is at most ``maxPriorityThreshold``; a victim above it turns borrowing off and nothing fits."""
    extra = {"borrowWithinCohort": bwc} if bwc else {}
    m = manager(
        cq("a", "c", quota(4), reclaimWithinCohort="LowerPriority", **extra),
        cq("b", "c", quota(4)),
        cq("d", "c", quota(4)),
    )
    run(m, (wl("b1", "b", 4, 2), 1), (wl("b2", "b", 4, 3), 2))
    assert m.tree.available(m.tree.cluster_queue("a"), G) == 4
    assert targets(m, wl("a1", "a", 6, 10)) == expected


# ---- fill-back minimality and tree restoration -----------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=7),
    st.integers(1, 8),
)
def test_fill_back_leaves_no_unnecessary_victim(sizes: list[int], request: int) -> None:
    """``fillBackWorkloads``: with the returned victims removed the preemptor fits, and re-adding any one of
    them makes it not fit; the tree is restored."""
    tree = ResourceTree({"q": (None, {G: _quota(8)})}, {})
    cands = [Candidate(f"w{i}", "q", i, i, {G: s}) for i, s in enumerate(sizes)]
    used = 0
    admitted = []
    for cand in cands:
        if used + cand.usage[G] <= 8:
            tree.add_cq_usage("q", cand.usage)
            used += cand.usage[G]
            admitted.append(cand)
    before = snapshot(tree)
    found = minimal_preemptions(tree, "q", {G: request}, admitted, {G}, allow_borrowing=True)
    assert snapshot(tree) == before
    if workload_fits(tree, "q", {G: request}, True):
        return
    assert found, "everything is removable and the request is within nominal"
    with tree.simulate_removal([("q", c.usage) for c in found]):
        assert workload_fits(tree, "q", {G: request}, True)
        for victim in found:
            tree.add_cq_usage("q", victim.usage)
            assert not workload_fits(tree, "q", {G: request}, True), victim.id
            tree.remove_cq_usage("q", victim.usage)


def _quota(nominal: int) -> Quota:
    return Quota(nominal)


# ---- property: random sequences ------------------------------------------------------------------------------

POLICIES = st.fixed_dictionaries(
    {
        "withinClusterQueue": st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never"]),
        "reclaimWithinCohort": st.sampled_from(["Any", "LowerPriority", "Never"]),
        "bwc": st.sampled_from([None, 0, 3, 10]),
    }
)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    n = draw(st.integers(1, 4))
    nested = draw(st.booleans())
    objects: list[dict[str, Any]] = [cohort("root")]
    if nested:
        objects.append(cohort("x", "root"))
    for i in range(n):
        pol = draw(POLICIES)
        bwc = pol.pop("bwc")
        if bwc is not None and pol["reclaimWithinCohort"] != "Never":
            pol["borrowWithinCohort"] = {"policy": "LowerPriority", "maxPriorityThreshold": bwc}
        nominal = draw(st.integers(1, 8))
        q = quota(
            nominal,
            draw(st.one_of(st.none(), st.integers(0, 4))),
            draw(st.one_of(st.none(), st.integers(0, nominal))),
        )
        parent = "x" if nested and i % 2 else "root"
        objects.append(cq(f"q{i}", parent, q, **pol))
    op = st.tuples(
        st.sampled_from(["submit", "submit", "submit", "cycle", "cycle+preempt", "preempt", "finish"]),
        st.integers(0, n - 1),
        st.integers(1, 6),
        st.integers(0, 4),
    )
    return objects, draw(st.lists(op, min_size=10, max_size=40))


def check_tree(m: AdmissionManager) -> None:
    t = m.tree
    recomputed = t.recomputed_usage()
    for name, node in t.cohorts.items():
        assert {fr: v for fr, v in node.usage.items() if v} == recomputed[name], name
    totals: dict[str, dict[FlavorResource, int]] = {n: {} for n in t.cluster_queues}
    for admitted in m.admitted_workloads().values():
        for fr, v in admitted.usage.items():
            totals[admitted.cluster_queue][fr] = totals[admitted.cluster_queue].get(fr, 0) + v
    for name, node in t.cluster_queues.items():
        assert {fr: v for fr, v in node.usage.items() if v} == {fr: v for fr, v in totals[name].items() if v}
        for fr, q in node.quotas.items():
            if q.borrowing_limit is not None:
                assert node.usage.get(fr, 0) <= q.nominal + q.borrowing_limit, (name, fr)
    # A cohort may be over its quota only by workloads already chosen as preemption victims: upstream's
    # ``fits`` checks every later entry of the cycle with those victims' usage simulated away, so a head
    # admitted in the same cycle can rely on quota the victims are about to release.
    leaving: dict[int, dict[FlavorResource, int]] = {}
    admitted_now = m.admitted_workloads()
    for victim in m.requested_victims():
        if victim in admitted_now:
            root = m._root_of[admitted_now[victim].cluster_queue]
            for fr, v in admitted_now[victim].usage.items():
                leaving.setdefault(id(root), {})[fr] = leaving.get(id(root), {}).get(fr, 0) + v
    for root in t.roots():
        for fr, sq in root.subtree_quota.items():
            assert root.usage.get(fr, 0) - leaving.get(id(root), {}).get(fr, 0) <= sq


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_property_preemption_keeps_quota_and_tree_consistent(
    world: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    """After any sequence of submits, cycles, preemptions (victims evicted keeping their creation time) and
    finishes: no ClusterQueue exceeds nominal + borrowingLimit, no root over-admits, the tree equals a
    from-scratch recount, and ``targets``/``can_preempt`` leave the tree's usage unchanged."""
    objects, ops = world
    m = manager(*objects)
    strategy = ClassicPreemption()
    serial = 0
    for now, op in enumerate(ops, start=1):
        if op[0] == "submit":
            serial += 1
            w = wl(f"w{serial}", f"q{op[1]}", op[2], op[3], t=now)
            m.submit(w)
            before = snapshot(m.tree)
            strategy.targets(m, nominee(m, w))
            strategy.can_preempt(m, w, w.local_queue, {G: op[2]})
            assert snapshot(m.tree) == before
        elif op[0] == "cycle":
            m.cycle(now)
        elif op[0] in ("cycle+preempt", "preempt"):
            if op[0] == "cycle+preempt":
                m.cycle(now)
            admitted = m.admitted_workloads()
            for request in m.take_preemptions():
                for victim in request.victims:
                    if victim in admitted:
                        m.evict(victim, now, keep_creation_timestamp=True)
                        del admitted[victim]
        else:
            admitted_ids = sorted(m.admitted_workloads())
            if admitted_ids:
                m.finish(admitted_ids[op[1] % len(admitted_ids)])
        check_tree(m)


def test_eligibility_walks_cohorts_up_to_lowest_common_ancestor() -> None:
    """§1.5 eligibility (hierarchical ``IsBorrowingWithinCohort``): a candidate ClusterQueue must be over
    nominal, and so must each cohort below the lowest common ancestor with the preemptor."""
    m = manager(
        cohort("root"),
        cohort("x", "root"),
        cohort("y", "root"),
        cq("a", "x", quota(4), reclaimWithinCohort="Any"),
        cq("b", "x", quota(4)),
        cq("e", "y", quota(4)),
        cq("f", "y", quota(4)),
    )
    run(m, (wl("e1", "e", 6), 1), (wl("b1", "b", 6), 2))
    t = m.tree
    assert t.is_borrowing(t.cluster_queue("e"), G) and not t.is_borrowing(t.cohorts["y"], G)
    assert not over_nominal_below_lca(t, "e", "a", {G})  # y is within its subtree quota
    assert over_nominal_below_lca(t, "b", "a", {G})  # LCA is x: only b itself must be over nominal
    assert [c.id for c in find_candidates(m, wl("a1", "a", 4), "a", {G}, 0)] == ["b1"]


def test_preemptor_goes_first_once_its_victims_are_gone() -> None:
    """kueue#13797 (after #6929's sticky workload): b's j2 preempts j8 within its ClusterQueue; once j8 is
    evicted, j2 is ordered before a's older borrower j6 competing for the same freed quota. Otherwise j6
    takes it, j8 comes back, reclaims from j6, and the same preemptions repeat forever."""
    rules = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    m = manager(cq("a", "c", quota(8), **rules), cq("b", "c", quota(16), **rules))
    run(m, (wl("j5", "b", 8, 2, t=1), 1), (wl("j8", "b", 4, 0, t=2), 2))
    m.submit(wl("j6", "a", 16, 1, t=3))
    m.submit(wl("j2", "b", 16, 1, t=4))
    assert m.cycle(10) == []
    [request] = m.take_preemptions()
    assert (request.preemptor_id, request.victims) == ("j2", ("j8",))
    m.evict("j8", 10, keep_creation_timestamp=True)
    assert [x.workload_id for x in m.cycle(10)] == ["j2"]
    assert m.take_preemptions() == []
    # j6 (older, also borrowing) waits; j8 no longer fits behind j2 and triggers nothing.
    assert m.cycle(11) == [] and m.take_preemptions() == []


def test_heads_admitted_beside_a_reclaim_may_count_on_the_victims_quota() -> None:
    """Upstream ``fits`` checks every entry of a cycle with the cycle's preemption victims simulated away:
    q1 reclaims its lent quota from q2's borrower w3, and in the same cycle q0's and q2's small heads are
    admitted into what w3 is about to free — the cohort is over quota (13 of 12) only until w3 leaves."""
    objects = [cohort("root")]
    for i, nominal in enumerate([3, 7, 1, 1]):
        objects.append(cq(f"q{i}", "root", quota(nominal, None, None), reclaimWithinCohort="Any"))
    m = manager(*objects)
    for serial, (queue, size) in enumerate([(0, 3), (1, 5), (2, 3)], start=1):
        m.submit(wl(f"w{serial}", f"q{queue}", size, 0, t=serial))
    m.cycle(4)
    for serial, (queue, size) in enumerate([(0, 1), (0, 1), (0, 1), (1, 2), (2, 1)], start=4):
        m.submit(wl(f"w{serial}", f"q{queue}", size, 0, t=serial))
    admitted = {a.workload_id for a in m.cycle(10)}
    assert admitted == {"w4", "w8"} and m.requested_victims() == frozenset({"w3"})
    root = m.tree.cohorts["root"]
    assert root.usage[G] == 13 and root.subtree_quota[G] == 12
    check_tree(m)  # over quota only by the victim's usage
    m.evict("w3", 11, keep_creation_timestamp=True)
    assert root.usage[G] == 10
