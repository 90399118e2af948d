"""Cost per completed job of a scenario's job mix if every GPU job ran on one GPU model.

Each GPU job's runtime on the model is its ``runtime.on(model)`` (the scenario's by-GPU runtimes or
generator speed-ups), billed for the GPUs it holds at the model's price per GPU-hour — the scenario's own
pool price for that model when it has one, else the cheapest on-demand catalog offer. Queueing, prep and
idle capacity are left out: this is the pure work cost the choice of GPU changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fleetlab.cost.gpu_plan import PricedOffer
from fleetlab.model.scenario import ResolvedScenario


@dataclass(frozen=True)
class MixCost:
    """The mix on one GPU model."""

    gpu: str
    usd_per_gpu_hour: float
    price_source: str
    jobs: int
    gpu_hours: float
    total_usd: float

    @property
    def usd_per_job(self) -> float:
        """Mean dollars per completed job."""
        return self.total_usd / self.jobs if self.jobs else 0.0


def gpu_hour_price(resolved: ResolvedScenario, gpu: str, offers: Iterable[PricedOffer]) -> tuple[float, str]:
    """Price per GPU-hour of ``gpu``: the scenario's pool, else the cheapest on-demand catalog offer."""
    for pool in resolved.scenario.cluster.pools:
        if pool.gpu_model == gpu and pool.gpus_per_node > 0 and pool.price_per_hour > 0:
            return pool.price_per_hour / pool.gpus_per_node, f"scenario pool {pool.name}"
    best = min(
        (o for o in offers if o.gpu == gpu and o.capacity_type == "on-demand"),
        key=lambda o: o.price_per_hour / o.gpus,
        default=None,
    )
    if best is None:
        raise ValueError(f"no price for {gpu}: no scenario pool and no on-demand catalog offer")
    return best.price_per_hour / best.gpus, f"{best.cloud} {best.instance_type} {best.region}"


def mix_cost(resolved: ResolvedScenario, gpu: str, offers: Iterable[PricedOffer]) -> MixCost:
    """Every GPU job of the scenario on ``gpu``."""
    price, source = gpu_hour_price(resolved, gpu, offers)
    gpu_jobs = [j for j in resolved.jobs if j.total_gpus > 0]
    hours = sum(j.runtime.on(gpu) / 3600 * j.total_gpus for j in gpu_jobs)
    return MixCost(gpu, price, source, len(gpu_jobs), hours, hours * price)
