"""Reconcile a run's cost ledger with a cloud bill: the gap by category and by project x period.

Bill lines are put in a category by ``cost.bill_lines`` — GPU, compute (instance cores and RAM, or a whole
non-GPU instance), storage, egress, license, tax, other — and credits are kept apart. The ledger's estimate is
split into compute (host part) and GPU with the catalog's two price rows; its data rows count as storage and
egress. What the ledger does not price can be estimated with stated inputs: disks, OS images and egress
from the attached-price catalog (``cost.attached``, each price with its source) and tax at a stated rate,
source and date. Categories still unpriced are reported as missing in the estimate; the estimate's idle
share is shown beside, since a bill has no idle line. Amounts that span several periods are spread over
them by time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fleetlab.cost.attached import AttachedLine
from fleetlab.cost.bill_lines import category, gpu_hours
from fleetlab.cost.ledger import UNALLOCATED
from fleetlab.spec.billing_export import BillRow

__all__ = [
    "CATEGORIES",
    "PERIODS",
    "Rate",
    "Reconciliation",
    "category",
    "period_start",
    "reconcile",
    "spread",
]

CATEGORIES = ("compute", "gpu", "storage", "egress", "license", "tax", "other")
ESTIMATED = ("compute", "gpu")
PERIODS = ("hour", "day", "month")
#: Ledger rows priced outside the instance bill, and the bill category they are compared with.
LEDGER_EXTRA = {"storage": "storage", "data_transfer": "egress"}


@dataclass(frozen=True)
class Rate:
    """A rate the user states, never one fleetlab guesses: an exchange rate (currency units per USD) or a
    tax rate (a fraction of the estimate), with the source it comes from and the date it holds for."""

    kind: str  # exchange | tax
    name: str  # the currency code, or "tax"
    value: float
    source: str
    date: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "name": self.name, "value": self.value, "source": self.source,
                "date": self.date}  # fmt: skip


def period_start(moment: datetime, period: str) -> datetime:
    """The start of the period holding ``moment`` (UTC)."""
    if period == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    if period == "day":
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next(moment: datetime, period: str) -> datetime:
    if period == "hour":
        return moment + timedelta(hours=1)
    if period == "day":
        return moment + timedelta(days=1)
    return (moment.replace(day=28) + timedelta(days=4)).replace(day=1)


def spread(start: datetime, end: datetime, amount: float, period: str) -> list[tuple[datetime, float]]:
    """``amount`` split over the periods [start, end) touches, in proportion to time (all of it in the
    first period when start == end)."""
    if end <= start:
        return [(period_start(start, period), amount)]
    total = (end - start).total_seconds()
    out: list[tuple[datetime, float]] = []
    cursor = period_start(start, period)
    while cursor < end:
        following = _next(cursor, period)
        overlap = (min(end, following) - max(start, cursor)).total_seconds()
        if overlap > 0:
            out.append((cursor, amount * overlap / total))
        cursor = following
    return out


@dataclass(frozen=True)
class CategoryGap:
    """Bill against estimate for one category."""

    category: str
    bill_usd: float
    estimate_usd: float

    @property
    def gap_usd(self) -> float:
        """What the bill has beyond the estimate (negative: the estimate is higher)."""
        return self.bill_usd - self.estimate_usd


@dataclass(frozen=True)
class PriceQuantity:
    """A category's gap split into price and quantity: bill − estimate = (p_bill − p_est) × q_bill
    + p_est × (q_bill − q_est), with p = dollars / quantity on each side (exact by construction)."""

    category: str
    unit: str
    bill_quantity: float
    estimate_quantity: float
    bill_usd: float
    estimate_usd: float

    @property
    def bill_price(self) -> float:
        """Bill dollars per unit."""
        return self.bill_usd / self.bill_quantity if self.bill_quantity > 0 else 0.0

    @property
    def estimate_price(self) -> float:
        """Estimate dollars per unit."""
        return self.estimate_usd / self.estimate_quantity if self.estimate_quantity > 0 else 0.0

    @property
    def price_effect_usd(self) -> float:
        """The part of the gap from paying another price for the billed quantity."""
        return (self.bill_price - self.estimate_price) * self.bill_quantity

    @property
    def quantity_effect_usd(self) -> float:
        """The part of the gap from billing another quantity at the estimate's price."""
        return self.estimate_price * (self.bill_quantity - self.estimate_quantity)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "category": self.category,
            "unit": self.unit,
            "bill_quantity": self.bill_quantity,
            "estimate_quantity": self.estimate_quantity,
            "bill_price_usd": self.bill_price,
            "estimate_price_usd": self.estimate_price,
            "price_effect_usd": self.price_effect_usd,
            "quantity_effect_usd": self.quantity_effect_usd,
        }


