"""Price one planning job on every GPU offer of the price catalogs: time, dollars per job and per sample.

Offers are catalog rows (instance type x region, cheapest zone) for one capacity type. A training job runs
on exactly its ``gpus`` GPUs: on one instance when it has at least that many (the whole instance is
billed), else on whole instances of the type. An inference goal is met with as many replicas as the target
throughput needs, packed onto whole instances, for ``hours``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fleetlab.model.gpu_specs import default_network_gbps, faster_models, gpu_specs, instance_network_gbps
from fleetlab.model.perf import Layout, fits, single_gpu_throughput, training_seconds
from fleetlab.model.plan_job import PlanJob
from fleetlab.spec.catalog import GPU_NAMES, Catalog, price_date

CAPACITY_TYPES = ("on-demand", "spot")


@dataclass(frozen=True)
class PricedOffer:
    """One instance type in one region for one capacity type, at its cheapest zone's price."""

    cloud: str
    instance_type: str
    region: str
    capacity_type: str
    gpu: str
    gpus: int
    price_per_hour: float
    network_gbps: float | None
    #: Where the price comes from and when it was taken; the catalog's warnings about its rows
    #: (known upstream anomalies, e.g. a wrong GPU count or a spot price above on-demand).
    price_source: str = ""
    price_date: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanRow:
    """The job on one offer: layout, time to finish and what it costs."""

    offer: PricedOffer
    instances: int
    gpus_used: int
    layout: str
    hours: float
    throughput: float
    cost_usd: float
    cost_per_million_samples: float
    latency_ms: float | None = None

    def as_dict(self) -> dict[str, object]:
        """A flat JSON row."""
        o = self.offer
        return {
            "gpu": o.gpu,
            "cloud": o.cloud,
            "instance_type": o.instance_type,
            "region": o.region,
            "capacity_type": o.capacity_type,
            "price_per_hour": o.price_per_hour,
            "billing_mode": o.capacity_type,
            "price_source": o.price_source,
            "price_date": o.price_date,
            "anomalies": list(o.notes),
            "instances": self.instances,
            "gpus": self.gpus_used,
            "layout": self.layout,
            "hours": self.hours,
            "throughput_samples_per_s": self.throughput,
            "cost_usd": self.cost_usd,
            "cost_per_million_samples": self.cost_per_million_samples,
            "latency_ms": self.latency_ms,
        }


@dataclass
class Plan:
    """All priced rows (cheapest first) and the offers left out, with the reason."""

    rows: list[PlanRow]
    excluded: list[str] = field(default_factory=list)
    #: Multi-node offers priced with the default network bandwidth (no figure for the instance type).
    no_network_figure: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """What the figures assumed without data."""
        if not self.no_network_figure:
            return []
        names = ", ".join(sorted(self.no_network_figure))
        return [f"no network figure for {names}; {default_network_gbps():g} Gbit/s assumed between nodes"]


def priced_offers(
    catalogs: Iterable[tuple[str, Catalog]], capacity_types: Sequence[str] = CAPACITY_TYPES
) -> list[PricedOffer]:
    """Catalog offers of GPU models with a performance profile, one per type x region x capacity."""
    specs = gpu_specs()
    best: dict[tuple[str, str, str, str], PricedOffer] = {}
    for cloud, catalog in catalogs:
        for offer in catalog.offers:
            gpu = GPU_NAMES.get(offer.accelerator or "")
            if gpu is None or gpu not in specs or offer.gpus <= 0:
                continue
            for capacity in capacity_types:
                price = offer.price_for(capacity)
                if price is None or price <= 0:
                    continue
                key = (cloud, offer.instance_type, offer.region, capacity)
                if key not in best or price < best[key].price_per_hour:
                    net = instance_network_gbps(offer.instance_type)
                    lines = offer.lines or (offer.line,)
                    notes = tuple(w for line in lines for w in catalog.warnings.get(line, []))
                    best[key] = PricedOffer(
                        cloud, offer.instance_type, offer.region, capacity, gpu, offer.gpus, price, net,
                        catalog.source, price_date(catalog), notes,
                    )  # fmt: skip
    return sorted(best.values(), key=lambda o: (o.gpu, o.cloud, o.instance_type, o.region, o.capacity_type))


def _network(offer: PricedOffer, override: float | None, plan: Plan) -> float:
    if override is not None:
        return override
    if offer.network_gbps is not None:
        return offer.network_gbps
    if offer.instance_type not in plan.no_network_figure:
        plan.no_network_figure.append(offer.instance_type)
    return default_network_gbps()


