"""Kueue's quota tree: SubtreeQuota, localQuota, Usage, available, potentialAvailable per (flavor, resource).

This is the algorithm of ``pkg/cache/scheduler/resource_node.go`` (kubernetes-sigs/kueue) as written out in
``shared/reference/queues.md`` §1.2, for flat and hierarchical cohorts, cohort-level quota, ``borrowingLimit``
and ``lendingLimit``. Per node N (ClusterQueue or Cohort) and FlavorResource fr, in integer units:

* ``SubtreeQuota(N) = nominal(N) + Σ_children (SubtreeQuota(c) − localQuota(c))`` (a CQ: its nominal);
* ``localQuota(N) = max(0, SubtreeQuota(N) − lendingLimit(N))`` when a lending limit is set, else 0:
  capacity only N's subtree sees, never lent upward;
* ``Usage(Cohort) = Σ_children max(0, Usage(c) − localQuota(c))``;
  ``LocalAvailable = max(0, localQuota − Usage)``;
* ``available(N)`` (what N can still use) and ``potentialAvailable(N)`` (same with zero usage) walk up to the
  root, capped by ``borrowingLimit`` at each node that has one;
* ``addUsage``/``removeUsage`` touch only the path to the root: usage fills LocalAvailable first and the rest
  bubbles up.

SubtreeQuota and localQuota are computed once, when the tree is built (quotas are static in a run).
``available`` may be negative after over-admission; nothing here clamps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.queues import QueueConfig, ResourceGroup

__all__ = ["FlavorResource", "Node", "Quota", "ResourceTree"]


class FlavorResource(NamedTuple):
    """One (flavor, resource) pair, the unit every quota and usage is kept in."""

    flavor: str
    resource: str

    def __str__(self) -> str:
        return f"{self.flavor}/{self.resource}"


@dataclass(frozen=True)
class Quota:
    """A node's own quota for one FlavorResource; ``None`` limits are unlimited."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


class Node:
    """A ClusterQueue or Cohort in the tree: static quotas plus the mutable Usage."""

    __slots__ = (
        "borrowing_limits",
        "children",
        "descent",
        "flat_height",
        "is_cohort",
        "limited",
        "local_quota",
        "name",
        "parent",
        "potential",
        "prepared",
        "quotas",
        "subtree_quota",
        "top",
        "usage",
    )

    def __init__(self, name: str, is_cohort: bool, quotas: Mapping[FlavorResource, Quota]) -> None:
        self.name = name
        self.is_cohort = is_cohort
        self.parent: Node | None = None
        self.children: list[Node] = []
        self.quotas: dict[FlavorResource, Quota] = dict(quotas)
        #: The borrowingLimits that are set (most pairs have none).
        self.borrowing_limits: dict[FlavorResource, int] = {
            fr: q.borrowing_limit for fr, q in self.quotas.items() if q.borrowing_limit is not None
        }
        self.subtree_quota: dict[FlavorResource, int] = {}
        self.local_quota: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        #: potentialAvailable per pair, remembered by :meth:`ResourceTree.potential_available`.
        self.potential: dict[FlavorResource, int] = {}
        #: Static answers flavor assignment derives from this node's quotas per podset shape
        #: (``admission/flavor_rows.py``), kept as long as the tree.
        self.prepared: dict[object, object] = {}
        #: The root, and the path from below it down to this node (set when the tree is linked; the
        #: structure is static in a run): ``available`` walks them without rebuilding the path.
        self.top: Node = self
        self.descent: tuple[Node, ...] = ()
        #: Whether a node on the descent sets a lendingLimit or borrowingLimit (set when the tree is
        #: linked): without any, ``available`` is the root's unused quota alone.
        self.limited = False
        #: For a ClusterQueue right below its root without a lendingLimit of its own: the height
        #: ``borrowing_height`` gives whenever it borrows (the root's, whatever the usage); else None.
        self.flat_height: int | None = None

    def __repr__(self) -> str:
        return f"{'Cohort' if self.is_cohort else 'ClusterQueue'}({self.name!r})"

    def path_to_root(self) -> Iterator[Node]:
        """This node, then each ancestor up to the root."""
        node: Node | None = self
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        """The top of this node's tree (itself when it has no parent)."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def height(self) -> int:
        """Distance to the furthest leaf, as upstream's ``getNodeHeight`` counts it (a lone CQ is 0)."""
        best = min(len(self.children), 1)
        for child in self.children:
            if child.is_cohort:
                best = max(best, child.height() + 1)
        return best


