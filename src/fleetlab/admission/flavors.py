"""Flavor assignment and fungibility (``shared/reference/queues.md`` §1.4; upstream
``pkg/scheduler/flavorassigner``).

For each podset and each resource group it requests, the flavors of the group are tried in list order. Per
(flavor, resource) the total request ``v`` (count × per-pod request, plus what earlier podsets of the same
workload put on that flavor) gets a mode, as upstream's ``fitsResourceQuota`` decides it:

* ``v > potentialAvailable`` → NoFit, "insufficient quota for R in flavor F, previously considered podsets
  requests (A) + current podset request (B) > maximum capacity (M)" (reason ``ExceedsMaxQuota``);
* ``v ≤ available`` → Fit, with the borrowing level of ``ResourceTree.borrowing_height`` (0 = no borrowing);
* otherwise "insufficient unused quota for R in flavor F, N more needed"; when preemption could apply
  (``v ≤ nominal``, a smaller subtree could reclaim, or upstream ``canPreemptWhileBorrowing``:
  ``borrowWithinCohort`` set, or fair sharing with ``reclaimWithinCohort`` set) the ``can_preempt`` hook
  (upstream ``SimulatePreemption``) answers with a :class:`PreemptionOutcome`: Preempt (a victim in the own
  ClusterQueue), Reclaim (victims only in other ClusterQueues) or no candidates (ranked below every viable
  mode), with the borrowing level *after* the simulated preemption; else NoFit (reason ``WaitingForQuota``).
  ``withinClusterQueue`` alone never lets a ClusterQueue preempt in order to borrow.
* a flavor whose ``nodeTaints`` (NoSchedule / NoExecute) the podset does not tolerate (its tolerations plus
  the flavor's own ``tolerations``), or whose ``nodeLabels`` contradict the podset's nodeSelector or required
  node affinity (reduced to the flavor's own label keys), is skipped with upstream's reason (reason
  ``NoMatchingFlavor``); the podset takes no quota there.

A flavor's mode is the worst over its resources. A flavor that fits without borrowing is taken at once;
otherwise ``flavorFungibility`` decides (upstream ``shouldTryNextFlavor`` / ``isPreferred``): ``whenCanBorrow:
MayStopSearch`` stops at a flavor that fits by borrowing, ``whenCanPreempt: MayStopSearch`` at one that needs
preemption with candidates; failing that the best flavor seen is kept, ranked by ``preference``
(BorrowingOverPreemption, the default: preemption mode first, then borrowing level; PreemptionOverBorrowing:
borrowing level first). A resource the ClusterQueue does not cover makes the workload inadmissible there:
"resource R unavailable in ClusterQueue" (reason ``NoMatchingFlavor``); zero requests of uncovered
resources are ignored (kueue#8079). If the ClusterQueue covers ``pods``, each podset also requests its count.

Messages are Kueue's (``flavorassigner.go``, ``assignment.go``): each podset's reasons sorted and joined by
", " after "couldn't assign flavors to pod set NAME: ", podsets joined by "; ".

Not modelled: the flavor-scan resume state across cycles (``LastTriedFlavorIdx``), partial admission, TAS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

from fleetlab.admission.flavor_rows import kept_rows, pair, pairs_of, podset_totals, rows
from fleetlab.admission.tree import FlavorResource, Node, ResourceTree
from fleetlab.model.kube import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
    first_untolerated,
    requirement_matches,
)
from fleetlab.model.queues import ClusterQueue, FlavorFungibility, ResourceFlavor
from fleetlab.model.resources import PODS, format_amount

__all__ = [
    "EXCEEDS_MAX_QUOTA",
    "NO_MATCHING_FLAVOR",
    "WAITING_FOR_QUOTA",
    "Assignment",
    "AssignmentMode",
    "CanPreempt",
    "ClusterQueueRules",
    "GranularMode",
    "PodSetAssignment",
    "PodSetRequest",
    "PreemptionMode",
    "PreemptionOutcome",
    "ResourceAssignment",
    "assign_flavors",
    "is_preferred",
    "should_try_next_flavor",
]

#: ``QuotaReserved=False`` reasons (Kueue v1beta2 constants), least to most severe.
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
_SEVERITY = {"": 0, WAITING_FOR_QUOTA: 1, EXCEEDS_MAX_QUOTA: 2, NO_MATCHING_FLAVOR: 3}


@dataclass(frozen=True)
class PodSetRequest:
    """A podset: ``count`` pods, each requesting ``requests`` (milli-cpu, bytes, whole GPUs), with the pods'
    tolerations (checked against a flavor's ``nodeTaints``)."""

    name: str
    count: int
    requests: dict[str, int]
    tolerations: tuple[Toleration, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    #: ``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`` (None: no required affinity).
    required_terms: tuple[NodeSelectorTerm, ...] | None = None


class PreemptionMode(IntEnum):
    """Upstream's granular mode, worst to best; Preempt and Reclaim both mean preemption targets exist."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


class AssignmentMode(IntEnum):
    """Upstream ``FlavorAssignmentMode``: what must happen before the flavor can be used."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


#: The members read in the hot loops, bound once: reading an Enum class's member is a slow lookup.
_P_NO_FIT, _P_NO_CANDIDATES, _P_PREEMPT, _P_RECLAIM, _P_FIT = PreemptionMode
_A_NO_FIT, _A_PREEMPT, _A_FIT = AssignmentMode

#: Upstream ``FlavorAssignmentMode`` of each granular mode, indexed by it.
_ASSIGNMENT_MODE = (
    _A_NO_FIT,  # NO_FIT
    _A_PREEMPT,  # NO_CANDIDATES
    _A_PREEMPT,  # PREEMPT
    _A_PREEMPT,  # RECLAIM
    _A_FIT,  # FIT
)


class GranularMode(NamedTuple):
    """A candidate's preemption mode and borrowing level (0: within the ClusterQueue's own quota)."""

    preemption: PreemptionMode
    borrowing: int


@dataclass(frozen=True)
class PreemptionOutcome:
    """Upstream ``SimulatePreemption``'s answer: PREEMPT, RECLAIM or NO_CANDIDATES, and the borrowing level
    once the victims are gone (NO_CANDIDATES: the level with nothing removed)."""

    mode: PreemptionMode
    borrowing: int


#: ``can_preempt(cluster_queue, {FlavorResource: total amount needed})``: what preemption could do; None
#: means no candidates (the borrowing level is then the one without preemption).
CanPreempt = Callable[[str, Mapping[FlavorResource, int]], PreemptionOutcome | None]


def _never(_cq: str, _amounts: Mapping[FlavorResource, int]) -> PreemptionOutcome | None:
    return None


_BEST = GranularMode(_P_FIT, 0)
_WORST = GranularMode(_P_NO_FIT, 1 << 62)
_NO_FIT_UNBORROWED = GranularMode(_P_NO_FIT, 0)


def is_preferred(a: GranularMode, b: GranularMode, fungibility: FlavorFungibility) -> bool:
    """Whether ``a`` beats ``b`` under ``fungibility.preference`` (upstream ``isPreferred``)."""
    a_mode, a_borrow = a
    b_mode, b_borrow = b
    if a_mode == _P_NO_FIT:
        return False
    if b_mode == _P_NO_FIT:
        return True
    a_none = a_mode == _P_NO_CANDIDATES
    if a_none != (b_mode == _P_NO_CANDIDATES):
        return not a_none
    if fungibility.preference == "PreemptionOverBorrowing":
        if a_borrow != b_borrow:
            return a_borrow < b_borrow
        return a_mode > b_mode
    if a_mode != b_mode:
        return a_mode > b_mode
    return a_borrow < b_borrow


def should_try_next_flavor(mode: GranularMode, fungibility: FlavorFungibility) -> bool:
    """Whether the search goes on past a flavor with ``mode`` (upstream ``shouldTryNextFlavor``)."""
    if mode.preemption in (_P_NO_FIT, _P_NO_CANDIDATES):
        return True
    preempting = mode.preemption in (_P_PREEMPT, _P_RECLAIM)
    if preempting and fungibility.when_can_preempt == "TryNextFlavor":
        return True
    return mode.borrowing != 0 and fungibility.when_can_borrow == "TryNextFlavor"


@dataclass(frozen=True)
class ClusterQueueRules:
    """What flavor assignment needs from a ClusterQueue, compiled once from its spec."""

    name: str
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # (coveredResources, flavor names)
    group_of: Mapping[str, int]
    nominal: Mapping[FlavorResource, int]
    fungibility: FlavorFungibility
    #: Upstream ``canPreemptWhileBorrowing``: borrowWithinCohort.policy != Never, or (fair sharing on)
    #: reclaimWithinCohort != Never.
    may_preempt_beyond_nominal: bool
    flavor_taints: Mapping[str, tuple[Taint, ...]] = field(default_factory=dict)
    flavor_tolerations: Mapping[str, tuple[Toleration, ...]] = field(default_factory=dict)
    flavor_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @classmethod
    def from_spec(
        cls,
        cq: ClusterQueue,
        fair_sharing: bool = False,
        flavors: Sequence[ResourceFlavor] = (),
    ) -> ClusterQueueRules:
        """Compile ``cq``'s resource groups, nominal quotas, fungibility and preemption switches, and the
        taints and tolerations of the ResourceFlavors it names."""
        groups = tuple(
            (g.covered_resources, tuple(f.name for f in g.flavors)) for g in cq.spec.resource_groups
        )
        group_of = {r: i for i, (covered, _) in enumerate(groups) for r in covered}
        nominal = {
            FlavorResource(f.name, q.name): q.nominal_quota
            for g in cq.spec.resource_groups
            for f in g.flavors
            for q in f.resources
        }
        pre = cq.spec.preemption
        bwc = pre.borrow_within_cohort
        beyond = (bwc is not None and bwc.policy != "Never") or (
            fair_sharing and pre.reclaim_within_cohort != "Never"
        )
        taints = {f.name: f.spec.node_taints for f in flavors if f.spec.node_taints}
        tolerations = {f.name: f.spec.tolerations for f in flavors if f.spec.tolerations}
        labels = {f.name: f.spec.node_labels for f in flavors if f.spec.node_labels}
        return cls(
            cq.name,
            groups,
            group_of,
            nominal,
            cq.spec.flavor_fungibility,
            beyond,
            taints,
            tolerations,
            labels,
        )


class ResourceAssignment(NamedTuple):
    """The flavor chosen for one resource of a podset, with its mode and borrowing level."""

    flavor: str
    mode: AssignmentMode
    borrow: int


@dataclass(slots=True)
class PodSetAssignment:
    """Flavors for one podset's resources, with the reasons the choice is not a plain fit."""

    name: str
    count: int
    requests: dict[str, int]  # totals for the podset, including ``pods`` when the CQ covers it
    flavors: dict[str, ResourceAssignment] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    no_fit_reason: str = ""

    @property
    def mode(self) -> AssignmentMode:
        """Worst mode over the podset's resources; NoFit when a requested resource got no flavor."""
        if not self.reasons:
            return _A_FIT
        if not self.flavors:
            return _A_NO_FIT
        return min(a.mode for a in self.flavors.values())


@dataclass(slots=True)
class Assignment:
    """A workload's flavor assignment in one ClusterQueue: per-podset flavors, usage, borrowing level."""

    podsets: list[PodSetAssignment]
    usage: dict[FlavorResource, int]
    borrowing: int
    failed: bool = False  # a podset got no flavor at all; the rest were not assigned
    no_fit_reason: str = ""
    #: The mode, once :func:`assign_flavors` has finished the assignment (it is read several times a cycle).
    final_mode: AssignmentMode | None = field(default=None, repr=False, compare=False)

    @property
    def mode(self) -> AssignmentMode:
        """Worst mode over the podsets (upstream ``RepresentativeMode``)."""
        if self.final_mode is not None:
            return self.final_mode
        if not self.podsets or self.failed:
            return _A_NO_FIT
        return min(ps.mode for ps in self.podsets)

    def message(self) -> str:
        """Kueue's pending message: per podset "couldn't assign flavors to pod set NAME: reasons"."""
        parts = [
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}"
            for ps in self.podsets
            if ps.reasons
        ]
        return "; ".join(parts)

    def flavors(self) -> dict[str, dict[str, str]]:
        """``podset -> resource -> flavor name``, the shape of Kueue's ``podSetAssignments[].flavors``."""
        return {ps.name: {r: a.flavor for r, a in sorted(ps.flavors.items())} for ps in self.podsets}


def _zero_count_probe(ps: PodSetRequest, pods_covered: bool) -> dict[str, int] | None:
    """Upstream's probe for a podset of count 0: one pod's requests (and one pod when ``pods`` is covered)."""
    if ps.count != 0:
        return None
    probe = {r: v for r, v in ps.requests.items() if v}
    if pods_covered:
        probe[PODS] = 1
    return probe


def _flavor_mismatch(rules: ClusterQueueRules, flavor: str, podset: PodSetRequest | None) -> str | None:
    """Upstream ``checkFlavorForPodSets``: the reason ``flavor`` cannot hold ``podset``, or None.

    * the first NoSchedule/NoExecute ``nodeTaints`` entry neither the podset's nor the flavor's own
      tolerations tolerate: "untolerated taint {key value Effect <nil>} in flavor F" (Go's rendering of
      the taint);
    * the podset's nodeSelector and required node affinity, reduced to the flavor's own label keys
      (``flavorSelector``: a term left empty matches every flavor), against the flavor's ``nodeLabels``:
      "flavor F doesn't match node affinity"."""
    if podset is None:
        return None
    taints = rules.flavor_taints.get(flavor, ())
    if taints:
        all_tolerations = (*podset.tolerations, *rules.flavor_tolerations.get(flavor, ()))
        taint = first_untolerated(taints, all_tolerations)
        if taint is not None:
            return f"untolerated taint {{{taint.key} {taint.value} {taint.effect} <nil>}} in flavor {flavor}"
    if not podset.node_selector and not podset.required_terms:
        return None
    labels = rules.flavor_labels.get(flavor, {})
    if any(k in labels and labels[k] != v for k, v in podset.node_selector):
        return f"flavor {flavor} doesn't match node affinity"
    terms: list[list[NodeSelectorRequirement]] = []
    for term in podset.required_terms or ():
        kept = [e for e in term.match_expressions if e.key in labels]
        if not kept:
            return None  # terms are ORed: this one matches any flavor
        terms.append(kept)
    if terms and not any(all(requirement_matches(labels, e) for e in t) for t in terms):
        return f"flavor {flavor} doesn't match node affinity"
    return None


#: Modes and resource assignments are immutable tuples: the few distinct ones of a run are shared.
_FIT_BORROWING: dict[int, GranularMode] = {}
_GRANULAR: dict[tuple[PreemptionMode, int], GranularMode] = {}
_RESOURCE_ASSIGNMENTS: dict[tuple[str, AssignmentMode, int], ResourceAssignment] = {}
#: "insufficient unused quota" reasons by (flavor, resource, amount short): a run repeats few of them.
_UNUSED_REASONS: dict[tuple[str, str, int], str] = {}


def _fit_borrowing(borrow: int) -> GranularMode:
    """``GranularMode(FIT, borrow)``, one object per level."""
    mode = _FIT_BORROWING.get(borrow)
    if mode is None:
        mode = _FIT_BORROWING[borrow] = GranularMode(_P_FIT, borrow)
    return mode


def _granular(preemption: PreemptionMode, borrow: int) -> GranularMode:
    """``GranularMode(preemption, borrow)``, one object per value (bounded)."""
    key = (preemption, borrow)
    mode = _GRANULAR.get(key)
    if mode is None:
        if len(_GRANULAR) > 4096:
            _GRANULAR.clear()
        mode = _GRANULAR[key] = GranularMode(preemption, borrow)
    return mode


def _resource_assignment(flavor: str, mode: AssignmentMode, borrow: int) -> ResourceAssignment:
    """``ResourceAssignment(flavor, mode, borrow)``, one object per distinct value (bounded)."""
    key = (flavor, mode, borrow)
    held = _RESOURCE_ASSIGNMENTS.get(key)
    if held is None:
        if len(_RESOURCE_ASSIGNMENTS) > 4096:
            _RESOURCE_ASSIGNMENTS.clear()
        held = _RESOURCE_ASSIGNMENTS[key] = ResourceAssignment(flavor, mode, borrow)
    return held


def _unused_reason(flavor: str, resource: str, short: int) -> str:
    """Upstream's reason for a request beyond the unused quota, one string per distinct value (bounded)."""
    if len(_UNUSED_REASONS) > 4096:
        _UNUSED_REASONS.clear()
    text = _UNUSED_REASONS[flavor, resource, short] = (
        f"insufficient unused quota for {resource} in flavor {flavor}, "
        f"{format_amount(resource, short)} more needed"
    )
    return text


def _find_flavor(
    tree: ResourceTree,
    node: Node,
    rules: ClusterQueueRules,
    group: int,
    requests: Mapping[str, int],
    usage: Mapping[FlavorResource, int],
    can_preempt: CanPreempt,
    podset: PodSetRequest | None = None,
    probe: Mapping[str, int] | None = None,
) -> tuple[dict[str, ResourceAssignment], list[str], str]:
    """Best flavor of resource group ``group`` for a podset's ``requests`` (``findFlavorForPodSets``).

    Per (flavor, resource) the mode is upstream's ``fitsResourceQuota`` (the module docstring), written
    out in the loop: it runs for every resource of every head nominated.

    ``probe`` (a zero-count podset's per-pod requests) skips flavors whose maximum capacity could not hold
    one pod, so the podset lands where it could grow."""
    covered, flavor_names = rules.groups[group]
    reasons: list[str] = []
    best: dict[str, ResourceAssignment] = {}
    best_mode = _WORST
    least_severe = ""
    fungibility = rules.fungibility
    per_flavor = None if usage else kept_rows(node, rules, requests, group)
    if per_flavor is None:
        wanted = [(r, requests[r]) for r in sorted(requests) if r in covered]
        per_flavor = rows(tree, node, rules, group, flavor_names, wanted, requests, usage, rules.nominal)
    rooted, node_usage, node_quota = node.parent is not None, node.usage, node.subtree_quota
    # ``available`` without a lending or borrowing limit below the root: the root's unused quota.
    limited, top_quota, top_usage = node.limited, node.top.subtree_quota, node.top.usage
    flat_height = node.flat_height
    name, beyond_nominal = rules.name, rules.may_preempt_beyond_nominal
    # Taints and node constraints can only exclude a flavor when either side has some.
    matching = podset is not None and bool(
        rules.flavor_taints or podset.node_selector or podset.required_terms
    )
    for flavor, flavor_rows in zip(flavor_names, per_flavor, strict=True):
        mismatch = _flavor_mismatch(rules, flavor, podset) if matching else None
        if mismatch is not None:
            reasons.append(mismatch)
            if not least_severe or _SEVERITY[NO_MATCHING_FLAVOR] < _SEVERITY[least_severe]:
                least_severe = NO_MATCHING_FLAVOR
            continue
        if probe:
            too_small = [
                f"insufficient quota for {r} in flavor {flavor}, one pod per zero-count podset request "
                f"({format_amount(r, v)}) > maximum capacity ({format_amount(r, cap)})"
                for r, v in sorted(probe.items())
                if r in covered and (cap := tree.potential_available(node, FlavorResource(flavor, r))) < v
            ]
            if too_small:
                reasons += too_small
                if not least_severe or _SEVERITY[EXCEEDS_MAX_QUOTA] < _SEVERITY[least_severe]:
                    least_severe = EXCEEDS_MAX_QUOTA
                continue
        assignments: dict[str, ResourceAssignment] = {}
        mode = _BEST
        flavor_reason = ""
        fit_unborrowed = _resource_assignment(flavor, _A_FIT, 0)  # most rows' answer, looked up once
        for resource, request, assumed, value, fr, maximum, within_nominal in flavor_rows:
            if value > maximum:  # NoFit, ExceedsMaxQuota: the worst mode, so the flavor is done
                reasons.append(
                    f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets "
                    f"requests ({format_amount(resource, assumed)}) + current podset request "
                    f"({format_amount(resource, request)}) > maximum capacity "
                    f"({format_amount(resource, maximum)})"
                )
                if _SEVERITY[EXCEEDS_MAX_QUOTA] > _SEVERITY[flavor_reason]:
                    flavor_reason = EXCEEDS_MAX_QUOTA
                mode = _NO_FIT_UNBORROWED
                break
            available = tree.available(node, fr) if limited else top_quota.get(fr, 0) - top_usage.get(fr, 0)
            if rooted and node_usage.get(fr, 0) + value <= node_quota.get(fr, 0):
                borrow, may_reclaim_in_hierarchy = 0, True  # ``borrowing_height``'s answer when not borrowing
            elif flat_height is not None:
                borrow, may_reclaim_in_hierarchy = flat_height, False  # (the same answer, read off the node)
            else:
                borrow, may_reclaim_in_hierarchy = tree.borrowing_height(node, fr, value)
            if value <= available:
                if borrow:
                    candidate = _fit_borrowing(borrow)
                    if candidate != mode and is_preferred(mode, candidate, fungibility):
                        mode = candidate
                    assignments[resource] = _resource_assignment(flavor, _A_FIT, borrow)
                else:
                    assignments[resource] = fit_unborrowed
                continue
            short = value - available
            reasons.append(
                _UNUSED_REASONS.get((flavor, resource, short)) or _unused_reason(flavor, resource, short)
            )
            if within_nominal or may_reclaim_in_hierarchy or beyond_nominal:
                outcome = can_preempt(name, {fr: value})
                if outcome is None:
                    pmode = _P_NO_CANDIDATES
                else:
                    pmode, borrow = outcome.mode, outcome.borrowing
            else:
                pmode = _P_NO_FIT
                if _SEVERITY[WAITING_FOR_QUOTA] > _SEVERITY[flavor_reason]:
                    flavor_reason = WAITING_FOR_QUOTA
            if pmode != _P_FIT or borrow:  # a plain fit is never worse than ``mode``
                candidate = _granular(pmode, borrow)
                if candidate != mode and is_preferred(mode, candidate, fungibility):
                    mode = candidate
                if mode[0] == _P_NO_FIT:  # (``mode.preemption``)
                    break
            assignments[resource] = _resource_assignment(flavor, _ASSIGNMENT_MODE[pmode], borrow)
        if mode[0] == _P_NO_FIT and (not least_severe or _SEVERITY[flavor_reason] < _SEVERITY[least_severe]):
            least_severe = flavor_reason
        # (NoFit and NoCandidates always try the next flavor: the usual answer at saturation, no call)
        if mode[0] > _P_NO_CANDIDATES and not should_try_next_flavor(mode, fungibility):
            best, best_mode = assignments, mode
            break
        # (against nothing chosen yet, ``is_preferred`` is "not NoFit")
        if is_preferred(mode, best_mode, fungibility) if best_mode is not _WORST else mode[0] != _P_NO_FIT:
            best, best_mode = assignments, mode
    if best_mode[0] == _P_FIT:
        return best, [], ""
    return best, reasons, least_severe if not best else ""


def assign_flavors(
    tree: ResourceTree,
    rules: ClusterQueueRules,
    podsets: Sequence[PodSetRequest],
    can_preempt: CanPreempt | None = None,
) -> Assignment:
    """Choose a flavor for every resource of every podset in ClusterQueue ``rules.name`` (§1.4).

    ``can_preempt`` is the preemption module's answer to "could preemption free this much?"
    (default: never)."""
    hook = can_preempt or _never
    node = tree.cluster_queue(rules.name)
    usage: dict[FlavorResource, int] = {}
    out: list[PodSetAssignment] = []
    borrowing = 0
    worst_reason = ""
    group_of = rules.group_of
    pods = PODS if PODS in group_of else None
    worst = _A_FIT  # the worst podset mode so far (``Assignment.mode``, computed once)
    for ps in podsets:
        totals, resources = podset_totals(node, rules, ps, ps.requests, ps.count, pods)
        psa = PodSetAssignment(ps.name, ps.count, dict(totals))
        out.append(psa)
        done: set[int] = set()
        for resource in resources:
            group = group_of.get(resource)
            if group is None:
                if totals[resource] == 0:
                    continue  # kueue#8079: a zero request of an undeclared resource needs no flavor
                psa.flavors = {}
                psa.reasons = [f"resource {resource} unavailable in ClusterQueue"]
                psa.no_fit_reason = NO_MATCHING_FLAVOR
                break
            if group in done:
                continue
            done.add(group)
            probe = _zero_count_probe(ps, pods is not None) if ps.count == 0 else None
            chosen, reasons, no_fit = _find_flavor(tree, node, rules, group, totals, usage, hook, ps, probe)
            if probe is not None and not chosen:  # the probe is a preference, not a barrier
                chosen, reasons, no_fit = _find_flavor(tree, node, rules, group, totals, usage, hook, ps)
            if reasons:  # (both lists are this assignment's own)
                psa.reasons = reasons if not psa.reasons else psa.reasons + reasons
            if not chosen:
                psa.flavors = {}
                psa.no_fit_reason = no_fit or WAITING_FOR_QUOTA
                break
            if psa.flavors:
                psa.flavors.update(chosen)
            else:
                psa.flavors = chosen  # (a dict _find_flavor built for this call)
        if psa.reasons and not psa.flavors:
            worst_reason = max(worst_reason, psa.no_fit_reason, key=lambda r: _SEVERITY[r])
            return Assignment(
                out,
                usage,
                borrowing,
                failed=True,
                no_fit_reason=worst_reason,
                final_mode=_A_NO_FIT,
            )
        for resource, chosen_flavor in psa.flavors.items():
            fr = pairs_of(chosen_flavor.flavor).get(resource) or pair(chosen_flavor.flavor, resource)
            usage[fr] = usage.get(fr, 0) + totals[resource]
            if chosen_flavor.borrow > borrowing:
                borrowing = chosen_flavor.borrow
            if psa.reasons and chosen_flavor.mode < worst:  # ``PodSetAssignment.mode``: FIT without reasons
                worst = chosen_flavor.mode
    if not out:
        worst = _A_NO_FIT
    assignment = Assignment(out, usage, borrowing, final_mode=worst)
    if worst == _A_NO_FIT:
        assignment.no_fit_reason = WAITING_FOR_QUOTA
    return assignment
