"""Price assumptions, stated before any cost: each pool's $/h, where that price comes from, its date and
billing mode, and the pools that have no price (and so cost $0 wherever a cost is shown).

A price is the scenario's own ``price_per_hour``, a catalog row the loader filled it from (``cloud`` +
``instance_type`` + ``region``, or a ``catalog`` file), or ``--price POOL=USD/h`` given on the command line.
A scenario price that equals a built-in catalog row of the pool's instance type says so, with the row and
the catalog's date (a calibrated history's pools are priced that way).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from fleetlab.model.cluster import NodePool
from fleetlab.model.scenario import Scenario
from fleetlab.spec.catalog import Offer, snapshot_date
from fleetlab.spec.errors import SpecError

MAX_PRICE = 1e6


@dataclass(frozen=True)
class PoolPrice:
    """One pool's price assumption."""

    pool: str
    instance_type: str | None
    #: Nodes at the start (and the autoscaling maximum when the pool scales).
    nodes: str
    per_hour: float
    source: str
    date: str
    billing_mode: str

    @property
    def unpriced(self) -> bool:
        """The pool bills nothing: every cost that includes it is understated."""
        return self.per_hour <= 0

    def as_dict(self) -> dict[str, Any]:
        """For JSON and the cost sheet."""
        return {**asdict(self), "unpriced": self.unpriced}


def parse_prices(items: Iterable[str] | None) -> dict[str, float]:
    """``--price POOL=USD/h`` items as pool -> dollars per node-hour."""
    out: dict[str, float] = {}
    for item in items or []:
        pool, sep, value = (part.strip() for part in item.partition("="))
        try:
            price = float(value.removeprefix("$").removesuffix("/h"))
        except ValueError:
            price = math.nan
        if not sep or not pool or not (0 <= price <= MAX_PRICE):
            raise SpecError(
                "--price",
                [f"{item[:80]!r}: use POOL=USD_PER_HOUR with a price 0..{MAX_PRICE:g}, e.g. h100=55.04"],
            )
        out[pool] = price
    return out


def with_prices(scenario: Scenario, prices: Mapping[str, float], where: str = "--price") -> Scenario:
    """The scenario with the given pools' ``price_per_hour`` replaced; an unknown pool is an error."""
    if not prices:
        return scenario
    names = [p.name for p in scenario.cluster.pools]
    unknown = sorted(set(prices) - set(names))
    if unknown:
        raise SpecError(
            where, [f"no pool named {', '.join(unknown)} in {scenario.name!r}; pools: {', '.join(names)}"]
        )
    pools = tuple(
        p.model_copy(update={"price_per_hour": prices[p.name]}) if p.name in prices else p
        for p in scenario.cluster.pools
    )
    return scenario.model_copy(update={"cluster": scenario.cluster.model_copy(update={"pools": pools})})


def billing_mode(pool: NodePool) -> str:
    """on-demand, spot, or committed for some nodes (the rest on-demand)."""
    if pool.capacity_type == "spot":
        return "spot"
    committed = pool.billing.committed_nodes if pool.billing is not None else 0
    if committed:
        term = pool.billing.commitment_term if pool.billing is not None else "1y"
        return f"committed {term} for {committed} node(s), the rest on-demand"
    return pool.capacity_type


def _matching_row(pool: NodePool, offers: Mapping[str, Sequence[Offer]]) -> Offer | None:
    kind = "spot" if pool.capacity_type == "spot" else "on-demand"
    for offer in offers.get(pool.instance_type or "", ()):
        price = offer.price_for(kind)
        if price is not None and math.isclose(price, pool.price_per_hour, rel_tol=1e-9, abs_tol=1e-9):
            return offer
    return None


def _source(
    pool: NodePool, given: Mapping[str, float], offers: Mapping[str, Sequence[Offer]]
) -> tuple[str, str]:
    if pool.name in given:
        return "--price (command line)", "given on the command line"
    if pool.catalog:
        return (
            f"catalog file {pool.catalog} ({pool.instance_type}, {pool.region})",
            "not dated (a user's file)",
        )
    if pool.cloud is not None and pool.instance_type:
        return f"built-in {pool.cloud} catalog row ({pool.instance_type}, {pool.region})", snapshot_date()
    if pool.price_per_hour <= 0:
        return "none: the scenario gives no price", "-"
    row = _matching_row(pool, offers) if pool.instance_type else None
    if row is not None:
        catalog = row.source.strip("<>").removeprefix("built-in ").split(" catalog")[0]
        where = f"{catalog} catalog line {row.line}, {row.instance_type} in {row.zone or row.region}"
        return f"scenario price_per_hour = built-in {where}", snapshot_date()
    return "scenario price_per_hour (as written)", "not dated (the scenario's own figure)"


def pool_prices(scenario: Scenario, given: Mapping[str, float] | None = None) -> list[PoolPrice]:
    """Every pool's price assumption (``given``: the ``--price`` overrides already applied)."""
    from fleetlab.metrics.baseline_cost import offers_by_type

    offers = offers_by_type()
    out: list[PoolPrice] = []
    for pool in scenario.cluster.pools:
        source, date = _source(pool, given or {}, offers)
        nodes = str(pool.count)
        if pool.autoscaling is not None:
            nodes = f"{pool.count} (autoscaled {pool.autoscaling.min}..{pool.autoscaling.max})"
        out.append(
            PoolPrice(
                pool.name, pool.instance_type, nodes, pool.price_per_hour, source, date, billing_mode(pool)
            )
        )
    return out


def unpriced_warning(prices: Sequence[PoolPrice]) -> str | None:
    """The warning every cost shown must carry when some pool has no price."""
    unpriced = [p.pool for p in prices if p.unpriced]
    if not unpriced:
        return None
    return (
        f"pool(s) {', '.join(unpriced)} have no price and cost $0 in every figure: the costs shown are "
        "understated (give one with --price POOL=USD/h or price_per_hour)"
    )


def check_price_pools(files: Sequence[str | None], prices: Mapping[str, float]) -> None:
    """Every pool ``--price`` names must be a pool of some scenario compared (a typo is an error, never
    a silent no-op)."""
    if not prices:
        return
    from fleetlab.spec.loader import load_scenario

    names = {pool.name for file in files for pool in load_scenario(file)[0].cluster.pools}
    unknown = sorted(set(prices) - names)
    if unknown:
        raise SpecError("--price", [f"no pool named {', '.join(unknown)}; pools: {', '.join(sorted(names))}"])
