"""Per-ClusterQueue figures: guaranteed (nominal) vs used, borrowed and lent over time, and job waits.

Usage samples are step functions (recorded after every change); means are time-weighted over the run.
Waits split a job's queue wait into waiting for quota (submit → Kueue admission) and waiting for a node
(admission → last pod bound).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.result import SimulationResult


@dataclass(frozen=True)
class QueueRow:
    """One ClusterQueue × flavor/resource."""

    cluster_queue: str
    flavor_resource: str
    nominal: int
    max_allowed: int
    usage_mean: float
    usage_max: int
    borrowed_mean: float
    borrowed_max: int
    lent_mean: float
    jobs: int
    quota_wait_mean_s: float
    node_wait_mean_s: float

    def as_dict(self) -> dict[str, float | int | str]:
        """Plain dict for JSON."""
        return asdict(self)


def queue_rows(result: SimulationResult) -> list[QueueRow]:
    """Time-weighted quota usage per ClusterQueue and resource, with its jobs' mean waits."""
    samples = result.queue_samples
    if samples is None or len(samples.t_ms) == 0:
        return []
    t = samples.t_ms
    end = max(result.end_ms, int(t[-1]) + 1)
    widths = np.diff(np.append(t, end)).astype(np.float64)
    span = float(end - int(t[0]))
    jobs = result.jobs
    started = (jobs.last_bound_ms >= 0) & ~jobs.waiting_at_end
    queue_of = np.asarray(jobs.cluster_queue, dtype=object)
    node_waits = jobs.node_wait_ms()
    started_in: dict[str, NDArray[np.bool_]] = {}  # per ClusterQueue (a row per flavor/resource of it)
    rows: list[QueueRow] = []
    for k, (cq, fr) in enumerate(samples.keys):
        # One column at a time: the whole (samples × columns) matrices were hundreds of MB at 1M jobs.
        usage = samples.usage_steps.column(k)
        borrowed = np.maximum(usage - samples.subtree_quota[k], 0)
        mine = started_in.get(cq)
        if mine is None:
            mine = started_in[cq] = (queue_of == cq) & started
        quota_wait = jobs.quota_wait_ms[mine] / 1000.0
        node_wait = node_waits[mine] / 1000.0
        rows.append(
            QueueRow(
                cluster_queue=cq,
                flavor_resource=fr,
                nominal=int(samples.nominal[k]),
                max_allowed=int(samples.max_allowed[k]),
                usage_mean=float(np.dot(widths, usage) / span),
                usage_max=int(usage.max()),
                borrowed_mean=float(np.dot(widths, borrowed) / span),
                borrowed_max=int(borrowed.max()),
                lent_mean=float(np.dot(widths, samples.lent_steps.column(k)) / span),
                jobs=int(np.count_nonzero(mine)),
                quota_wait_mean_s=float(quota_wait.mean()) if len(quota_wait) else 0.0,
                node_wait_mean_s=float(node_wait.mean()) if len(node_wait) else 0.0,
            )
        )
    return rows
