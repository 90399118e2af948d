"""All-or-nothing placement of a pod group, optionally inside one topology domain.

A gang is placed by trial: every pod is chosen and provisionally bound in turn; if one pod finds no node,
every trial bind is rolled back and the gang stays pending, so no GPU is ever held by half a job (a whole
plan's trial binds may stay as the real binds where that is the same: sim/gang_binds.py). With a
topology constraint the domain is chosen first, like Kueue's topology-aware scheduling: for a required
level, the domain of that level with the least capacity that still holds every pod (BestFit); for a
preferred level, that level, then one level up at a time, then anywhere. Inside the chosen domain pods go
to nodes BestFit as well (fill the nodes with the fewest free slots that suffice), so large gaps are kept
for large jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fleetlab.model.dra import PodClaims
from fleetlab.placement.dra.state import pod_instance
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.gang_select import select_and_bind
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, ClusterState, IntArray


@dataclass(frozen=True)
class TopologyRequest:
    """Where a gang's pods must (required) or should (preferred) share one domain of a label level."""

    required: str | None = None
    preferred: str | None = None


def pods_that_fit(state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray:
    """How many more copies of ``pod`` each node in ``nodes`` could take right now."""
    cols = pod.request_cols
    free = state.free[nodes][:, cols]
    return np.asarray((free // pod.request[cols]).min(axis=1), dtype=np.int64)


def best_fit_nodes(capacity: IntArray, nodes: IntArray, count: int) -> list[int] | None:
    """Node indices (with repeats, one per pod) filling the fewest, tightest nodes; None if they cannot."""
    if int(capacity.sum()) < count:
        return None
    order = np.lexsort((nodes, -capacity))  # most capacity first, node index breaks ties
    chosen: list[int] = []
    left = count
    for k in order:
        if left <= 0:
            break
        take = int(min(capacity[k], left))
        if take <= 0:
            break
        chosen.append(int(k))
        left -= take
    # BestFit: the last node taken may be swapped for the smallest node that still holds the remainder.
    used = sum(int(min(capacity[k], count)) for k in chosen[:-1])
    remainder = count - used
    taken = set(chosen[:-1])
    candidates = [int(k) for k in np.flatnonzero(capacity >= remainder) if int(k) not in taken]
    if candidates:
        best = min(candidates, key=lambda k: (int(capacity[k]), int(nodes[k])))
        chosen[-1] = best
    out: list[int] = []
    left = count
    for k in chosen:
        take = min(int(capacity[k]), left)
        out.extend([int(nodes[k])] * take)
        left -= take
    return out


class GangPlacer:
    """Places a gang through a Scheduler: topology domain first, then trial binds with rollback."""

    def __init__(self, scheduler: Scheduler, levels: Sequence[str]) -> None:
        self.scheduler = scheduler
        self.state = scheduler.state
        #: Topology levels from the top (widest, e.g. zone) to the bottom (hostname).
        self.levels = list(levels)

    def _domain_masks(
        self, key: str, feasible: BoolArray, fitting: tuple[IntArray, IntArray], count: int
    ) -> list[BoolArray]:
        """Masks of the domains of label ``key`` that can hold ``count`` pods, BestFit order; ``fitting``
        is the feasible nodes and how many pods each could take (read once per plan, for every level)."""
        state = self.state
        nodes, fit = fitting
        if len(nodes) == 0:
            return []
        codes = state.labels.codes(key)[nodes]
        keep = codes >= 0
        if not keep.any():
            return []
        capacity = np.bincount(codes[keep], weights=fit[keep]).astype(np.int64)
        domains: list[int] = (capacity >= count).nonzero()[0].tolist()
        domains.sort(key=lambda d: (int(capacity[d]), d))
        all_codes = state.labels.codes(key)
        return [feasible & (all_codes == d) for d in domains]

    def plan(
        self,
        pod: CompiledPod,
        count: int,
        topology: TopologyRequest,
        allowed: BoolArray | None = None,
        keep: bool = False,
    ) -> tuple[list[int] | None, bool]:
        """Node per pod (only ``allowed`` nodes when given), or None when the gang cannot be placed now; and
        whether the plan's pods are bound in the state already: with ``keep``, the trial binds of a plan
        chosen pod by pod stay (``ClusterState.keep_trial``) instead of being rolled back for the caller to
        bind again. Only for a pod without devices or a pod label set, whose trial bind and release touch
        nothing but the node's sums."""
        keep = keep and pod.spec.claims is None and pod.label_set < 0
        if pod.spec.topology_assignment:  # Kueue TAS pinned the pods to domains at admission
            plan = self._plan_assignment(pod)
            return (plan if plan is None or allowed is None or all(allowed[n] for n in plan) else None), False
        if not self.scheduler.fit_count(pod):
            return None, False  # no node fits even one pod: no domain holds the gang, the first select fails
        if topology.required is None and topology.preferred is None:
            # no domain to choose: no feasibility mask
            plan = self._trial(pod, [(count, allowed)], keep)
            return plan, keep and plan is not None
        feasible = self.scheduler.fits_now(pod).copy()
        if allowed is not None:
            feasible &= allowed
        nodes = feasible.nonzero()[0]
        fitting = (nodes, pods_that_fit(self.state, pod, nodes) if len(nodes) else nodes)
        if topology.required is not None:
            for mask in self._domain_masks(topology.required, feasible, fitting, count):
                plan = self._plan_in(pod, count, mask)
                if plan is not None:
                    return plan, False
            return None, False
        if topology.preferred is not None:
            start = self.levels.index(topology.preferred) if topology.preferred in self.levels else 0
            for level in reversed(self.levels[: start + 1]):
                for mask in self._domain_masks(level, feasible, fitting, count):
                    plan = self._plan_in(pod, count, mask)
                    if plan is not None:
                        return plan, False
        return self._plan_by_score(pod, count, allowed), False

    def _plan_in(self, pod: CompiledPod, count: int, mask: BoolArray) -> list[int] | None:
        if pod.spec.pod_dependent or pod.spec.claims is not None:
            # spread / anti-affinity between members, or devices: place them one by one
            return self._plan_by_score(pod, count, mask)
        nodes = np.flatnonzero(mask)
        return best_fit_nodes(pods_that_fit(self.state, pod, nodes), nodes, count)

    def _plan_assignment(self, pod: CompiledPod) -> list[int] | None:
        """Each assigned domain's pods by kube-scheduler's choice among the domain's nodes (the ungater's
        nodeSelector), all trial-bound together and rolled back."""
        labels = self.state.labels
        parts: list[tuple[int, BoolArray | None]] = []
        for selector, count in pod.spec.topology_assignment:
            mask = np.ones(self.state.n, dtype=bool)
            for key, value in selector:
                mask &= labels.equals_any(key, [value])
            parts.append((count, mask))
        return self._trial(pod, parts)

    def _plan_by_score(self, pod: CompiledPod, count: int, mask: BoolArray | None) -> list[int] | None:
        """kube-scheduler's own choice pod by pod, with trial binds rolled back before returning."""
        return self._trial(pod, [(count, mask)])

    def _trial(
        self, pod: CompiledPod, parts: Sequence[tuple[int, BoolArray | None]], keep: bool = False
    ) -> list[int] | None:
        """Choose and trial-bind ``count`` pods among each part's nodes in turn (their devices reserved
        too, so the next member sees them taken); everything is rolled back before returning, except a
        whole plan's binds with ``keep``."""
        state = self.state
        dra = self.scheduler.dra if pod.spec.claims is not None else None
        chosen: list[int] = []
        held: list[PodClaims] = []
        if keep:
            for count, mask in parts:
                if not select_and_bind(self.scheduler, pod, count, mask, chosen):
                    for taken in reversed(chosen):
                        state.release(taken, pod.request, pod.nonzero, -1, pod.usage_delta)
                    return None
            state.keep_trial(chosen)
            return chosen
        try:
            for count, mask in parts:
                for _ in range(count):
                    node = self.scheduler.select(pod, mask)
                    if node < 0:
                        return None
                    state.bind(node, pod.request, pod.nonzero, pod.label_set, pod.usage_delta)
                    chosen.append(node)
                    if dra is not None:
                        assert pod.spec.claims is not None
                        k = len(held)
                        instance = pod_instance(pod.spec.claims, f"gang-trial-{k}", f"gang-trial-{k}")
                        dra.reserve(pod, node, instance)
                        held.append(instance)
            return list(chosen)
        finally:
            if dra is not None:
                for instance in reversed(held):
                    dra.release(pod, instance)
            for node in reversed(chosen):
                state.release(node, pod.request, pod.nonzero, pod.label_set, pod.usage_delta)
