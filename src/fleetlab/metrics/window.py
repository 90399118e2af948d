"""Cost over a common accounting window, so variants compared side by side pay for the same hours.

Each run bills its nodes up to its own end, so on a fixed cluster a variant that ends earlier looks
cheaper per completed job although its nodes would keep billing until the others finish. Over the common
window — the scenario's horizon when every run has one, else the latest end among the runs compared —
every node still billed at a run's end is billed on, idle, to the window's end (price × the extra time);
nodes an autoscaler had already removed stay removed. See docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fleetlab.cost.billing import MS_PER_HOUR
from fleetlab.sim.result import SimulationResult


@dataclass(frozen=True)
class WindowCost:
    """One run's cost over the common window."""

    window_s: float
    #: "horizon" (every run has one) or "latest end" (the latest end among the runs compared).
    window_source: str
    #: Idle dollars of the nodes billed on from the run's end to the window's end.
    cost_extension: float
    cost_total: float
    cost_per_completed_job: float

    def as_dict(self) -> dict[str, float | str | None]:
        """For summary.json (NaN cost per job, when no job completed, becomes null)."""
        per_job = (
            None
            if self.cost_per_completed_job != self.cost_per_completed_job
            else self.cost_per_completed_job
        )
        return {
            "accounting_window_s": self.window_s,
            "accounting_window": self.window_source,
            "cost_window_extension": self.cost_extension,
            "cost_total_window": self.cost_total,
            "cost_per_completed_job_window": per_job,
        }


def common_window(results: Sequence[SimulationResult]) -> tuple[int, str]:
    """The window's end (ms) and what it is: the horizon when every run has the same one, else the latest
    end among the runs."""
    return window_of([r.horizon_ms for r in results], [r.end_ms for r in results])


def window_of(horizons_ms: Sequence[int | None], ends_ms: Sequence[int]) -> tuple[int, str]:
    """``common_window`` from the runs' horizons and ends alone (runs recorded separately)."""
    horizons = set(horizons_ms)
    if len(horizons) == 1 and None not in horizons:
        (horizon,) = horizons
        assert horizon is not None
        return horizon, "horizon"
    return max(ends_ms, default=0), "latest end"


def billed_per_hour_at_end(result: SimulationResult) -> float:
    """Dollars per hour of the nodes still billed at the run's end: what billing on to a later window end
    costs per hour."""
    nodes = result.nodes
    return float(np.sum(nodes.price_per_hour[nodes.billed_end_ms >= result.end_ms]))


def window_cost(
    result: SimulationResult, cost_total: float, completed: int, window_ms: int, source: str
) -> WindowCost:
    """``cost_total`` (the run's own, to its end) plus its nodes still billed at the end, billed on to
    ``window_ms``."""
    extra_ms = max(0, window_ms - result.end_ms)
    extension = billed_per_hour_at_end(result) * extra_ms / MS_PER_HOUR
    total = cost_total + extension
    return WindowCost(
        window_s=window_ms / 1000.0,
        window_source=source,
        cost_extension=extension,
        cost_total=total,
        cost_per_completed_job=total / completed if completed else float("nan"),
    )
