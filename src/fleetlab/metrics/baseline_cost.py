"""Idle capacity and the cluster's cost, as the measured baseline reports them (docs/baseline.md).

Cost comes from the bill when the history has one (sum of EffectiveCost, one currency), otherwise from the
price catalogs shipped with fleetlab (node lifetime × the instance type's hourly price); the figure always
says which, and how many nodes had no price.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.history import History
from fleetlab.spec.catalog import CLOUDS, Offer, builtin_catalog

FloatArray = NDArray[np.float64]
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class ClusterCost:
    """Total cost over the history, where it came from, and what could not be priced."""

    total: float | None
    source: str  # bill | catalog | none
    currency: str | None
    nodes_priced: int = 0
    nodes_unpriced: int = 0
    notes: list[str] = field(default_factory=list)


def node_lifetimes(history: History) -> tuple[FloatArray, FloatArray]:
    """Each node's [start, stop) inside the record: created (or 0) to deleted (or the record's end)."""
    nodes = history.nodes
    end = float(history.end_s)
    created = np.asarray(nodes.column("created_s").to_numpy(zero_copy_only=False), dtype=np.float64)
    deleted = np.asarray(nodes.column("deleted_s").to_numpy(zero_copy_only=False), dtype=np.float64)
    start = np.clip(np.where(np.isnan(created), 0.0, created), 0.0, end)
    stop = np.clip(np.where(np.isnan(deleted), end, deleted), start, end)
    return start, stop


def offers_by_type() -> dict[str, list[Offer]]:
    """Every offer of the shipped catalogs (AWS, GCP, Azure) by instance type."""
    out: dict[str, list[Offer]] = {}
    for cloud in CLOUDS:
        for offer in builtin_catalog(cloud).offers:
            out.setdefault(offer.instance_type, []).append(offer)
    return out


def catalog_price(offers: list[Offer], zone: str | None, capacity_type: str | None) -> float | None:
    """The lowest hourly price among the type's offers in the node's zone (or its region, else anywhere)."""
    kind = "spot" if capacity_type == "spot" else "on-demand"
    for pick in (
        [o for o in offers if zone and o.zone == zone],
        [o for o in offers if zone and zone.startswith(o.region)],
        offers,
    ):
        prices = [p for o in pick if (p := o.price_for(kind)) is not None]
        if prices:
            return min(prices)
    return None


def cluster_cost(history: History) -> ClusterCost:
    """The history's cost from its bill, else from the catalogs, else none (with the reason)."""
    bill = history.bill
    if bill.num_rows:
        currencies = sorted(set(bill.column("currency").to_pylist()))
        if len(currencies) != 1:
            return ClusterCost(
                None,
                "none",
                None,
                notes=[f"the bill mixes currencies {', '.join(currencies)}; no cost is reported"],
            )
        total = float(np.sum(bill.column("effective_cost").to_numpy(zero_copy_only=False)))
        return ClusterCost(total, "bill", currencies[0], notes=[f"cost: sum of {bill.num_rows} bill lines"])
    nodes = history.nodes
    if not nodes.num_rows:
        return ClusterCost(None, "none", None, notes=["cost: the history has no nodes and no bill"])
    offers = offers_by_type()
    start, stop = node_lifetimes(history)
    hours = (stop - start) / SECONDS_PER_HOUR
    types = nodes.column("instance_type").to_pylist()
    zones = nodes.column("zone").to_pylist()
    capacity = nodes.column("capacity_type").to_pylist()
    total, priced, owned = 0.0, 0, 0
    for i, kind in enumerate(types):
        price = catalog_price(offers.get(kind, []), zones[i], capacity[i]) if kind else None
        if price is None:
            owned += capacity[i] == "owned"
            continue
        total += price * float(hours[i])
        priced += 1
    unpriced = nodes.num_rows - priced
    notes: list[str] = []
    if unpriced:
        notes.append(
            f"cost: {unpriced} of {nodes.num_rows} node(s) have no instance type in fleetlab's price "
            f"catalogs ({owned} owned)"
            + ("; the cost covers the priced nodes only" if priced else "; no cost is reported")
        )
    if not priced:
        return ClusterCost(None, "none", None, 0, unpriced, notes)
    return ClusterCost(total, "catalog", "USD", priced, unpriced, notes)


def _covered(starts: FloatArray, stops: FloatArray) -> float:
    """Length of the union of intervals."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], stops[order]
    reach = np.maximum.accumulate(e)
    prev = np.concatenate(([-np.inf], reach[:-1]))
    return float(np.sum(np.maximum(e - np.maximum(s, prev), 0.0) * (e > prev)))


def idle_capacity(
    history: History,
    scheduled: FloatArray,
    held: FloatArray,
    gpus: FloatArray,
    job_nodes: list[str | None],
) -> tuple[dict[str, Any], list[str]]:
    """GPU capacity-hours vs allocated GPU-hours (``gpus`` × ``held`` seconds per job), and node-hours no
    job held (from ``scheduled`` for ``held`` seconds on the nodes each job names, when jobs name them)."""
    notes: list[str] = []
    start, stop = node_lifetimes(history)
    node_gpus = np.asarray(history.nodes.column("gpus").to_numpy(zero_copy_only=False), dtype=np.float64)
    capacity = float(np.dot(node_gpus, stop - start)) / SECONDS_PER_HOUR
    node_hours = float((stop - start).sum()) / SECONDS_PER_HOUR
    started = ~np.isnan(scheduled)
    held_to = np.where(started, scheduled, 0.0) + held
    allocated = float(np.dot(gpus, held)) / SECONDS_PER_HOUR
    out: dict[str, Any] = {
        "node_hours": node_hours,
        "gpu_capacity_hours": capacity,
        "gpu_hours_allocated": allocated,
        # Negative idle hours are no figure: the node list misses nodes the jobs ran on (noted below).
        "gpu_hours_idle": capacity - allocated if history.nodes.num_rows and capacity >= allocated else None,
        "gpu_allocation_ratio": allocated / capacity if capacity > 0 else None,
        "node_hours_idle": None,
    }
    if history.nodes.num_rows and capacity + 1e-9 < allocated:
        notes.append(
            f"jobs held {allocated:.1f} GPU-hours but the node list has only {capacity:.1f}: the node "
            "list is incomplete for this history, so idle GPU-hours are not reported"
        )
    if not history.nodes.num_rows:
        notes.append("idle capacity: the history has no node list")
        return out, notes
    named = [i for i, n in enumerate(job_nodes) if n and started[i]]
    if not named:
        notes.append("idle node-hours: the jobs do not name the nodes they ran on")
        return out, notes
    per_node: dict[str, tuple[list[float], list[float]]] = {}
    for i in named:
        for node in str(job_nodes[i]).split(","):
            starts, stops = per_node.setdefault(node.strip(), ([], []))
            starts.append(float(scheduled[i]))
            stops.append(float(held_to[i]))
    names = history.nodes.column("node").to_pylist()
    idle = 0.0
    for k, name in enumerate(names):
        life = float(stop[k] - start[k])
        if name in per_node:
            s, e = per_node[name]
            busy = _covered(
                np.clip(np.asarray(s), start[k], stop[k]), np.clip(np.asarray(e), start[k], stop[k])
            )
            life -= busy
        idle += life
    unknown = sorted(set(per_node) - set(names))
    if unknown:
        notes.append(
            f"{len(unknown)} node(s) named by jobs are not in the node list (e.g. {unknown[0]!r}); "
            "their time is not in idle node-hours"
        )
    out["node_hours_idle"] = idle / SECONDS_PER_HOUR
    return out, notes
