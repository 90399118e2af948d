"""DynamicResources: kube-scheduler's DRA plugin (``pkg/scheduler/framework/plugins/dynamicresources``,
Kubernetes v1.35) over a :class:`~fleetlab.placement.dra.state.DraState`.

PreFilter resolves the pod's claims (a template whose claim is not created yet, a missing or deleting
claim, a claim reserved by 256 pods, a class that does not exist: the pod cannot be scheduled anywhere).
Filter, per node: an allocated claim's ``nodeSelector`` must match ("resourceclaim not available on the
node"), and the structured allocator must find devices for the unallocated claims ("cannot allocate all
claims"). Reserve records the allocation so later pods see the devices as taken; Unreserve / the pod's end
releases them.

The seam for the simulator: ``Scheduler.attach_dynamic_resources(plugin)`` adds this plugin as the last
filter (kube-scheduler's MultiPoint order ends with it). A job's pods share one pod spec whose ``claims``
is a *shape* (``PodClaims.shape``: template entries not generated yet, so Filter allocates for the
templates' own specs); when the simulator binds one pod it calls :meth:`reserve` with that pod's own
claims (``instance``), which creates the pod's claims from their templates and records the allocation
Filter found on that node for them; :meth:`release` with the instance when the pod ends or is evicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fleetlab.model.dra import AllocationResult, PodClaims, ResourceClaim
from fleetlab.placement.dra.allocator import AllocationError, Allocator, DeviceID, NodeAllocationError
from fleetlab.placement.dra.cel import CompiledSelector
from fleetlab.placement.dra.pools import NodeView, Pool, selector_matches
from fleetlab.placement.dra.state import DraState
from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin
from fleetlab.placement.state import BoolArray, ClusterState
from fleetlab.spec.cel_parse import CelSyntaxError

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_ON_NODE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"


@dataclass
class _Verdict:
    """One pod's PreFilter message or per-node reasons, for one DRA generation."""

    generation: int
    pre_filter: str | None
    passes: BoolArray
    reasons: list[str]
    unresolvable: list[bool]
    allocations: dict[int, list[AllocationResult]]
    claims: list[ResourceClaim]


