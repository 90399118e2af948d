"""What a calibrated scenario carries about how well it reproduces its history (docs/calibration.md,
"The calibration record").

``fleetlab calibrate`` writes a ``calibration`` section into the scenario it produces: the verdicts of the
fit and of the out-of-sample validation and, per compared metric, the error measured on each. ``compare``
and ``report`` read it to show the model's error beside every wait figure and to call a what-if whose
effect is smaller than the validation error "within model error" (:meth:`CalibrationRecord.model_error`).

A calibrated scenario also carries, under ``recorded``, what its history holds that the replay does not
use yet (requested wall times, the instants users withdrew pending jobs, drain windows): the inputs of
simulator features still to come, kept so that a scenario written today can use them then.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fleetlab.model.cluster import SpecModel

__all__ = [
    "EXPERIMENT_METRIC_ERRORS",
    "CalibrationRecord",
    "MetricError",
    "RecordedBehaviour",
    "RecordedWindow",
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
    """A window a node (or every node, ``node`` None) took no new work, in replay seconds; ``node`` is the
    replay's name of it (``POOL-INDEX``) where the replay has it, else the history's."""

    node: str | None = None
    start_s: float = Field(ge=0)
    end_s: float | None = Field(default=None, ge=0)
    state: Literal["down", "drain"]


class RecordedBehaviour(SpecModel):
    """History facts the replay does not model yet, by job id: the inputs of simulator features to come
    (EASY backfill reads ``walltime_s``, pending-job withdrawal ``withdraw_s``, cordons ``windows``)."""

    walltime_s: dict[str, float] = Field(default_factory=dict)
    withdraw_s: dict[str, float] = Field(default_factory=dict)
    windows: tuple[RecordedWindow, ...] = ()
