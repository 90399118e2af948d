"""Pod requests as kube-scheduler computes them from a Pod's spec: each container's requests, the sum over
app containers and sidecar init containers, the maximum with any plain init container, pod overhead, and
pod-level ``spec.resources`` where set (on by default since v1.34). Shared by the snapshot reader, the
history importers and Kueue workload shapes, so all three count a pod the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from fleetlab.model.limits import MAX_QUANTITY
from fleetlab.model.quantity import QuantityError
from fleetlab.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    ResourceList,
    is_native,
    parse_amount,
)
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_objects import check_container_lists

__all__ = ["container_requests", "pod_requests", "resource_list", "scoring_requests"]


def resource_list(values: Any, where: str, source: str, skip_unknown: bool = False) -> ResourceList:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise SpecError(source, [f"{where}: expected a mapping of resource name to quantity"])
    out: ResourceList = {}
    for name, value in values.items():
        name = str(name)
        try:
            out[name] = parse_amount(name, value)
            if not 0 <= out[name] <= MAX_QUANTITY:
                raise QuantityError(f"{value!r} is outside 0..{MAX_QUANTITY:,} (2**53)")
        except QuantityError as exc:
            if skip_unknown and is_native(name) and "unknown resource name" in str(exc):
                continue  # e.g. attachable-volumes-*: nodes report them, the Fit filter never reads them
            raise SpecError(source, [f"{where}[{name}]: {exc}"]) from None
    return out


def container_requests(container: Mapping[str, Any], where: str, source: str) -> ResourceList:
    """requests with every limit-only key copied in (core/v1 SetDefaults_Pod)."""
    res = container.get("resources") or {}
    if not isinstance(res, Mapping):
        raise SpecError(source, [f"{where}.resources: expected a mapping of requests and limits"])
    requests = resource_list(res.get("requests"), f"{where}.resources.requests", source)
    limits = resource_list(res.get("limits"), f"{where}.resources.limits", source)
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


#: An amount: integer units (the scheduler's view) or exact fractions (the quota evaluator's).
Amount = TypeVar("Amount", int, Fraction)


def add_into(into: dict[str, Amount], more: Mapping[str, Amount]) -> None:
    """Add ``more`` to ``into``, name by name."""
    for name, amount in more.items():
        into[name] = into.get(name, 0) + amount


def max_into(into: dict[str, Amount], other: Mapping[str, Amount]) -> None:
    """Raise ``into`` to ``other`` where ``other`` is larger, name by name."""
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def containers_total(
    containers: Sequence[Mapping[str, Any]],
    init_containers: Sequence[Mapping[str, Any]],
    amounts: Callable[[Mapping[str, Any], str], dict[str, Amount]],
    where: str = "spec",
) -> dict[str, Amount]:
    """resourcehelper's container aggregate: app containers and sidecars (init containers with
    ``restartPolicy: Always``) summed, then the maximum with each init container plus the sidecars started
    before it. ``amounts(container, place)`` reads one container's amounts."""
    total: dict[str, Amount] = {}
    for i, c in enumerate(containers):
        add_into(total, amounts(c, f"{where}.containers[{i}]"))
    sidecars: dict[str, Amount] = {}
    init_max: dict[str, Amount] = {}
    for i, c in enumerate(init_containers):
        own = amounts(c, f"{where}.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":  # a sidecar runs alongside everything after it
            add_into(total, own)
            add_into(sidecars, own)
            effective = dict(sidecars)
        else:
            effective = dict(own)
            add_into(effective, sidecars)
        max_into(init_max, effective)
    max_into(total, init_max)
    return total


def pod_requests(spec: Mapping[str, Any], where: str, source: str) -> tuple[ResourceList, frozenset[str]]:
    """kube-scheduler's effective pod requests (resourcehelper.PodRequests) and the keys set explicitly."""
    total, explicit = _aggregate(spec, where, source, None)
    return {k: v for k, v in total.items() if v > 0 or k in explicit}, frozenset(explicit)


def scoring_requests(spec: Mapping[str, Any], where: str, source: str) -> tuple[int, int]:
    """(milli-cpu, memory bytes) the resource scorers count for a pod: PodRequests with
    ``NonMissingContainerRequests`` (100m / 200Mi) added to each container, init containers included,
    that lacks the key, before the sum and the init-container maximum; pod-level requests and overhead
    as in :func:`pod_requests` (upstream ``calculatePodResourceRequest``)."""
    total, _ = _aggregate(
        spec, where, source, {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
    )
    return total.get(CPU, 0), total.get(MEMORY, 0)


def _aggregate(
    spec: Mapping[str, Any], where: str, source: str, non_missing: Mapping[str, int] | None
) -> tuple[ResourceList, set[str]]:
    """Sum of app containers and sidecars, maximum with each init container (plus the sidecars before
    it), pod-level cpu/memory, overhead; ``non_missing`` fills keys a container leaves out."""
    explicit: set[str] = set()
    check_container_lists(spec, where, source)

    def one(c: Mapping[str, Any], place: str) -> ResourceList:
        reqs = container_requests(c, place, source)
        explicit.update(reqs)
        for name, amount in (non_missing or {}).items():
            reqs.setdefault(name, amount)
        return reqs

    total = containers_total(spec.get("containers") or [], spec.get("initContainers") or [], one, where)
    pod_level = _pod_level_requests(spec, where, source)
    total.update(pod_level)
    explicit.update(pod_level)
    add_into(total, resource_list(spec.get("overhead"), f"{where}.overhead", source))
    return total, explicit


def _pod_level_requests(spec: Mapping[str, Any], where: str, source: str) -> ResourceList:
    """Pod-level ``spec.resources`` (PodLevelResources, on by default since v1.34): its cpu, memory and
    hugepages-* requests replace the containers' aggregate (resourcehelper ``PodRequests``); a limit with
    no request stands for the request, as the API server's defaulting sets it."""
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    limits = resource_list(resources.get("limits"), f"{where}.resources.limits", source)
    requests = resource_list(resources.get("requests"), f"{where}.resources.requests", source)
    merged = {**limits, **requests}
    return {k: v for k, v in merged.items() if k in ("cpu", "memory") or k.startswith("hugepages-")}
