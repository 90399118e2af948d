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

import heapq
import itertools
from bisect import bisect_left
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Protocol, TypeVar

from fleetlab.admission.admitted_index import CandidateKey
from fleetlab.admission.tree import FlavorResource, Node, ResourceTree

if TYPE_CHECKING:
    from fleetlab.admission.manager import AdmissionManager, Workload

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
    usage, local_quota = node.usage, node.local_quota
    for fr, value in requests.items():
        used = usage.get(fr, 0)
        if used + value > node.subtree_quota.get(fr, 0):
            fits = False
        local_available = local_quota.get(fr, 0) - used if local_quota else 0
        if local_available > 0:
            value = value - local_available if value > local_available else 0
        remaining[fr] = value
    return fits, remaining


#: What :meth:`CandidateList.passes` makes of a candidate when it comes up.
_VALID, _SKIP, _DEAD = 0, 1, 2


@dataclass
class _Source:
    """One ClusterQueue's candidates in one group: the workloads its index lists for the needed
    (flavor, resource) pairs, in candidate-key order, that the preemptor's policy allows taking."""

    cluster_queue: str
    node: Node
    lca: Node | None
    own: bool
    advantage: bool  # hierarchical reclaim: the preemptor fits in a subtree below ``lca``
    keys: list[list[CandidateKey]]  # one ascending list per needed (flavor, resource) in use
    stop: CandidateKey | None  # keys from here on are never allowed (None: no bound)
    rule: str  # the policy value deciding which workloads of this queue may be taken


