"""Per-second billing of nodes and the split of every billed dollar by what the node's capacity did.

A node's bill is price × billed seconds. It is split by the node's billing unit — its GPUs, or its CPU on
a CPU-only node — so each unit-millisecond is exactly one of: computing useful work (compute), computing
work later lost to an eviction (lost), held by a pod pulling its image or downloading data (prep), held
by a pod waiting for the rest of its gang (wait), the node booting after it was requested — by the
autoscaler, or as the replacement of a node reclaimed by a spot interruption (boot; billed from the request,
see sim/node_lifecycle.py), the node down for repair after a failure (down), billed only because a VM start
is billed a minimum time (minimum; model/billing_rules.py), held by work the job history does not list
(background; sim/background.py — a bucket only runs with a background load have), or unallocated (idle).
The split is kept in exact integer units (micro-dollars per hour × unit-milliseconds), so the buckets add
up to the bill exactly; dollars are derived at the end.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.result import SimulationResult

MS_PER_HOUR = 3_600_000
MICRO = 1_000_000
BUCKETS = ("compute", "lost", "prep", "wait", "boot", "down", "minimum", "idle")
#: The bucket of room held by a background load; present only in runs that have one.
BACKGROUND = "background"


@dataclass(frozen=True)
class NodeCost:
    """Exact per-node unit-ms per bucket and dollars (as Fractions) of one run."""

    unit_total: NDArray[np.int64]
    units: dict[str, NDArray[np.int64]]
    dollars: dict[str, list[Fraction]]
    billed: list[Fraction]

    @property
    def buckets(self) -> tuple[str, ...]:
        """The buckets of this run: BUCKETS, and ``background`` when the run had a background load."""
        return (*BUCKETS, BACKGROUND) if BACKGROUND in self.units else BUCKETS

    @property
    def total_billed(self) -> Fraction:
        """All nodes' bills."""
        return sum(self.billed, Fraction(0))

    def total(self, bucket: str) -> Fraction:
        """All nodes' dollars in one bucket."""
        return sum(self.dollars[bucket], Fraction(0))


def price_micro_per_hour(price_per_hour: float) -> int:
    """Hourly price in integer micro-dollars (the catalog's figure rounded to 1e-6 $)."""
    return round(price_per_hour * MICRO)


def _capacity(result: SimulationResult) -> NDArray[np.int64]:
    nodes = result.nodes
    return np.where(nodes.gpus > 0, nodes.gpus, nodes.cpu_milli).astype(np.int64)


def segment_units(result: SimulationResult) -> tuple[NDArray[np.int64], dict[str, NDArray[np.int64]]]:
    """Per segment: billing units held, and unit-ms in each bucket but idle."""
    seg, nodes, jobs = result.segments, result.nodes, result.jobs
    job_of = result.pods.job[seg.pod] if len(seg.pod) else seg.pod
    gpu_node = nodes.gpus[seg.node] > 0 if len(seg.node) else np.zeros(0, dtype=bool)
    units = np.where(gpu_node, jobs.gpus_per_pod[job_of], jobs.cpu_milli_per_pod[job_of]).astype(np.int64)
    computing = np.maximum(seg.end_ms - seg.start_ms, 0)
    lost = np.minimum(seg.lost_ms, computing)
    per = {
        "compute": units * (computing - lost),
        "lost": units * lost,
        "prep": units * np.maximum(seg.ready_ms - seg.bound_ms, 0),
        "wait": units * np.maximum(seg.start_ms - seg.ready_ms, 0),
    }
    return units, per


def node_costs(result: SimulationResult) -> NodeCost:
    """Bill every node and split each bill exactly into the buckets. Writing a run's files asks for it
    several times (summary, node table, dynamics, ledger): the last run's is kept while that run and
    the tables it was computed from are the same objects (a result is never changed once made)."""
    global _last_cost
    inputs = _cost_inputs(result)
    last = _last_cost  # one read: another thread may rebind it, never change the tuple read
    if last and last[0]() is result and last[1] == result.end_ms and _same_objects(last[2], inputs):
        return last[3]  # type: ignore[no-any-return]
    cost = _node_costs(result)
    refs = [None if x is None else weakref.ref(x) for x in inputs]
    _last_cost = (weakref.ref(result), result.end_ms, refs, cost)
    return cost


#: (the result, its end, its tables, their cost) of the last ``node_costs``; the objects held weakly.
_last_cost: tuple[Any, ...] = ()


def _cost_inputs(result: SimulationResult) -> list[Any]:
    """The objects a run's node costs are computed from."""
    return [result.nodes, result.segments, result.pods, result.jobs, result.billing, result.lifecycle]


def _same_objects(refs: list[Any], objects: list[Any]) -> bool:
    return all(
        (r is None and x is None) or (r is not None and r() is x) for r, x in zip(refs, objects, strict=True)
    )


