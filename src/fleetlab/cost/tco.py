"""Buy vs rent: the yearly cost of an owned GPU server against renting the same GPU-hours, and a hybrid plan.

Owned, per server and year (capex = price x (1 + fabric %)):

    depreciation = capex x (1 - residual %) / life_years
    power        = power_kW x PUE x 8,760 h x $/kWh          (average draw, paid whatever the load)
    colocation   = $/kW-month x provisioned kW x 12
    total        = depreciation + power + colocation + maintenance % x capex + network + staff

An owned GPU delivers H = 8,760 x (1 - downtime %) hours a year. At utilisation u it costs
total / (gpus x H x u) per used GPU-hour; renting costs the cloud's price p per used GPU-hour, so the
break-even utilisation is u* = total / (gpus x H x p): buy above it, rent below it.

Hybrid: own the GPUs for a percentile of the demand curve (whole servers), rent the rest per second at p,
and pay egress on the data the rented work sends back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.cost.tco_defaults import default_rates
from fleetlab.spec.catalog import Catalog

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class OwnedServer:
    """An owned GPU server and the rates of running it (defaults in data/plan/tco_defaults.json)."""

    server_price_usd: float
    gpus_per_server: int
    gpu_model: str
    fabric_pct: float
    life_years: float
    residual_pct: float
    power_kw: float
    provisioned_kw: float
    pue: float
    usd_per_kwh: float
    colo_usd_per_kw_month: float
    network_usd_per_year: float
    maintenance_pct: float
    staff_usd_per_year: float
    downtime_pct: float

    @property
    def capex(self) -> float:
        """Server plus its share of the fabric."""
        return self.server_price_usd * (1 + self.fabric_pct / 100)

    def yearly(self) -> dict[str, float]:
        """Each cost line per year, and ``total``."""
        lines = {
            "depreciation": self.capex * (1 - self.residual_pct / 100) / self.life_years,
            "power": self.power_kw * self.pue * HOURS_PER_YEAR * self.usd_per_kwh,
            "colocation": self.colo_usd_per_kw_month * self.provisioned_kw * 12,
            "maintenance": self.capex * self.maintenance_pct / 100,
            "network": self.network_usd_per_year,
            "staff": self.staff_usd_per_year,
        }
        lines["total"] = sum(lines.values())
        return lines

    @property
    def gpu_hours_per_year(self) -> float:
        """GPU-hours one server can deliver in a year, net of downtime."""
        return self.gpus_per_server * HOURS_PER_YEAR * (1 - self.downtime_pct / 100)

    def cost_per_used_gpu_hour(self, utilisation: float) -> float:
        """Owned dollars per GPU-hour of work at this utilisation (inf at 0)."""
        if utilisation <= 0:
            return math.inf
        return self.yearly()["total"] / (self.gpu_hours_per_year * utilisation)


def break_even_utilisation(server: OwnedServer, cloud_usd_per_gpu_hour: float) -> float:
    """Utilisation above which owning is cheaper than renting (may exceed 1: never cheaper)."""
    return server.yearly()["total"] / (server.gpu_hours_per_year * cloud_usd_per_gpu_hour)


def default_server(**overrides: Any) -> OwnedServer:
    """The default owned server with any rate replaced."""
    rates = default_rates()
    values = {f.name: rates[f.name]["value"] for f in fields(OwnedServer)}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return OwnedServer(**values)


@dataclass(frozen=True)
class DemandCurve:
    """GPUs in use as a step function: value ``gpus[i]`` from ``t_s[i]`` to the next step (or ``end_s``)."""

    t_s: NDArray[np.float64]
    gpus: NDArray[np.float64]
    end_s: float

    def widths(self) -> NDArray[np.float64]:
        """Seconds each step lasts."""
        t = np.clip(self.t_s, 0, self.end_s)
        return np.diff(np.append(t, self.end_s))

    def percentile(self, q: float) -> float:
        """Time-weighted q-th percentile of the demand (q in 0..100): the level demand stays at or below
        for q % of the time."""
        w = self.widths()
        order = np.argsort(self.gpus, kind="stable")
        cum = np.cumsum(w[order])
        if cum[-1] <= 0:
            return 0.0
        index = int(np.searchsorted(cum, q / 100 * cum[-1], side="left"))
        return float(self.gpus[order][min(index, len(order) - 1)])

    def backlog_gpu_hour_hours(self, cap: float) -> float:
        """∫ backlog dt (GPU-hours × hours) over one period of a fluid queue in its periodic steady state:
        work above ``cap`` waits, first in first out, for the GPUs left free when demand falls below it,
        and the curve repeats (as the yearly figures assume). Infinite when the backlog grows from one
        period to the next (mean demand above ``cap``)."""

        def one_period(backlog: float) -> tuple[float, float]:
            area = 0.0
            for gpus, width_s in zip(self.gpus.tolist(), self.widths().tolist(), strict=True):
                w = width_s / 3600.0
                net = gpus - cap
                after = backlog + net * w
                if after >= 0:
                    area += (backlog + after) / 2.0 * w
                    backlog = after
                else:  # drains to zero within the step, after backlog / -net hours
                    area += backlog * (backlog / -net) / 2.0
                    backlog = 0.0
            return area, backlog

        _, carried = one_period(0.0)
        area, again = one_period(carried)
        return math.inf if again > carried + 1e-9 else area

    def gpu_hours(self, cap: float = math.inf) -> tuple[float, float]:
        """GPU-hours at or below ``cap`` and above it."""
        w = self.widths() / 3600
        below = np.minimum(self.gpus, cap)
        return float(np.dot(below, w)), float(np.dot(self.gpus - below, w))


@dataclass(frozen=True)
class HybridOption:
    """Owning ``servers`` servers and renting the rest, annualised from the demand curve's period."""

    percentile: float
    servers: int
    owned_gpu_hours: float
    rented_gpu_hours: float
    owned_usd: float
    rented_usd: float
    transfer_usd: float
    #: Without renting: mean hours the work above the owned capacity waits for it (fluid queue).
    mean_wait_h: float = 0.0

    @property
    def total_usd(self) -> float:
        """All three parts."""
        return self.owned_usd + self.rented_usd + self.transfer_usd

    def as_dict(self) -> dict[str, float | None]:
        """A flat JSON row."""
        return {
            "percentile": self.percentile,
            "servers": self.servers,
            "owned_gpu_hours_per_year": self.owned_gpu_hours,
            "rented_gpu_hours_per_year": self.rented_gpu_hours,
            "owned_usd_per_year": self.owned_usd,
            "rented_usd_per_year": self.rented_usd,
            "transfer_usd_per_year": self.transfer_usd,
            "total_usd_per_year": self.total_usd,
            # null: the backlog never clears (mean demand above the owned GPUs)
            "mean_wait_hours_without_renting": self.mean_wait_h if math.isfinite(self.mean_wait_h) else None,
        }