class CandidateList:
    """Upstream ``candidateIterator``: the ordered candidates and the validity check of each pass.

    Candidates are read lazily from the manager's :class:`~fleetlab.admission.admitted_index.AdmittedIndex`
    in upstream order (already-evicted first; then hierarchy, priority, same-queue groups, each by
    :func:`candidate_order_key`), so a pass that fits after a few victims reads a few workloads. Within a
    pass a ClusterQueue found within nominal stays so (victims only remove usage), so the rest of its
    candidates are dropped unread; they would all be invalid."""

    def __init__(
        self,
        manager: AdmissionManager,
        workload: Workload,
        cluster_queue: str,
        frs: Collection[FlavorResource],
        groups: tuple[list[_Source], list[_Source], list[_Source]] = ([], [], []),
        preemptor_ts: int = 0,
        threshold: int | None = None,
        bwc_on: bool = False,
    ) -> None:
        self.tree = manager.tree
        self.cluster_queue = cluster_queue
        self.frs = frs
        self._manager = manager
        self._priority = workload.priority
        self._ts = preemptor_ts
        self._threshold = threshold
        self._bwc_on = bwc_on
        self._requested = manager.requested_victims()
        self._own_rule = manager.cluster_queue_spec(cluster_queue).spec.preemption.within_cluster_queue
        self._groups = groups
        self._evicted = self._evicted_candidates()
        hierarchy = any(self._any_allowed(src) for src in groups[0])
        self.no_hierarchy = not hierarchy
        self.no_other_queues = not hierarchy and not any(self._any_allowed(src) for src in groups[1])
        self.empty = self.no_other_queues and not any(self._any_allowed(src) for src in groups[2])

    @property
    def ordered(self) -> list[ClassifiedCandidate]:
        """Every candidate, in upstream order (all of them read: for inspection, not for the passes)."""
        out = [c for group in self._evicted for c in group]
        for sources in self._groups:
            out.extend(heapq.merge(*(self._stream(src) for src in sources), key=_key))
        return out

    # ---- reading the index ---------------------------------------------------------------------------

    def _allowed_keys(self, src: _Source) -> Iterator[CandidateKey]:
        """``src``'s candidate keys the policy allows, ascending, each once (a workload may use several
        of the needed pairs)."""
        lists = src.keys
        if len(lists) == 1:
            keys = lists[0]
            merged: Iterable[CandidateKey] = (
                keys if src.stop is None else itertools.islice(keys, bisect_left(keys, src.stop))
            )
        else:
            merged = heapq.merge(*lists)
        previous: CandidateKey | None = None
        for key in merged:
            if src.stop is not None and key >= src.stop:
                return
            if key == previous:
                continue
            previous = key
            if self._newer(src, key):
                yield key

    def _newer(self, src: _Source, key: CandidateKey) -> bool:
        """Below ``src.stop``, the one condition left: ``LowerOrNewerEqualPriority`` allows a workload of
        the preemptor's own priority only when it was created after the preemptor's timestamp."""
        if src.rule != "LowerOrNewerEqualPriority" or key[0] != self._priority:
            return True
        return self._ts < self._manager.admitted.by_id[src.cluster_queue][key[2]].workload.created_ms

    def _any_allowed(self, src: _Source) -> bool:
        return next(self._allowed_keys(src), None) is not None

    def _candidate(self, src: _Source, key: CandidateKey, evicted: bool) -> ClassifiedCandidate:
        entry = self._manager.admitted.by_id[src.cluster_queue][key[2]]
        prio = key[0]
        if src.own:
            variant = Variant.WITHIN_CQ
        elif src.advantage:
            variant = Variant.HIERARCHICAL_RECLAIM
        elif (
            not self._bwc_on
            or prio >= self._priority
            or (self._threshold is not None and prio > self._threshold)
        ):
            variant = Variant.RECLAIM_WITHOUT_BORROWING
        else:
            variant = Variant.RECLAIM_WHILE_BORROWING
        created = entry.workload.created_ms
        return ClassifiedCandidate(
            key[2], src.cluster_queue, prio, created, -key[1], entry.usage, evicted, variant, src.lca
        )

    def _stream(self, src: _Source) -> Iterator[ClassifiedCandidate]:
        """``src``'s candidates not already requested as victims, in order."""
        requested = self._requested
        for key in self._allowed_keys(src):
            if key[2] not in requested:
                yield self._candidate(src, key, False)

    def _evicted_candidates(self) -> list[list[ClassifiedCandidate]]:
        """Per group, its candidates already requested as victims, ordered (upstream puts them first)."""
        out: list[list[ClassifiedCandidate]] = [[], [], []]
        if not self._requested:
            return out
        index = self._manager.admitted
        for g, sources in enumerate(self._groups):
            for src in sources:
                entries = index.by_id[src.cluster_queue]
                for wid in self._requested:
                    entry = entries.get(wid)
                    key = index.key(wid)
                    if entry is None or key is None or (src.stop is not None and key >= src.stop):
                        continue
                    if any(entry.usage.get(fr, 0) > 0 for fr in self.frs) and self._newer(src, key):
                        out[g].append(self._candidate(src, key, True))
            out[g].sort(key=_key)
        return out

    # ---- the passes ----------------------------------------------------------------------------------

    def may_fit_without_borrowing(self, usage: Mapping[FlavorResource, int]) -> bool:
        """False when a pass without borrowing cannot succeed: the preemptor's ClusterQueue would stay over
        its nominal quota even if every own-queue workload its policy could allow were evicted (evicting
        from other ClusterQueues never lowers its own usage)."""
        rule = self._own_rule  # withinClusterQueue: Never, LowerPriority or LowerOrNewerEqualPriority
        # LowerOrNewerEqualPriority: every workload of equal priority is counted, newer or not (a bound).
        bound = self._priority - 1 if rule == "LowerPriority" else self._priority
        node = self.tree.cluster_queue(self.cluster_queue)
        index = self._manager.admitted
        for fr, value in usage.items():
            freed = 0 if rule == "Never" else index.usage_up_to(self.cluster_queue, fr, bound)
            if node.usage.get(fr, 0) - freed + value > node.subtree_quota.get(fr, 0):
                return False
        return True

    def _state(self, cand: ClassifiedCandidate, borrowing: bool) -> int:
        """Upstream ``candidateIsValid``: own-queue candidates always; others only while their ClusterQueue,
        and every cohort below the subtree root, is over quota (else :data:`_DEAD`: for the rest of the
        pass), and not when borrowing forbids them (:data:`_SKIP`)."""
        if cand.cluster_queue == self.cluster_queue:
            return _VALID
        if borrowing and cand.variant == Variant.RECLAIM_WITHOUT_BORROWING:
            return _SKIP
        node: Node | None = self.tree.cluster_queue(cand.cluster_queue)
        while node is not None and node is not cand.lca:
            if within_nominal(node, self.frs):
                return _DEAD
            node = node.parent
        return _VALID

    def valid(self, cand: ClassifiedCandidate, borrowing: bool) -> bool:
        """Whether ``cand`` may be taken now in a pass with or without borrowing."""
        return self._state(cand, borrowing) == _VALID

    def passes(self, borrowing: bool) -> Iterator[ClassifiedCandidate]:
        """The candidates of one pass, each checked against the tree as it is when it comes up."""
        dead: set[str] = set()
        for group in self._evicted:
            for cand in group:
                if cand.cluster_queue in dead:
                    continue
                state = self._state(cand, borrowing)
                if state == _DEAD:
                    dead.add(cand.cluster_queue)
                elif state == _VALID:
                    yield cand
        for sources in self._groups:
            streams = [self._stream(src) for src in sources if src.cluster_queue not in dead]
            heap: list[tuple[CandidateKey, int, ClassifiedCandidate]] = []
            for k, stream in enumerate(streams):
                first = next(stream, None)
                if first is not None:
                    heap.append((_key(first), k, first))
            heapq.heapify(heap)
            while heap:
                _, k, cand = heap[0]
                state = self._state(cand, borrowing)
                if state != _VALID and cand.cluster_queue != self.cluster_queue:
                    # Dropped: within nominal now, so for the rest of the pass; or, borrowing, a reclaim
                    # allowed only without it, as is every later (higher-priority) one of this queue.
                    dead.add(cand.cluster_queue)
                    heapq.heappop(heap)
                    continue
                following = next(streams[k], None)
                if following is None:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, (_key(following), k, following))
                yield cand


