"""The calibration behind a scenario, carried into every decision made on it.

``fleetlab calibrate`` writes ``calibration.json`` beside the calibrated ``scenario.yaml``. A decision on
that scenario must say whether calibration passed, what it fitted and whether the fitted values are
plausible, and must not call a what-if better when its effect is smaller than the model's own error.

The model error is read as a small structure (``ModelError`` per decision metric: an absolute or a
relative error and its source), from the first of:

1. the out-of-sample validation: calibration.json's ``validation`` rows (``fleetlab calibrate
   --fit-until``), a calibrated scenario's ``calibration`` record (its ``errors`` of source
   ``validation``), or a mapping per metric ``{"absolute": x}`` / ``{"relative": y}`` with an optional
   ``source`` (``{"metrics": {...}}`` is read the same way);
2. the fit rows (the in-sample replay against the history, class ``all``): the wait p95
   error for queue wait p95 and completion time p95, the larger of the p50 and p95 wait errors for the
   mean wait (calibration compares quantiles, not means), the relative cost error for cost per job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetlab.experiment.effects import COST_METRIC, ModelError, model_errors_from
from fleetlab.spec.bounded import load_json, read_text_file
from fleetlab.spec.errors import SpecError

CALIBRATION_FILE = "calibration.json"
MAX_CALIBRATION_BYTES = 10 * 2**20
#: Plausible ranges of the fitted knobs (docs/decision.md): outside them the fit absorbs something the
#: model does not represent (quota, other tenants, a partial node list) rather than measuring the knob.
PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "scheduling_latency_s": (0.0, 60.0, "scheduler, controllers and admission webhooks take seconds"),
    "node_boot_time_s": (30.0, 1200.0, "a cloud GPU node joins in about 1 to 20 minutes"),
    "image_pull_s": (0.0, 1800.0, "a first pull of a large image takes minutes, not hours"),
    "limit_quantile": (0.0, 1.0, "the quantile of each group's recorded concurrency taken as its limit"),
    "job_limit_quantile": (0.0, 1.0, "the quantile of each group's recorded running jobs taken as its cap"),
    "background_share": (0.0, 1.0, "the share of every fixed pool held by work the record does not list"),
}
#: Fitted knobs that are not durations (shown without a unit).
UNITLESS = frozenset({"limit_quantile", "job_limit_quantile", "background_share"})
#: What a change to each fitted knob names in scenario data (a variant that changes one undoes the fit).
KNOB_PATHS = {
    "scheduling_latency_s": "scheduling_latency_s",
    "node_boot_time_s": "boot_time_s",
    "image_pull_s": "image",
}


@dataclass(frozen=True)
class FittedValue:
    """One knob calibration fitted, and whether its value is plausible."""

    knob: str
    value: float
    plausible: bool
    why: str

    def text(self) -> str:
        """``scheduling_latency_s = 2880 s (implausible: ...)``."""
        word = "plausible" if self.plausible else "implausible"
        unit = "" if self.knob in UNITLESS else " s"
        return f"{self.knob} = {self.value:g}{unit} ({word}: {self.why})"


@dataclass(frozen=True)
class CalibrationContext:
    """What a decision must say about the calibration its scenario came from."""

    source: str
    verdict: str
    fitted: tuple[FittedValue, ...] = ()
    #: Metrics (class ``all``) outside their tolerance.
    failing: tuple[str, ...] = ()
    model_errors: Mapping[str, ModelError] = field(default_factory=dict)
    #: Where the model errors come from (``validation`` or ``rows``).
    error_source: str = ""

    def banner(self) -> str:
        """The line every page and terminal shows first."""
        if self.verdict not in ("pass", "fail"):
            return (
                f"Calibration file {self.source} is {self.verdict}: how far this model is from the cluster "
                "is unknown"
            )
        if self.verdict == "pass":
            head = f"Calibrated scenario ({self.source}): calibration passed"
        else:
            failing = ", ".join(self.failing) or "some metrics"
            head = (
                f"CALIBRATION FAILED ({self.source}): the replay is outside tolerance on {failing}; "
                "absolute figures are not the cluster's, and only effects larger than the model error count"
            )
        implausible = [f.text() for f in self.fitted if not f.plausible]
        return head + (f". Implausible fit: {'; '.join(implausible)}" if implausible else "")

    def as_dict(self) -> dict[str, Any]:
        """For the manifest and JSON."""
        return {
            "source": self.source,
            "verdict": self.verdict,
            "fitted": [
                {"knob": f.knob, "value": f.value, "plausible": f.plausible, "why": f.why}
                for f in self.fitted
            ],
            "failing": list(self.failing),
            "model_errors": {
                m: {"absolute": e.absolute, "relative": e.relative, "source": e.source}
                for m, e in self.model_errors.items()
            },
            "error_source": self.error_source,
            "banner": self.banner(),
        }


def _finite(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def fitted_values(fitted: Any) -> tuple[FittedValue, ...]:
    """The fitted knobs with their plausibility (unknown knobs are listed as plausible, range unknown)."""
    if not isinstance(fitted, Mapping):
        return ()
    out = []
    for knob, raw in sorted(fitted.items()):
        value = _finite(raw)
        if value is None:
            continue
        low, high, why = PLAUSIBLE.get(str(knob), (-math.inf, math.inf, "no known range"))
        unit = "" if knob in UNITLESS else " s"
        expected = f"; expected {low:g}..{high:g}{unit}" if math.isfinite(high - low) else ""
        out.append(FittedValue(str(knob)[:80], value, low <= value <= high, f"{why}{expected}"))
    return tuple(out)


def _row_errors(rows: Any, source: str) -> dict[str, ModelError]:
    """Model errors from calibration rows of class ``all`` (see the module docstring)."""
    if not isinstance(rows, list):
        return {}
    errors: dict[str, float] = {}
    for row in rows:
        if not isinstance(row, Mapping) or row.get("job_class") != "all":
            continue
        error = _finite(row.get("error"))
        if error is not None and error >= 0:
            errors[str(row.get("metric"))] = error
    out: dict[str, ModelError] = {}
    if "wait_p95_s" in errors:
        p95 = errors["wait_p95_s"]
        out["queue_wait_p95_s"] = ModelError(
            "queue_wait_p95_s", absolute=p95, source=f"{source}: wait p95 error"
        )
        out["completion_p95_s"] = ModelError(
            "completion_p95_s", absolute=p95, source=f"{source}: wait p95 error"
        )
    waits = [errors[k] for k in ("wait_p50_s", "wait_p95_s") if k in errors]
    if waits:
        out["queue_wait_mean_s"] = ModelError(
            "queue_wait_mean_s",
            absolute=max(waits),
            source=f"{source}: larger of the wait p50 and p95 errors",
        )
    if "cost" in errors:
        for metric in (COST_METRIC, "cost_per_completed_job"):
            out[metric] = ModelError(metric, relative=errors["cost"], source=f"{source}: relative cost error")
    return out


def _all_class(rows: Any) -> list[Mapping[str, Any]]:
    return [r for r in rows if isinstance(r, Mapping) and r.get("job_class") == "all"] if isinstance(
        rows, list) else []  # fmt: skip


def _parts(payload: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], Any, Any]:
    """The fit rows, the validation (rows or a metric mapping) and the validation verdict, from either
    calibration.json (``rows``, ``validation: {verdict, rows}``) or a calibrated scenario's ``calibration``
    record (``errors`` with ``source`` fit / validation, ``validation_verdict``)."""
    errors = payload.get("errors")
    if isinstance(errors, list):
        fit = [e for e in _all_class(errors) if e.get("source") == "fit"]
        later = [e for e in _all_class(errors) if e.get("source") == "validation"]
        return fit, later or None, payload.get("validation_verdict")
    validation = payload.get("validation")
    if isinstance(validation, Mapping):
        if isinstance(validation.get("rows"), list):
            return _all_class(payload.get("rows")), _all_class(validation["rows"]), validation.get("verdict")
        metrics = validation.get("metrics", validation)
        return _all_class(payload.get("rows")), metrics, validation.get("verdict")
    return _all_class(payload.get("rows")), None, None


def calibration_from(payload: Mapping[str, Any], source: str) -> CalibrationContext | None:
    """The context of a calibration.json-shaped mapping or a scenario's calibration record (None when it
    has no verdict). A failed out-of-sample validation fails the calibration as a whole."""
    verdict = payload.get("verdict")
    if verdict not in ("pass", "fail"):
        return None
    fit, validation, validation_verdict = _parts(payload)
    failing_rows = fit + (validation if isinstance(validation, list) else [])
    failing = tuple(sorted({str(r.get("metric")) for r in failing_rows if r.get("within") is False}))
    if validation_verdict == "fail":
        verdict = "fail"
    later = f"{source} validation (out of sample)"
    if isinstance(validation, list):
        errors = _row_errors(validation, later)
    elif isinstance(validation, Mapping):
        errors = model_errors_from(validation, later)
    else:
        errors = {}
    kind = "validation" if errors else "rows"
    if not errors:
        errors = _row_errors(fit, f"{source} rows (in-sample replay)")
    return CalibrationContext(
        source, str(verdict), fitted_values(payload.get("fitted")), failing, errors, kind
    )


def read_calibration(
    scenario_file: Path | None, raw: Mapping[str, Any] | None = None
) -> CalibrationContext | None:
    """The calibration of a scenario: calibration.json beside the file (at most 10 MiB; it also holds the
    fitted values; an unreadable one is reported as such, never ignored silently), else the scenario's own
    ``calibration`` record."""
    own = None
    if raw is not None and isinstance(raw.get("calibration"), Mapping):
        own = calibration_from(raw["calibration"], str(scenario_file or "the scenario"))
    path = None if scenario_file is None else scenario_file.parent / CALIBRATION_FILE
    if path is None or not path.is_file():
        return own
    try:
        if path.stat().st_size > MAX_CALIBRATION_BYTES:
            return own or CalibrationContext(str(path), "unreadable (over 10 MiB)")
        payload = load_json(str(path), read_text_file(path, "", MAX_CALIBRATION_BYTES))
    except OSError as exc:
        return own or CalibrationContext(str(path), f"unreadable ({type(exc).__name__})")
    except SpecError as exc:  # strict JSON: no NaN, bounded depth and integers
        return own or CalibrationContext(str(path), f"unreadable ({'; '.join(exc.problems[:1])})")
    if not isinstance(payload, Mapping):
        return own or CalibrationContext(str(path), "unreadable (not a JSON object)")
    return (
        calibration_from(payload, str(path))
        or own
        or CalibrationContext(str(path), "unreadable (no verdict)")
    )


def context_from_dict(data: Any) -> CalibrationContext | None:
    """A context read back from the manifest (``as_dict``)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("verdict"), str):
        return None
    fitted = tuple(
        FittedValue(str(f["knob"]), float(f["value"]), bool(f["plausible"]), str(f["why"]))
        for f in data.get("fitted") or [] if isinstance(f, Mapping) and _finite(f.get("value")) is not None
    )  # fmt: skip
    errors = model_errors_from(data.get("model_errors") or {}, str(data.get("source", "")))
    return CalibrationContext(
        str(data.get("source", "")), data["verdict"], fitted, tuple(map(str, data.get("failing") or [])),
        errors, str(data.get("error_source", "")),
    )  # fmt: skip


def knob_warnings(changes: Mapping[str, list[str]], calibration: CalibrationContext) -> list[str]:
    """Per column whose changes (scenario_diff's texts: path, old and new value) touch a value calibration
    fitted: its effect measures the fit."""
    out = []
    for column, texts in changes.items():
        for fitted in calibration.fitted:
            key = KNOB_PATHS.get(fitted.knob)
            if key is not None and any(key in text for text in texts):
                out.append(
                    f"{column} changes {fitted.knob}, which calibration fitted to {fitted.value:g} s"
                    f"{'' if fitted.plausible else ' (implausible)'}: its effect measures the fit, not a "
                    "change to the cluster"
                )
    return out
