"""The cost ledger of one run: one row per node x job x cost bucket (idle rows carry no job).

Each row says where the money went in the terms a bill uses — cloud, region, machine type, GPU model and
count, billing mode (capacity type, per-second), currency and whether tax is included — and who it is
charged to (team as project, job). Rows are built from the same per-segment unit-ms as the bill split in
``billing.py``, so a node's rows add up to its bill. For GCP catalog-priced pools the instance price is
split into its host (vCPU + memory) part and its GPU part, as the catalog's two rows and the bill's SKUs do.
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from fleetlab.cost.billing import MS_PER_HOUR, node_costs, segment_units
from fleetlab.model.cluster import NodePool
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.catalog import BUILTIN_FILES, builtin_catalog

CURRENCY = "USD"
UNALLOCATED = "(unallocated)"


@cache
def _catalog_rows(cloud: str) -> list[dict[str, str]]:
    text = (resources.files("fleetlab") / "data" / "catalogs" / BUILTIN_FILES[cloud]).read_text(
        encoding="utf-8"
    )
    return list(csv.DictReader(text.splitlines()))


def gpu_price_share(pool: NodePool) -> float | None:
    """The GPU part of a GCP catalog-priced pool's hourly price (its accelerator row over the total)."""
    if pool.cloud != "gcp" or pool.catalog is not None or not pool.instance_type or not pool.region:
        return None
    capacity = pool.capacity_type
    offers = [
        o
        for o in builtin_catalog("gcp").offers
        if o.instance_type == pool.instance_type and o.region == pool.region and o.price_for(capacity)
    ]
    if not offers:
        return None
    chosen = min(offers, key=lambda o: (o.price_for(capacity) or 0.0, o.line))
    total = chosen.price_for(capacity) or 0.0
    if len(chosen.lines) < 2 or total <= 0:
        return None
    row = _catalog_rows("gcp")[chosen.lines[1] - 2]
    part = row.get("SpotPrice" if capacity == "spot" else "Price") or ""
    return float(part) / total if part.strip() else None


def ledger_columns(resolved: ResolvedScenario, result: SimulationResult, run_id: str) -> dict[str, Any]:
    """The ledger as columns (see the module docstring)."""
    nodes, jobs, seg = result.nodes, result.jobs, result.segments
    pools = {p.name: p for p in resolved.scenario.cluster.pools}
    capacity = np.where(nodes.gpus > 0, nodes.gpus, nodes.cpu_milli).astype(np.float64)
    per_unit_ms = np.divide(
        nodes.price_per_hour, capacity * MS_PER_HOUR, out=np.zeros(len(capacity)), where=capacity > 0
    )
    _, per = segment_units(result)
    job_of = result.pods.job[seg.pod] if len(seg.pod) else seg.pod
    keyed: dict[tuple[int, int, str], list[float]] = {}
    for bucket, units in per.items():
        for i in np.flatnonzero(units > 0):
            node, job = int(seg.node[i]), int(job_of[i])
            entry = keyed.setdefault((node, job, bucket), [0.0, np.inf, -np.inf])
            entry[0] += float(units[i])
            entry[1] = min(entry[1], float(seg.bound_ms[i]))
            entry[2] = max(entry[2], float(seg.end_ms[i]))
    cost = node_costs(result)
    for node in range(len(nodes.names)):
        if cost.units["idle"][node] > 0:
            start, end = float(nodes.billed_start_ms[node]), float(nodes.billed_end_ms[node])
            keyed[(node, -1, "idle")] = [float(cost.units["idle"][node]), start, end]
    rows = sorted(keyed.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2]))
    share = {name: gpu_price_share(pool) for name, pool in pools.items()}
    out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for (node, job, bucket), (unit_ms, first_ms, last_ms) in rows:
        pool = pools[nodes.pool[node]]
        dollars = unit_ms * float(per_unit_ms[node])
        gpu_part = share[pool.name]
        gpu_node = nodes.gpus[node] > 0
        values = {
            "run_id": run_id,
            "scenario": result.scenario,
            "seed": result.seed,
            "policy": result.policy,
            "period_start_s": first_ms / 1000.0,
            "period_end_s": last_ms / 1000.0,
            "node": nodes.names[node],
            "pool": pool.name,
            "cloud": pool.cloud or "",
            "region": pool.region or "",
            "instance_type": pool.instance_type or "",
            "capacity_type": pool.capacity_type,
            "billing_mode": f"{pool.capacity_type}, per second",
            "gpu_model": nodes.gpu_model[node],
            "node_gpus": int(nodes.gpus[node]),
            "job_gpus": int(jobs.gpus_per_pod[job]) if job >= 0 else 0,
            "job_id": jobs.ids[job] if job >= 0 else "",
            "job_class": jobs.job_class[job] if job >= 0 else "",
            "team": jobs.team[job] if job >= 0 else "",
            "project": jobs.team[job] if job >= 0 else UNALLOCATED,
            "bucket": bucket,
            "unit": "gpu" if gpu_node else "cpu",
            "unit_hours": unit_ms / MS_PER_HOUR / (1.0 if gpu_node else 1000.0),
            "cost_usd": dollars,
            "gpu_cost_usd": dollars * gpu_part if gpu_part is not None else (dollars if gpu_node else 0.0),
            "host_cost_usd": dollars * (1 - gpu_part)
            if gpu_part is not None
            else (0.0 if gpu_node else dollars),
            "price_split": "catalog" if gpu_part is not None else "bundled",
            "currency": CURRENCY,
            "tax_included": False,
        }
        for name in COLUMNS:
            out[name].append(values[name])
    return out


COLUMNS = (
    "run_id", "scenario", "seed", "policy", "period_start_s", "period_end_s", "node", "pool", "cloud",
    "region", "instance_type", "capacity_type", "billing_mode", "gpu_model", "node_gpus", "job_gpus",
    "job_id", "job_class", "team", "project", "bucket", "unit", "unit_hours", "cost_usd", "gpu_cost_usd",
    "host_cost_usd", "price_split", "currency", "tax_included",
)  # fmt: skip