def _key(cand: ClassifiedCandidate) -> CandidateKey:
    """Order within one group of one kind (evicted or not, own queue or not)."""
    return (cand.priority, -cand.admitted_ms, cand.id)


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


def _stop(rule: str, priority: int) -> CandidateKey | None:
    """The first candidate key policy ``rule`` never allows for a preemptor of ``priority``."""
    if rule == "LowerPriority":
        return (priority, -(1 << 62), "")
    if rule == "LowerOrNewerEqualPriority":
        return (priority + 1, -(1 << 62), "")
    return None


def build_candidates(
    manager: AdmissionManager,
    workload: Workload,
    cluster_queue: str,
    frs: Collection[FlavorResource],
    requests: Mapping[FlavorResource, int],
    preemptor_ts: int,
) -> CandidateList:
    """Upstream ``NewCandidateIterator``: same-queue, hierarchy and priority candidates, ordered (read
    lazily from the manager's index)."""
    tree = manager.tree
    policy = manager.cluster_queue_spec(cluster_queue).spec.preemption
    node = tree.cluster_queue(cluster_queue)
    takes_from_cohort = node.parent is not None and policy.reclaim_within_cohort != "Never"
    if policy.within_cluster_queue == "Never" and not takes_from_cohort:
        return CandidateList(manager, workload, cluster_queue, frs)  # the policies allow taking from no one
    bwc = policy.borrow_within_cohort
    bwc_on = bwc is not None and bwc.policy != "Never"
    threshold = bwc.max_priority_threshold if bwc_on and bwc is not None else None
    index = manager.admitted

    def source(name: str, queue: Node, lca: Node | None, advantage: bool) -> _Source | None:
        own = name == cluster_queue
        rule = policy.within_cluster_queue if own else policy.reclaim_within_cohort
        if rule == "Never":
            return None
        keys = [k for k in (index.keys(name, fr) for fr in frs) if k]
        if not keys:
            return None
        return _Source(name, queue, lca, own, advantage, keys, _stop(rule, workload.priority), rule)

    same: list[_Source] = []
    if policy.within_cluster_queue != "Never":
        own = source(cluster_queue, node, None, False)
        same = [own] if own is not None else []
    hierarchy: list[_Source] = []
    by_priority: list[_Source] = []

    def collect(current: Node, root: Node, skip: Node | None, advantage: bool, out: list[_Source]) -> None:
        cohorts, queues = _children(current)
        for child in cohorts:
            if child is skip or within_nominal(child, frs):
                continue
            collect(child, root, skip, advantage, out)
        for child in queues:
            if child is not node and not within_nominal(child, frs):
                found = source(child.name, child, root, advantage)
                if found is not None:
                    out.append(found)

    if takes_from_cohort:
        advantage, remaining = quantities_fit_in_quota(tree, node, requests)
        previous: Node | None = None
        subtree: Node | None = node.parent
        while subtree is not None:
            collect(subtree, subtree, previous, advantage, hierarchy if advantage else by_priority)
            fits, remaining = quantities_fit_in_quota(tree, subtree, remaining)
            advantage = advantage or fits
            previous, subtree = subtree, subtree.parent
    return CandidateList(
        manager, workload, cluster_queue, frs, (hierarchy, by_priority, same), preemptor_ts, threshold, bwc_on
    )


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
