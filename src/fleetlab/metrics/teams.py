"""Per-team figures: how long each team's jobs waited (for quota, for a node), ran, and what they lost."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fleetlab.cost.billing import MS_PER_HOUR, eviction_delay_ms, lost_unit_ms_per_job
from fleetlab.sim.result import SimulationResult


@dataclass(frozen=True)
class TeamRow:
    """One team's jobs in one run."""

    team: str
    jobs: int
    completed: int
    queue_wait_mean_s: float
    quota_wait_mean_s: float
    completion_mean_s: float
    evictions: int
    lost_gpu_hours: float
    eviction_delay_hours: float

    def as_dict(self) -> dict[str, float | int | str]:
        """Plain dict for JSON."""
        return asdict(self)


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else 0.0


def team_rows(result: SimulationResult) -> list[TeamRow]:
    """One row per team, sorted by name."""
    jobs = result.jobs
    teams = np.asarray(jobs.team, dtype=object)
    started = jobs.last_bound_ms >= 0
    lost = lost_unit_ms_per_job(result) * (jobs.gpus_per_pod > 0)
    delay = eviction_delay_ms(result)
    rows = []
    for team in sorted(set(jobs.team)):
        mine = teams == team
        s, done = mine & started, mine & jobs.completed
        rows.append(
            TeamRow(
                team=str(team),
                jobs=int(mine.sum()),
                completed=int(done.sum()),
                queue_wait_mean_s=_mean((jobs.last_bound_ms - jobs.submit_ms)[s] / 1000.0),
                quota_wait_mean_s=_mean((jobs.admitted_ms - jobs.submit_ms)[s] / 1000.0),
                completion_mean_s=_mean((jobs.end_ms - jobs.submit_ms)[done] / 1000.0),
                evictions=int(jobs.evictions[mine].sum()),
                lost_gpu_hours=float(lost[mine].sum()) / MS_PER_HOUR,
                eviction_delay_hours=float(delay[mine].sum()) / MS_PER_HOUR,
            )
        )
    return rows
