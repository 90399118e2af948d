"""Classic preemption's candidates, classified as upstream does (kubernetes-sigs/kueue
``pkg/scheduler/preemption/classical/hierarchical_preemption.go`` and ``candidate_generator.go``).

Every admitted workload that uses a (flavor, resource) needing preemption and that the preemptor's policy
allows evicting gets a :class:`Variant`:

* ``WITHIN_CQ``: in the preemptor's own ClusterQueue (``withinClusterQueue``);
* ``HIERARCHICAL_RECLAIM``: in another ClusterQueue of a subtree in which the preemptor's request fits within
  the subtree's own quota, so the preemptor is "closer" to the quota (reclaim regardless of borrowing);
* ``RECLAIM_WHILE_BORROWING``: another ClusterQueue, ``borrowWithinCohort`` allows it (strictly lower
  priority than the preemptor, and not above ``maxPriorityThreshold``);
* ``RECLAIM_WITHOUT_BORROWING``: another ClusterQueue, only while the preemptor stays within its own quota.

Other-queue candidates are only collected from ClusterQueues (and cohorts, below the walk's subtree root)
that are over their quota in a resource needing preemption. :class:`CandidateList` orders them as upstream
(already-evicted first; then hierarchy, priority, same-queue groups, each by
:func:`~fleetlab.admission.preemption.candidate_order_key`) and re-checks validity as victims are removed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Protocol, TypeVar

from fleetlab.admission.tree import FlavorResource, Node, ResourceTree

if TYPE_CHECKING:
    from fleetlab.admission.manager import AdmissionManager, AdmittedWorkload, Workload

__all__ = [
    "CandidateList",
    "ClassifiedCandidate",
    "Variant",
    "Victim",
    "build_candidates",
    "candidate_order_key",
    "order",
    "quantities_fit_in_quota",
    "within_nominal",
]


class Victim(Protocol):
    """What ordering, fit checks and fill-back read of a candidate."""

    @property
    def id(self) -> str: ...
    @property
    def cluster_queue(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def admitted_ms(self) -> int: ...
    @property
    def evicted(self) -> bool: ...
    @property
    def usage(self) -> Mapping[FlavorResource, int]: ...


class Variant(IntEnum):
    """Upstream ``preemptionVariant``: why (and when) a candidate may be evicted."""

    NEVER = 0
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4


@dataclass(frozen=True)
class ClassifiedCandidate:
    """An admitted workload with its variant and the subtree root (``lca``) its validity is checked below."""

    id: str
    cluster_queue: str
    priority: int
    created_ms: int
    admitted_ms: int
    usage: Mapping[FlavorResource, int]
    evicted: bool
    variant: Variant
    lca: Node | None


def within_nominal(node: Node, frs: Collection[FlavorResource]) -> bool:
    """Upstream ``IsWithinNominalInResources``: usage ≤ SubtreeQuota for every one of ``frs``."""
    return all(node.usage.get(fr, 0) <= node.subtree_quota.get(fr, 0) for fr in frs)


def quantities_fit_in_quota(
    tree: ResourceTree, node: Node, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """Upstream ``QuantitiesFitInQuota``: whether ``requests`` fit in ``node``'s SubtreeQuota on top of its
    usage, and what is left for the parent once ``node``'s local (unlendable) quota is used."""
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, value in requests.items():
        if node.usage.get(fr, 0) + value > node.subtree_quota.get(fr, 0):
            fits = False
        remaining[fr] = max(0, value - tree.local_available(node, fr))
    return fits, remaining


class CandidateList:
    """Upstream ``candidateIterator``: the ordered candidates and the validity check of each pass."""

    def __init__(
        self,
        tree: ResourceTree,
        cluster_queue: str,
        ordered: list[ClassifiedCandidate],
        frs: Collection[FlavorResource],
        hierarchy_count: int,
        other_count: int,
    ) -> None:
        self.tree = tree
        self.cluster_queue = cluster_queue
        self.ordered = ordered
        self.frs = frs
        self.no_other_queues = other_count == 0
        self.no_hierarchy = hierarchy_count == 0

    def valid(self, cand: ClassifiedCandidate, borrowing: bool) -> bool:
        """Upstream ``candidateIsValid``: own-queue candidates always; others only while their ClusterQueue,
        and every cohort below the subtree root, is over quota, and not when borrowing forbids them."""
        if cand.cluster_queue == self.cluster_queue:
            return True
        if borrowing and cand.variant == Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        node: Node | None = self.tree.cluster_queue(cand.cluster_queue)
        while node is not None and node is not cand.lca:
            if within_nominal(node, self.frs):
                return False
            node = node.parent
        return True

    def passes(self, borrowing: bool) -> Iterator[ClassifiedCandidate]:
        """The candidates of one pass, each checked against the tree as it is when it comes up."""
        for cand in self.ordered:
            if self.valid(cand, borrowing):
                yield cand


