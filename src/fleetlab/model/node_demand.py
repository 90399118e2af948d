"""The node resources co-located pods contend for (see fleetlab.model.interference) and demand checks."""

from __future__ import annotations

#: The node resources pods contend for, in the order the simulator keeps them.
RESOURCES = ("cpu", "memory_bandwidth", "network", "disk")

Demand = dict[str, float]


def check_demand(demand: Demand, where: str) -> Demand:
    """Demand keys must be known resources and values >= 0; returns the demand."""
    for name, value in demand.items():
        if name not in RESOURCES:
            raise ValueError(f"{where}: unknown resource {name!r}; allowed: {', '.join(RESOURCES)}")
        if value < 0:
            raise ValueError(f"{where}: {name} demand {value} must be >= 0")
    return demand
