"""Per-ClusterQueue figures: guaranteed (nominal) vs used, borrowed and lent over time, and job waits.

Usage samples are step functions (recorded after every change); means are time-weighted over the run.
Waits split a job's queue wait into waiting for quota (submit → Kueue admission) and waiting for a node
(admission → last pod bound).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fleetlab.sim.result import SimulationResult


@dataclass(frozen=True)
class QueueRow:
    """One ClusterQueue × flavor/resource."""

    cluster_queue: str
    flavor_resource: str
    nominal: int
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
    if not samples:
        return []
    end = max(result.end_ms, samples[-1][0] + 1)
    times = [t for t, _ in samples] + [end]
    jobs = result.jobs
    started = jobs.last_bound_ms >= 0
    rows: list[QueueRow] = []
    keys = sorted({(cq, fr) for _, status in samples for cq, frs in status.items() for fr in frs})
    for cq, fr in keys:
        widths = np.diff(np.asarray(times, dtype=np.float64))
        usage = np.asarray([s.get(cq, {}).get(fr, {}).get("usage", 0) for _, s in samples], dtype=np.float64)
        borrowed = np.asarray([s.get(cq, {}).get(fr, {}).get("borrowed", 0) for _, s in samples], dtype=float)
        lent = np.asarray([s.get(cq, {}).get(fr, {}).get("lent", 0) for _, s in samples], dtype=np.float64)
        nominal = int(samples[-1][1].get(cq, {}).get(fr, {}).get("nominal", 0))
        first = samples[0][0]
        span = float(end - first) if end > first else 1.0
        mine = np.asarray([q == cq for q in jobs.cluster_queue], dtype=bool) & started
        quota_wait = (jobs.admitted_ms - jobs.submit_ms)[mine] / 1000.0
        node_wait = (jobs.last_bound_ms - jobs.admitted_ms)[mine] / 1000.0
        rows.append(
            QueueRow(
                cluster_queue=cq,
                flavor_resource=fr,
                nominal=nominal,
                usage_mean=float(np.dot(widths, usage) / span),
                usage_max=int(usage.max()),
                borrowed_mean=float(np.dot(widths, borrowed) / span),
                borrowed_max=int(borrowed.max()),
                lent_mean=float(np.dot(widths, lent) / span),
                jobs=int(np.count_nonzero(mine)),
                quota_wait_mean_s=float(quota_wait.mean()) if len(quota_wait) else 0.0,
                node_wait_mean_s=float(node_wait.mean()) if len(node_wait) else 0.0,
            )
        )
    return rows
