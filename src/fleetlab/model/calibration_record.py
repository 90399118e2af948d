"""What a calibrated scenario carries about how well it reproduces its history (docs/calibration.md,
"The calibration record").

``fleetlab calibrate`` writes a ``calibration`` section into the scenario it produces: the verdicts of the
fit and of the out-of-sample validation and, per compared metric, the error measured on each. ``compare``
and ``report`` read it to show the model's error beside every wait figure and to call a what-if whose
effect is smaller than the validation error "within model error" (:meth:`CalibrationRecord.model_error`).

A calibrated scenario also carries, under ``recorded``, what its history holds of the jobs and nodes beyond
their shapes and times: requested wall times (EASY backfill plans with them, sim/queue_discipline.py), the
instants users withdrew pending jobs (sim/withdrawal.py) and node down and drain windows
(sim/maintenance.py). Any scenario may give them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from fleetlab.model.cluster import NodePool, SpecModel
from fleetlab.model.limits import MAX_SECONDS, Float

__all__ = [
    "EXPERIMENT_METRIC_ERRORS",
    "CalibrationRecord",
    "MetricError",
    "RecordedBehaviour",
    "RecordedWindow",
    "check_recorded",
]

#: How an error is expressed: ``absolute`` in the metric's own unit (seconds for wait quantiles, a
#: distance for KS, a share for never-started), or ``relative`` to the measured value (|sim − m| / m).
ErrorKind = Literal["absolute", "relative"]
#: Which comparison an error comes from: the earlier part the knobs were fitted on, or the later part
#: replayed with what was fitted (out of sample).
ErrorSource = Literal["fit", "validation"]
Verdict = Literal["pass", "fail"]

#: Experiment metrics (fleetlab.experiment) and the calibration metric whose error bounds them.
EXPERIMENT_METRIC_ERRORS: dict[str, str] = {
    "queue_wait_p50_s": "wait_p50_s",
    "queue_wait_p95_s": "wait_p95_s",
    "queue_wait_p99_s": "wait_p99_s",
    "gpu_hours_allocated": "gpu_hours_allocated",
    "cpu_hours_allocated": "cpu_hours_allocated",
    "makespan_s": "makespan_s",
}


class MetricError(SpecModel):
    """One metric's error on one part of the history: ``error`` in ``kind`` (see ErrorKind), with the
    tolerance it was judged against and whether it was within it (None: not judged, e.g. a lower bound)."""

    metric: str = Field(min_length=1)
    job_class: str = "all"
    source: ErrorSource
    kind: ErrorKind
    unit: str = ""  # s, distance, share or empty for relative errors
    error: float | None
    measured: float | None = None
    simulated: float | None = None
    tolerance: float
    within: bool | None


class CalibrationRecord(SpecModel):
    """The verdicts and per-metric errors of the calibration that produced a scenario."""

    verdict: Verdict
    #: The out-of-sample verdict; None when nothing was held out (``--fit-until`` at the history's end).
    validation_verdict: Verdict | None = None
    #: Jobs submitted before this instant (seconds from the history's epoch) were fitted on.
    fit_until_s: float | None = None
    history_epoch: str | None = None
    errors: tuple[MetricError, ...] = ()
    #: Fitted knobs that absorb waiting the record does not explain by capacity (docs/calibration.md).
    flags: tuple[str, ...] = ()

    def model_error(self, metric: str, job_class: str = "all") -> MetricError | None:
        """The error a what-if on ``metric`` (a calibration metric or an experiment metric named in
        EXPERIMENT_METRIC_ERRORS) must exceed to be more than model error: the validation error when there
        is one, else the fit error; None when the calibration did not compare that metric."""
        name = EXPERIMENT_METRIC_ERRORS.get(metric, metric)
        found = [
            e for e in self.errors if e.metric == name and e.job_class == job_class and e.error is not None
        ]
        for source in ("validation", "fit"):
            for error in found:
                if error.source == source:
                    return error
        return None


class RecordedWindow(SpecModel):
    """A window in which a node took no new work (``drain``: cordoned, its pods ran on) or was unavailable
    (``down``: cordoned and its pods evicted), in replay seconds, to ``end_s`` (None: the run's end).

    ``node`` names the replay's node (``POOL-INDEX``); with ``pool`` instead, the window takes one node of
    that pool (a node of an autoscaled pool, whose slots a history cannot name); with neither it holds every
    node."""

    node: str | None = Field(default=None, min_length=1)
    pool: str | None = Field(default=None, min_length=1)
    start_s: Float = Field(ge=0)
    end_s: Float | None = Field(default=None, ge=0)
    state: Literal["down", "drain"]

    @model_validator(mode="after")
    def _ordered(self) -> RecordedWindow:
        if self.end_s is not None and self.end_s < self.start_s:
            raise ValueError(f"end_s ({self.end_s:g}) is before start_s ({self.start_s:g})")
        if self.node is not None and self.pool is not None:
            raise ValueError("a window names a node or a pool, not both")
        return self


class RecordedBehaviour(SpecModel):
    """History facts the replay uses, by job id: requested wall times (``walltime_s``: EASY backfill plans
    with them), when a user withdrew a job that never started (``withdraw_s``: the job leaves the queue
    then, cancelled) and node windows (``windows``)."""

    walltime_s: dict[str, float] = Field(default_factory=dict)
    withdraw_s: dict[str, float] = Field(default_factory=dict)
    windows: tuple[RecordedWindow, ...] = ()

    @model_validator(mode="after")
    def _finite(self) -> RecordedBehaviour:
        for name, values in (("walltime_s", self.walltime_s), ("withdraw_s", self.withdraw_s)):
            bad = [k for k, v in values.items() if not (math.isfinite(v) and 0 <= v <= MAX_SECONDS)]
            if bad:
                raise ValueError(
                    f"recorded.{name}: {', '.join(bad[:3])} must be seconds in [0, {MAX_SECONDS:g}]"
                )
        return self


def check_recorded(recorded: RecordedBehaviour, pools: Sequence[NodePool], job_ids: list[str] | None) -> None:
    """Every window names a node or pool of the cluster and every job id a job of the workload (when the
    workload lists its jobs)."""
    slots = {pool.name: {pool.node_name(i) for i in range(pool.node_slots)} for pool in pools}
    nodes = set().union(*slots.values()) if slots else set()
    for k, window in enumerate(recorded.windows):
        if window.node is not None and window.node not in nodes:
            raise ValueError(f"recorded.windows[{k}].node {window.node!r} is not a node of the cluster")
        if window.pool is not None and window.pool not in slots:
            raise ValueError(
                f"recorded.windows[{k}].pool {window.pool!r} is not a pool of the cluster "
                f"(pools: {', '.join(sorted(slots))})"
            )
    if job_ids is None:
        return
    known = set(job_ids)
    for name, values in (("walltime_s", recorded.walltime_s), ("withdraw_s", recorded.withdraw_s)):
        unknown = [job for job in values if job not in known]
        if unknown:
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise ValueError(
                f"recorded.{name} names job(s) not in the workload: {', '.join(unknown[:3])}{more}"
            )