def _group_quotas(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Quota]:
    out: dict[FlavorResource, Quota] = {}
    for group in groups:
        for flavor in group.flavors:
            for q in flavor.resources:
                out[FlavorResource(flavor.name, q.name)] = Quota(
                    q.nominal_quota, q.borrowing_limit, q.lending_limit
                )
    return out


class ResourceTree:
    """The quota tree of a whole configuration; the one owner of quota usage."""

    def __init__(
        self,
        cluster_queues: Mapping[str, tuple[str | None, Mapping[FlavorResource, Quota]]],
        cohorts: Mapping[str, tuple[str | None, Mapping[FlavorResource, Quota]]],
    ) -> None:
        """Build from ``name -> (parent cohort or None, quotas)``; unknown parents become implicit roots."""
        self.cohorts: dict[str, Node] = {n: Node(n, True, q) for n, (_, q) in cohorts.items()}
        self.cluster_queues: dict[str, Node] = {n: Node(n, False, q) for n, (_, q) in cluster_queues.items()}
        for table, parts in ((self.cohorts, cohorts), (self.cluster_queues, cluster_queues)):
            for name, (parent, _) in parts.items():
                if parent is None:
                    continue
                if parent not in self.cohorts:
                    self.cohorts[parent] = Node(parent, True, {})  # implicit cohort
                node = table[name]
                node.parent = self.cohorts[parent]
                node.parent.children.append(node)
        for node in self.cohorts.values():
            seen: set[int] = set()
            for anc in node.path_to_root():
                if id(anc) in seen:
                    raise ValueError(f"cohort {node.name!r} is in a cycle of parents")
                seen.add(id(anc))
        for root in self.roots():
            self._accumulate(root)
        for node in (*self.cohorts.values(), *self.cluster_queues.values()):
            path = [n for n in node.path_to_root() if n.parent is not None]
            node.top, node.descent = node.root(), tuple(reversed(path))
            node.limited = any(n.local_quota or n.borrowing_limits for n in node.descent)
            if node.parent is not None and node.parent.parent is None and not node.local_quota:
                node.flat_height = node.parent.height()
        #: potentialAvailable and node heights are static (quotas and structure never change in a run).
        self._heights: dict[int, int] = {}
        #: A count of usage changes (see :meth:`restored`): answers read from the tree can be remembered
        #: while it stays the same.
        self.version = 0

    @classmethod
    def from_config(cls, config: QueueConfig) -> ResourceTree:
        """The tree of a validated configuration, with Kueue's implicit cohorts."""
        cqs = {
            cq.name: (cq.spec.cohort_name, _group_quotas(cq.spec.resource_groups))
            for cq in config.cluster_queues
        }
        explicit = {c.name: c for c in config.cohorts}
        cohorts: dict[str, tuple[str | None, Mapping[FlavorResource, Quota]]] = {}
        for name, parent in config.cohort_parents().items():
            quotas = _group_quotas(explicit[name].spec.resource_groups) if name in explicit else {}
            cohorts[name] = (parent, quotas)
        return cls(cqs, cohorts)

    # ---- structure -------------------------------------------------------------------------------------

    def roots(self) -> list[Node]:
        """Every root: top cohorts and ClusterQueues without a cohort, in name order."""
        nodes = [*self.cohorts.values(), *self.cluster_queues.values()]
        return sorted((n for n in nodes if n.parent is None), key=lambda n: (not n.is_cohort, n.name))

    def cluster_queue(self, name: str) -> Node:
        """The node of ClusterQueue ``name``."""
        return self.cluster_queues[name]

    def _accumulate(self, node: Node) -> None:
        """SubtreeQuota and localQuota, bottom-up, once (``updateCohortResourceNode`` upstream)."""
        sq = {fr: q.nominal for fr, q in node.quotas.items()}
        for child in node.children:
            self._accumulate(child)
            for fr, child_sq in child.subtree_quota.items():
                sq[fr] = sq.get(fr, 0) + child_sq - child.local_quota.get(fr, 0)
        node.subtree_quota = sq
        local: dict[FlavorResource, int] = {}
        for fr, amount in sq.items():
            limit = node.quotas[fr].lending_limit if fr in node.quotas else None
            if limit is not None:
                local[fr] = max(0, amount - limit)
        node.local_quota = local

    # ---- the §1.2 functions ----------------------------------------------------------------------------

    @staticmethod
    def local_available(node: Node, fr: FlavorResource) -> int:
        """Unused private (localQuota) capacity of ``node``: ``max(0, localQuota − Usage)``."""
        return max(0, node.local_quota.get(fr, 0) - node.usage.get(fr, 0))

    def available(self, node: Node, fr: FlavorResource) -> int:
        """How much of ``fr`` ``node`` can still use now; a request ``v`` fits when ``v <= available``.

        Upstream's recursion (the parent's available, capped by a borrowing limit, plus the node's own
        LocalAvailable) computed from the root down. Without a lending or borrowing limit below the root
        every step of the walk adds nothing (usage is never negative): the root's unused quota."""
        top = node.top
        avail = top.subtree_quota.get(fr, 0) - top.usage.get(fr, 0)
        if not node.limited:
            return avail
        for current in node.descent:
            local = current.local_quota.get(fr, 0)
            used = current.usage.get(fr, 0)
            limit = current.borrowing_limits.get(fr)
            if limit is not None:
                stored_in_parent = current.subtree_quota.get(fr, 0) - local
                used_in_parent = used - local if used > local else 0
                cap = stored_in_parent - used_in_parent + limit
                if cap < avail:
                    avail = cap
            if local > used:
                avail += local - used
        return avail

    def potential_available(self, node: Node, fr: FlavorResource) -> int:
        """The most of ``fr`` ``node`` could ever use (zero usage everywhere), respecting borrowingLimits
        (static: computed once per node and pair)."""
        known = node.potential.get(fr)
        if known is None:
            known = node.potential[fr] = self._potential_available(node, fr)
        return known

    def _potential_available(self, node: Node, fr: FlavorResource) -> int:
        if node.parent is None:
            return node.subtree_quota.get(fr, 0)
        avail = node.local_quota.get(fr, 0) + self.potential_available(node.parent, fr)
        quota = node.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            avail = min(avail, node.subtree_quota.get(fr, 0) + quota.borrowing_limit)
        return avail

    def height(self, node: Node) -> int:
        """``node.height()``, computed once per node (the structure is static)."""
        known = self._heights.get(id(node))
        if known is None:
            known = self._heights[id(node)] = node.height()
        return known

    def add_usage(self, node: Node, fr: FlavorResource, value: int) -> None:
        """Add usage at ``node``; what exceeds its LocalAvailable bubbles up to the parent."""
        self.version += 1
        current: Node | None = node
        while current is not None and value > 0:
            used = current.usage.get(fr, 0)
            local_avail = current.local_quota.get(fr, 0) - used
            current.usage[fr] = used + value
            if local_avail < 0:
                local_avail = 0
            if value <= local_avail:
                return
            value -= local_avail
            current = current.parent

    def remove_usage(self, node: Node, fr: FlavorResource, value: int) -> None:
        """Remove usage at ``node``; the part it was storing in its parent is removed there too."""
        self.version += 1
        current: Node | None = node
        while current is not None and value > 0:
            stored = current.usage.get(fr, 0) - current.local_quota.get(fr, 0)
            current.usage[fr] = current.usage.get(fr, 0) - value
            if stored <= 0:
                return
            value = min(value, stored)
            current = current.parent

    def add_cq_usage(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        """Reserve a workload's usage in ClusterQueue ``cq``."""
        node = self.cluster_queues[cq]
        for fr, value in usage.items():
            self.add_usage(node, fr, value)

    def remove_cq_usage(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        """Release a workload's usage from ClusterQueue ``cq``."""
        node = self.cluster_queues[cq]
        for fr, value in usage.items():
            self.remove_usage(node, fr, value)

    def reservable(
        self, cq: str, usage: Mapping[FlavorResource, int], borrowing: bool
    ) -> dict[FlavorResource, int]:
        """Quota a preempting head without candidates holds for the rest of its cycle (upstream
        ``quotaResourcesToReserve``, clamped at 0): up to nominal, or nominal + borrowingLimit when its
        assignment borrows."""
        node = self.cluster_queues[cq]
        out: dict[FlavorResource, int] = {}
        for fr, value in usage.items():
            quota = node.quotas[fr]
            used = node.usage.get(fr, 0)
            if borrowing:
                cap = value if quota.borrowing_limit is None else quota.nominal + quota.borrowing_limit - used
            else:
                cap = quota.nominal - used
            out[fr] = max(0, min(value, cap))
        return out

    @contextmanager
    def simulate_removal(self, usages: Iterable[tuple[str, Mapping[FlavorResource, int]]]) -> Iterator[None]:
        """Temporarily release ``(cq, usage)`` pairs (preemption targets), restoring them on exit."""
        items = list(usages)
        for cq, usage in items:
            self.remove_cq_usage(cq, usage)
        try:
            yield
        finally:
            for cq, usage in reversed(items):
                self.add_cq_usage(cq, usage)

    # ---- derived tests -----------------------------------------------------------------------------------

    @staticmethod
    def is_borrowing(node: Node, fr: FlavorResource) -> bool:
        """``Usage > SubtreeQuota`` (upstream ``IsWithinNominalInResources`` is the negation)."""
        return node.usage.get(fr, 0) > node.subtree_quota.get(fr, 0)

    @staticmethod
    def borrowing_with(node: Node, fr: FlavorResource, value: int) -> bool:
        """Whether ``node`` would be borrowing on ``fr`` after adding ``value``."""
        return node.usage.get(fr, 0) + value > node.subtree_quota.get(fr, 0)

    def fits(self, cq: str, usage: Mapping[FlavorResource, int]) -> bool:
        """Whether every amount of ``usage`` fits in ``available`` of ClusterQueue ``cq`` right now."""
        node = self.cluster_queues[cq]
        return all(value <= self.available(node, fr) for fr, value in usage.items())

    def borrowing_height(self, node: Node, fr: FlavorResource, value: int) -> tuple[int, bool]:
        """Height of the lowest subtree holding ``value`` more of ``fr`` without borrowing (0: none needed).

        Also returns whether that subtree is smaller than the whole tree (upstream
        ``FindHeightOfLowestSubtreeThatFits``, used by the classic ordering and by preemption)."""
        if node.parent is None:
            return 0, False
        used = node.usage.get(fr, 0)
        if used + value <= node.subtree_quota.get(fr, 0):  # not borrowing
            return 0, True
        local = node.local_quota.get(fr, 0)
        remaining = value - (local - used if local > used else 0)
        tracking: Node | None = node.parent
        while tracking is not None:
            used = tracking.usage.get(fr, 0)
            if used + remaining <= tracking.subtree_quota.get(fr, 0):
                return self.height(tracking), tracking.parent is not None
            local = tracking.local_quota.get(fr, 0)
            remaining -= local - used if local > used else 0
            tracking = tracking.parent
        return self.height(node.root()), False

    def recomputed_usage(self) -> dict[str, dict[FlavorResource, int]]:
        """Every cohort's Usage rebuilt from the ClusterQueues' usage (``accumulateFromChild``)."""
        out: dict[str, dict[FlavorResource, int]] = {}

        def walk(node: Node) -> dict[FlavorResource, int]:
            if not node.is_cohort:
                return {fr: v for fr, v in node.usage.items() if v}
            usage: dict[FlavorResource, int] = {}
            for child in node.children:
                for fr, value in walk(child).items():
                    over = max(0, value - child.local_quota.get(fr, 0))
                    if over:
                        usage[fr] = usage.get(fr, 0) + over
            out[node.name] = usage
            return usage

        for root in self.roots():
            walk(root)
        return out

    # ---- reporting ---------------------------------------------------------------------------------------

    @staticmethod
    def borrowed(node: Node, fr: FlavorResource) -> int:
        """Usage above the node's SubtreeQuota (for a ClusterQueue: above its nominal quota)."""
        return max(0, node.usage.get(fr, 0) - node.subtree_quota.get(fr, 0))

    def _consumed_pool(self, node: Node, fr: FlavorResource) -> int:
        """What is drawn from ``node``'s pool: its Usage plus what it lends further up."""
        return node.usage.get(fr, 0) + (self.lent(node, fr) if node.parent is not None else 0)

    def lent(self, node: Node, fr: FlavorResource) -> int:
        """How much of ``node``'s unused quota others are using now, as the least it must be lending.

        ``node`` contributes ``SubtreeQuota − localQuota`` (= min(nominal, lendingLimit) for a CQ) to its
        parent's pool and itself draws ``used = max(0, Usage − localQuota)`` of it. Everyone else draws
        ``consumed(parent) − used``, where ``consumed(P) = Usage(P) + lent(P)`` (what P's own parent takes of
        P's pool counts too, so usage anywhere in the tree is seen). Others are assumed to use every other
        contribution to the pool first (``SubtreeQuota(parent) − contribution``); only the excess must come
        from ``node``'s unused contribution:
        ``lent = min(max(0, contribution − used),
        max(0, consumed(parent) − used − (SQ(parent) − contribution)))``.
        With one borrower in a flat cohort it equals what that borrower borrows (W1: b lends 4, a uses 12).
        ``lent_series`` computes the same over recorded usage samples at once.
        """
        parent = node.parent
        if parent is None:
            return 0
        local = node.local_quota.get(fr, 0)
        contribution = node.subtree_quota.get(fr, 0) - local
        used = max(0, node.usage.get(fr, 0) - local)
        unused = max(0, contribution - used)
        if unused == 0:
            return 0
        others = self._consumed_pool(parent, fr) - used
        from_others_pool = parent.subtree_quota.get(fr, 0) - contribution
        return min(unused, max(0, others - from_others_pool))

    def all_nodes(self) -> list[Node]:
        """Every cohort and ClusterQueue, parents before their children (in name order per level)."""
        out: list[Node] = []
        level = sorted(
            (n for n in (*self.cohorts.values(), *self.cluster_queues.values()) if n.parent is None),
            key=lambda n: (n.is_cohort, n.name),
        )
        while level:
            out.extend(level)
            level = sorted((c for n in level for c in n.children), key=lambda n: (n.is_cohort, n.name))
        return out

    def lent_series(
        self, frs: list[FlavorResource], usage: Mapping[tuple[int, FlavorResource], NDArray[np.int64]]
    ) -> Iterator[tuple[tuple[int, FlavorResource], NDArray[np.int64]]]:
        """``lent`` over many recorded states at once: ``usage`` maps (id(node), fr) of every node of
        ``all_nodes`` to a numpy array of that node's usage per sample; yields the same keys with arrays of
        lent (the scalar formula of ``lent``, vectorised, parents first). Only the series a child still
        needs (those of cohorts below a root) are kept: a caller storing what it reads holds the rest."""
        parents: dict[tuple[int, FlavorResource], NDArray[np.int64]] = {}
        for node in self.all_nodes():
            for fr in frs:
                key = (id(node), fr)
                u = usage[key]
                parent = node.parent
                if parent is None:
                    yield key, np.zeros(len(u), dtype=np.int64)
                    continue
                local = node.local_quota.get(fr, 0)
                contribution = node.subtree_quota.get(fr, 0) - local
                used = np.maximum(0, u - local)
                unused = np.maximum(0, contribution - used)
                consumed = usage[(id(parent), fr)] + (
                    parents[(id(parent), fr)] if parent.parent is not None else 0
                )
                excess = consumed - used - (parent.subtree_quota.get(fr, 0) - contribution)
                lent = np.asarray(
                    np.where(unused == 0, 0, np.minimum(unused, np.maximum(0, excess))), dtype=np.int64
                )
                if node.children:
                    parents[key] = lent
                yield key, lent

    def cq_status(self, cq: str) -> dict[str, dict[str, int]]:
        """Per ``"flavor/resource"``: nominal, usage, borrowed, lent, and the limits that are set."""
        node = self.cluster_queues[cq]
        out: dict[str, dict[str, int]] = {}
        for fr, quota in node.quotas.items():
            row = {
                "nominal": quota.nominal,
                "usage": node.usage.get(fr, 0),
                "borrowed": self.borrowed(node, fr),
                "lent": self.lent(node, fr),
            }
            if quota.borrowing_limit is not None:
                row["borrowing_limit"] = quota.borrowing_limit
            if quota.lending_limit is not None:
                row["lending_limit"] = quota.lending_limit
            out[str(fr)] = row
        return out
