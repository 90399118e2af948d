"""What the cost split needs from a pool's billing rules, worked out once per run (model/billing_rules.py).

Per node: its hourly price (the committed rate for a pool's first ``committed_nodes`` nodes) and the
minimum billed time of each VM start; per pool, commitments beyond its nodes; per job, dollars for the
downloads of its data (one per stay on a node, as the simulator downloads again after an eviction) and for
storing it from submission to completion (or the end of the run).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.billing_rules import BYTES_PER_GB, HOURS_PER_MONTH
from fleetlab.sim.book import scenario_positions
from fleetlab.sim.events import MS_PER_HOUR
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.result import BillingInputs, SegmentTable

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


def node_prices(sim: EngineHandle) -> FloatArray:
    """Each node's hourly price: a committed node pays the committed rate."""
    out = []
    for info, name in zip(sim.node_infos, sim.state.node_names, strict=True):
        pool = sim.pools[info.pool]
        billing = pool.billing
        index = int(name.rsplit("-", 1)[1])
        if billing is not None and index < billing.committed_nodes:
            out.append(billing.committed_rate(pool.price_per_hour))
        else:
            out.append(pool.price_per_hour)
    return np.asarray(out, dtype=np.float64)


def billing_inputs(sim: EngineHandle, segments: SegmentTable, end_ms: int) -> BillingInputs | None:
    """The run's billing inputs; None when no pool has a billing section."""
    pools = sim.pools
    if all(pool.billing is None for pool in pools):
        return None
    minimum = np.asarray(
        [
            0 if (b := pools[i.pool].billing) is None else round(b.minimum_for(pools[i.pool].cloud) * 1000)
            for i in sim.node_infos
        ],
        dtype=np.int64,
    )
    unused = np.asarray(
        [max(0, p.billing.committed_nodes - p.count) if p.billing else 0 for p in pools], dtype=np.int64
    )
    rate = np.asarray([p.billing.committed_rate(p.price_per_hour) if p.billing else 0.0 for p in pools])
    n_jobs = len(sim.jobs)
    transfer = np.zeros(n_jobs)
    storage_rate = np.zeros(n_jobs)
    book = sim.book
    for k in range(len(segments.pod)):
        job = int(book.job[int(segments.pod[k])])
        billing = pools[sim.node_infos[int(segments.node[k])].pool].billing
        if billing is None:
            continue
        gb = sim.jobs[job].data_size / BYTES_PER_GB
        transfer[job] += gb * billing.data_transfer_per_gb
        if storage_rate[job] == 0.0:
            storage_rate[job] = billing.storage_per_gb_month
    gb_per_job = np.asarray([j.data_size / BYTES_PER_GB for j in sim.jobs])
    done = np.full(n_jobs, end_ms, dtype=np.int64)
    if n_jobs:
        ends = np.maximum.reduceat(book.end_ms, book.first_pod[:-1])
        complete = np.minimum.reduceat(book.end_ms, book.first_pod[:-1]) >= 0
        done = np.where(complete, ends, end_ms)
    months = np.maximum(done - sim.submit_ms, 0) / MS_PER_HOUR / HOURS_PER_MONTH
    storage = gb_per_job * storage_rate * months
    inverse = scenario_positions(sim.order)
    return BillingInputs(minimum, unused, rate, transfer[inverse], storage[inverse])
