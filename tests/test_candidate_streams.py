"""Classic preemption reads its candidates lazily from the admitted-workload index: the same candidates, in
the same order, and each pass yields the same victims as a search over every admitted workload.

The oracle below lists candidates the direct way (upstream ``preemption.go`` ``findCandidates`` and
``classical/candidate_generator.go``, as ``shared/reference/queues.md`` §1.5 writes them out), for one flat
cohort: every admitted workload of the allowed ClusterQueues that uses a needed (flavor, resource) and the
policy allows; other queues only while over their nominal quota; hierarchy candidates when the preemptor's
request fits within its own nominal quota; ordered already-evicted first, then hierarchy, priority and
own-queue groups, each by (priority, most recently admitted, id).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fleetlab.admission.classic_candidates import (
    ClassifiedCandidate,
    Variant,
    build_candidates,
    within_nominal,
)
from fleetlab.admission.manager import AdmissionManager, AdmittedWorkload
from fleetlab.admission.preemption import ClassicPreemption, preemption_targets, workload_fits
from fleetlab.admission.tree import FlavorResource
from test_admission import GPU, config, cq, quota, wl

F1, F2 = FlavorResource("f1", GPU), FlavorResource("f2", GPU)
WITHIN = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")


def _allowed(rule: str, priority: int, ts: int, aw: AdmittedWorkload) -> bool:
    p = aw.workload.priority
    if rule == "LowerPriority":
        return p < priority
    if rule == "LowerOrNewerEqualPriority":
        return p < priority or (p == priority and ts < aw.workload.created_ms)
    return rule == "Any"


def oracle(
    m: AdmissionManager,
    name: str,
    priority: int,
    ts: int,
    frs: set[FlavorResource],
    request: Mapping[FlavorResource, int],
) -> list[tuple[str, Variant]]:
    """Candidate ids and variants for a flat cohort, straight from every admitted workload."""
    policy = m.cluster_queue_spec(name).spec.preemption
    tree = m.tree
    node = tree.cluster_queue(name)
    requested = m.requested_victims()
    bwc = policy.borrow_within_cohort
    bwc_on = bwc is not None and bwc.policy != "Never"
    advantage = all(node.usage.get(fr, 0) + v <= node.subtree_quota.get(fr, 0) for fr, v in request.items())
    groups: list[list[tuple[tuple[int, int, str], str, Variant]]] = [[], [], []]
    for wid, aw in m.admitted_workloads().items():
        if not any(aw.usage.get(fr, 0) > 0 for fr in frs):
            continue
        own = aw.cluster_queue == name
        rule = policy.within_cluster_queue if own else policy.reclaim_within_cohort
        if not _allowed(rule, priority, ts, aw):
            continue
        if not own and within_nominal(tree.cluster_queue(aw.cluster_queue), frs):
            continue
        p = aw.workload.priority
        if own:
            group, variant = 2, Variant.WITHIN_CQ
        elif advantage:
            group, variant = 0, Variant.HIERARCHICAL_RECLAIM
        else:
            below = bwc is None or bwc.max_priority_threshold is None or p <= bwc.max_priority_threshold
            group = 1
            variant = (
                Variant.RECLAIM_WHILE_BORROWING
                if bwc_on and p < priority and below
                else Variant.RECLAIM_WITHOUT_BORROWING
            )
        groups[group].append(((p, -aw.admission.admitted_ms, wid), wid, variant))
    out = []
    for evicted in (True, False):
        for group in groups:
            out += [(wid, v) for _, wid, v in sorted(group) if (wid in requested) == evicted]
    return out


def oracle_pass(
    m: AdmissionManager,
    name: str,
    ordered: list[ClassifiedCandidate],
    frs: set[FlavorResource],
    borrowing: bool,
) -> list[str]:
    """One pass over every candidate, each checked when it comes up and removed when valid (the tree is
    restored before returning)."""
    tree, taken = m.tree, []
    for cand in ordered:
        if cand.cluster_queue != name:
            if borrowing and cand.variant == Variant.RECLAIM_WITHOUT_BORROWING:
                continue
            if within_nominal(tree.cluster_queue(cand.cluster_queue), frs):
                continue
        tree.remove_cq_usage(cand.cluster_queue, cand.usage)
        taken.append(cand)
    for cand in reversed(taken):
        tree.add_cq_usage(cand.cluster_queue, cand.usage)
    return [c.id for c in taken]


def consume(m: AdmissionManager, cands_passes: Iterator[ClassifiedCandidate]) -> list[str]:
    """Take every candidate a lazy pass yields, removing each as preemption does before the next one is
    checked, then restore."""
    out = []
    for cand in cands_passes:
        m.tree.remove_cq_usage(cand.cluster_queue, cand.usage)
        out.append(cand)
    for cand in reversed(out):
        m.tree.add_cq_usage(cand.cluster_queue, cand.usage)
    return [c.id for c in out]


workloads = st.lists(
    st.tuples(
        st.sampled_from("abc"),
        st.integers(1, 4),
        st.sampled_from([0, 5, 10]),
        st.integers(0, 3),
        st.sampled_from(["f1", "f2"]),
    ),
    max_size=18,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    admitted=workloads,
    within=st.sampled_from(WITHIN),
    reclaim=st.sampled_from(["Never", "LowerPriority", "Any"]),
    bwc=st.sampled_from([None, "LowerPriority"]),
    threshold=st.sampled_from([None, 5]),
    priority=st.sampled_from([0, 5, 10]),
    ts=st.integers(0, 3),
    gpus=st.integers(1, 12),
    both=st.booleans(),
)
def test_lazy_candidates_match_a_search_over_every_admitted_workload(
    admitted: list[tuple[str, int, int, int, str]],
    within: str,
    reclaim: str,
    bwc: str | None,
    threshold: int | None,
    priority: int,
    ts: int,
    gpus: int,
    both: bool,
) -> None:
    """Three ClusterQueues of 4 GPUs per flavor in a cohort; ``a``'s policies vary. Workloads are reserved
    (one flavor each) at increasing times; then ``a``'s candidates for a request on f1 (or f1 and f2) are
    listed lazily and by the oracle, and each pass is run both ways."""
    assume(not (reclaim == "Never" and bwc is not None))  # Kueue's validation refuses it
    preemption: dict[str, object] = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
    if bwc is not None:
        rule: dict[str, object] = {"policy": bwc}
        if threshold is not None:
            rule["maxPriorityThreshold"] = threshold
        preemption["borrowWithinCohort"] = rule
    flavors = {"f1": quota(4), "f2": quota(4)}
    m = AdmissionManager(
        config(cq("a", "c", flavors, preemption=preemption), cq("b", "c", flavors), cq("c", "c", flavors)),
        preemption=ClassicPreemption(),
    )
    for i, (queue, size, prio, created, flavor) in enumerate(admitted):
        m.reserve(wl(f"w{i:02d}", queue, size, prio, created), queue, {"main": {GPU: flavor}}, i % 5)
    frs = {F1, F2} if both else {F1}
    request = {fr: gpus for fr in frs}
    preemptor = wl("p", "a", gpus, priority, ts)
    cands = build_candidates(m, preemptor, "a", frs, request, ts)
    want = oracle(m, "a", priority, ts, frs, request)
    assert [(c.id, c.variant) for c in cands.ordered] == want
    assert cands.empty == (not want)
    for borrowing in (True, False):
        assert consume(m, cands.passes(borrowing)) == oracle_pass(m, "a", cands.ordered, frs, borrowing)
    if not cands.may_fit_without_borrowing(request):
        # The bound says no pass without borrowing can fit: not even after every victim such a pass takes.
        taken = [c for c in cands.ordered if c.id in oracle_pass(m, "a", cands.ordered, frs, False)]
        with m.tree.simulate_removal((c.cluster_queue, c.usage) for c in taken):
            assert not workload_fits(m.tree, "a", request, False)
    before = {name: dict(node.usage) for name, node in m.tree.cluster_queues.items()}
    preemption_targets(m, preemptor, "a", request, frs, ts)
    assert {name: dict(node.usage) for name, node in m.tree.cluster_queues.items()} == before


def test_a_requested_victim_comes_first_and_is_read_from_the_index() -> None:
    """b borrows 6 of a's nominal 8 with three 2-GPU workloads; a needs 8 and reclaims. The preemption
    request for b2 (issued, not yet carried out) puts b2 first in the next search, ahead of the order of
    priority and admission time (upstream ``CandidatesOrdering``: evicted first)."""
    reclaim = {"reclaimWithinCohort": "Any"}
    m = AdmissionManager(
        config(cq("a", "c", preemption=reclaim), cq("b", "c", {"default": quota(2)})),
        preemption=ClassicPreemption(),
    )
    for i, wid in enumerate(["b1", "b2", "b3"]):
        m.reserve(wl(wid, "b", 2, 0, i), "b", {"main": {GPU: "default"}}, i)
    m.submit(wl("a1", "a", 6, t=5))
    assert m.cycle(5) == []
    [request] = m.take_preemptions()
    assert request.victims == ("b3",)  # most recently admitted first: 4 free + b3's 2 = a1's 6
    g = FlavorResource("default", GPU)
    cands = build_candidates(m, wl("a2", "a", 8, t=6), "a", {g}, {g: 8}, 6)
    assert [(c.id, c.evicted) for c in cands.ordered] == [("b3", True), ("b2", False), ("b1", False)]


def test_the_bound_without_borrowing_counts_what_own_victims_free() -> None:
    """a (nominal 4) runs 3 + 2 GPUs at priority 0 and 1 GPU at priority 5, so it borrows 2 from b.
    A priority-5 preemptor asking 2 (withinClusterQueue LowerPriority) could stay within nominal only by
    evicting its own priority-0 workloads: 6 − 5 + 2 = 3 ≤ 4, so the pass is worth running. Asking 4 it
    cannot: 6 − 5 + 4 = 5 > 4. A priority-0 preemptor may evict nothing of its own: 6 + 1 > 4."""
    lower = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    m = AdmissionManager(config(cq("a", "c", {"default": quota(4)}, preemption=lower), cq("b", "c")))
    for wid, gpus, prio in [("a3", 3, 0), ("a2", 2, 0), ("a1", 1, 5)]:
        m.reserve(wl(wid, "a", gpus, prio), "a", {"main": {GPU: "default"}}, 0)
    g = FlavorResource("default", GPU)

    def may(gpus: int, priority: int) -> bool:
        return build_candidates(
            m, wl("p", "a", gpus, priority), "a", {g}, {g: gpus}, 0
        ).may_fit_without_borrowing({g: gpus})

    assert (may(2, 5), may(4, 5), may(1, 0)) == (True, False, False)
