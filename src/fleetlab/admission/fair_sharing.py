"""Kueue's fair sharing: dominant resource share (DRS) and the admission tournament
(``shared/reference/queues.md`` §1.3 and §1.6; upstream ``pkg/cache/scheduler/fair_sharing.go`` and
``pkg/scheduler/fair_sharing_iterator.go``).

DRS of a node N (ClusterQueue or Cohort) that has a parent, optionally with a workload's request added:

* ``borrowed[r] = Σ_f max(0, request[f, r] + Usage(N)[f, r] − SubtreeQuota(N)[f, r])`` over N's
  SubtreeQuota FlavorResources; none positive → DRS 0 (not borrowing);
* ``lendable[r] = Σ_f potentialAvailable(parent(N), (f, r))`` over the root's FlavorResources;
* exact form (what ordering uses, as newest upstream ``PreciseWeightedShare`` / ``CompareDRS``):
  ``ratio = max_r borrowed[r] × 1000 / lendable[r]`` over ``lendable[r] > 0`` as a fraction (ties:
  alphabetically smallest resource), ``share = ratio / weight``; kept as :class:`fractions.Fraction` so that
  small shares and large weights never tie by rounding;
* integer form (§1.6, older releases, reported only): ``value = floor(floor(ratio) × 1000 / weight_milli)``;
* weight 0: ``value = MAX_SHARE`` (Go's ``math.MaxInt``) and ``precise = inf``, only when borrowing (newest
  upstream); a zero-weight node that does not borrow has share 0.

A root (no parent) always has DRS 0. Ordering uses :meth:`DominantResourceShare.sort_key`: zero-weight
borrowers above everyone else, ordered among themselves by the unweighted ratio; everyone else by the exact
weighted share (upstream ``CompareDRS``).

The tournament (:func:`pop_fair`): the next entry of a cycle comes from one cohort tree. Every remaining
head of that tree is simulated as admitted in turn; with its usage added, the DRS of its ClusterQueue and of
every cohort on the path to the root is computed, and the DRS of the child of cohort P on that path is the
head's score at P. Each cohort, bottom-up, keeps the child nominee with the lowest score at it, then higher
priority, then earlier timestamp (then submission order). Scores are recomputed on every pop, so admissions
made earlier in the cycle count. Which tree goes next is not defined upstream (Go map order); here it is the
tree of the remaining ClusterQueue with the smallest name.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar

from fleetlab.admission.tree import FlavorResource, Node, ResourceTree
from fleetlab.model.queues import QueueConfig

__all__ = [
    "DEFAULT_WEIGHT_MILLI",
    "MAX_SHARE",
    "DominantResourceShare",
    "FairWeights",
    "dominant_resource_share",
    "pop_fair",
    "weights_from_config",
]

#: Go's ``math.MaxInt`` on 64-bit: the share of a borrowing node with weight 0.
MAX_SHARE = sys.maxsize
#: ``fairSharing.weight`` default 1, in milli-units.
DEFAULT_WEIGHT_MILLI = 1000

#: ``(is_cohort, name) -> weight in milli-units``; absent means :data:`DEFAULT_WEIGHT_MILLI`.
FairWeights = Mapping[tuple[bool, str], int]


@dataclass(frozen=True)
class DominantResourceShare:
    """One node's DRS: the §1.6 integer value, upstream's precise float, and what produced them."""

    value: int  # floor(ratio × 1000 / weight_milli); MAX_SHARE for a borrowing zero-weight node
    precise: float  # unweighted_ratio / weight; inf for a borrowing zero-weight node
    unweighted_ratio: float  # max_r borrowed × 1000 / lendable (float)
    resource: str  # the dominant resource ("" when none)
    borrowing: bool  # usage (+ request) above SubtreeQuota on some FlavorResource
    borrowed_frs: tuple[FlavorResource, ...]
    weight_milli: int
    exact_ratio: Fraction = Fraction(0)  # max_r borrowed × 1000 / lendable, unrounded

    @property
    def zero_weight_borrows(self) -> bool:
        """A borrowing node with weight 0 (upstream ``ZeroWeightBorrows``: share +inf)."""
        return self.weight_milli == 0 and self.borrowing

    @property
    def weighted_share(self) -> int:
        """``status.fairSharing.weightedShare``: ceiling of the precise share (MAX_SHARE for +inf)."""
        return MAX_SHARE if self.zero_weight_borrows else math.ceil(self.precise)

    @property
    def exact_share(self) -> Fraction:
        """``ratio / weight`` as an exact fraction (0 when not borrowing; zero weight: the bare ratio)."""
        if self.weight_milli == 0 or not self.exact_ratio:
            return self.exact_ratio
        return self.exact_ratio * 1000 / self.weight_milli

    def sort_key(self) -> tuple[int, Fraction]:
        """Lower is preferred for admission, higher targeted by preemption (upstream ``CompareDRS``)."""
        return (1 if self.zero_weight_borrows else 0, self.exact_share)

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        """Whether the node borrows on a FlavorResource of ``requested`` (upstream ``IsBorrowingOn``)."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed_frs)


