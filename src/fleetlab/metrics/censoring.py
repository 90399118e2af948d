"""Jobs by state at the end of a run, and the censored-aware wait and completion figures.

A job still waiting (or running) when the run ends has not told us its wait (or completion time) yet:
dropping it would flatter a policy that starves jobs. The exact figures are over the jobs whose value is
known; the ``*_lower_bound`` figures count every job, the censored ones with their value so far (the
wait or time in system up to the end), so they can only understate the truth (see docs/metrics.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.result import JobTable

FloatArray = NDArray[np.float64]

COMPLETED, RUNNING, PENDING, FAILED = "completed", "running", "pending", "failed"
#: Withdrawn before it started (its user deleted it while pending, or a job limit refused it).
CANCELLED = "cancelled"


def end_states(jobs: JobTable) -> NDArray[np.str_]:
    """Per job its state when the run ended: completed, failed (OOM kill), cancelled (withdrawn before it
    started), pending (some pod still waiting for a node, or not yet submitted) or running (every
    unfinished pod bound: preparing or computing)."""
    return np.where(
        jobs.completed,
        COMPLETED,
        np.where(
            jobs.failed,
            FAILED,
            np.where(jobs.withdrawn_ms >= 0, CANCELLED, np.where(jobs.waiting_at_end, PENDING, RUNNING)),
        ),
    )


def wait_known(jobs: JobTable) -> NDArray[np.bool_]:
    """Jobs whose queue wait is known: neither still waiting at the end nor withdrawn while waiting (those
    are censored: their wait is at least what it was so far)."""
    return np.asarray(~jobs.waiting_at_end & (jobs.withdrawn_ms < 0), dtype=bool)


@dataclass(frozen=True)
class Censored:
    """The counts by state and the exact and lower-bound wait and completion figures (seconds)."""

    completed: int
    running: int
    pending: int
    failed: int
    #: Waits known (jobs neither pending at the end nor cancelled), and every job's wait so far (a lower
    #: bound for pending and cancelled ones).
    waits_known_s: FloatArray
    waits_lower_s: FloatArray
    #: Completion times of completed jobs, and time in system so far of every job that neither failed nor
    #: was cancelled (those never complete).
    completion_known_s: FloatArray
    completion_lower_s: FloatArray
    cancelled: int = 0


def censor(jobs: JobTable, end_ms: int) -> Censored:
    """Split a run's jobs by end state and collect their waits and completion times."""
    states = end_states(jobs)
    pending = states == PENDING
    waits = jobs.queue_wait_ms / 1000.0
    may_complete = (states != FAILED) & (states != CANCELLED)
    so_far = np.where(jobs.completed, jobs.end_ms, np.maximum(end_ms, jobs.submit_ms)) - jobs.submit_ms
    return Censored(
        completed=int(np.count_nonzero(states == COMPLETED)),
        running=int(np.count_nonzero(states == RUNNING)),
        pending=int(np.count_nonzero(pending)),
        failed=int(np.count_nonzero(states == FAILED)),
        waits_known_s=waits[wait_known(jobs)].astype(np.float64),
        waits_lower_s=waits.astype(np.float64),
        completion_known_s=((jobs.end_ms - jobs.submit_ms)[jobs.completed] / 1000.0).astype(np.float64),
        completion_lower_s=(so_far[may_complete] / 1000.0).astype(np.float64),
        cancelled=int(np.count_nonzero(states == CANCELLED)),
    )


def mean(values: FloatArray) -> float:
    """Mean, 0 for no values (a run with no job in the set)."""
    return float(values.mean()) if len(values) else 0.0


def percentile(values: FloatArray, q: float) -> float:
    """numpy's default (linear) percentile, 0 for no values."""
    return float(np.percentile(values, q)) if len(values) else 0.0