class DynamicResources(FilterPlugin):
    """The Filter (with PreFilter, Reserve and Unreserve) of kube-scheduler's DRA plugin."""

    name = "DynamicResources"
    static = False

    def __init__(self, dra: DraState, nodes: Sequence[NodeView]) -> None:
        self.dra = dra
        self.nodes = list(nodes)
        self._verdicts: dict[PodClaims, _Verdict] = {}
        self._compiled: dict[str, CompiledSelector | CelSyntaxError] = {}
        #: Per node the pools its slices form (slices do not change while the plugin lives).
        self._pools: dict[str, list[Pool]] = {}

    # -- PreFilter ------------------------------------------------------------------------------------
    def pre_filter(self, state: ClusterState, pod: CompiledPod) -> str | None:
        """Why no node can take the pod whatever its devices (None: per-node Filter decides)."""
        claims = pod.spec.claims
        return None if claims is None else self._verdict(state.n, claims).pre_filter

    def _pre_filter(self, claims: PodClaims) -> list[ResourceClaim] | str:
        found = self.dra.resolve(claims)
        if isinstance(found, str):
            return found
        for claim in found:
            if not self.dra.features.prioritized_list and any(
                r.first_available for r in claim.spec.devices.requests
            ):
                first = next(r for r in claim.spec.devices.requests if r.first_available)
                return (
                    f"claim {claim.kobj}, request {first.name}: has subrequests, but the DRAPrioritizedList "
                    "feature is disabled"
                )
            if claim.status.allocation is not None:
                if not self.dra.can_reserve(claim) and not self.dra.reserved_for(claim, claims.uid):
                    return IN_USE
                continue
            for request in claim.spec.devices.requests:
                if request.exactly is not None:
                    named = [(request.name, request.exactly.device_class_name)]
                else:
                    named = [
                        (f"{request.name}/{s.name}", s.device_class_name) for s in request.first_available
                    ]
                for name, cls in named:
                    if cls not in self.dra.classes:
                        return f"request {name}: device class {cls} does not exist"
        return found

    # -- Filter ---------------------------------------------------------------------------------------
    def _allocator(self) -> Allocator:
        dra = self.dra
        return Allocator(dra.classes, dra.slices, dra.allocated, dra.features, self._compiled, self._pools)

    def _verdict(self, n: int, claims: PodClaims) -> _Verdict:
        """PreFilter and Filter for every one of the ``n`` nodes, cached per DRA generation."""
        found = self._verdicts.get(claims)
        if found is not None and found.generation == self.dra.generation:
            return found
        resolved = self._pre_filter(claims)
        if isinstance(resolved, str):
            verdict = _Verdict(
                self.dra.generation, resolved, np.zeros(n, dtype=bool), [resolved] * n, [True] * n, {}, []
            )
            self._verdicts[claims] = verdict
            return verdict
        pending = [c for c in resolved if c.status.allocation is None]
        allocator = self._allocator()
        passes = np.zeros(n, dtype=bool)
        reasons = [""] * n
        unresolvable = [False] * n
        allocations: dict[int, list[AllocationResult]] = {}
        fatal: str | None = None
        selectors = [
            c.status.allocation.node_selector
            for c in resolved
            if c.status.allocation is not None and c.status.allocation.node_selector is not None
        ]
        for i, node in enumerate(self.nodes):
            if not all(selector_matches(s, node) for s in selectors):
                reasons[i], unresolvable[i] = NOT_ON_NODE, True
                continue
            if not pending:
                passes[i], allocations[i] = True, []
                continue
            try:
                result = allocator.allocate(node, pending) if fatal is None else None
            except NodeAllocationError as exc:
                reasons[i] = str(exc)
                continue
            except AllocationError as exc:
                fatal = str(exc)
                result = None
            if result is None:
                reasons[i], unresolvable[i] = fatal or CANNOT_ALLOCATE, True
                continue
            passes[i] = True
            allocations[i] = result
        if fatal is not None:  # broken input keeps the pod pending everywhere (upstream returns an error)
            passes[:] = False
            reasons = [r if r else fatal for r in reasons]
            unresolvable = [True] * n
            allocations = {}
        verdict = _Verdict(self.dra.generation, None, passes, reasons, unresolvable, allocations, resolved)
        self._verdicts[claims] = verdict
        return verdict

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        """Per node, whether the pod's claims can be satisfied there (all nodes for a pod without claims)."""
        claims = pod.spec.claims
        if claims is None:
            return np.ones(state.n, dtype=bool)
        return self._verdict(state.n, claims).passes

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        """kube-scheduler's reasons for the failing nodes."""
        claims = pod.spec.claims
        assert claims is not None, "a pod without claims never fails DynamicResources"
        verdict = self._verdict(state.n, claims)
        counts: dict[str, int] = {}
        rows = np.flatnonzero(failing).tolist()
        for i in rows:
            counts[verdict.reasons[i]] = counts.get(verdict.reasons[i], 0) + 1
        unresolvable = all(verdict.unresolvable[i] for i in rows)
        return FilterFailure(self.name, counts, len(rows), unresolvable)

    def reason_at(self, state: ClusterState, pod: CompiledPod, node: int) -> str:
        """The Filter reason for one node ("" where the pod's claims fit)."""
        claims = pod.spec.claims
        return "" if claims is None else self._verdict(state.n, claims).reasons[node]

    # -- Reserve / Unreserve --------------------------------------------------------------------------
    def reserve(
        self, pod: CompiledPod, node: int, instance: PodClaims | None = None
    ) -> list[AllocationResult]:
        """Allocate the pod's pending claims on ``node`` (chosen by Filter) and reserve every claim for the
        pod; returns the new allocations (one per claim that was not allocated yet). For a shape, pass the
        bound pod's own claims as ``instance``: its template claims are created and take the allocation."""
        claims = pod.spec.claims
        if claims is None:
            return []
        verdict = self._verdict_for_node(claims, node)
        allocations = verdict.allocations[node]
        if claims.shape:
            if instance is None:
                raise AllocationError("Reserve of a claims shape needs the pod's own claims")
            self.dra.reserve(instance, self.dra.instantiate(instance), allocations)
        else:
            self.dra.reserve(claims, verdict.claims, allocations)
        return allocations

    def _verdict_for_node(self, claims: PodClaims, node: int) -> _Verdict:
        """The Filter verdict Reserve uses: the one of this DRA generation, computed now when the pod was
        bound without a fresh Filter (a gang bound by the plan its trial binds made)."""
        found = self._verdict(len(self.nodes), claims)
        if node not in found.allocations:
            raise AllocationError(f"claim allocation not found for node {self.nodes[node].name}")
        return found

    def release(self, pod: CompiledPod, instance: PodClaims | None = None) -> None:
        """The pod ended or was evicted: its reservations go, claims nobody holds are deallocated; the
        claims generated for a shape's ``instance`` are deleted with the pod."""
        claims = instance if instance is not None else pod.spec.claims
        if claims is not None:
            self.dra.release(claims)
            if instance is not None:
                self.dra.delete_generated(instance)

    # -- explanation ----------------------------------------------------------------------------------
    def request_counts(self, claims: PodClaims) -> list[tuple[str, str, int, int]]:
        """Per request of the pod's unallocated claims: (``claim/request``, what it asks, devices in the
        cluster matching its class and selectors, how many of them are free); for diagnosis only."""
        resolved = self.dra.resolve(claims)
        if isinstance(resolved, str):
            return []
        allocator = self._allocator()
        out: list[tuple[str, str, int, int]] = []
        for claim in resolved:
            if claim.status.allocation is not None:
                continue
            for request in claim.spec.devices.requests:
                exact = request.exactly
                if exact is None or exact.device_class_name not in self.dra.classes:
                    continue
                cls = self.dra.classes[exact.device_class_name]
                matching = free = 0
                for s in self.dra.slices:
                    for device in s.spec.devices:
                        device_id = DeviceID(s.spec.driver, s.spec.pool.name, device.name)
                        try:
                            ok = allocator.device_matches(
                                device_id, device, [*cls.spec.selectors, *exact.selectors]
                            )
                        except AllocationError:
                            ok = False
                        if ok:
                            matching += 1
                            free += device_id not in self.dra.allocated
                asks = "all" if exact.allocation_mode == "All" else str(exact.count)
                out.append((f"{claim.metadata.name}/{request.name}", f"{asks} x {cls.name}", matching, free))
        return out
