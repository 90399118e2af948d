"""The pieces of a calibration that are written down: the image-pull comparison and the record the
calibrated scenario carries (``fleetlab.model.calibration_record``, docs/calibration.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fleetlab.experiment.calibration_compare import MetricRow, ks_distance, verdict
from fleetlab.experiment.history_scenario import Knobs
from fleetlab.experiment.run import Run
from fleetlab.metrics.baseline import job_columns
from fleetlab.metrics.survival import kaplan_meier
from fleetlab.model.calibration_record import CalibrationRecord, MetricError
from fleetlab.model.history import History

FloatArray = NDArray[np.float64]
#: A row's error_kind -> (kind, unit) of the record.
_KINDS = {"abs_s": ("absolute", "s"), "ks": ("absolute", "distance"), "abs_share": ("absolute", "share"),
          "rel": ("relative", "")}  # fmt: skip


def simulated_pulls(run: Run, ids: Sequence[str]) -> FloatArray:
    """Per job (in the history's order) the replay's image pull: the longest wait for the image of any of
    its pods, as kubelet's Pulled events give a job's pull (the importers keep the largest over its pods);
    NaN for a job no pod of which was bound."""
    pods = run.result.pods
    jobs = run.result.jobs
    pull = np.full(len(jobs.ids), -1.0)
    bound = pods.bound_ms >= 0
    np.maximum.at(pull, pods.job[bound], pods.image_wait_ms[bound] / 1000.0)
    position = {job_id: i for i, job_id in enumerate(jobs.ids)}
    out = pull[np.asarray([position[j] for j in ids], dtype=np.int64)]
    return np.where(out >= 0, out, np.nan)


def pull_row(
    history: History, run: Run, ids: Sequence[str], knobs: Knobs, tol: dict[str, float]
) -> MetricRow:
    """KS distance between the measured image pulls and the replay's, over jobs with a measured pull that
    the replay started. No verdict when pulls are not modelled (``image_pull_s`` 0): each job's measured
    preparation, pull included, is then replayed whole as a download."""
    measured = job_columns(history).image_pull
    simulated = simulated_pulls(run, ids)
    both = ~np.isnan(measured) & ~np.isnan(simulated)
    ks = ks_distance(
        kaplan_meier(measured[both], np.ones(int(both.sum()), dtype=bool)),
        kaplan_meier(simulated[both], np.ones(int(both.sum()), dtype=bool)),
    )
    within = ks <= tol["image_pull_ks"] if knobs.image_pull_s > 0 else None
    return MetricRow("all", "image_pull_ks", None, None, ks, "ks", tol["image_pull_ks"], within)


def _errors(rows: Sequence[MetricRow], source: str) -> list[MetricError]:
    out = []
    for r in rows:
        kind, unit = _KINDS[r.error_kind]
        out.append(
            MetricError.model_validate(
                {
                    "metric": r.metric,
                    "job_class": r.job_class,
                    "source": source,
                    "kind": kind,
                    "unit": unit,
                    "error": r.error,
                    "measured": r.measured,
                    "simulated": r.simulated,
                    "tolerance": r.tolerance,
                    "within": r.within,
                }
            )
        )
    return out


def calibration_record(
    rows: Sequence[MetricRow],
    validation: Sequence[MetricRow] | None,
    fit_until_s: float | None,
    flags: Sequence[str],
    epoch: str,
) -> CalibrationRecord:
    """What the calibrated scenario records of its own calibration: the fit rows, the validation rows
    (None: nothing was held out), their verdicts, the split and the flags."""
    errors = _errors(rows, "fit") + (_errors(validation, "validation") if validation is not None else [])
    return CalibrationRecord.model_validate(
        {
            "verdict": verdict(rows),
            "validation_verdict": verdict(validation) if validation is not None else None,
            "fit_until_s": fit_until_s,
            "history_epoch": epoch,
            "errors": errors,
            "flags": tuple(flags),
        }
    )
