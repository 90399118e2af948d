"""Kueue's classic preemption (``shared/reference/queues.md`` §1.5; upstream
``pkg/scheduler/preemption/preemption.go``, ``common/ordering.go``, ``classical/``).

:class:`ClassicPreemption` implements the manager's :class:`~fleetlab.admission.manager.PreemptionStrategy`:

* ``targets(manager, nominee)`` (upstream ``GetTargets``): candidates are admitted workloads that use a
  (flavor, resource) needing preemption, from the preemptor's own ClusterQueue under ``withinClusterQueue``
  (``LowerPriority``: strictly lower priority; ``LowerOrNewerEqualPriority``: also equal priority with a later
  queue timestamp) and, when the ClusterQueue is in a cohort, from the other ClusterQueues of its cohort tree
  under ``reclaimWithinCohort`` (``LowerPriority`` or ``Any``) while that ClusterQueue and every cohort below
  the lowest common ancestor are over nominal in one of those resources;
* candidates are ordered by :func:`candidate_order_key` (already-requested victims first, other ClusterQueues
  before the own one, lower priority first, most recently admitted first, then id);
* the attempts follow upstream: only own-queue candidates → one greedy pass with borrowing allowed;
  ``borrowWithinCohort`` enabled → one pass with borrowing allowed while every other-queue victim is below
  the priority threshold (``maxPriorityThreshold`` + 1, capped at the preemptor's priority); else, if the
  ClusterQueue is under nominal in the resources needing preemption, a pass without borrowing over all
  candidates; finally a pass over own-queue candidates with borrowing allowed;
* every pass is :func:`minimal_preemptions`: greedy removal until :func:`workload_fits`, then
  :func:`fill_back` in reverse order (the last victim is never re-added).

``can_preempt(manager, workload, cq, amounts)`` (upstream ``SimulatePreemption``) runs the same search for
``amounts`` alone and answers whether it found victims.

All passes work on ``manager.tree`` itself, removing and re-adding candidate usage; the tree's usage is
restored exactly before each function returns (also on exceptions).

Fair-sharing preemption (``preemptionStrategies``) is :class:`FairSharingPreemption`, at the end.

Not modelled: hierarchical "hierarchy candidates"
(reclaim regardless of priority when the preemptor is closer to the quota), AFS LocalQueue usage ordering,
TAS placement in the fit check.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fleetlab.admission.fair_sharing import DominantResourceShare, dominant_resource_share
from fleetlab.admission.flavors import AssignmentMode
from fleetlab.admission.manager import AdmissionManager, Nominee, Workload
from fleetlab.admission.tree import FlavorResource, Node, ResourceTree

__all__ = [
    "Candidate",
    "ClassicPreemption",
    "FairSharingPreemption",
    "candidate_order_key",
    "fill_back",
    "find_candidates",
    "less_than_initial_share",
    "less_than_or_equal_to_final_share",
    "minimal_preemptions",
    "order_candidates",
    "over_nominal_below_lca",
    "preemption_targets",
    "resources_needing_preemption",
    "workload_fits",
]


@dataclass(frozen=True)
class Candidate:
    """An admitted workload that preemption may evict."""

    id: str
    cluster_queue: str
    priority: int
    admitted_ms: int
    usage: Mapping[FlavorResource, int]
    evicted: bool = False  # already requested as a victim, not yet released


def candidate_order_key(candidate: Candidate, preemptor_cq: str) -> tuple[int, int, int, int, str]:
    """Upstream ``CandidatesOrdering``: evicted first, other ClusterQueues first, lower priority first, most
    recently admitted first, then id."""
    return (
        0 if candidate.evicted else 1,
        1 if candidate.cluster_queue == preemptor_cq else 0,
        candidate.priority,
        -candidate.admitted_ms,
        candidate.id,
    )


def order_candidates(candidates: Iterable[Candidate], preemptor_cq: str) -> list[Candidate]:
    """``candidates`` sorted by :func:`candidate_order_key`."""
    return sorted(candidates, key=lambda c: candidate_order_key(c, preemptor_cq))


def workload_fits(
    tree: ResourceTree, cluster_queue: str, usage: Mapping[FlavorResource, int], allow_borrowing: bool
) -> bool:
    """Upstream ``workloadFits`` on the (simulated) tree: every amount fits in ``available``, and without
    borrowing the ClusterQueue stays within its nominal quota."""
    node = tree.cluster_queue(cluster_queue)
    for fr, value in usage.items():
        if not allow_borrowing and tree.borrowing_with(node, fr, value):
            return False
        if value > tree.available(node, fr):
            return False
    return True


def over_nominal_below_lca(
    tree: ResourceTree, candidate_cq: str, preemptor_cq: str, frs: Collection[FlavorResource]
) -> bool:
    """Whether ``candidate_cq`` and every cohort on its path below the lowest common ancestor with
    ``preemptor_cq`` are over nominal (borrowing) in one of ``frs``; False in another tree."""
    ancestors = {id(n) for n in tree.cluster_queue(preemptor_cq).path_to_root()}
    node: Node | None = tree.cluster_queue(candidate_cq)
    while node is not None and id(node) not in ancestors:
        if not any(tree.is_borrowing(node, fr) for fr in frs):
            return False
        node = node.parent
    return node is not None


def fill_back(
    tree: ResourceTree,
    cluster_queue: str,
    usage: Mapping[FlavorResource, int],
    targets: list[Candidate],
    allow_borrowing: bool,
) -> list[Candidate]:
    """Upstream ``fillBackWorkloads``: with every target removed from ``tree``, re-add targets from the
    second-last down to the first and drop each one the preemptor still fits without. Mutates ``targets``
    in place (order kept) and returns it; on return exactly the kept targets are removed from ``tree``."""
    for i in range(len(targets) - 2, -1, -1):
        cand = targets[i]
        tree.add_cq_usage(cand.cluster_queue, cand.usage)
        if workload_fits(tree, cluster_queue, usage, allow_borrowing):
            del targets[i]
        else:
            tree.remove_cq_usage(cand.cluster_queue, cand.usage)
    return targets


def minimal_preemptions(
    tree: ResourceTree,
    cluster_queue: str,
    usage: Mapping[FlavorResource, int],
    candidates: Sequence[Candidate],
    frs: Collection[FlavorResource],
    allow_borrowing: bool,
    borrow_below_priority: int | None = None,
) -> list[Candidate]:
    """One greedy pass (upstream ``minimalPreemptions``) over ordered ``candidates``; [] when the preemptor
    does not fit after removing all valid ones. ``tree`` is restored before returning.

    Other-queue candidates are skipped unless :func:`over_nominal_below_lca` holds at the moment they would
    be removed. With ``borrow_below_priority`` set, taking an other-queue victim of that priority or higher
    turns borrowing off for the rest of the pass."""
    targets: list[Candidate] = []
    try:
        for cand in candidates:
            other = cand.cluster_queue != cluster_queue
            if other and not over_nominal_below_lca(tree, cand.cluster_queue, cluster_queue, frs):
                continue
            if other and borrow_below_priority is not None and cand.priority >= borrow_below_priority:
                allow_borrowing = False
            tree.remove_cq_usage(cand.cluster_queue, cand.usage)
            targets.append(cand)
            if workload_fits(tree, cluster_queue, usage, allow_borrowing):
                return list(fill_back(tree, cluster_queue, usage, targets, allow_borrowing))
        return []
    finally:
        for cand in reversed(targets):
            tree.add_cq_usage(cand.cluster_queue, cand.usage)


def resources_needing_preemption(nominee: Nominee) -> set[FlavorResource]:
    """The (flavor, resource) pairs whose assignment mode is Preempt (upstream
    ``flavorResourcesNeedPreemption``)."""
    return {
        FlavorResource(ra.flavor, resource)
        for ps in nominee.assignment.podsets
        for resource, ra in ps.flavors.items()
        if ra.mode == AssignmentMode.PREEMPT
    }


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def find_candidates(
    manager: AdmissionManager,
    workload: Workload,
    cluster_queue: str,
    frs: Collection[FlavorResource],
    preemptor_timestamp_ms: int,
) -> list[Candidate]:
    """Upstream ``findCandidates``: admitted workloads the policies of ``cluster_queue`` allow evicting."""
    policy = manager.cluster_queue_spec(cluster_queue).spec.preemption
    tree = manager.tree
    node = tree.cluster_queue(cluster_queue)
    root = _root(node)
    requested: Collection[str] = manager.requested_victims()
    out: list[Candidate] = []
    for wid, aw in sorted(manager.admitted_workloads().items()):
        if not any(aw.usage.get(fr, 0) > 0 for fr in frs):
            continue
        prio = aw.workload.priority
        if aw.cluster_queue == cluster_queue:
            if policy.within_cluster_queue == "Never" or prio > workload.priority:
                continue
            if prio == workload.priority and not (
                policy.within_cluster_queue == "LowerOrNewerEqualPriority"
                and preemptor_timestamp_ms < aw.workload.created_ms
            ):
                continue
        else:
            if node.parent is None or policy.reclaim_within_cohort == "Never":
                continue
            if _root(tree.cluster_queue(aw.cluster_queue)) is not root:
                continue
            if not over_nominal_below_lca(tree, aw.cluster_queue, cluster_queue, frs):
                continue
            if policy.reclaim_within_cohort == "LowerPriority" and prio >= workload.priority:
                continue
        out.append(
            Candidate(wid, aw.cluster_queue, prio, aw.admission.admitted_ms, aw.usage, wid in requested)
        )
    return out


def preemption_targets(
    manager: AdmissionManager,
    workload: Workload,
    cluster_queue: str,
    usage: Mapping[FlavorResource, int],
    frs: Collection[FlavorResource],
    preemptor_timestamp_ms: int,
) -> list[Candidate]:
    """Upstream classic ``getTargets``: the attempts of §1.5 in order; [] when none finds victims."""
    candidates = order_candidates(
        find_candidates(manager, workload, cluster_queue, frs, preemptor_timestamp_ms), cluster_queue
    )
    if not candidates:
        return []
    tree = manager.tree
    same = [c for c in candidates if c.cluster_queue == cluster_queue]
    if len(same) == len(candidates):
        return minimal_preemptions(tree, cluster_queue, usage, candidates, frs, True)
    bwc = manager.cluster_queue_spec(cluster_queue).spec.preemption.borrow_within_cohort
    if bwc is not None and bwc.policy != "Never":
        threshold = workload.priority
        if bwc.max_priority_threshold is not None and bwc.max_priority_threshold < threshold:
            threshold = bwc.max_priority_threshold + 1
        return minimal_preemptions(tree, cluster_queue, usage, candidates, frs, True, threshold)
    node = tree.cluster_queue(cluster_queue)
    if all(node.usage.get(fr, 0) < node.subtree_quota.get(fr, 0) for fr in frs):
        found = minimal_preemptions(tree, cluster_queue, usage, candidates, frs, False)
        if found:
            return found
    return minimal_preemptions(tree, cluster_queue, usage, same, frs, True)


class ClassicPreemption:
    """Kueue's classic preemption as a :class:`~fleetlab.admission.manager.PreemptionStrategy`."""

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> bool:
        """Upstream ``SimulatePreemption``: whether victims exist that free ``amounts`` alone."""
        return bool(
            preemption_targets(manager, workload, cluster_queue, amounts, set(amounts), workload.created_ms)
        )

    def targets(self, manager: AdmissionManager, nominee: Nominee) -> Sequence[str]:
        """Victim ids for ``nominee``'s whole assignment (upstream ``GetTargets``)."""
        frs = resources_needing_preemption(nominee)
        if not frs:
            return ()
        found = preemption_targets(
            manager,
            nominee.workload,
            nominee.cluster_queue,
            nominee.assignment.usage,
            frs,
            nominee.timestamp_ms,
        )
        return tuple(c.id for c in found)