def hybrid_option(
    curve: DemandCurve,
    percentile: float,
    server: OwnedServer,
    cloud_usd_per_gpu_hour: float,
    egress_usd_per_gb: float,
    transfer_gb_per_gpu_hour: float,
) -> HybridOption:
    """Own whole servers for the ``percentile`` demand level; rent the peaks. Yearly figures assume the
    curve's period repeats all year."""
    level = curve.percentile(percentile)
    servers = math.ceil(level / server.gpus_per_server - 1e-9) if level > 0 else 0
    cap = servers * server.gpus_per_server * (1 - server.downtime_pct / 100)
    owned_h, rented_h = curve.gpu_hours(cap)
    scale = HOURS_PER_YEAR * 3600 / curve.end_s if curve.end_s > 0 else 0.0
    # Little's law on the backlog: mean delay = ∫ backlog dt / work that waited.
    wait_h = curve.backlog_gpu_hour_hours(cap) / rented_h if rented_h > 0 else 0.0
    return HybridOption(
        percentile=percentile,
        servers=servers,
        owned_gpu_hours=owned_h * scale,
        rented_gpu_hours=rented_h * scale,
        owned_usd=servers * server.yearly()["total"],
        rented_usd=rented_h * scale * cloud_usd_per_gpu_hour,
        transfer_usd=rented_h * scale * transfer_gb_per_gpu_hour * egress_usd_per_gb,
        mean_wait_h=wait_h,
    )


