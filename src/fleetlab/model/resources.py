"""Resource names and integer resource lists, as kube-scheduler counts them.

CPU is held in milli-cores, memory and ephemeral storage in bytes, everything else (pods, ``nvidia.com/gpu``,
any extended resource) in whole units, so every comparison the scheduler makes is exact integer arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from fleetlab.model.limits import MAX_QUANTITY
from fleetlab.model.quantity import QuantityError, to_int, to_milli, to_whole

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
GPU = "nvidia.com/gpu"

#: Columns every node-state array carries, in this order; extended resources follow.
BASE_RESOURCES: tuple[str, ...] = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS, GPU)

#: Non-zero defaults kube-scheduler adds for containers without cpu/memory requests when *scoring*
#: (pkg/scheduler/util/pod_resources.go): 100m and 200 MiB. Never used by the Fit filter.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

ResourceList = dict[str, int]


def is_native(name: str) -> bool:
    """Native names have no domain or the reserved ``kubernetes.io/`` domain (core/v1/helper)."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """Extended resources (``vendor.com/thing``) are integers and cannot be overcommitted."""
    return not is_native(name) and not name.startswith("requests.")


def parse_amount(name: str, value: str | int | float) -> int:
    """Parse one quantity into the integer unit fleetlab keeps for ``name`` (cached: a history of a
    million pods repeats a few dozen quantities; a value of another type goes uncached to the error)."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):  # True == 1 as a cache key
        return _parse_amount_cached(name, value)
    return _parse_amount(name, value)


@lru_cache(maxsize=8192)
def _parse_amount_cached(name: str, value: str | int | float) -> int:
    return _parse_amount(name, value)


def _parse_amount(name: str, value: str | int | float) -> int:
    if name == CPU:
        return to_milli(value)
    if name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-"):
        return to_int(value)
    if name == PODS:
        return to_whole(value, name)
    if is_extended(name):
        return to_whole(value, name)
    if "/" in name and not name.startswith("requests."):
        # A prefixed native name (``kubernetes.io/<name>``): the API server takes any quantity and the
        # scheduler counts it as a scalar with Quantity.Value() (rounded up).
        return to_int(value)
    raise QuantityError(
        f"unknown resource name {name!r}: allowed are cpu, memory, ephemeral-storage, pods, "
        "hugepages-<size>, kubernetes.io/<name> or an extended resource with a domain prefix such as "
        "nvidia.com/gpu"
    )


def parse_resource_list(values: Mapping[str, str | int | float]) -> ResourceList:
    """Parse a Kubernetes resource list (``{cpu: 500m, memory: 2Gi}``) into integer units."""
    parsed: ResourceList = {}
    for name, value in values.items():
        try:
            amount = parse_amount(str(name), value)
        except QuantityError as exc:
            text = str(exc)
            raise QuantityError(text if text.startswith(f"{name}:") else f"{name}: {text}") from None
        if amount < 0:
            raise QuantityError(f"{name}: {value!r} must be greater than or equal to 0")
        if amount > MAX_QUANTITY:
            raise QuantityError(
                f"{name}: {value!r} is larger than {MAX_QUANTITY:,} (2**53), the largest fleetlab models"
            )
        parsed[str(name)] = amount
    return parsed


def format_amount(name: str, amount: int) -> str:
    """Render an integer amount back in the unit a person would write for ``name``."""
    if name == CPU:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-"):
        for suffix, factor in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= factor and amount % factor == 0:
                return f"{amount // factor}{suffix}"
        return str(amount)
    return str(amount)
