"""The cost ledger of one run: every billed dollar as one row, in the terms a bill uses.

Rows are node x job x category for what pods held (compute, lost, prep, wait), node x category for what
no pod held (boot, down, minimum, idle; background in a run with a background load), job x category for
data charges (data_transfer, storage) and pool rows for commitments beyond a pool's nodes
(commitment_unused). Each row carries cloud, region, machine type, GPU model and count, billing mode
(on-demand, spot or committed; per second), currency,
whether tax is included, and who pays (team as project, job). Node rows keep their exact integer inputs
(``unit_ms``, ``price_micro_per_hour``, ``node_units``), the same ones ``billing.node_costs`` bills with,
so the ledger reconciles exactly with the run's bill; data and commitment rows carry the run's own
figures. For GCP catalog-priced pools the instance price is split into its host (vCPU + memory) and GPU
parts, as the catalog's two rows and the bill's SKUs do.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from fleetlab.cost.billing import (
    BACKGROUND,
    BUCKETS,
    MICRO,
    MS_PER_HOUR,
    node_costs,
    price_micro_per_hour,
    segment_units,
)
from fleetlab.model.arrow_arrays import arrow_array, string_array
from fleetlab.model.cluster import NodePool
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.catalog import BUILTIN_FILES, builtin_catalog

CURRENCY = "USD"
UNALLOCATED = "(unallocated)"
HELD = ("compute", "lost", "prep", "wait")
#: Node rows: every bucket of the bill split that no pod holds (boot, down, minimum, idle, ...).
NODE_ONLY = tuple(b for b in BUCKETS if b not in HELD)
EXTRA = ("data_transfer", "storage", "commitment_unused")
#: Background (sim/background.py) comes last: only runs with a background load have it.
CATEGORIES = (*HELD, *NODE_ONLY, *EXTRA, BACKGROUND)
IntArray = NDArray[np.int64]


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


def _held_rows(result: SimulationResult) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
    """(node, job, category index, unit_ms, first bound ms, last end ms) per node x job x held category."""
    seg = result.segments
    _, per = segment_units(result)
    job_of = result.pods.job[seg.pod] if len(seg.pod) else seg.pod.copy()
    n_jobs = max(len(result.jobs.ids), 1)
    parts: list[tuple[IntArray, ...]] = []
    for index, name in enumerate(HELD):
        units = per[name]
        mask = units > 0
        if not mask.any():
            continue
        keys = seg.node[mask].astype(np.int64) * n_jobs + job_of[mask].astype(np.int64)
        # sorted by key, each key's segments are one run: summed, min'd and max'd per run (exact integers)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        unique = keys[starts]
        total = np.add.reduceat(units[mask][order], starts).astype(np.int64, copy=False)
        first = np.minimum.reduceat(seg.bound_ms[mask][order], starts).astype(np.int64, copy=False)
        last = np.maximum.reduceat(seg.end_ms[mask][order], starts).astype(np.int64, copy=False)
        category = np.full(len(unique), index, dtype=np.int64)
        parts.append((unique // n_jobs, unique % n_jobs, category, total, first, last))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty, empty, empty
    if len(parts) == 1:  # one category held (compute, most often): its columns as they are, no copy
        a, b, c, d, e, f = parts[0]
    else:
        a, b, c, d, e, f = (np.concatenate([p[i] for p in parts]) for i in range(6))
    return a, b, c, d, e, f


def coded(values: Sequence[str | None], codes: IntArray, missing: str = "") -> Any:
    """``values[i]`` for each i of ``codes`` (``missing`` where i is -1) as an Arrow string column, decoded
    from a dictionary of the few distinct values: the column pa.table builds from the same strings as a
    list, without a Python string per row (a ledger has a row per node, job and category)."""
    table = [v for v in (*values, missing) if isinstance(v, str)]
    if len(table) != len(values) + 1:
        return [missing if c < 0 else values[c] for c in codes.tolist()]  # None among them: as a list
    indices = np.where(codes < 0, len(values), codes).astype(np.int32)
    dictionary = string_array(table, pa.string())
    return pa.DictionaryArray.from_arrays(arrow_array(indices), dictionary).dictionary_decode()


def _committed(pool: NodePool, node_name: str) -> bool:
    """Whether the node is one of its pool's first ``committed_nodes`` (named ``<pool>-<index>``)."""
    billing = pool.billing
    return billing is not None and int(node_name.rsplit("-", 1)[1]) < billing.committed_nodes


@dataclass(frozen=True)
class LedgerRows:
    """The ledger's rows before their columns: the node rows' keys in ledger order and the data and
    commitment rows after them (what every column of any run of rows is computed from)."""

    node: IntArray
    job: IntArray
    cat: IntArray
    unit_ms: IntArray
    first_ms: IntArray
    last_ms: IntArray
    extra: list[dict[str, Any]]

    @property
    def count(self) -> int:
        return len(self.node) + len(self.extra)