def cloud_gpu_hour_price(catalog: Catalog, instance_type: str, region: str, capacity_type: str) -> float:
    """Cheapest zone's price per GPU-hour of an instance type in a region, or a ValueError saying what the
    catalog has."""
    offers = [o for o in catalog.offers if o.instance_type == instance_type and o.gpus > 0]
    if not offers:
        have = sorted({o.instance_type for o in catalog.offers if o.gpus > 0})
        raise ValueError(
            f"instance {instance_type!r} is not in {catalog.source}; GPU instances: {', '.join(have)}"
        )
    here = [o for o in offers if o.region == region]
    if not here:
        regions = sorted({o.region for o in offers})
        raise ValueError(f"{instance_type} has no offer in region {region!r}; regions: {', '.join(regions)}")
    prices = [p for p in (o.price_for(capacity_type) for o in here) if p is not None and p > 0]
    if not prices:
        raise ValueError(f"{instance_type} in {region} has no {capacity_type} price in {catalog.source}")
    return min(prices) / here[0].gpus


#: The buy-vs-rent inputs shown beside the answer: OwnedServer field, label, unit.
INPUTS = (
    ("server_price_usd", "server price", "USD"),
    ("gpus_per_server", "GPUs per server", ""),
    ("gpu_model", "GPU model", ""),
    ("life_years", "depreciation period", "years"),
    ("residual_pct", "residual value", "%"),
    ("fabric_pct", "network fabric", "% of server"),
    ("maintenance_pct", "maintenance", "% of capex per year"),
    ("staff_usd_per_year", "staff", "USD per year"),
    ("power_kw", "power draw", "kW"),
    ("pue", "PUE", ""),
    ("usd_per_kwh", "electricity", "USD per kWh"),
    ("colo_usd_per_kw_month", "colocation", "USD per kW-month"),
    ("provisioned_kw", "provisioned power", "kW"),
    ("network_usd_per_year", "network", "USD per year"),
    ("downtime_pct", "downtime", "%"),
)


def tco_inputs(
    server: OwnedServer, rates: dict[str, dict[str, Any]], given: set[str], utilisation: float, source: str
) -> list[dict[str, Any]]:
    """Every owned-server input with its value, unit and where it came from (given, or the default's
    source), then the utilisation the answer is for."""
    rows = [
        {
            "input": name,
            "label": label,
            "value": getattr(server, name),
            "unit": unit,
            "source": "given" if name in given else str(rates.get(name, {}).get("source", "default")),
        }
        for name, label, unit in INPUTS
    ]
    rows.append({"input": "utilisation", "label": "utilisation", "value": utilisation, "unit": "0..1",
                 "source": source})  # fmt: skip
    return rows


def rental_options(server: OwnedServer, prices: dict[str, float], utilisation: float) -> list[dict[str, Any]]:
    """Per way of renting (on-demand, committed, spot, or a given price): USD per GPU-hour, the
    break-even utilisation against owning, and which is cheaper at ``utilisation``."""
    owned = server.cost_per_used_gpu_hour(utilisation)
    out = []
    for mode, price in prices.items():
        if price <= 0:
            continue
        out.append(
            {
                "billing_mode": mode,
                "usd_per_gpu_hour": price,
                "break_even_utilisation": break_even_utilisation(server, price),
                "cheaper_at_utilisation": "owning" if owned < price else "renting",
            }
        )
    return out
