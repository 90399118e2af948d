"""The ranges every numeric input field is checked against at load, as pydantic annotated types.

One place for the bounds so that a number that cannot be simulated (past int64, past what fits in memory,
infinite) is refused where it is read, naming the field and the limit, instead of crashing or running for
minutes later. Kubernetes' own limits are used where they exist; docs/input-limits.md lists them all.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

#: Largest quantity (milli-CPU, bytes, counts): 2**53, the largest integer a float64 holds exactly
#: (8 PiB, 9 billion cores); ``cpu: 9Ei`` would overflow the int64 columns the simulator keeps.
MAX_QUANTITY = 2**53
#: Longest duration or simulated time: 100 years in seconds (times are held as int64 milliseconds).
MAX_SECONDS = 100 * 365 * 86_400
#: Nodes a scenario may ever hold (pool counts and autoscaling maxima, summed): GKE's largest cluster
#: (65,000 nodes); upstream Kubernetes tests 5,000.
MAX_NODES = 65_000
#: Pods of one job: Kubernetes' large-cluster limit on pods in a whole cluster (150,000).
MAX_PODS_PER_JOB = 150_000
#: GPUs per node: no cloud instance has more than 16; 64 leaves room for future shapes.
MAX_GPUS_PER_NODE = 64
#: Time-slicing replicas per GPU (the NVIDIA device plugin sets no maximum; each is a device to track).
MAX_TIME_SLICING_REPLICAS = 1_024
#: Pods of a whole workload (per-pod state is kept in columns of this length).
MAX_TOTAL_PODS = 5_000_000
#: Jobs one generator class may draw.
MAX_GENERATED_JOBS = 10_000_000
#: Kubernetes PriorityClass and Kueue WorkloadPriorityClass values are int32.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: Seeds are stored as int64 and must be >= 0 for numpy's generators.
MAX_SEED = 2**63 - 1
#: A score plugin's weight: KubeSchedulerConfiguration holds ``weight`` as an int32, and the scheduler
#: framework (pkg/scheduler/framework/runtime/framework.go) refuses weights whose weight x MaxNodeScore (100)
#: sum could overflow int64; 0 is allowed here to switch a plugin off.
MAX_PLUGIN_WEIGHT = INT32_MAX
#: Timed steps of one measured-profile batch size: a recording of 10 million steps takes days even at
#: 10 ms a step; a larger count is a typo, not a measurement.
MAX_PROFILE_STEPS = 10_000_000
#: Generated arrivals per hour: one a millisecond, the simulator's time resolution (times are int64 ms);
#: faster rates would draw gaps that round to zero.
MAX_ARRIVALS_PER_HOUR = 3_600_000.0
#: An hourly price in dollars: the dearest instance is under $200/h; a catalog typo is not a price.
MAX_PRICE_PER_HOUR = 1_000_000.0
#: A bill line's amount (cost, credit) in its currency: a trillion; a larger figure is a corrupt line.
MAX_BILL_AMOUNT = 1e12
#: Currency units per USD a bill may convert with (Kuwaiti dinar ~0.3 .. Iranian rial ~10^5).
MIN_CONVERSION_RATE, MAX_CONVERSION_RATE = 1e-4, 1e7
#: Cost types of a bill line that may be negative (refunds, corrections); usage itself never costs < 0.
NEGATIVE_COST_TYPES = frozenset({"adjustment", "rounding_error", "credit", "refund"})


def _not_bool(value: Any) -> Any:
    """YAML's ``true``/``false`` are Python bools, which pydantic would take as 1/0 for a number."""
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a number; write a number")
    return value


#: Refuses ``true``/``false`` where a number belongs (every numeric field of a spec carries it).
NotBool = BeforeValidator(_not_bool)
#: A whole number / a finite float of a spec (range given with ``Field``; models refuse inf and NaN).
Int = Annotated[int, NotBool]
Float = Annotated[float, NotBool]

#: A PriorityClass-style value (int32, as the Kubernetes API holds it).
Priority = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX), NotBool]
#: A random seed.
Seed = Annotated[int, Field(ge=0, le=MAX_SEED), NotBool]
#: A node count (pool size, autoscaling bound, ``--add-nodes``).
NodeCount = Annotated[int, Field(ge=0, le=MAX_NODES), NotBool]
#: A count that may be negative but must fit int64 (quotas, weights).
Int64 = Annotated[int, NotBool, Field(ge=-(2**63), le=2**63 - 1)]
#: A non-negative count that must fit int64.
Count = Annotated[int, Field(ge=0, le=MAX_QUANTITY), NotBool]
#: A score plugin's weight (0 disables it).
PluginWeight = Annotated[int, Field(ge=0, le=MAX_PLUGIN_WEIGHT), NotBool]
#: A Kueue quota quantity (``nominalQuota``, ``borrowingLimit``, ``lendingLimit``) in fleetlab's units.
QuotaQuantity = Annotated[int, Field(ge=0, le=MAX_QUANTITY), NotBool]
#: Dollars per hour.
PricePerHour = Annotated[float, Field(ge=0, le=MAX_PRICE_PER_HOUR), NotBool]
