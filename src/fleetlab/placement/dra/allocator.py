"""The structured-parameters allocator: which devices on one node satisfy a pod's unallocated claims.

Written after kube-scheduler's allocator (``k8s.io/dynamic-resource-allocation/structured``, the
"incubating" variant v1.35 uses with its beta features on): claims in order, each claim's requests in
order, each request's devices one after another, trying candidates in pool / slice / device order and
backtracking, the first full solution wins. A candidate must be free (or, with admin access, not yet
taken by the same claim), match the class's and the request's CEL selectors, have its taints tolerated,
keep every claim constraint (matchAttribute / distinctAttribute) and fit its pool's shared counters
(partitionable devices). ``All`` takes every matching device of complete, valid pools and fails if any is
taken; ``firstAvailable`` tries subrequests in order. Errors in the input (a CEL runtime error, a missing
class) stop allocation for every node, as upstream; a claim that does not fit gives None.

fleetlab's own bound: at most ``MAX_STEPS`` candidate steps per call (upstream relies on the scheduling
cycle's timeout); past it allocation fails with an error naming the bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from fleetlab.model.dra import (
    ALLOCATION_RESULTS_MAX,
    AllocationResult,
    Device,
    DeviceClass,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from fleetlab.model.quantity import parse_quantity
from fleetlab.placement.dra.cel import CelError, CompiledSelector, DeviceInput, compile_selector
from fleetlab.placement.dra.cel_lib import Quantity, Semver
from fleetlab.placement.dra.constraints import Constraint, make_constraint
from fleetlab.placement.dra.pools import NodeView, Pool, gather_pools, node_matches
from fleetlab.spec.cel_parse import CelSyntaxError

__all__ = ["AllocationError", "Allocator", "DeviceID", "Features", "NodeAllocationError"]

MAX_STEPS = 1_000_000


class AllocationError(Exception):
    """Input that makes allocation impossible on every node (upstream returns it from Allocate)."""


class NodeAllocationError(AllocationError):
    """Allocation failed on this node only because of a broken pool (``ErrFailedAllocationOnNode``)."""


class DeviceID(NamedTuple):
    """``driver/pool/device``."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Features:
    """The DRA feature gates the allocator honours (v1.35 defaults: beta on, alpha off)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding: bool = False


@dataclass
class _Request:
    claim: int
    index: int
    sub: int  # -1: not a subrequest
    name: str
    parent: str  # name of the request holding this subrequest, "" otherwise
    cls: DeviceClass
    all_mode: bool
    count: int
    admin: bool
    selectors: tuple[DeviceSelector, ...]
    tolerations: tuple[DeviceToleration, ...]
    all_devices: list[_Candidate] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(frozen=True)
class _Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass
class _Result:
    request: _Request
    candidate: _Candidate


def device_input(driver: str, device: Device) -> DeviceInput:
    """The CEL view of a device: attributes as values (versions parsed), capacity as quantities."""
    attributes: dict[str, Any] = {}
    for name, attr in device.attributes.items():
        if attr.version_value is not None:
            parsed = Semver.parse(attr.version_value)
            if parsed is None:
                raise CelError(f"attribute {name}: parse semantic version: {attr.version_value!r}")
            attributes[name] = parsed
        else:
            attributes[name] = attr.value
    capacity = {name: Quantity(parse_quantity(c.value)) for name, c in device.capacity.items()}
    return DeviceInput(driver, attributes, capacity, bool(device.allow_multiple_allocations))


def tolerates(toleration: DeviceToleration, key: str, value: str, effect: str) -> bool:
    """``resourceclaim.ToleratesTaint``: effect empty or equal, key empty (Exists) or equal, then Exists
    or equal values."""
    if toleration.effect and toleration.effect != effect:
        return False
    if toleration.key and toleration.key != key:
        return False
    return toleration.operator == "Exists" or toleration.value == value


def taint_blocks(device: Device, tolerations: Sequence[DeviceToleration]) -> bool:
    """Whether a NoSchedule / NoExecute taint of the device is tolerated by none of ``tolerations``."""
    return any(
        t.effect in ("NoSchedule", "NoExecute")
        and not any(tolerates(x, t.key, t.value, t.effect) for x in tolerations)
        for t in device.taints
    )


class Allocator:
    """One allocator over a cluster's classes, slices and already-allocated devices (reusable per node)."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        allocated: frozenset[DeviceID] | set[DeviceID] = frozenset(),
        features: Features = Features(),
        compile_cache: dict[str, CompiledSelector | CelSyntaxError] | None = None,
        pools_cache: dict[str, list[Pool]] | None = None,
    ) -> None:
        self.classes = classes
        self.slices = slices
        self.allocated = allocated
        self.features = features
        self._compiled = compile_cache if compile_cache is not None else {}
        #: Per node name its pools, for callers whose slices stay the same across allocators.
        self._pools = pools_cache if pools_cache is not None else {}
        self._inputs: dict[DeviceID, DeviceInput] = {}

    # -- selectors ------------------------------------------------------------------------------------
    def _selector(self, expression: str) -> CompiledSelector | CelSyntaxError:
        found = self._compiled.get(expression)
        if found is None:
            try:
                found = compile_selector(expression)
            except CelSyntaxError as exc:
                found = exc
            self._compiled[expression] = found
        return found

    def selectors_match(
        self, selectors: Sequence[DeviceSelector], device_id: DeviceID, device: Device, where: str
    ) -> bool:
        """Whether the device passes every selector; a CEL error stops allocation (AllocationError)."""
        for i, selector in enumerate(selectors):
            compiled = self._selector(selector.cel.expression)
            if isinstance(compiled, CelSyntaxError):
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {compiled}")
            try:
                view = self._inputs.get(device_id)
                if view is None:
                    view = self._inputs[device_id] = device_input(device_id.driver, device)
                if not compiled.matches(view):
                    return False
            except CelError as exc:
                raise AllocationError(
                    f"{where}: selector #{i} on device {device_id}: CEL runtime error: {exc}"
                ) from None
        return True

    def device_matches(
        self, device_id: DeviceID, device: Device, selectors: Sequence[DeviceSelector]
    ) -> bool:
        """Whether one device passes ``selectors`` (CEL errors raise AllocationError)."""
        return self.selectors_match(selectors, device_id, device, f"device {device_id}")

    def pools(self, node: NodeView) -> list[Pool]:
        """The pools ``node`` can reach (``GatherPools``), gathered once per node name."""
        found = self._pools.get(node.name)
        if found is None:
            found = self._pools[node.name] = gather_pools(
                self.slices, node, self.features.partitionable_devices
            )
        return found

    # -- entry point ----------------------------------------------------------------------------------
    def allocate(self, node: NodeView, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """One AllocationResult per claim, or None when the claims do not fit on ``node``."""
        return _Run(self, node, claims).run()


class _Run:
    """The state of one ``allocate`` call (upstream's ``allocator``)."""

    def __init__(self, owner: Allocator, node: NodeView, claims: Sequence[ResourceClaim]) -> None:
        self.owner = owner
        self.node = node
        self.claims = claims
        self.pools = owner.pools(node)
        self.requests: dict[tuple[int, int, int], _Request] = {}
        self.chosen_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[Constraint]] = []
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        self.consumed: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.available: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.matches: dict[tuple[DeviceID, tuple[int, int, int]], bool] = {}
        self.steps = 0

    def run(self) -> list[AllocationResult] | None:
        for c, claim in enumerate(self.claims):
            minimum = 0
            for r, request in enumerate(claim.spec.devices.requests):
                if request.first_available:
                    if not self.owner.features.prioritized_list:
                        raise AllocationError(
                            f"claim {claim.kobj}, request {request.name}: has subrequests, but the "
                            "DRAPrioritizedList feature is disabled"
                        )
                    least = min(
                        self._prepare(c, r, s, sub, request.name)
                        for s, sub in enumerate(request.first_available)
                    )
                    minimum += least
                else:
                    minimum += self._prepare(c, r, -1, request.exactly, "")
            if minimum > ALLOCATION_RESULTS_MAX:
                raise AllocationError(
                    f"claim {claim.kobj}: number of requested devices {minimum} exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX}"
                )
            self.constraints.append([make_constraint(k) for k in claim.spec.devices.constraints])
        if not self._one(0, 0, 0, 0, False, (0, 0, 0)):
            if any(p.invalid for p in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return [self._result(c) for c in range(len(self.claims))]

    def _prepare(self, c: int, r: int, s: int, req: Any, parent: str) -> int:
        claim = self.claims[c]
        name = req.name if parent else claim.spec.devices.requests[r].name
        full = f"{parent}/{name}" if parent else name
        admin = bool(getattr(req, "admin_access", None))
        if getattr(req, "admin_access", None) is not None and not self.owner.features.admin_access:
            raise AllocationError(
                f"claim {claim.kobj}, request {full}: admin access is requested, but the feature is disabled"
            )
        cls = self.owner.classes.get(req.device_class_name)
        if cls is None:
            raise AllocationError(
                f"claim {claim.kobj}, request {full}: could not retrieve device class {req.device_class_name}"
            )
        request = _Request(
            c,
            r,
            s,
            name,
            parent,
            cls,
            req.allocation_mode == "All",
            req.count,
            admin,
            req.selectors,
            req.tolerations,
        )
        if request.all_mode:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.kobj}, request {full}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.kobj}, request {full}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently invalid"
                    )
                for s_ in pool.slices:
                    for device in s_.spec.devices:
                        cand = _Candidate(DeviceID(pool.driver, pool.name, device.name), device, s_, pool)
                        if self._selectable(request, cand):
                            request.all_devices.append(cand)
            request.count = len(request.all_devices)
        self.requests[(c, r, s)] = request
        return request.count

    # -- the search -----------------------------------------------------------------------------------
    def _one(self, c: int, r: int, s: int, d: int, in_sub: bool, start: tuple[int, int, int]) -> bool:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise AllocationError(f"allocation search exceeded {MAX_STEPS} steps")
        if c >= len(self.claims):
            return True
        requests = self.claims[c].spec.devices.requests
        if r >= len(requests):
            return self._one(c + 1, 0, 0, 0, False, (0, 0, 0))
        if requests[r].first_available and not in_sub:
            for sub in range(len(requests[r].first_available)):
                if self._one(c, r, sub, 0, True, (0, 0, 0)):
                    self.chosen_sub[(c, r)] = sub
                    return True
            return False
        request = self.requests[(c, r, s if requests[r].first_available else -1)]
        if request.all_mode and not request.all_devices:
            return False
        if d >= request.count:
            return self._one(c, r + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[c]) + request.count - d > ALLOCATION_RESULTS_MAX:
            return False
        if request.all_mode:
            undo = self._take(request, request.all_devices[d], must=True)
            if undo is None:
                return False  # every matching device is needed: this combination has no solution
            if self._one(c, r, s, d + 1, in_sub, (0, 0, 0)):
                return True
            undo()
            return False
        for p in range(start[0], len(self.pools)):
            pool = self.pools[p]
            if pool.incomplete or pool.invalid:
                continue
            for si in range(start[1] if p == start[0] else 0, len(pool.slices)):
                s_ = pool.slices[si]
                first = start[2] if (p, si) == start[:2] else 0
                for di in range(first, len(s_.spec.devices)):
                    device = s_.spec.devices[di]
                    cand = _Candidate(DeviceID(pool.driver, pool.name, device.name), device, s_, pool)
                    if request.admin and c in self.allocating.get(cand.id, ()):
                        continue
                    if not request.admin and self._in_use(cand.id):
                        continue
                    if not self._selectable(request, cand):
                        continue
                    undo = self._take(request, cand, must=False)
                    if undo is None:
                        continue
                    if self._one(c, r, s, d + 1, in_sub, (p, si, di + 1)):
                        return True
                    undo()
        return False

    def _in_use(self, device: DeviceID) -> bool:
        return device in self.owner.allocated or bool(self.allocating.get(device))

    def _selectable(self, request: _Request, cand: _Candidate) -> bool:
        if cand.device.binding_conditions and not self.owner.features.device_binding:
            return False
        key = (cand.id, (request.claim, request.index, request.sub))
        found = self.matches.get(key)
        if found is not None:
            return found
        claim = self.claims[request.claim]
        ok = self.owner.selectors_match(
            request.cls.spec.selectors, cand.id, cand.device, f"class {request.cls.name}"
        )
        ok = ok and self.owner.selectors_match(request.selectors, cand.id, cand.device, f"claim {claim.kobj}")
        if ok and cand.slice.spec.per_device_node_selection:
            ok = node_matches(
                self.node, cand.device.node_name, cand.device.all_nodes, cand.device.node_selector
            )
        self.matches[key] = ok
        return ok

    def _take(self, request: _Request, cand: _Candidate, must: bool) -> Callable[[], None] | None:
        """Mark ``cand`` allocated for ``request`` if it is free, fits its counters, has its taints
        tolerated and keeps the claim's constraints; returns how to undo that, or None."""
        c = request.claim
        if request.admin and c in self.allocating.get(cand.id, ()):
            return None
        if not request.admin and self._in_use(cand.id):
            return None
        if cand.device.consumes_counters and not self.owner.features.partitionable_devices:
            return None
        if cand.device.consumes_counters and not self._counters_fit(cand):
            return None
        counted = bool(cand.device.consumes_counters)
        if self.owner.features.device_taints and taint_blocks(cand.device, request.tolerations):
            if counted:
                self._count(cand, -1)
            return None
        added: list[Constraint] = []
        base = request.parent or request.name
        sub = request.name if request.parent else ""
        for constraint in self.constraints[c]:
            if not constraint.add(base, sub, cand.device, cand.id.driver):
                if must:
                    raise AllocationError(
                        f"claim {self.claims[c].kobj}, request {request.full_name}: cannot add device "
                        f"{cand.id} because a claim constraint would not be satisfied"
                    )
                for done in added:
                    done.remove(base, sub, cand.device, cand.id.driver)
                if counted:
                    self._count(cand, -1)
                return None
            added.append(constraint)
        self.allocating.setdefault(cand.id, set()).add(c)
        self.results[c].append(_Result(request, cand))

        def undo() -> None:
            for constraint in added:
                constraint.remove(base, sub, cand.device, cand.id.driver)
            self.allocating[cand.id].discard(c)
            if counted:
                self._count(cand, -1)
            self.results[c].pop()

        return undo

    # -- shared counters ------------------------------------------------------------------------------
    def _counters_fit(self, cand: _Candidate) -> bool:
        """Add the device's counter use; keep it and say True when every counter of the pool still has
        enough, else take it back."""
        pool = cand.pool
        available = self.available.get(pool.pool_id)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s_ in [*pool.slices, *pool.other_slices]:
                for device in s_.spec.devices:
                    if DeviceID(pool.driver, pool.name, device.name) not in self.owner.allocated:
                        continue
                    for use in device.consumes_counters:
                        for name, counter in use.counters.items():
                            if name in available.get(use.counter_set, {}):
                                available[use.counter_set][name] -= parse_quantity(counter.value)
            self.available[pool.pool_id] = available
        self._count(cand, 1)
        consumed = self.consumed[pool.pool_id]
        for set_name, counters in available.items():
            for name, value in counters.items():
                if value < consumed.get(set_name, {}).get(name, 0):
                    self._count(cand, -1)
                    return False
        return True

    def _count(self, cand: _Candidate, sign: int) -> None:
        consumed = self.consumed.setdefault(cand.pool.pool_id, {})
        for use in cand.device.consumes_counters:
            mine = consumed.setdefault(use.counter_set, {})
            for name, counter in use.counters.items():
                mine[name] = mine.get(name, Fraction(0)) + sign * parse_quantity(counter.value)

    # -- results --------------------------------------------------------------------------------------
    def _result(self, c: int) -> AllocationResult:
        results = []
        for found in self.results[c]:
            entry: dict[str, Any] = {
                "request": found.request.full_name,
                "driver": found.candidate.id.driver,
                "pool": found.candidate.id.pool,
                "device": found.candidate.id.device,
            }
            if found.request.admin:
                entry["adminAccess"] = True
            if found.request.tolerations:
                entry["tolerations"] = [
                    t.model_dump(by_alias=True, exclude_defaults=True) for t in found.request.tolerations
                ]
            results.append(entry)
        body: dict[str, Any] = {"devices": {"results": results, "config": self._config(c)}}
        selector = self._node_selector(c)
        if selector is not None:
            body["nodeSelector"] = selector
        return AllocationResult.model_validate(body)

    def _config(self, c: int) -> list[dict[str, Any]]:
        """Class configuration once per class (naming every request that used the class), then the
        claim's own entries (one per request they name), as upstream's allocation result."""
        claim = self.claims[c]
        requests = claim.spec.devices.requests
        config: list[dict[str, Any]] = []
        by_class: dict[str, list[dict[str, Any]]] = {}
        for r, request in enumerate(requests):
            chosen = self.requests[(c, r, self.chosen_sub.get((c, r), 0) if request.first_available else -1)]
            if chosen.cls.name in by_class:
                for entry in by_class[chosen.cls.name]:
                    entry["requests"].append(chosen.full_name)
                continue
            entries = [
                {
                    "source": "FromClass",
                    "requests": [chosen.full_name],
                    "opaque": cfg.opaque.model_dump(by_alias=True),
                }
                for cfg in chosen.cls.spec.config
                if cfg.opaque is not None
            ]
            by_class[chosen.cls.name] = entries
            config.extend(entries)
        for cfg in claim.spec.devices.config:
            if cfg.opaque is None:
                continue
            entry = {
                "source": "FromClaim",
                "requests": list(cfg.requests),
                "opaque": cfg.opaque.model_dump(by_alias=True),
            }
            if not cfg.requests:
                config.append(entry)
                continue
            for r, request in enumerate(requests):
                sub = self.chosen_sub.get((c, r))
                named = request.name in cfg.requests or (
                    sub is not None and f"{request.name}/{request.first_available[sub].name}" in cfg.requests
                )
                if named:
                    config.append(dict(entry))
        return config

    def _node_selector(self, c: int) -> dict[str, Any] | None:
        terms: dict[str, list[dict[str, Any]]] = {"matchExpressions": [], "matchFields": []}
        for found in self.results[c]:
            spec, device = found.candidate.slice.spec, found.candidate.device
            per_device = bool(spec.per_device_node_selection)
            node_name = device.node_name if per_device else spec.node_name
            selector = device.node_selector if per_device else spec.node_selector
            if node_name or device.binds_to_node:
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [self.node.name]}
                ]}]}  # fmt: skip
            if selector is not None and selector.node_selector_terms:
                term = selector.node_selector_terms[0]
                for kind, reqs in (
                    ("matchExpressions", term.match_expressions),
                    ("matchFields", term.match_fields),
                ):
                    for req in reqs:
                        dumped = req.model_dump(by_alias=True)
                        if dumped not in terms[kind]:
                            terms[kind].append(dumped)
        if not terms["matchExpressions"] and not terms["matchFields"]:
            return None
        return {"nodeSelectorTerms": [{k: v for k, v in terms.items() if v}]}
