"""Per-team figures: how long each team's jobs waited (for quota, for a node), ran, and what they lost.

Service replica slots are not jobs of any team: services have their own table (metrics/services.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fleetlab.cost.billing import MS_PER_HOUR, eviction_delay_ms, lost_unit_ms_per_job
from fleetlab.metrics.censoring import mean, wait_known
from fleetlab.metrics.services import workload_jobs, workload_mask
from fleetlab.sim.result import SimulationResult


@dataclass(frozen=True)
class TeamRow:
    """One team's jobs in one run."""

    team: str
    jobs: int
    completed: int
    #: Jobs still waiting for a node at the end (their waits are censored; see the lower bound).
    pending: int
    queue_wait_mean_s: float
    queue_wait_mean_s_lower_bound: float
    quota_wait_mean_s: float
    completion_mean_s: float
    evictions: int
    lost_gpu_hours: float
    eviction_delay_hours: float

    def as_dict(self) -> dict[str, float | int | str]:
        """Plain dict for JSON."""
        return asdict(self)


def team_rows(result: SimulationResult) -> list[TeamRow]:
    """One row per team, sorted by name."""
    keep = workload_mask(result.jobs)
    jobs = workload_jobs(result.jobs)
    teams = np.asarray(jobs.team, dtype=object)
    known = wait_known(jobs)
    lost = (lost_unit_ms_per_job(result) * (result.jobs.gpus_per_pod > 0))[keep]
    delay = eviction_delay_ms(result)[keep]
    rows = []
    for team in sorted(set(jobs.team)):
        mine = teams == team
        s, done = mine & known, mine & jobs.completed
        rows.append(
            TeamRow(
                team=str(team),
                jobs=int(mine.sum()),
                completed=int(done.sum()),
                pending=int(np.count_nonzero(mine & jobs.waiting_at_end)),
                queue_wait_mean_s=mean(jobs.queue_wait_ms[s] / 1000.0),
                queue_wait_mean_s_lower_bound=mean(jobs.queue_wait_ms[mine] / 1000.0),
                quota_wait_mean_s=mean(jobs.quota_wait_ms[s] / 1000.0),
                completion_mean_s=mean((jobs.end_ms - jobs.submit_ms)[done] / 1000.0),
                evictions=int(jobs.evictions[mine].sum()),
                lost_gpu_hours=float(lost[mine].sum()) / MS_PER_HOUR,
                eviction_delay_hours=float(delay[mine].sum()) / MS_PER_HOUR,
            )
        )
    return rows