def _node_costs(result: SimulationResult) -> NodeCost:
    nodes = result.nodes
    n = len(nodes.names)
    capacity = _capacity(result)
    spans = nodes.billed_end_ms - nodes.billed_start_ms
    billed_ms = (spans if nodes.billed_ms is None else nodes.billed_ms).astype(np.int64)
    topup_ms = minimum_topup_ms(result)
    unit_total = capacity * (billed_ms + topup_ms)
    _, per = segment_units(result)
    units = {bucket: int_sums(result.segments.node, values, n) for bucket, values in per.items()}
    for bucket, node_ms in (("boot", nodes.boot_ms), ("down", nodes.down_ms)):
        units[bucket] = capacity * (
            np.zeros(n, dtype=np.int64) if node_ms is None else node_ms.astype(np.int64)
        )
    units["minimum"] = capacity * topup_ms
    if nodes.background_unit_ms is not None:
        units[BACKGROUND] = nodes.background_unit_ms.astype(np.int64)
    units["idle"] = unit_total - sum((units[b] for b in units if b != "idle"), np.zeros(n, dtype=np.int64))
    dollars: dict[str, list[Fraction]] = {b: [] for b in units}
    billed: list[Fraction] = []
    for i in range(n):
        price = price_micro_per_hour(float(nodes.price_per_hour[i]))
        denominator = int(capacity[i]) * MS_PER_HOUR * MICRO if capacity[i] > 0 else 1
        billed.append(Fraction(price * int(unit_total[i]), denominator))
        for bucket in units:
            dollars[bucket].append(Fraction(price * int(units[bucket][i]), denominator))
    return NodeCost(unit_total, units, dollars, billed)


#: Integers summed as float64 stay exact while every partial sum is below this.
_EXACT_FLOAT = 2**53


def int_sums(index: NDArray[np.integer], values: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """``out[index[i]] += values[i]`` over all i into ``n`` zeros, as ``np.add.at`` gives it: by a float64
    bincount (one pass in C) when no sum can reach 2**53, where float64 holds every integer exactly."""
    if len(values) == 0:
        return np.zeros(n, dtype=np.int64)
    largest = max(abs(int(values.max())), abs(int(values.min())))
    if largest * len(values) < _EXACT_FLOAT:
        return np.bincount(index, weights=values, minlength=n).astype(np.int64)
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, index, values)
    return out


def minimum_topup_ms(result: SimulationResult) -> NDArray[np.int64]:
    """Per node slot, the ms billed beyond its VMs' lives because each VM start is billed a minimum. A VM
    life is one lifecycle window (request to removal, or to the end of the run); with fixed nodes each slot
    is one VM from the start of the run to its end."""
    nodes, rules = result.nodes, result.billing
    n = len(nodes.names)
    out = np.zeros(n, dtype=np.int64)
    if rules is None:
        return out
    end_ms = result.end_ms
    lives: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    if result.lifecycle is not None:
        for w in result.lifecycle.windows:
            start = min(w.requested_ms, end_ms)
            stop = end_ms if w.removed_ms < 0 else min(w.removed_ms, end_ms)
            lives[w.node].append((start, stop))
    else:
        lives = [[(int(a), int(b))] for a, b in zip(nodes.billed_start_ms, nodes.billed_end_ms, strict=True)]
    for i in np.flatnonzero(rules.node_minimum_ms > 0):
        minimum = int(rules.node_minimum_ms[i])
        out[i] = sum(max(0, minimum - (stop - start)) for start, stop in lives[i])
    return out


@dataclass(frozen=True)
class ExtraLines:
    """Charges outside the node bills: commitments beyond a pool's nodes, data transfer and storage."""

    commitment_unused: float
    data_transfer: float
    storage: float

    @property
    def total(self) -> float:
        """All extra lines."""
        return self.commitment_unused + self.data_transfer + self.storage


def extra_lines(result: SimulationResult) -> ExtraLines:
    """The run's extra cost lines (all zero without billing sections)."""
    rules = result.billing
    if rules is None:
        return ExtraLines(0.0, 0.0, 0.0)
    hours = result.end_ms / MS_PER_HOUR
    unused = float((rules.unused_committed_nodes * rules.committed_rate).sum() * hours)
    return ExtraLines(unused, float(rules.job_transfer_usd.sum()), float(rules.job_storage_usd.sum()))


def job_costs(result: SimulationResult) -> NDArray[np.float64]:
    """Dollars attributed to each job: every unit-ms its pods held (all buckets but idle) at node prices."""
    nodes, seg = result.nodes, result.segments
    capacity = _capacity(result).astype(np.float64)
    unit_price_per_ms = np.divide(
        nodes.price_per_hour, capacity * MS_PER_HOUR, out=np.zeros(len(capacity)), where=capacity > 0
    )
    _, per = segment_units(result)
    held = sum((per[b] for b in per), np.zeros(len(seg.pod), dtype=np.int64))
    dollars = held * unit_price_per_ms[seg.node] if len(seg.node) else np.zeros(0)
    out = np.zeros(len(result.jobs.ids), dtype=np.float64)
    if len(seg.pod):
        np.add.at(out, result.pods.job[seg.pod], dollars)
    return out


def lost_unit_ms_per_job(result: SimulationResult) -> NDArray[np.int64]:
    """GPU-ms (units × ms) of compute each job lost to evictions."""
    _, per = segment_units(result)
    if not len(result.segments.pod):
        return np.zeros(len(result.jobs.ids), dtype=np.int64)
    return int_sums(result.pods.job[result.segments.pod], per["lost"], len(result.jobs.ids))


def eviction_delay_ms(result: SimulationResult) -> NDArray[np.int64]:
    """Per job, how much later its final run started than its first (0 for jobs never evicted):
    the completion time evictions added, including the requeue wait and the prep paid again."""
    seg, jobs = result.segments, result.jobs
    first = np.full(len(jobs.ids), np.iinfo(np.int64).max, dtype=np.int64)
    if len(seg.pod):
        np.minimum.at(first, result.pods.job[seg.pod], seg.start_ms)
    evicted = (jobs.evictions > 0) & (jobs.running_ms >= 0) & (first < np.iinfo(np.int64).max)
    return np.where(evicted, jobs.running_ms - first, 0).astype(np.int64)