def weights_from_config(config: QueueConfig) -> dict[tuple[bool, str], int]:
    """``spec.fairSharing.weight`` (milli) of every ClusterQueue and explicit Cohort that sets one."""
    out: dict[tuple[bool, str], int] = {}
    for cq in config.cluster_queues:
        if cq.spec.fair_sharing is not None:
            out[(False, cq.name)] = cq.spec.fair_sharing.weight_milli
    for cohort in config.cohorts:
        if cohort.spec.fair_sharing is not None:
            out[(True, cohort.name)] = cohort.spec.fair_sharing.weight_milli
    return out


def dominant_resource_share(
    tree: ResourceTree,
    node: Node,
    weights: FairWeights | None = None,
    request: Mapping[FlavorResource, int] | None = None,
) -> DominantResourceShare:
    """DRS of ``node`` (§1.6), with ``request`` added to its usage when given."""
    weight = (weights or {}).get((node.is_cohort, node.name), DEFAULT_WEIGHT_MILLI)
    zero = DominantResourceShare(0, 0.0, 0.0, "", False, (), weight)
    if node.parent is None:
        return zero
    req = request or {}
    borrowed: dict[str, int] = {}
    borrowed_frs: list[FlavorResource] = []
    for fr, quota in node.subtree_quota.items():
        amount = req.get(fr, 0) + node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowed[fr.resource] = borrowed.get(fr.resource, 0) + amount
            borrowed_frs.append(fr)
    if not borrowed:
        return zero
    lendable: dict[str, int] = {}
    for fr in node.root().subtree_quota:
        lendable[fr.resource] = lendable.get(fr.resource, 0) + tree.potential_available(node.parent, fr)
    exact, resource = Fraction(0), ""
    for name in sorted(borrowed):  # alphabetical, so the first maximum wins ties
        lend = lendable.get(name, 0)
        if lend <= 0:
            continue
        ratio = Fraction(borrowed[name] * 1000, lend)
        if ratio > exact:
            exact, resource = ratio, name
    frs = tuple(borrowed_frs)
    float_ratio = float(exact)
    if weight == 0:
        return DominantResourceShare(MAX_SHARE, math.inf, float_ratio, resource, True, frs, weight, exact)
    value = math.floor(exact) * 1000 // weight
    precise = float(exact * 1000 / weight)
    return DominantResourceShare(value, precise, float_ratio, resource, True, frs, weight, exact)


T = TypeVar("T")


def _children(node: Node) -> list[Node]:
    """Child cohorts first, then child ClusterQueues (upstream ``runTournament``), each by name."""
    return sorted(node.children, key=lambda n: (not n.is_cohort, n.name))


def pop_fair(
    tree: ResourceTree,
    weights: FairWeights,
    remaining: MutableMapping[str, T],
    usage_of: Callable[[T], Mapping[FlavorResource, int]],
    tiebreak: Callable[[T], tuple[int, ...]],
) -> tuple[T, dict[tuple[str, str], DominantResourceShare]]:
    """Remove and return the next entry of ``remaining`` (ClusterQueue name → its head) by the fair-sharing
    tournament, with the scores used: ``(cohort, cluster queue) -> DRS`` of the cohort's child on the path.

    ``tiebreak`` orders entries of equal score (``(-priority, timestamp, seq)``: higher priority, then FIFO).
    ``tree`` is left exactly as it was."""
    if not remaining:
        raise KeyError("pop_fair: no entries left")
    first = min(remaining)
    node = tree.cluster_queue(first)
    if node.parent is None:
        return remaining.pop(first), {}
    root = node.root()
    scores: dict[tuple[str, str], DominantResourceShare] = {}
    for name in sorted(remaining):
        cq_node = tree.cluster_queue(name)
        if cq_node.root() is not root:
            continue
        usage = usage_of(remaining[name])
        tree.add_cq_usage(name, usage)
        try:
            current = dominant_resource_share(tree, cq_node, weights)
            for ancestor in cq_node.path_to_root():
                if ancestor.parent is None:
                    break
                scores[(ancestor.parent.name, name)] = current
                current = dominant_resource_share(tree, ancestor.parent, weights)
        finally:
            tree.remove_cq_usage(name, usage)

    def run(cohort: Node) -> str | None:
        candidates: list[str] = []
        for child in _children(cohort):
            if child.is_cohort:
                winner = run(child)
                if winner is not None:
                    candidates.append(winner)
            elif child.name in remaining:
                candidates.append(child.name)
        if not candidates:
            return None
        return min(
            candidates,
            key=lambda cq: (scores[(cohort.name, cq)].sort_key(), tiebreak(remaining[cq])),
        )

    winner = run(root)
    assert winner is not None  # ``first`` is in this tree
    return remaining.pop(winner), scores
