"""Kueue's topology assignment of a PodSet (``FindTopologyAssignmentsForFlavor``), as in
kubernetes-sigs/kueue ``pkg/cache/tas_flavor_snapshot.go`` (v0.13 line, tested by ``tas_cache_test.go`` at
commit 02eb5698e49cd440d2509af78545084cecdfe11e).

Phase 1 counts, per leaf, how many pods of the PodSet fit (taints the PodSet and flavor do not tolerate,
and — when the lowest level is the hostname — a ``nodeSelector`` the node misses, make it 0), then sums
the counts up the tree; at the slice level each domain also counts whole slices (``count // sliceSize``),
summed above it. Phase 2 picks, at the requested level, one domain that holds every slice (BestFit: the
fullest-fitting one with the least spare; LeastFreeCapacity: the smallest first); a *preferred* level
that no domain satisfies moves one level up, and at the top level (or for an *unconstrained* PodSet at
the lowest level) several domains are taken greedily, the last one BestFit. Then it walks down level by
level: above the slice level the slices are spread greedily over all children of the chosen domains;
at and below it each domain's pods go to its own children. The assignment lists lowest-level domains
(hostnames when the lowest level is the hostname) in lexicographic order.

Profiles (Kueue feature gates, KEP-2724): BestFit is the default; ``LeastFreeCapacity`` sorts ascending
and never optimises the last domain; ``MostFreeCapacity`` sorts descending without the BestFit step;
``Mixed`` uses LeastFreeCapacity for unconstrained PodSets and BestFit otherwise. (Kueue v0.14 later made
LeastFreeCapacity pick the first domain that fits instead of only the smallest; the v0.13 rule is kept
here because the ported table pins it.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fleetlab.model.kube import Toleration
from fleetlab.model.resources import ResourceList
from fleetlab.model.tas_request import TopologyRequest
from fleetlab.placement.tas.snapshot import PODS, Domain, TasSnapshot, count_in

__all__ = [
    "DomainAssignment",
    "Profile",
    "TasPodSet",
    "TopologyAssignment",
    "find_assignments",
    "replace_node",
]

Profile = Literal["BestFit", "LeastFreeCapacity", "MostFreeCapacity", "Mixed"]


@dataclass(frozen=True)
class TasPodSet:
    """One PodSet to place: ``count`` pods of ``requests`` each. ``topology`` None means the request is
    implied (a TAS-only ClusterQueue): unconstrained at the lowest level."""

    name: str
    count: int
    requests: ResourceList
    topology: TopologyRequest | None = None
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainAssignment:
    """``count`` pods in the domain named by ``values`` (one value per assignment level)."""

    values: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    """A PodSet's ``topologyAssignment``: the levels the values name and the domains with their counts."""

    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...]

    @property
    def pods(self) -> int:
        return sum(d.count for d in self.domains)


class _Search:
    def __init__(self, snap: TasSnapshot, profile: Profile, unconstrained: bool) -> None:
        self.snap = snap
        self.least_free = profile == "LeastFreeCapacity" or (profile == "Mixed" and unconstrained)
        self.best_fit = not self.least_free and profile != "MostFreeCapacity"

    def sort(self, domains: Sequence[Domain]) -> list[Domain]:
        """Slices descending (ascending for LeastFreeCapacity), then pods ascending, then values."""
        sign = 1 if self.least_free else -1
        return sorted(domains, key=lambda d: (sign * d.slice_state, d.state, d.values))

    def fit_level(
        self, level: int, required: bool, slices: int, slice_size: int, unconstrained: bool
    ) -> tuple[int, list[Domain]] | str:
        snap = self.snap
        domains = snap.per_level[level]
        if not domains:
            return f"no topology domains at level: {snap.levels[level]}"
        ordered = self.sort(list(domains.values()))
        top = ordered[0]
        if self.best_fit and top.slice_state >= slices:
            top = _best_fit(ordered, slices)
        if top.slice_state >= slices:
            return level, [top]
        if required:
            return self.not_fit(top.slice_state, slices, slice_size)
        if level > 0 and not unconstrained:
            return self.fit_level(level - 1, required, slices, slice_size, unconstrained)
        chosen: list[Domain] = []
        left = slices
        for i, dom in enumerate(ordered):
            if left <= 0 or dom.slice_state <= 0:
                break
            if self.best_fit and dom.slice_state >= left:
                dom = _best_fit(ordered[i:], left)
            chosen.append(dom)
            left -= dom.slice_state
        if left > 0:
            return self.not_fit(slices - left, slices, slice_size)
        return level, chosen

    def not_fit(self, fit: int, total: int, slice_size: int) -> str:
        name = self.snap.flavor.topology_name
        unit = "pod(s)" if slice_size == 1 else "slice(s)"
        if fit == 0:
            return f'topology "{name}" doesn\'t allow to fit any of {total} {unit}'
        return f'topology "{name}" allows to fit only {fit} out of {total} {unit}'

    def take_slices(self, domains: Sequence[Domain], slices: int, slice_size: int) -> list[Domain]:
        """Upstream ``updateSliceCountsToMinimum``: fill domains in order, the last one BestFit."""
        out: list[Domain] = []
        left = slices
        for i, dom in enumerate(domains):
            if self.best_fit and dom.slice_state >= left:
                dom = _best_fit(domains[i:], left)
            if dom.slice_state >= left:
                dom.state, dom.slice_state = left * slice_size, left
                out.append(dom)
                return out
            dom.state = dom.slice_state * slice_size
            left -= dom.slice_state
            out.append(dom)
        raise AssertionError("phase 1 counted more slices than the domains hold")

    def take_pods(self, domains: Sequence[Domain], count: int) -> list[Domain]:
        """Upstream ``updateCountsToMinimum``: the same by pods, inside one parent domain."""
        out: list[Domain] = []
        left = count
        for i, dom in enumerate(domains):
            if self.best_fit and dom.state >= left:
                dom = _best_fit(domains[i:], left, by_pods=True)
            if dom.state >= left:
                dom.state = left
                out.append(dom)
                return out
            left -= dom.state
            out.append(dom)
        raise AssertionError("phase 1 counted more pods than the domains hold")