def _allowed(policy: str, preemptor_priority: int, preemptor_ts: int, priority: int, created_ms: int) -> bool:
    """Upstream ``satisfiesPreemptionPolicy`` for one policy value."""
    if policy == "LowerPriority":
        return preemptor_priority > priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor_priority > priority or (preemptor_priority == priority and preemptor_ts < created_ms)
    return policy == "Any"


def _children(node: Node) -> tuple[list[Node], list[Node]]:
    kids = sorted(node.children, key=lambda n: n.name)
    return [n for n in kids if n.is_cohort], [n for n in kids if not n.is_cohort]


def build_candidates(
    manager: AdmissionManager,
    workload: Workload,
    cluster_queue: str,
    frs: Collection[FlavorResource],
    requests: Mapping[FlavorResource, int],
    preemptor_ts: int,
) -> CandidateList:
    """Upstream ``NewCandidateIterator``: same-queue, hierarchy and priority candidates, ordered."""
    tree = manager.tree
    policy = manager.cluster_queue_spec(cluster_queue).spec.preemption
    node = tree.cluster_queue(cluster_queue)
    takes_from_cohort = node.parent is not None and policy.reclaim_within_cohort != "Never"
    if policy.within_cluster_queue == "Never" and not takes_from_cohort:
        return CandidateList(tree, cluster_queue, [], frs, 0, 0)  # the policies allow taking from no one
    bwc = policy.borrow_within_cohort
    bwc_on = bwc is not None and bwc.policy != "Never"
    threshold = bwc.max_priority_threshold if bwc_on and bwc is not None else None
    requested = manager.requested_victims()

    def using(name: str) -> list[AdmittedWorkload]:
        """Admitted workloads of ClusterQueue ``name`` that use one of ``frs``, by id (read only when a
        policy lets the preemptor take from that queue)."""
        return [aw for aw in manager.admitted_in(name) if any(aw.usage.get(fr, 0) > 0 for fr in frs)]

    def from_queue(name: str, lca: Node | None, advantage: bool) -> list[ClassifiedCandidate]:
        out: list[ClassifiedCandidate] = []
        own = name == cluster_queue
        rule = policy.within_cluster_queue if own else policy.reclaim_within_cohort
        for aw in using(name):
            wid = aw.workload.id
            prio, created = aw.workload.priority, aw.workload.created_ms
            if not _allowed(rule, workload.priority, preemptor_ts, prio, created):
                continue
            if own:
                variant = Variant.WITHIN_CQ
            elif advantage:
                variant = Variant.HIERARCHICAL_RECLAIM
            elif not bwc_on or prio >= workload.priority or (threshold is not None and prio > threshold):
                variant = Variant.RECLAIM_WITHOUT_BORROWING
            else:
                variant = Variant.RECLAIM_WHILE_BORROWING
            out.append(
                ClassifiedCandidate(
                    wid,
                    name,
                    prio,
                    created,
                    aw.admission.admitted_ms,
                    aw.usage,
                    wid in requested,
                    variant,
                    lca,
                )
            )
        return out

    same = [] if policy.within_cluster_queue == "Never" else from_queue(cluster_queue, None, False)
    hierarchy: list[ClassifiedCandidate] = []
    by_priority: list[ClassifiedCandidate] = []

    def collect(
        current: Node, root: Node, skip: Node | None, advantage: bool, out: list[ClassifiedCandidate]
    ) -> None:
        cohorts, queues = _children(current)
        for child in cohorts:
            if child is skip or within_nominal(child, frs):
                continue
            collect(child, root, skip, advantage, out)
        for child in queues:
            if child is not node and not within_nominal(child, frs):
                out.extend(from_queue(child.name, root, advantage))

    if takes_from_cohort:
        advantage, remaining = quantities_fit_in_quota(tree, node, requests)
        previous: Node | None = None
        subtree: Node | None = node.parent
        while subtree is not None:
            collect(subtree, subtree, previous, advantage, hierarchy if advantage else by_priority)
            fits, remaining = quantities_fit_in_quota(tree, subtree, remaining)
            advantage = advantage or fits
            previous, subtree = subtree, subtree.parent
    groups = [order(g, cluster_queue) for g in (hierarchy, by_priority, same)]
    ordered = [c for g in groups for c in g if c.evicted] + [c for g in groups for c in g if not c.evicted]
    return CandidateList(tree, cluster_queue, ordered, frs, len(hierarchy), len(hierarchy) + len(by_priority))


def candidate_order_key(candidate: Victim, preemptor_cq: str) -> tuple[int, int, int, int, str]:
    """Upstream ``CandidatesOrdering``: evicted first, other ClusterQueues first, lower priority first, most
    recently admitted first, then id."""
    return (
        0 if candidate.evicted else 1,
        1 if candidate.cluster_queue == preemptor_cq else 0,
        candidate.priority,
        -candidate.admitted_ms,
        candidate.id,
    )


V = TypeVar("V", bound=Victim)


def order(cands: Iterable[V], preemptor_cq: str) -> list[V]:
    """``cands`` sorted by :func:`candidate_order_key`."""
    return sorted(cands, key=lambda c: candidate_order_key(c, preemptor_cq))
