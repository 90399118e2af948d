"""Cost of compared runs over their common accounting window, and the run rates at this load.

A fixed cluster bills the same whatever the policy: a variant that finishes early is not cheaper, its nodes
would bill on until the others finish. So the decision compares cost per completed job over one window
per replicate (``fleetlab.metrics.window``: the shared horizon, else the latest end among the runs of that
seed); nodes still billed at a run's end are billed on to the window's end, nodes an autoscaler removed
stay removed (only capacity that really scales down saves money). Each run records what that needs
(``Accounting``), so runs executed apart (an experiment's workers) are put on one window afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping
from dataclasses import asdict, dataclass
from typing import Any

from fleetlab.metrics.window import billed_per_hour_at_end, window_of
from fleetlab.sim.result import SimulationResult

#: A month of a cluster running at this load: 365 × 24 / 12 hours.
HOURS_PER_MONTH = 730.0
#: Figures the window adds to a run's (docs/metrics.md, "the common accounting window").
WINDOW_FIGURES = (
    "accounting_window_s",
    "cost_window_extension",
    "cost_total_window",
    "cost_per_completed_job_window",
    "cost_rate_per_hour",
    "cost_per_month",
)


@dataclass(frozen=True)
class Accounting:
    """What one run contributes to a common window: its end, its horizon and the dollars per hour of the
    nodes still billed at its end."""

    end_s: float
    horizon_s: float | None
    billed_per_hour_at_end: float

    def as_dict(self) -> dict[str, float | None]:
        """For run.json and the manifest."""
        return asdict(self)


def accounting_of(result: SimulationResult) -> Accounting:
    """A finished run's accounting."""
    horizon = None if result.horizon_ms is None else result.horizon_ms / 1000.0
    return Accounting(result.end_ms / 1000.0, horizon, billed_per_hour_at_end(result))


def accounting_from(data: Any) -> Accounting | None:
    """An accounting read back from JSON (None when absent or malformed: a run recorded before it)."""
    if not isinstance(data, Mapping):
        return None
    try:
        end, rate = float(data["end_s"]), float(data["billed_per_hour_at_end"])
        horizon = data.get("horizon_s")
        horizon_s = None if horizon is None else float(horizon)
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(end) and math.isfinite(rate)) or end < 0 or rate < 0:
        return None
    return Accounting(end, horizon_s, rate)


def window_figures(figures: Mapping[str, float], accounting: Accounting, window_s: float) -> dict[str, float]:
    """The run's cost over [0, ``window_s``], its cost per completed job there, and the rates: dollars
    per hour over the window and per month (730 h) at that rate."""
    extension = accounting.billed_per_hour_at_end * max(0.0, window_s - accounting.end_s) / 3600.0
    total = figures.get("cost_total", math.nan) + extension
    completed = figures.get("jobs_completed", 0.0)
    rate = total / (window_s / 3600.0) if window_s > 0 else math.nan
    return {
        "accounting_window_s": window_s,
        "cost_window_extension": extension,
        "cost_total_window": total,
        "cost_per_completed_job_window": total / completed if completed > 0 else math.nan,
        "cost_rate_per_hour": rate,
        "cost_per_month": rate * HOURS_PER_MONTH,
    }


def put_on_window(
    figures: Mapping[str, MutableMapping[str, float]], accountings: Mapping[str, Accounting]
) -> str:
    """Add the window figures to each column's figures of one replicate (columns without an accounting
    get none); returns what the window is (``horizon`` or ``latest end``)."""
    known = {label: a for label, a in accountings.items() if label in figures}
    if not known:
        return ""
    to_ms = [(None if a.horizon_s is None else round(a.horizon_s * 1000), round(a.end_s * 1000)) for a in
             known.values()]  # fmt: skip
    window_ms, source = window_of([h for h, _ in to_ms], [e for _, e in to_ms])
    for label, accounting in known.items():
        figures[label].update(window_figures(figures[label], accounting, window_ms / 1000.0))
    return source
