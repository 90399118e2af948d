"""How large a change must be before a decision may call it better or worse.

Two floors apply to every decision metric (docs/decision.md, "Statistics"):

* the **minimum practical effect**: the larger of an absolute amount in the metric's unit and a share of
  the baseline's level; a change smaller than it is not worth acting on, however sure we are of it.
  Defaults per metric (``DEFAULT_MIN_EFFECTS``); ``--min-effect METRIC=VALUE`` replaces one;
* the **model error**: how far the model is known to be from a measurement on that metric (from a
  calibration, ``ModelError``); a what-if effect smaller than it is "within model error".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from fleetlab.spec.errors import SpecError


@dataclass(frozen=True)
class MinEffect:
    """The smallest change worth acting on: max(``absolute``, ``relative`` × |baseline level|)."""

    absolute: float = 0.0
    relative: float = 0.0
    #: ``default`` or ``--min-effect``.
    source: str = "default"

    def of(self, level: float) -> float:
        """The floor, in the metric's unit, for a baseline at ``level``."""
        scaled = self.relative * abs(level) if not math.isnan(level) else 0.0
        return max(self.absolute, scaled)


#: The cost decision compares cost per completed job over the common accounting window.
COST_METRIC = "cost_per_completed_job_window"
_COST = MinEffect(absolute=0.01, relative=0.02)

#: Defaults: a minute or 10 % of a wait, a minute or 5 % of a completion time, 1 percentage point of an
#: SLO figure, 1 cent or 2 % of the cost per job (docs/decision.md gives the reasons).
DEFAULT_MIN_EFFECTS: dict[str, MinEffect] = {
    "completion_p95_s": MinEffect(absolute=60.0, relative=0.05),
    "queue_wait_mean_s": MinEffect(absolute=60.0, relative=0.10),
    "queue_wait_p95_s": MinEffect(absolute=60.0, relative=0.10),
    "service_slo_attainment_pct": MinEffect(absolute=1.0),
    "service_late_requests_pct": MinEffect(absolute=1.0),
    COST_METRIC: _COST,
    "cost_per_completed_job": _COST,
}

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)?$")
_UNIT_S = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_RELATIVE = 10.0


def _amount(metric: str, text: str) -> float:
    """An absolute amount in the metric's unit: seconds (``90``, ``90s``, ``2m``, ``1h``) for ``*_s``
    metrics, dollars or percentage points otherwise."""
    if metric.endswith("_s"):
        match = _DURATION.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a duration such as 90s, 2m or 1h")
        return float(match.group(1)) * _UNIT_S[match.group(2)]
    value = float(text.removeprefix("$"))
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a number >= 0")
    return value


def parse_min_effects(items: Iterable[str] | None) -> dict[str, MinEffect]:
    """The defaults with ``METRIC=VALUE`` overrides (VALUE an amount such as ``2m`` / ``0.5``, or a share
    of the baseline such as ``5%``; ``0`` makes any change count). ``cost_per_completed_job`` names the
    common-window cost decision too."""
    out = dict(DEFAULT_MIN_EFFECTS)
    allowed = ", ".join(k for k in DEFAULT_MIN_EFFECTS if k != "cost_per_completed_job")
    for item in items or []:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or key not in DEFAULT_MIN_EFFECTS:
            raise SpecError("--min-effect", [f"{item[:80]!r}: use METRIC=VALUE with METRIC one of {allowed}"])
        try:
            if value.endswith("%"):
                share = float(value[:-1]) / 100.0
                if not 0.0 <= share <= MAX_RELATIVE:
                    raise ValueError(f"{value!r} is outside 0%..{MAX_RELATIVE:.0%}")
                effect = MinEffect(relative=share, source="--min-effect")
            else:
                effect = MinEffect(absolute=_amount(key, value), source="--min-effect")
        except ValueError as exc:
            raise SpecError(
                "--min-effect", [f"{item[:80]!r}: {exc}; give an amount (2m, 0.5) or a share (5%)"]
            ) from None
        out[key] = effect
        if key in ("cost_per_completed_job", COST_METRIC):
            out["cost_per_completed_job"] = out[COST_METRIC] = effect
    return out


@dataclass(frozen=True)
class ModelError:
    """How far the model is from a measurement on one metric: ``absolute`` (the metric's unit) and/or
    ``relative`` (a share of the level), and where that figure comes from (``source``).

    The structure calibration results are read into (docs/decision.md, "Model error"): per decision metric,
    ``{"absolute": 300}`` or ``{"relative": 0.12}`` and a ``source``."""

    metric: str
    absolute: float | None = None
    relative: float | None = None
    source: str = ""

    def of(self, level: float) -> float:
        """The error, in the metric's unit, at a baseline ``level``."""
        scaled = (self.relative or 0.0) * abs(level) if not math.isnan(level) else 0.0
        return max(self.absolute or 0.0, scaled)


def model_errors_from(data: Mapping[str, object], source: str) -> dict[str, ModelError]:
    """Model errors from a mapping ``metric -> {"absolute": x} | {"relative": y} [, "source": s]``;
    entries of another shape, negative or non-finite values are left out."""
    out: dict[str, ModelError] = {}
    for metric, entry in data.items():
        if not isinstance(entry, Mapping):
            continue
        values: dict[str, float | None] = {}
        for kind in ("absolute", "relative"):
            raw = entry.get(kind)
            ok = (
                isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw) and raw >= 0
            )
            values[kind] = float(raw) if ok else None  # type: ignore[arg-type]
        if values["absolute"] is None and values["relative"] is None:
            continue
        named = entry.get("source")
        out[str(metric)[:80]] = ModelError(
            str(metric)[:80], values["absolute"], values["relative"], str(named)[:200] if named else source
        )
    if COST_METRIC not in out and "cost_per_completed_job" in out:
        out[COST_METRIC] = replace(out["cost_per_completed_job"], metric=COST_METRIC)
    return out
