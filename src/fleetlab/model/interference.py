"""The interference model for co-located pods: dense packing is not free.

Pods on one node share resources kube-scheduler does not account for: the host's CPU (beyond requests),
memory bandwidth, network and local disk. Each pod has a *demand* on each, as a share of one node's
capacity (declared on the job as ``interference_demand``, else its class's default here, else 0); a
pool's capacity is 1.0 of each unless ``capacity`` says otherwise. While the summed demand of the pods
computing on a node exceeds the capacity of resource r, every pod there with a demand on r computes at
1 / s_r of its speed, with

    s_r = max(1, Σ demand_r / capacity_r) ** alpha

and a pod slowed on several resources takes the largest s_r. alpha = 1 is a fair share of a saturated
resource; alpha < 1 models work that only partly waits on it. Off unless the scenario has an
``interference`` section, so scenarios without one behave exactly as before.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.job import JobClass
from fleetlab.model.limits import Float
from fleetlab.model.node_demand import RESOURCES, Demand, check_demand


class InterferenceModel(SpecModel):
    """Scenario section ``interference``: alpha, per-class default demands, per-pool capacities."""

    alpha: Float = Field(default=1.0, gt=0)
    class_demand: dict[JobClass, Demand] = Field(default_factory=dict)
    #: Per pool name: capacity of each resource in node units (default 1.0).
    capacity: dict[str, Demand] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> InterferenceModel:
        for job_class, demand in self.class_demand.items():
            check_demand(demand, f"class_demand.{job_class.value}")
        for pool, capacity in self.capacity.items():
            check_demand(capacity, f"capacity.{pool}")
            for name, value in capacity.items():
                if value <= 0:
                    raise ValueError(f"capacity.{pool}: {name} capacity {value} must be > 0")
        return self

    def check_pools(self, pools: list[str]) -> None:
        """Capacities must name pools of the cluster."""
        unknown = sorted(set(self.capacity) - set(pools))
        if unknown:
            raise ValueError(
                f"interference.capacity: unknown pool(s) {', '.join(unknown)}; pools: {', '.join(pools)}"
            )

    def demand_of(self, job_class: JobClass, declared: Demand | None) -> tuple[float, ...]:
        """A job's demand vector (RESOURCES order): its own declaration, else its class default."""
        demand = declared if declared is not None else self.class_demand.get(job_class, {})
        return tuple(float(demand.get(name, 0.0)) for name in RESOURCES)