def _best_fit(domains: Sequence[Domain], needed: int, by_pods: bool = False) -> Domain:
    """The first domain with the smallest count still ≥ ``needed`` (the first domain if none is)."""
    best = domains[0]
    best_state = best.state if by_pods else best.slice_state
    for dom in domains:
        state = dom.state if by_pods else dom.slice_state
        if needed <= state < best_state:
            best, best_state = dom, state
    return best


def _fill_counts(
    snap: TasSnapshot,
    podset: TasPodSet,
    assumed: Mapping[str, dict[str, int]],
    slice_size: int,
    slice_level: int,
    simulate_empty: bool,
    within: tuple[str, ...] | None,
) -> None:
    requests = dict(podset.requests)
    requests[PODS] = requests.get(PODS, 0) + 1
    tolerations = (*podset.tolerations, *snap.flavor.tolerations)
    for dom in snap.domains.values():
        dom.state = dom.slice_state = 0
    for leaf_id, leaf in snap.leaves.items():
        if snap.untolerated(leaf, tolerations) is not None:
            continue
        if within is not None and leaf.values[: len(within)] != within:
            continue
        if snap.lowest_is_node and any(
            (leaf.labels or {}).get(k) != v for k, v in podset.node_selector.items()
        ):
            continue
        left = snap.remaining(leaf, simulate_empty)
        for name, amount in assumed.get(leaf_id, {}).items():
            left[name] = left.get(name, 0) - amount
        leaf.state = count_in(requests, left)
    for root in snap.roots:
        _sum_up(root, slice_size, slice_level, 0)


def _sum_up(dom: Domain, slice_size: int, slice_level: int, level: int) -> None:
    if dom.children:
        for child in dom.children:
            _sum_up(child, slice_size, slice_level, level + 1)
        dom.state = sum(c.state for c in dom.children)
        dom.slice_state = sum(c.slice_state for c in dom.children)
    if level == slice_level:
        dom.slice_state = dom.state // slice_size


def _level_of(snap: TasSnapshot, podset: TasPodSet) -> tuple[str | None, bool, bool]:
    """(level key, required, unconstrained) for the PodSet, with the implied and slice-only defaults."""
    request = podset.topology
    if request is None:
        return snap.levels[-1], False, True
    slice_only = request.required is None and request.preferred is None and request.slice_required is not None
    unconstrained = request.unconstrained or slice_only
    if request.required is not None:
        return request.required, True, unconstrained
    if request.preferred is not None:
        return request.preferred, False, unconstrained
    if slice_only:
        return snap.levels[0], False, unconstrained
    if request.unconstrained:
        return snap.levels[-1], False, True
    return None, False, False


