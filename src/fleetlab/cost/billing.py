"""Per-second billing of nodes and the split of every billed dollar into compute, prep and idle.

A node's bill is price × billed seconds. It is split by the node's billing unit — its GPUs, or its CPU
on a CPU-only node — so each unit-millisecond is exactly one of: held by a running pod (compute), held
by a pod pulling its image or downloading data (prep), or unallocated (idle). The split is kept in exact
integer units (micro-dollars per hour × unit-milliseconds), so compute + prep + idle equals the bill
exactly; dollars are derived at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.result import SimulationResult

MS_PER_HOUR = 3_600_000
MICRO = 1_000_000


@dataclass(frozen=True)
class NodeCost:
    """Exact per-node unit-ms and dollars (as Fractions) of one run."""

    unit_total: NDArray[np.int64]
    unit_compute: NDArray[np.int64]
    unit_prep: NDArray[np.int64]
    unit_idle: NDArray[np.int64]
    billed: list[Fraction]
    compute: list[Fraction]
    prep: list[Fraction]
    idle: list[Fraction]

    @property
    def total_billed(self) -> Fraction:
        """All nodes' bills."""
        return sum(self.billed, Fraction(0))


def price_micro_per_hour(price_per_hour: float) -> int:
    """Hourly price in integer micro-dollars (the catalog's figure rounded to 1e-6 $)."""
    return round(price_per_hour * MICRO)


def pod_unit_ms(result: SimulationResult) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Per pod: (billing units held, prep ms, compute ms), clipped to the run's end."""
    pods, nodes = result.pods, result.nodes
    end = result.end_ms
    placed = pods.node >= 0
    node = np.where(placed, pods.node, 0)
    gpu_node = nodes.gpus[node] > 0
    # Units: GPUs on GPU nodes, milli-CPU on CPU-only nodes.
    units = np.where(gpu_node, result_pod_gpus(result), result_pod_cpu(result))
    units = np.where(placed, units, 0)
    bound = np.where(placed, np.minimum(pods.bound_ms, end), end)
    run_start = np.where(pods.running_ms >= 0, np.minimum(pods.running_ms, end), end)
    finish = np.where(pods.end_ms >= 0, np.minimum(pods.end_ms, end), end)
    prep_ms = np.maximum(run_start - bound, 0)
    compute_ms = np.maximum(finish - run_start, 0)
    return units.astype(np.int64), prep_ms.astype(np.int64), compute_ms.astype(np.int64)


def result_pod_gpus(result: SimulationResult) -> NDArray[np.int64]:
    """GPUs each pod holds."""
    return result.jobs.gpus_per_pod[result.pods.job]


def result_pod_cpu(result: SimulationResult) -> NDArray[np.int64]:
    """Milli-CPU each pod requests."""
    return result.jobs.cpu_milli_per_pod[result.pods.job]


def node_costs(result: SimulationResult) -> NodeCost:
    """Bill every node and split each bill exactly into compute, prep and idle."""
    nodes = result.nodes
    n = len(nodes.names)
    capacity = np.where(nodes.gpus > 0, nodes.gpus, nodes.cpu_milli).astype(np.int64)
    billed_ms = (nodes.billed_end_ms - nodes.billed_start_ms).astype(np.int64)
    unit_total = capacity * billed_ms
    units, prep_ms, compute_ms = pod_unit_ms(result)
    placed = result.pods.node >= 0
    unit_compute = np.zeros(n, dtype=np.int64)
    unit_prep = np.zeros(n, dtype=np.int64)
    np.add.at(unit_compute, result.pods.node[placed], (units * compute_ms)[placed])
    np.add.at(unit_prep, result.pods.node[placed], (units * prep_ms)[placed])
    unit_idle = unit_total - unit_compute - unit_prep
    billed: list[Fraction] = []
    compute: list[Fraction] = []
    prep: list[Fraction] = []
    idle: list[Fraction] = []
    for i in range(n):
        price = price_micro_per_hour(float(nodes.price_per_hour[i]))
        denominator = int(capacity[i]) * MS_PER_HOUR * MICRO if capacity[i] > 0 else 1
        billed.append(Fraction(price * int(unit_total[i]), denominator))
        compute.append(Fraction(price * int(unit_compute[i]), denominator))
        prep.append(Fraction(price * int(unit_prep[i]), denominator))
        idle.append(Fraction(price * int(unit_idle[i]), denominator))
    return NodeCost(unit_total, unit_compute, unit_prep, unit_idle, billed, compute, prep, idle)


def job_costs(result: SimulationResult) -> NDArray[np.float64]:
    """Dollars attributed to each job: its pods' compute and prep unit-time at their nodes' unit price."""
    nodes = result.nodes
    capacity = np.where(nodes.gpus > 0, nodes.gpus, nodes.cpu_milli).astype(np.float64)
    unit_price_per_ms = np.divide(
        nodes.price_per_hour, capacity * MS_PER_HOUR, out=np.zeros(len(capacity)), where=capacity > 0
    )
    units, prep_ms, compute_ms = pod_unit_ms(result)
    placed = result.pods.node >= 0
    node = np.where(placed, result.pods.node, 0)
    pod_dollars = np.where(placed, units * (prep_ms + compute_ms) * unit_price_per_ms[node], 0.0)
    out = np.zeros(len(result.jobs.ids), dtype=np.float64)
    np.add.at(out, result.pods.job, pod_dollars)
    return out