# ---- fair-sharing preemption ------------------------------------------------------------------------------

FairShareRule = Callable[[DominantResourceShare, DominantResourceShare, DominantResourceShare], bool]


def less_than_or_equal_to_final_share(
    preemptor_new: DominantResourceShare, target_old: DominantResourceShare, target_new: DominantResourceShare
) -> bool:
    """S1 ``LessThanOrEqualToFinalShare``: DRS(preemptor with W) ≤ DRS(target without the victim)."""
    return preemptor_new.sort_key() <= target_new.sort_key()


def less_than_initial_share(
    preemptor_new: DominantResourceShare, target_old: DominantResourceShare, target_new: DominantResourceShare
) -> bool:
    """S2 ``LessThanInitialShare``: DRS(preemptor with W) < DRS(target) before removing the victim."""
    return preemptor_new.sort_key() < target_old.sort_key()


FAIR_SHARE_RULES: dict[str, FairShareRule] = {
    "LessThanOrEqualToFinalShare": less_than_or_equal_to_final_share,
    "LessThanInitialShare": less_than_initial_share,
}


def _below_lca(tree: ResourceTree, cq: str, other: str) -> tuple[Node, Node]:
    """The children of the lowest common ancestor of ClusterQueues ``cq`` and ``other`` on each path."""
    ancestors = {id(n): n for n in tree.cluster_queue(cq).path_to_root()}
    node = tree.cluster_queue(other)
    while node.parent is not None and id(node.parent) not in ancestors:
        node = node.parent
    lca = node.parent
    mine = tree.cluster_queue(cq)
    while mine.parent is not None and mine.parent is not lca:
        mine = mine.parent
    return mine, node