@dataclass(frozen=True)
class Reconciliation:
    """The whole comparison; ``by_group`` maps (project, period start) to (bill, estimate)."""

    categories: list[CategoryGap]
    credits_usd: float
    idle_estimate_usd: float
    missing_in_estimate_usd: float
    by_group: dict[tuple[str, datetime], tuple[float, float]]
    bill_window: tuple[datetime, datetime]
    estimate_window: tuple[datetime, datetime]
    group_label: str
    period: str
    #: The GPU gap split into price and quantity (GPU-hours), when the bill lines state their usage.
    gpu_split: PriceQuantity | None = None
    #: The stated rates used (exchange rates, tax) and the attached charges estimated, with their sources.
    rates: tuple[Rate, ...] = ()
    attached: tuple[AttachedLine, ...] = ()

    @property
    def bill_total_usd(self) -> float:
        """Net bill: every cost plus (negative) credits."""
        return sum(c.bill_usd for c in self.categories) + self.credits_usd

    @property
    def estimate_total_usd(self) -> float:
        """Everything the ledger prices."""
        return sum(c.estimate_usd for c in self.categories)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "bill_total_usd": self.bill_total_usd,
            "estimate_total_usd": self.estimate_total_usd,
            "gap_usd": self.bill_total_usd - self.estimate_total_usd,
            "credits_usd": self.credits_usd,
            "idle_in_estimate_usd": self.idle_estimate_usd,
            "missing_in_estimate_usd": self.missing_in_estimate_usd,
            "categories": [
                {
                    "category": c.category,
                    "bill_usd": c.bill_usd,
                    "estimate_usd": c.estimate_usd,
                    "gap_usd": c.gap_usd,
                }
                for c in self.categories
            ],
            "by_project_period": [
                {
                    "project": g,
                    "period_start": p.isoformat(),
                    "bill_usd": b,
                    "estimate_usd": e,
                    "gap_usd": b - e,
                }
                for (g, p), (b, e) in sorted(self.by_group.items())
            ],
            "bill_window": [t.isoformat() for t in self.bill_window],
            "estimate_window": [t.isoformat() for t in self.estimate_window],
            "group_label": self.group_label,
            "period": self.period,
            "price_quantity": [self.gpu_split.as_dict()] if self.gpu_split is not None else [],
            "rates": [r.as_dict() for r in self.rates],
            "attached": [
                {
                    "category": a.category,
                    "item": f"{a.price.kind} {a.price.name}",
                    "quantity": a.quantity,
                    "unit": a.unit,
                    "usd": a.usd,
                    "price_usd": a.price.price_usd,
                    "source": a.price.source,
                }
                for a in self.attached
            ],
        }


def reconcile(
    bill: Sequence[BillRow],
    ledger: dict[str, list[Any]],
    start: datetime,
    period: str = "day",
    group_label: str = "k8s-label/team",
    *,
    attached: Sequence[AttachedLine] = (),
    tax: Rate | None = None,
    rates: Sequence[Rate] = (),
) -> Reconciliation:
    """Compare ``bill`` with the ledger columns of a run whose time 0 is ``start``; ``attached`` charges and
    ``tax`` (a fraction of everything else estimated) are added to the estimate as unallocated amounts over
    the windows they cover; ``rates`` are the exchange rates the bill was converted with, for the record."""
    bill_by: dict[str, float] = defaultdict(float)
    groups: dict[tuple[str, datetime], list[float]] = defaultdict(lambda: [0.0, 0.0])
    credits = 0.0
    bill_gpu_hours, usage_known = 0.0, True
    for row in bill:
        kind = category(row)
        bill_by[kind] += row.cost_usd
        if kind == "gpu":
            hours = gpu_hours(row)
            if hours is None:
                usage_known = False
            else:
                bill_gpu_hours += hours
        credits += row.credits_usd
        who = row.labels.get(group_label) or UNALLOCATED
        for when, amount in spread(row.start, row.end, row.cost_usd + row.credits_usd, period):
            groups[(who, when)][0] += amount
    estimate_by: dict[str, float] = defaultdict(float)
    idle = 0.0
    estimate_gpu_hours = 0.0
    first, last = None, None
    for i in range(len(ledger["cost_usd"])):
        kind = ledger["category"][i]
        if kind in LEDGER_EXTRA:
            estimate_by[LEDGER_EXTRA[kind]] += ledger["cost_usd"][i]
        else:
            estimate_by["compute"] += ledger["host_cost_usd"][i]
            estimate_by["gpu"] += ledger["gpu_cost_usd"][i]
            if ledger["unit"][i] == "gpu":
                estimate_gpu_hours += float(ledger["unit_hours"][i])
        if kind == "idle":
            idle += ledger["cost_usd"][i]
        begin = start + timedelta(seconds=float(ledger["period_start_s"][i]))
        finish = start + timedelta(seconds=float(ledger["period_end_s"][i]))
        first = begin if first is None or begin < first else first
        last = finish if last is None or finish > last else last
        who = ledger["project"][i] or UNALLOCATED
        for when, amount in spread(begin, finish, ledger["cost_usd"][i], period):
            groups[(who, when)][1] += amount
    for line in attached:
        estimate_by[line.category] += line.usd
        begin, finish = start + timedelta(seconds=line.start_s), start + timedelta(seconds=line.end_s)
        for when, amount in spread(begin, finish, line.usd, period):
            groups[(UNALLOCATED, when)][1] += amount
    if tax is not None:
        taxed = tax.value * sum(estimate_by.values())
        estimate_by["tax"] += taxed
        for when, amount in spread(first or start, last or start, taxed, period):
            groups[(UNALLOCATED, when)][1] += amount
    cats = [CategoryGap(c, bill_by.get(c, 0.0), estimate_by.get(c, 0.0)) for c in CATEGORIES]
    missing = sum(c.bill_usd for c in cats if c.category not in ESTIMATED and c.estimate_usd == 0)
    bill_window = (min((r.start for r in bill), default=start), max((r.end for r in bill), default=start))
    return Reconciliation(
        categories=cats,
        credits_usd=credits,
        idle_estimate_usd=idle,
        missing_in_estimate_usd=missing,
        by_group={k: (v[0], v[1]) for k, v in groups.items()},
        bill_window=bill_window,
        estimate_window=(first or start, last or start),
        group_label=group_label,
        period=period,
        gpu_split=PriceQuantity(
            "gpu",
            "GPU-hours",
            bill_gpu_hours,
            estimate_gpu_hours,
            bill_by.get("gpu", 0.0),
            estimate_by["gpu"],
        )
        if usage_known and bill_gpu_hours > 0 and estimate_gpu_hours > 0
        else None,
        rates=(*rates, *([tax] if tax is not None else [])),
        attached=tuple(attached),
    )
