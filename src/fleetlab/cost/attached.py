"""Estimate what a run's nodes are billed for beside the instance: each node's disk and OS image over its
billed hours, and the egress the user states, priced from the attached-price catalog with its sources.

A node's billed hours come from its ledger rows: they hold ``unit_ms`` over ``node_units`` for every moment
it was billed (computing, prep, waits, boot, idle, minimum), so Σ unit_ms / node_units is its billed time.
Disk: GB × $/GB-month × hours / 730 (a month of 730 hours, as the providers bill). Image: $ per
instance-hour × hours, or $ per vCPU-hour × the instance's vCPUs (from the built-in catalog) × hours.
Egress: GB × $/GB, once for the run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.cost.billing import MS_PER_HOUR
from fleetlab.model.billing_rules import HOURS_PER_MONTH
from fleetlab.spec.attached_catalog import AttachedPrice
from fleetlab.spec.catalog import CLOUDS, builtin_catalog


class AttachedError(ValueError):
    """An attached cost that cannot be priced (no such item, no cloud, no vCPU count)."""


@dataclass(frozen=True)
class AttachedRequest:
    """What the user says each node has, and the run's egress."""

    disk: tuple[str, float] | None = None  # (catalog name, GB per node)
    image: str | None = None
    egress: tuple[str, float] | None = None  # (catalog name, GB for the run)
    cloud: str | None = None  # for ledger rows that name no cloud


@dataclass(frozen=True)
class AttachedLine:
    """One estimated charge: its bill category, dollars, the quantity priced and the price's source."""

    category: str  # storage | license | egress
    usd: float
    quantity: float
    unit: str
    price: AttachedPrice
    #: [start, end) in run seconds the charge spans (a node's billed window, or the whole run for egress).
    start_s: float
    end_s: float


def node_hours(ledger: Mapping[str, list[Any]]) -> dict[str, tuple[str, str, float, float, float]]:
    """Per node: (cloud, instance type, billed hours, first and last run second) from its ledger rows."""
    acc: dict[str, list[Any]] = defaultdict(lambda: ["", "", 0.0, float("inf"), 0.0])
    for i, node in enumerate(ledger["node"]):
        if not node or not ledger["node_units"][i]:
            continue
        entry = acc[node]
        entry[0], entry[1] = ledger["cloud"][i], ledger["instance_type"][i]
        entry[2] += ledger["unit_ms"][i] / ledger["node_units"][i] / MS_PER_HOUR
        entry[3] = min(entry[3], float(ledger["period_start_s"][i]))
        entry[4] = max(entry[4], float(ledger["period_end_s"][i]))
    return {k: (v[0], v[1], v[2], v[3], v[4]) for k, v in sorted(acc.items())}


def _vcpus(cloud: str, instance_type: str) -> float | None:
    if cloud not in CLOUDS:
        return None
    found = [o.vcpus for o in builtin_catalog(cloud).offers if o.instance_type == instance_type and o.vcpus]
    return max(found) if found else None


def _price(
    prices: Mapping[tuple[str, str, str], AttachedPrice], cloud: str, kind: str, name: str
) -> AttachedPrice:
    hit = prices.get((cloud, kind, name))
    if hit is None:
        names = sorted(n for c, k, n in prices if c == cloud and k == kind)
        raise AttachedError(
            f"no {kind} price {name!r} for {cloud or 'a pool without a cloud'} in the attached-price "
            f"catalog; available: {', '.join(names) or 'none'} (or give --attached-catalog FILE)"
        )
    return hit


def attached_lines(
    ledger: Mapping[str, list[Any]],
    request: AttachedRequest,
    prices: Mapping[tuple[str, str, str], AttachedPrice],
) -> list[AttachedLine]:
    """The estimated disk, image and egress charges of a run (empty when nothing was asked for)."""
    out: list[AttachedLine] = []
    nodes = node_hours(ledger)
    clouds = sorted({cloud or (request.cloud or "") for cloud, *_ in nodes.values()})
    for node, (cloud, instance, hours, first, last) in nodes.items():
        cloud = cloud or (request.cloud or "")
        if request.disk is not None:
            price = _price(prices, cloud, "disk", request.disk[0])
            gb = request.disk[1]
            usd = gb * price.price_usd * hours / HOURS_PER_MONTH
            out.append(
                AttachedLine("storage", usd, gb * hours / HOURS_PER_MONTH, "GB-month", price, first, last)
            )
        if request.image is not None:
            price = _price(prices, cloud, "image", request.image)
            if price.unit == "vcpu-hour":
                vcpus = _vcpus(cloud, instance)
                if vcpus is None:
                    raise AttachedError(
                        f"node {node}: {instance or 'its instance type'} has no vCPU count in the built-in "
                        f"catalog to price {request.image!r} per vCPU-hour"
                    )
                quantity = vcpus * hours
            else:
                quantity = hours
            out.append(
                AttachedLine("license", quantity * price.price_usd, quantity, price.unit, price, first, last)
            )
    if request.egress is not None:
        if len(clouds) != 1:
            raise AttachedError(
                f"egress: the run's nodes are in "
                f"{', '.join(c or '(no cloud)' for c in clouds) or 'no cloud'}; give --cloud to say whose "
                "egress price applies"
            )
        price = _price(prices, clouds[0], "egress", request.egress[0])
        start = min((v[3] for v in nodes.values()), default=0.0)
        end = max((v[4] for v in nodes.values()), default=0.0)
        gb = request.egress[1]
        out.append(AttachedLine("egress", gb * price.price_usd, gb, "GB", price, start, end))
    return out