def _find_one(
    snap: TasSnapshot,
    podset: TasPodSet,
    assumed: Mapping[str, dict[str, int]],
    simulate_empty: bool,
    profile: Profile,
    within: tuple[str, ...] | None = None,
) -> TopologyAssignment | str:
    request = podset.topology or TopologyRequest()
    slice_size = 1
    if request.slice_required is not None:
        if request.slice_size is None:
            return "slice topology requested, but slice size not provided"
        slice_size = request.slice_size
    key, required, unconstrained = _level_of(snap, podset)
    if key is None:
        return "topology level not specified"
    if key not in snap.levels:
        return f"no requested topology level: {key}"
    level = snap.levels.index(key)
    slice_key = request.slice_required or snap.levels[-1]
    if slice_key not in snap.levels:
        return f"no requested topology level: {slice_key}"
    slice_level = snap.levels.index(slice_key)
    if level > slice_level:
        return f"podset slice topology {slice_key} is above the podset topology {key}"
    _fill_counts(snap, podset, assumed, slice_size, slice_level, simulate_empty, within)
    search = _Search(snap, profile, unconstrained)
    slices = podset.count // slice_size
    found = search.fit_level(level, required, slices, slice_size, unconstrained)
    if isinstance(found, str):
        return found
    fit_level, current = found
    current = search.take_slices(current, slices, slice_size)
    for lvl in range(fit_level, len(snap.levels) - 1):
        if lvl < slice_level:
            lower = [c for d in current for c in d.children]
            current = search.take_slices(search.sort(lower), slices, slice_size)
        else:
            current = [c for d in current for c in search.take_pods(search.sort(d.children), d.state)]
    return _build(snap, current)


def _build(snap: TasSnapshot, domains: Sequence[Domain]) -> TopologyAssignment:
    start = len(snap.levels) - 1 if snap.lowest_is_node else 0
    ordered = sorted(domains, key=lambda d: d.values)
    return TopologyAssignment(
        levels=snap.levels[start:],
        domains=tuple(DomainAssignment(d.values[start:], d.state) for d in ordered if d.state > 0),
    )


def _assume(
    snap: TasSnapshot, assumed: dict[str, dict[str, int]], assignment: TopologyAssignment, podset: TasPodSet
) -> None:
    for dom in assignment.domains:
        leaf = snap.leaf_of(dom.values)
        if leaf is None:
            continue
        leaf_id = dom.values[-1] if snap.lowest_is_node else "/".join(dom.values)
        usage = assumed.setdefault(leaf_id, {})
        for name, amount in podset.requests.items():
            usage[name] = usage.get(name, 0) + amount * dom.count
        usage[PODS] = usage.get(PODS, 0) + dom.count


def find_assignments(
    snap: TasSnapshot,
    podsets: Sequence[TasPodSet],
    simulate_empty: bool = False,
    profile: Profile = "BestFit",
) -> dict[str, TopologyAssignment | str]:
    """Assignments for the PodSets of one workload in one flavor, each seeing what the previous ones
    took; stops at the first PodSet that does not fit (its value is the reason)."""
    out: dict[str, TopologyAssignment | str] = {}
    assumed: dict[str, dict[str, int]] = {}
    for podset in podsets:
        found = _find_one(snap, podset, assumed, simulate_empty, profile)
        out[podset.name] = found
        if isinstance(found, str):
            return out
        _assume(snap, assumed, found, podset)
    return out


def replace_node(
    snap: TasSnapshot,
    podset: TasPodSet,
    assignment: TopologyAssignment,
    node: str,
    profile: Profile = "BestFit",
) -> TopologyAssignment | str:
    """Kueue's failed-node replacement (``findReplacementAssignment``, feature TASFailedNodeReplacement):
    the pods on ``node`` are placed again — inside the same domain of the required level when the
    PodSet's topology is required — and merged into the rest of the assignment. A reason string when
    the assignment names another node that is gone too, or no replacement fits (Kueue then evicts the
    workload). The snapshot already counts the admitted workload's pods on the surviving nodes
    (:meth:`TasSnapshot.add_tas_usage`), as Kueue's cache does."""
    kept = tuple(d for d in assignment.domains if d.values[-1] != node)
    moved = sum(d.count for d in assignment.domains if d.values[-1] == node)
    for dom in kept:
        if snap.leaf_of(dom.values) is None:
            return (
                "Cannot replace the node, because the existing topologyAssignment is invalid, as it "
                f"contains the stale domain {dom.values[0]}"
            )
    if moved == 0:
        return TopologyAssignment(assignment.levels, kept)
    within: tuple[str, ...] | None = None
    request = podset.topology
    if request is not None and request.required is not None and kept and request.required in snap.levels:
        leaf = snap.leaf_of(kept[0].values)
        assert leaf is not None
        within = leaf.values[: snap.levels.index(request.required) + 1]
    again = TasPodSet(
        podset.name, moved, podset.requests, podset.topology, podset.tolerations, podset.node_selector
    )
    found = _find_one(snap, again, {}, False, profile, within)
    if isinstance(found, str):
        return found
    merged: dict[tuple[str, ...], int] = {}
    for dom in (*kept, *found.domains):
        merged[dom.values] = merged.get(dom.values, 0) + dom.count
    return TopologyAssignment(
        assignment.levels, tuple(DomainAssignment(v, c) for v, c in sorted(merged.items()))
    )