class FairSharingPreemption:
    """Kueue's fair-sharing preemption (§1.5; upstream ``pkg/scheduler/preemption/fairsharing/`` and
    ``fairPreemptions``) as a :class:`~fleetlab.admission.manager.PreemptionStrategy`.

    Candidates are :func:`find_candidates` in :func:`candidate_order_key` order. First strategy: repeatedly
    take the target ClusterQueue with the highest DRS, compared as the DRS of its side's child of the lowest
    common ancestor with the preemptor (ties: the ClusterQueue's own DRS, then name); the preemptor's own
    ClusterQueue takes part with its DRS including the preemptor, and its candidates are always allowed
    (``withinClusterQueue``). In another ClusterQueue, candidates are tried in order until one satisfies
    the strategy (compared at the children of the lowest common ancestor: the preemptor side with W added,
    the target side before / after removing the candidate); a taken victim ends the turn (shares changed),
    one that does not satisfy it is kept for the second strategy. Second strategy (``LessThanInitialShare``
    only): per ClusterQueue, again by highest DRS, the first retry candidate is taken when the rule holds,
    then that ClusterQueue is dropped. The search stops once the preemptor fits (borrowing allowed), then
    :func:`fill_back`. The ``FairSharingPreemptWithinNominal`` gate and hierarchy candidates are not modelled;
    the ranking of the preemptor's own ClusterQueue among targets is this module's reading, not verified.
    """

    def __init__(self, strategies: Sequence[str] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")):
        self.strategies = tuple(strategies)

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> bool:
        """Whether fair-sharing victims exist that free ``amounts`` alone."""
        return bool(self.search(manager, workload, cluster_queue, amounts, set(amounts), workload.created_ms))

    def targets(self, manager: AdmissionManager, nominee: Nominee) -> Sequence[str]:
        """Victim ids for ``nominee``'s whole assignment."""
        frs = resources_needing_preemption(nominee)
        if not frs:
            return ()
        found = self.search(
            manager,
            nominee.workload,
            nominee.cluster_queue,
            nominee.assignment.usage,
            frs,
            nominee.timestamp_ms,
        )
        return tuple(c.id for c in found)

    def search(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        usage: Mapping[FlavorResource, int],
        frs: Collection[FlavorResource],
        preemptor_timestamp_ms: int,
    ) -> list[Candidate]:
        """The victims (after fill-back), or [] when the preemptor cannot be made to fit; the tree is
        restored before returning."""
        candidates = order_candidates(
            find_candidates(manager, workload, cluster_queue, frs, preemptor_timestamp_ms), cluster_queue
        )
        if not candidates:
            return []
        tree, weights = manager.tree, manager.fair_weights
        queues: dict[str, list[Candidate]] = {}
        for cand in candidates:
            queues.setdefault(cand.cluster_queue, []).append(cand)
        targets: list[Candidate] = []

        def share(node: Node, request: Mapping[FlavorResource, int] | None = None) -> DominantResourceShare:
            return dominant_resource_share(tree, node, weights, request)

        def shares(target_cq: str) -> tuple[DominantResourceShare, Node]:
            mine, theirs = _below_lca(tree, cluster_queue, target_cq)
            return share(mine, usage), theirs

        def rank(name: str) -> tuple[tuple[int, float], tuple[int, float]]:
            if name == cluster_queue:
                own = share(tree.cluster_queue(name), usage).sort_key()
                return (own, own)
            _, theirs = _below_lca(tree, cluster_queue, name)
            return (share(theirs).sort_key(), share(tree.cluster_queue(name)).sort_key())

        def fits() -> bool:
            return workload_fits(tree, cluster_queue, usage, True)

        def take(cand: Candidate) -> bool:
            tree.remove_cq_usage(cand.cluster_queue, cand.usage)
            targets.append(cand)
            return fits()

        try:
            rule = FAIR_SHARE_RULES[self.strategies[0]]
            retry: dict[str, list[Candidate]] = {}
            done = False
            while not done:
                live = sorted(name for name, cands in queues.items() if cands)
                if not live:
                    break
                target = max(live, key=rank)
                pending = queues[target]
                if target == cluster_queue:
                    done = take(pending.pop(0))
                    continue
                preemptor_new, theirs = shares(target)
                target_old = share(theirs)
                while pending:
                    cand = pending.pop(0)
                    tree.remove_cq_usage(cand.cluster_queue, cand.usage)
                    target_new = share(theirs)
                    tree.add_cq_usage(cand.cluster_queue, cand.usage)
                    if rule(preemptor_new, target_old, target_new):
                        done = take(cand)
                        break
                    retry.setdefault(target, []).append(cand)
            if not done and len(self.strategies) > 1:
                second = FAIR_SHARE_RULES[self.strategies[1]]
                while not done and retry:
                    target = max(sorted(retry), key=rank)  # first maximum: smallest name
                    pending = retry.pop(target)
                    preemptor_new, theirs = shares(target)
                    target_old = share(theirs)
                    if second(preemptor_new, target_old, target_old):
                        done = take(pending[0])
            if not done:
                return []
            kept = fill_back(tree, cluster_queue, usage, targets, True)
            return list(kept)
        finally:
            for cand in reversed(targets):
                tree.add_cq_usage(cand.cluster_queue, cand.usage)