def _training_row(job: PlanJob, offer: PricedOffer, network_gbps: float | None, plan: Plan) -> PlanRow | None:
    goal = job.training
    assert goal is not None
    n, per = goal.gpus, offer.gpus
    if n <= per:
        nodes, p = 1, n
    elif n % per:
        plan.excluded.append(f"{offer.instance_type}: {n} GPUs do not fill whole {per}-GPU instances")
        return None
    else:
        nodes, p = n // per, per
    net = _network(offer, network_gbps, plan) if nodes > 1 else 0.0
    layout = Layout(offer.gpu, nodes, p, net)
    seconds = training_seconds(job.profile, goal.steps, goal.samples_per_step, layout)
    cost = nodes * offer.price_per_hour * seconds / 3600
    samples = goal.steps * goal.samples_per_step
    return PlanRow(
        offer=offer,
        instances=nodes,
        gpus_used=n,
        layout=f"{nodes}x{p}",
        hours=seconds / 3600,
        throughput=samples / seconds,
        cost_usd=cost,
        cost_per_million_samples=cost / samples * 1e6,
    )


def _inference_row(job: PlanJob, offer: PricedOffer, plan: Plan) -> PlanRow | None:
    goal = job.inference
    assert goal is not None
    if goal.gpus_per_replica > offer.gpus:
        plan.excluded.append(
            f"{offer.instance_type}: {offer.gpus} GPU(s) cannot hold a {goal.gpus_per_replica}-GPU replica"
        )
        return None
    per_gpu = single_gpu_throughput(job.profile, offer.gpu)
    latency = None
    if goal.latency_ms is not None:
        latency = goal.latency_ms * job.profile.reference_throughput / per_gpu
        if goal.max_latency_ms is not None and latency > goal.max_latency_ms:
            plan.excluded.append(
                f"{offer.gpu}: latency {latency:.1f} ms is above max_latency_ms {goal.max_latency_ms:g}"
            )
            return None
    replicas = math.ceil(goal.target_throughput / (per_gpu * goal.gpus_per_replica))
    per_instance = offer.gpus // goal.gpus_per_replica
    instances = math.ceil(replicas / per_instance)
    cost = instances * offer.price_per_hour * goal.hours
    samples = goal.target_throughput * goal.hours * 3600
    return PlanRow(
        offer=offer,
        instances=instances,
        gpus_used=replicas * goal.gpus_per_replica,
        layout=f"{replicas} replica(s) on {instances}x{offer.gpus}",
        hours=goal.hours,
        throughput=replicas * goal.gpus_per_replica * per_gpu,
        cost_usd=cost,
        cost_per_million_samples=cost / samples * 1e6,
        latency_ms=latency,
    )


def plan_job(job: PlanJob, offers: Sequence[PricedOffer], network_gbps: float | None = None) -> Plan:
    """Price ``job`` on every offer; rows sorted by dollars per job (per window for inference)."""
    plan = Plan(rows=[])
    unfit = sorted({o.gpu for o in offers if not fits(job.profile, o.gpu)})
    for gpu in unfit:
        plan.excluded.append(
            f"{gpu}: {job.profile.memory_gb_per_gpu:g} GB per GPU needed, "
            f"{gpu_specs()[gpu].memory_gb:g} GB available"
        )
    for offer in offers:
        if offer.gpu in unfit:
            continue
        if job.kind == "training":
            row = _training_row(job, offer, network_gbps, plan)
        else:
            row = _inference_row(job, offer, plan)
        if row is not None:
            plan.rows.append(row)
    plan.rows.sort(key=lambda r: (r.cost_usd, r.hours, r.offer.cloud, r.offer.instance_type, r.offer.region))
    return plan


@dataclass(frozen=True)
class ScalingOption:
    """One answer to "more GPUs or faster GPUs": the cheapest offer for a model x GPU count."""

    label: str
    row: PlanRow | None
    #: Why there is no row: the catalog has no offer, or the model was left out by a GPU filter.
    missing: str = "no offer in the catalog"


def scaling_options(
    job: PlanJob,
    offers: Sequence[PricedOffer],
    base_gpu: str,
    multiples: Sequence[int] = (1, 2, 4),
    network_gbps: float | None = None,
    only_models: Sequence[str] = (),
) -> list[ScalingOption]:
    """The base model at 1x, 2x, 4x the job's GPUs beside the next faster model at 1x (training only);
    with ``only_models`` (``--gpu``) the other models are said to be left out, not missing."""
    goal = job.training
    if goal is None:
        return []
    out: list[ScalingOption] = []
    candidates = [(base_gpu, m) for m in multiples]
    up = faster_models(base_gpu)
    if up:
        candidates.append((up[0], 1))
    for gpu, multiple in candidates:
        scaled = job.model_copy(update={"training": goal.model_copy(update={"gpus": goal.gpus * multiple})})
        tag = " (next model up)" if gpu != base_gpu else ""
        label = f"{gpu} x {goal.gpus * multiple}{tag}"
        if only_models and gpu not in only_models:
            out.append(ScalingOption(label, None, f"left out by --gpu {', '.join(only_models)}"))
            continue
        plan = plan_job(scaled, [o for o in offers if o.gpu == gpu], network_gbps)
        out.append(ScalingOption(label, plan.rows[0] if plan.rows else None))
    return out
