"""Kueue's classic preemption (``shared/reference/queues.md`` §1.5; upstream
``pkg/scheduler/preemption/preemption.go``, ``common/ordering.go``, ``classical/``).

:class:`ClassicPreemption` implements the manager's :class:`~fleetlab.admission.manager.PreemptionStrategy`:

* ``targets(manager, nominee)`` (upstream ``GetTargets`` / ``classicalPreemptions``): candidates come from
  :func:`~fleetlab.admission.classic_candidates.build_candidates` (own-queue under ``withinClusterQueue``;
  other ClusterQueues of the cohort tree under ``reclaimWithinCohort``, classified as hierarchy, reclaim
  while borrowing (``borrowWithinCohort``) or reclaim without borrowing), ordered as upstream;
* the passes follow upstream: only own-queue candidates, or ``borrowWithinCohort`` off and the ClusterQueue
  not under nominal → one pass with borrowing allowed; ``borrowWithinCohort`` off and no hierarchy
  candidate → without borrowing first, then with; otherwise with borrowing first, then without. A pass
  with borrowing skips "reclaim without borrowing" candidates; every pass re-checks that an other-queue
  candidate's ClusterQueue (and its cohorts below the subtree root) is still over quota;
* every pass removes candidates greedily until :func:`workload_fits`, then :func:`fill_back` in reverse
  order (the last victim is never re-added).

``can_preempt(manager, workload, cq, amounts)`` (upstream ``SimulatePreemption``) runs the same search for
``amounts`` alone and answers Preempt (a victim in the own ClusterQueue) or Reclaim, with the borrowing level
after the victims are gone (:func:`simulate_preemption`), or None without victims.

:func:`minimal_preemptions` and :func:`find_candidates` keep the single-pass form (used by tests and by the
fair-sharing search). All passes work on ``manager.tree`` itself, removing and re-adding candidate usage;
the tree's usage is restored exactly before each function returns (also on exceptions).

Fair-sharing preemption (``preemptionStrategies``) is :class:`FairSharingPreemption`, at the end.

Not modelled: AFS LocalQueue usage ordering, TAS placement in the fit check, configurable preemptions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from fleetlab.admission.classic_candidates import (
    ClassifiedCandidate,
    V,
    Victim,
    build_candidates,
    candidate_order_key,
    order,
    quantities_fit_in_quota,
)
from fleetlab.admission.fair_sharing import DominantResourceShare, dominant_resource_share
from fleetlab.admission.flavor_rows import pair
from fleetlab.admission.flavors import AssignmentMode, PreemptionMode, PreemptionOutcome
from fleetlab.admission.manager import AdmissionManager, Nominee, Workload
from fleetlab.admission.no_victims import NoVictimNotes
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


def order_candidates(candidates: Iterable[Candidate], preemptor_cq: str) -> list[Candidate]:
    """``candidates`` sorted by :func:`candidate_order_key`."""
    return order(candidates, preemptor_cq)


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
    targets: list[V],
    allow_borrowing: bool,
) -> list[V]:
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


_PREEMPT_MODE = AssignmentMode.PREEMPT  # bound once: an Enum class's member is a slow lookup


def resources_needing_preemption(nominee: Nominee) -> set[FlavorResource]:
    """The (flavor, resource) pairs whose assignment mode is Preempt (upstream
    ``flavorResourcesNeedPreemption``)."""
    return {
        pair(ra.flavor, resource)
        for ps in nominee.assignment.podsets
        for resource, ra in ps.flavors.items()
        if ra.mode == _PREEMPT_MODE
    }


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
    root = node.root()
    requested: Collection[str] = manager.requested_victims()
    # Only the queues the policies let the preemptor take from are read (not every admitted workload):
    # its own unless withinClusterQueue is Never, and the rest of its cohort tree unless it has no cohort
    # or reclaimWithinCohort is Never. The checks below are still made for each workload.
    queues: list[str] = [cluster_queue] if policy.within_cluster_queue != "Never" else []
    if node.parent is not None and policy.reclaim_within_cohort != "Never":
        in_tree = (name for name, other in tree.cluster_queues.items() if other.root() is root)
        queues += [name for name in in_tree if name != cluster_queue]
    admitted = sorted(
        ((aw.workload.id, aw) for name in queues for aw in manager.admitted_in(name)),
        key=lambda item: item[0],
    )
    out: list[Candidate] = []
    for wid, aw in admitted:
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
            if tree.cluster_queue(aw.cluster_queue).root() is not root:
                continue
            if not over_nominal_below_lca(tree, aw.cluster_queue, cluster_queue, frs):
                continue
            if policy.reclaim_within_cohort == "LowerPriority" and prio >= workload.priority:
                continue
        out.append(
            Candidate(wid, aw.cluster_queue, prio, aw.admission.admitted_ms, aw.usage, wid in requested)
        )
    return out


def _nothing_to_take(
    manager: AdmissionManager,
    workload: Workload,
    cluster_queue: str,
    usage: Mapping[FlavorResource, int],
    frs: Collection[FlavorResource],
) -> bool:
    """True when no pass of :func:`preemption_targets` can take a victim, decided without listing any: no
    ``borrowWithinCohort``, no workload of the own queue the policy allows, and no level, the own queue
    first, at which the request fits within quota (so no hierarchical reclaim). Then the pass with
    borrowing may take no other queue's workload (each is a reclaim without borrowing), and the pass
    without borrowing can never fit: the own queue borrows with the request, and evicting from other
    queues leaves its usage as it is. Without a cohort (or ``reclaimWithinCohort: Never``) only the own
    queue could give victims."""
    policy = manager.cluster_queue_spec(cluster_queue).spec.preemption
    held = _EARLY_TEST.get(id(policy))
    if held is None or held[0] is not policy:
        if len(_EARLY_TEST) > _EARLY_TEST_KEPT:  # a long-lived process runs many scenarios' policies
            _EARLY_TEST.clear()
        bwc = policy.borrow_within_cohort
        within = policy.within_cluster_queue
        offset = None if within == "Never" else (1 if within == "LowerPriority" else 0)
        held = _EARLY_TEST[id(policy)] = (
            policy,
            bwc is not None and bwc.policy != "Never",
            offset,
            policy.reclaim_within_cohort != "Never",
        )
    _, borrows_within_cohort, offset, reclaims = held
    if borrows_within_cohort:
        return False
    tree = manager.tree
    node = tree.cluster_queues[cluster_queue]
    if offset is not None:
        # Candidate keys start with the priority: the smallest is the first; equal priority may be newer.
        limit = workload.priority - offset
        keys_of = manager.admitted.keys
        for fr in frs:
            keys = keys_of(cluster_queue, fr)
            if keys and keys[0][0] <= limit:
                return False
    parent = node.parent
    if parent is not None and reclaims:
        if parent.parent is None:  # right below the root: only the own queue's fit is an advantage
            used, quota = node.usage, node.subtree_quota
            for fr, value in usage.items():  # noqa: SIM110 - no generator: 212,539 questions, most one pair
                if used.get(fr, 0) + value > quota.get(fr, 0):
                    return True
            return False
        advantage, remaining = quantities_fit_in_quota(tree, node, usage)  # False: the own queue borrows
        subtree: Node | None = parent
        while subtree is not None:
            if advantage:
                return False
            if subtree.parent is None:
                break  # a fit at the root is no hierarchical advantage
            advantage, remaining = quantities_fit_in_quota(tree, subtree, remaining)
            subtree = subtree.parent
    return True


#: Per preemption policy object (kept alive here, so its id is not reused): whether borrowWithinCohort
#: is on, what the own-queue test subtracts from the preemptor's priority (None: withinClusterQueue
#: Never) and whether reclaimWithinCohort allows anything.
_EARLY_TEST: dict[int, tuple[object, bool, int | None, bool]] = {}
_EARLY_TEST_KEPT = 4096


def preemption_targets(
    manager: AdmissionManager,
    workload: Workload,
    cluster_queue: str,
    usage: Mapping[FlavorResource, int],
    frs: Collection[FlavorResource],
    preemptor_timestamp_ms: int,
    *,
    checked: bool = False,
) -> list[ClassifiedCandidate]:
    """Upstream classic ``classicalPreemptions``: one or two greedy passes (borrowing allowed or not, in the
    order upstream picks), each with fill-back; [] when none finds victims. The tree is restored.
    ``checked``: the caller already found :func:`_nothing_to_take` false."""
    if not checked and _nothing_to_take(manager, workload, cluster_queue, usage, frs):
        return []
    cands = build_candidates(manager, workload, cluster_queue, frs, usage, preemptor_timestamp_ms)
    if cands.empty:
        return []
    bwc = manager.cluster_queue_spec(cluster_queue).spec.preemption.borrow_within_cohort
    forbidden = bwc is None or bwc.policy == "Never"
    node = manager.tree.cluster_queue(cluster_queue)
    under_nominal = all(node.usage.get(fr, 0) < node.quotas[fr].nominal for fr in frs if fr in node.quotas)
    attempts: tuple[bool, ...]
    if cands.no_other_queues or (forbidden and not under_nominal):
        attempts = (True,)
    elif forbidden and cands.no_hierarchy:
        attempts = (False, True)
    else:
        attempts = (True, False)
    tree = manager.tree
    for borrowing in attempts:
        if not borrowing and not cands.may_fit_without_borrowing(usage):
            continue  # this pass would read every candidate and fit after none
        targets: list[ClassifiedCandidate] = []
        try:
            for cand in cands.passes(borrowing):
                tree.remove_cq_usage(cand.cluster_queue, cand.usage)
                targets.append(cand)
                if workload_fits(tree, cluster_queue, usage, borrowing):
                    return list(fill_back(tree, cluster_queue, usage, targets, borrowing))
        finally:
            for cand in reversed(targets):
                tree.add_cq_usage(cand.cluster_queue, cand.usage)
    return []


def simulate_preemption(
    tree: ResourceTree,
    cluster_queue: str,
    amounts: Mapping[FlavorResource, int],
    found: Sequence[Victim],
) -> PreemptionOutcome | None:
    """Upstream ``SimulatePreemption``'s answer from the victims ``found`` for ``amounts``: Preempt when one
    is in the own ClusterQueue, else Reclaim, with the borrowing level once they are gone; None without."""
    if not found:
        return None
    node = tree.cluster_queue(cluster_queue)
    with tree.simulate_removal([(c.cluster_queue, c.usage) for c in found]):
        borrow = max((tree.borrowing_height(node, fr, v)[0] for fr, v in amounts.items()), default=0)
    own = any(c.cluster_queue == cluster_queue for c in found)
    return PreemptionOutcome(PreemptionMode.PREEMPT if own else PreemptionMode.RECLAIM, borrow)


class ClassicPreemption:
    """Kueue's classic preemption as a :class:`~fleetlab.admission.manager.PreemptionStrategy`."""

    def __init__(self) -> None:
        self._no_victims = NoVictimNotes()

    @staticmethod
    def _stamp(manager: AdmissionManager, workload: Workload, cluster_queue: str) -> tuple[object, ...]:
        """Whose assignment, in which tree state (None outside an assignment: nothing is noted)."""
        if not manager.assigning:
            return (None,)
        return (id(manager), manager.assigning, manager.tree.version, id(workload), cluster_queue)

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> PreemptionOutcome | None:
        """Upstream ``SimulatePreemption``: what victims that free ``amounts`` alone would mean."""
        # (the early test and the note read only the pairs: the mapping's keys serve, no set is built)
        if _nothing_to_take(manager, workload, cluster_queue, amounts, amounts.keys()):
            if manager.assigning:
                self._no_victims.note(self._stamp(manager, workload, cluster_queue), amounts.keys())
            return None
        found = preemption_targets(
            manager, workload, cluster_queue, amounts, set(amounts), workload.created_ms, checked=True
        )
        return simulate_preemption(manager.tree, cluster_queue, amounts, found)

    def targets(self, manager: AdmissionManager, nominee: Nominee) -> Sequence[str]:
        """Victim ids for ``nominee``'s whole assignment (upstream ``GetTargets``); none at once when the
        early test answered "no victims" for every pair needing preemption in this assignment
        (:mod:`~fleetlab.admission.no_victims` says why that is exact)."""
        frs = resources_needing_preemption(nominee)
        if not frs:
            return ()
        if manager.assigning and self._no_victims.covers(
            self._stamp(manager, nominee.workload, nominee.cluster_queue), frs
        ):
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
    :func:`fill_back`. With the preemptor's ClusterQueue within its nominal quota in the contested resources
    (its request included), every candidate is taken in turn without the strategies
    (``FairSharingPreemptWithinNominal``, on by default since Kueue v0.17). The ranking of the preemptor's
    own ClusterQueue among targets is this module's reading, not verified.
    """

    def __init__(self, strategies: Sequence[str] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")):
        self.strategies = tuple(strategies)

    def can_preempt(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        amounts: Mapping[FlavorResource, int],
    ) -> PreemptionOutcome | None:
        """What fair-sharing victims freeing ``amounts`` would mean (upstream ``SimulatePreemption``)."""
        found = self.search(manager, workload, cluster_queue, amounts, set(amounts), workload.created_ms)
        return simulate_preemption(manager.tree, cluster_queue, amounts, found)

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

        def rank(name: str) -> tuple[tuple[int, Fraction], tuple[int, Fraction]]:
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

        # FairSharingPreemptWithinNominal (on by default): a preemptor that stays within its nominal quota
        # in the contested resources, its own request included, reclaims without consulting the strategies.
        own = tree.cluster_queue(cluster_queue)
        within_nominal = all(
            own.usage.get(fr, 0) + usage.get(fr, 0) <= own.quotas[fr].nominal
            for fr in frs
            if fr in own.quotas
        )
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
                if target == cluster_queue or within_nominal:
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