def ledger_rows(pools: Sequence[NodePool], result: SimulationResult) -> LedgerRows:
    """Every row's keys, node rows sorted by node, job, category (node rows as whole numpy columns)."""
    nodes = result.nodes
    cost = node_costs(result)  # before the held rows: its per-segment arrays are gone before theirs are made
    node, job, cat, unit_ms, first, last = _held_rows(result)
    for name in (*NODE_ONLY, BACKGROUND) if BACKGROUND in cost.units else NODE_ONLY:
        units = cost.units[name]
        where = np.flatnonzero(units > 0)
        node = np.concatenate([node, where])
        job = np.concatenate([job, np.full(len(where), -1, dtype=np.int64)])
        cat = np.concatenate([cat, np.full(len(where), CATEGORIES.index(name), dtype=np.int64)])
        unit_ms = np.concatenate([unit_ms, units[where]])
        first = np.concatenate([first, nodes.billed_start_ms[where]])
        last = np.concatenate([last, np.maximum(nodes.billed_end_ms[where], nodes.billed_start_ms[where])])
    order = np.lexsort((cat, job, node))
    # each column sorted in turn, its unsorted self dropped at once (millions of rows: a column is tens of MB)
    node = node[order]
    job = job[order]
    cat = cat[order]
    unit_ms = unit_ms[order]
    first = first[order]
    last = last[order]
    extra = extra_rows({p.name: p for p in pools}, result)
    return LedgerRows(node, job, cat, unit_ms, first, last, extra)


def ledger_columns(
    pools: Sequence[NodePool],
    result: SimulationResult,
    run_id: str,
    rows: LedgerRows | None = None,
    start: int = 0,
    stop: int | None = None,
) -> dict[str, Any]:
    """The ledger as columns (see the module docstring), its rows ``start`` to ``stop`` (all by default)
    of ``rows`` (computed here when not given). Node rows are computed as whole columns (numpy arrays,
    strings as Arrow arrays); data and commitment rows follow."""
    keys = rows if rows is not None else ledger_rows(pools, result)
    if not keys.count:
        return {name: [] for name in COLUMNS}  # no row: untyped columns, as an empty ledger always had
    k = len(keys.node)
    stop = keys.count if stop is None else min(stop, keys.count)
    a, b = min(start, k), min(stop, k)
    out = _node_rows(pools, result, keys.node[a:b], keys.job[a:b], keys.cat[a:b], keys.unit_ms[a:b])
    out.update(period_start_s=keys.first_ms[a:b] / 1000.0, period_end_s=keys.last_ms[a:b] / 1000.0)
    same = np.zeros(b - a, dtype=np.int64)
    out.update(
        run_id=coded([run_id], same),
        scenario=coded([result.scenario], same),
        seed=np.full(b - a, result.seed, dtype=np.int64),
        policy=coded([result.policy], same),
        currency=coded([CURRENCY], same),
        tax_included=np.zeros(b - a, dtype=bool),
    )
    rest: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for row in keys.extra[max(start, k) - k : max(stop, k) - k]:
        _append(rest, dict(row), result, run_id)
    return {name: _concat(out[name], rest[name]) for name in COLUMNS}


def _concat(values: Any, more: list[Any]) -> Any:
    """A computed column followed by the per-row values of the data and commitment rows."""
    if isinstance(values, list):
        return values + more
    if isinstance(values, pa.Array):
        return pa.concat_arrays([values, pa.array(more, values.type)]) if more else values
    return np.concatenate([values, np.asarray(more, dtype=values.dtype)]) if more else values


def exact_quotient(num: IntArray, den: IntArray) -> NDArray[np.float64]:
    """``num / den`` per element, rounded as Python rounds ``int / int`` (correctly): in float64 where both
    are exact there (below 2**53), as Python integers for the few rows beyond. ``den`` > 0."""
    out = num.astype(np.float64) / den.astype(np.float64)
    exact = 2**53
    for i in np.flatnonzero((np.abs(num) >= exact) | (den >= exact)).tolist():
        out[i] = int(num[i]) / int(den[i])
    return out


def _node_rows(
    pools: Sequence[NodePool],
    result: SimulationResult,
    node: IntArray,
    job: IntArray,
    cat: IntArray,
    ms: IntArray,
) -> dict[str, Any]:
    """Columns of the node x job x category rows (already in ledger order), each figure as the bill has it:
    dollars = price_micro_per_hour × unit_ms / (node units × ms per hour × 1e6)."""
    nodes, jobs = result.nodes, result.jobs
    pool_index = {p.name: i for i, p in enumerate(pools)}
    node_pool = np.asarray([pool_index[name] for name in nodes.pool], dtype=np.int64)
    capacity = np.where(nodes.gpus > 0, nodes.gpus, nodes.cpu_milli).astype(np.int64)
    price_micro = np.asarray([price_micro_per_hour(float(p)) for p in nodes.price_per_hour], dtype=np.int64)
    committed = np.asarray(
        [_committed(pools[int(i)], name) for i, name in zip(node_pool, nodes.names, strict=True)], dtype=bool
    )
    cap, price, gpu_node, pool = capacity[node], price_micro[node], nodes.gpus[node] > 0, node_pool[node]
    # price × ms (or the denominator) may pass int64 where a node is billed very long or has a huge
    # capacity: those rows are computed as Python ints.
    top = np.iinfo(np.int64).max
    wide = (ms > top // np.maximum(price, 1)) | (cap > top // (MS_PER_HOUR * MICRO))
    num = np.where(wide, 0, price * np.where(wide, 0, ms))
    den = np.where(wide, 1, np.maximum(cap, 1)) * (MS_PER_HOUR * MICRO)
    dollars = np.where(cap > 0, exact_quotient(num, den), 0.0)
    for i in np.flatnonzero(wide & (cap > 0)).tolist():
        dollars[i] = int(price[i]) * int(ms[i]) / (int(cap[i]) * MS_PER_HOUR * MICRO)
    shares = [gpu_price_share(p) for p in pools]
    split_known = np.asarray([x is not None for x in shares], dtype=bool)[pool]
    share_value = np.asarray([x or 0.0 for x in shares], dtype=np.float64)[pool]
    gpu_part = np.where(split_known, dollars * share_value, np.where(gpu_node, dollars, 0.0))
    has_job = job >= 0
    at_job = np.where(has_job, job, 0)
    job_gpus = np.where(has_job, jobs.gpus_per_pod[at_job] if len(jobs.gpus_per_pod) else 0, 0)
    job_cpu = jobs.cpu_milli_per_pod[at_job] if len(jobs.cpu_milli_per_pod) else np.zeros_like(job)
    held = np.where(has_job, np.where(gpu_node, job_gpus, job_cpu), cap)

    return {
        "pool": coded([p.name for p in pools], pool),
        "cloud": coded([p.cloud or "" for p in pools], pool),
        "region": coded([p.region or "" for p in pools], pool),
        "instance_type": coded([p.instance_type or "" for p in pools], pool),
        "capacity_type": coded([p.capacity_type for p in pools], pool),
        "billing_mode": coded(
            [*(p.capacity_type for p in pools), "committed"],
            np.where(committed[node], len(pools), pool),
        ),
        "unit": coded(["cpu", "gpu"], gpu_node.astype(np.int64)),
        "cost_usd": dollars,
        "gpu_cost_usd": gpu_part,
        "host_cost_usd": dollars - gpu_part,
        "price_split": coded(["bundled", "catalog"], split_known.astype(np.int64)),
        "node": coded(nodes.names, node),
        "gpu_model": coded(nodes.gpu_model, node),
        "node_gpus": nodes.gpus[node].astype(np.int64),
        "job_gpus": job_gpus.astype(np.int64),
        "category": coded(CATEGORIES, cat),
        "seconds": np.where(held > 0, ms / np.maximum(held, 1) / 1000.0, 0.0),
        "unit_hours": ms / MS_PER_HOUR / np.where(gpu_node, 1.0, 1000.0),
        "unit_ms": ms.astype(np.int64),
        "price_micro_per_hour": price.astype(np.int64),
        "node_units": cap.astype(np.int64),
        "job_id": coded(jobs.ids, job),
        "job_class": coded(jobs.job_class, job),
        "team": coded(jobs.team, job),
        "project": coded([t or UNALLOCATED for t in jobs.team], job, missing=UNALLOCATED),
    }


def _who(result: SimulationResult, job: int) -> dict[str, Any]:
    jobs = result.jobs
    if job < 0:
        return {"job_id": "", "job_class": "", "team": "", "project": UNALLOCATED}
    return {
        "job_id": jobs.ids[job],
        "job_class": jobs.job_class[job],
        "team": jobs.team[job],
        "project": jobs.team[job] or UNALLOCATED,
    }


def _row(pool: NodePool, gpu_share: float | None, gpu_node: bool, dollars: float, committed: bool) -> Any:
    """Where-and-how columns of an instance-priced row, with its host / GPU split."""
    if gpu_share is not None:
        gpu_part, split = dollars * gpu_share, "catalog"
    else:
        gpu_part, split = (dollars if gpu_node else 0.0), "bundled"
    return {
        "pool": pool.name,
        "cloud": pool.cloud or "",
        "region": pool.region or "",
        "instance_type": pool.instance_type or "",
        "capacity_type": pool.capacity_type,
        "billing_mode": "committed" if committed else pool.capacity_type,
        "unit": "gpu" if gpu_node else "cpu",
        "cost_usd": dollars,
        "gpu_cost_usd": gpu_part,
        "host_cost_usd": dollars - gpu_part,
        "price_split": split,
    }


def extra_rows(pools: dict[str, NodePool], result: SimulationResult) -> list[dict[str, Any]]:
    """Rows for charges outside the node bills: each job's data transfer and storage, each pool's unused
    commitments (the figures ``billing.extra_lines`` adds up)."""
    rules = result.billing
    if rules is None:
        return []
    seg, jobs = result.segments, result.jobs
    job_of = result.pods.job[seg.pod] if len(seg.pod) else seg.pod
    first_node: dict[int, int] = {}
    for k in np.argsort(seg.bound_ms, kind="stable").tolist():
        first_node.setdefault(int(job_of[k]), int(seg.node[k]))
    rows: list[dict[str, Any]] = []
    for j in np.flatnonzero((rules.job_transfer_usd > 0) | (rules.job_storage_usd > 0)).tolist():
        pool = pools[result.nodes.pool[first_node[j]]] if j in first_node else None
        done = int(jobs.end_ms[j]) if jobs.completed[j] else result.end_ms
        for name, dollars, start, end in (
            ("data_transfer", float(rules.job_transfer_usd[j]), int(jobs.last_bound_ms[j]), done),
            ("storage", float(rules.job_storage_usd[j]), int(jobs.submit_ms[j]), done),
        ):
            if dollars > 0:
                rows.append(_extra(pool, name, dollars, max(start, 0), max(end, start, 0), j))
    for index, pool in enumerate(pools.values()):
        unused = int(rules.unused_committed_nodes[index])
        if unused > 0:
            dollars = float(unused * rules.committed_rate[index] * (result.end_ms / MS_PER_HOUR))
            row = _extra(pool, "commitment_unused", dollars, 0, result.end_ms, -1)
            gpu_node = (pool.gpus_per_node or 0) > 0
            row.update(_row(pool, gpu_price_share(pool), gpu_node, dollars, True))
            row.update(seconds=unused * result.end_ms / 1000.0, node_gpus=pool.gpus_per_node or 0)
            rows.append(row)
    return rows


def _extra(pool: NodePool | None, name: str, dollars: float, start: int, end: int, job: int) -> Any:
    return {
        "pool": pool.name if pool else "",
        "cloud": (pool.cloud or "") if pool else "",
        "region": (pool.region or "") if pool else "",
        "instance_type": "",
        "capacity_type": "",
        "billing_mode": "per GB" if name != "storage" else "per GB-month",
        "unit": "usd",
        "cost_usd": dollars,
        "gpu_cost_usd": 0.0,
        "host_cost_usd": 0.0,
        "price_split": "none",
        "period_start_s": start / 1000.0,
        "period_end_s": end / 1000.0,
        "node": "",
        "gpu_model": "",
        "node_gpus": 0,
        "job_gpus": 0,
        "category": name,
        "seconds": (end - start) / 1000.0 if name == "storage" else 0.0,
        "unit_hours": 0.0,
        "unit_ms": 0,
        "price_micro_per_hour": 0,
        "node_units": 0,
        "job_id": "",
        "job_class": "",
        "team": "",
        "project": UNALLOCATED,
        "_job": job,
    }


def _append(out: dict[str, list[Any]], row: dict[str, Any], result: SimulationResult, run_id: str) -> None:
    job = row.pop("_job", None)
    if job is not None and job >= 0:
        row.update(_who(result, job))
        row["job_gpus"] = int(result.jobs.gpus_per_pod[job])
    row.update(
        run_id=run_id,
        scenario=result.scenario,
        seed=result.seed,
        policy=result.policy,
        currency=CURRENCY,
        tax_included=False,
    )
    for name in COLUMNS:
        out[name].append(row[name])


COLUMNS = (
    "run_id", "scenario", "seed", "policy", "period_start_s", "period_end_s", "node", "pool", "cloud",
    "region", "instance_type", "capacity_type", "billing_mode", "gpu_model", "node_gpus", "job_gpus",
    "job_id", "job_class", "team", "project", "category", "unit", "unit_hours", "seconds", "cost_usd",
    "gpu_cost_usd", "host_cost_usd", "price_split", "currency", "tax_included", "unit_ms",
    "price_micro_per_hour", "node_units",
)  # fmt: skip
