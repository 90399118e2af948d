"""The calibrated replay under several seeds: where the scenario draws at random (a delay drawn per job,
failures between repairs, spot reclaims, an autoscaler's ties and boots) one seed's figures overstate or
understate the fit, so each part is judged on the mean over seeds and says how many seeds pass
(docs/calibration.md, "Several seeds")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fleetlab.experiment.calibration_compare import MetricRow
from fleetlab.model.scenario import Scenario


def random_parts(scenario: Scenario) -> list[str]:
    """What the scenario draws from its seed; an empty list: every seed replays the same."""
    parts = []
    if scenario.scheduler.scheduling_delay is not None:
        parts.append("a scheduling delay drawn per job")
    pools = scenario.cluster.pools
    if any(p.failures is not None and p.failures.mtbf is not None for p in pools):
        parts.append("node failures drawn between repairs")
    if any(p.interruptions is not None for p in pools):
        parts.append("spot interruptions")
    if any(p.autoscaling is not None for p in pools):
        parts.append("an autoscaler (its expander ties and boot times)")
    return parts


@dataclass(frozen=True)
class SeedReplay:
    """One seed's replay of the whole history: the fit part's rows and the validation part's."""

    seed: int
    rows: list[MetricRow]
    validation: list[MetricRow] | None

    def as_dict(self) -> dict[str, Any]:
        """What calibration.json shows under ``seeds``."""
        later = None if self.validation is None else [r.as_dict() for r in self.validation]
        return {"seed": self.seed, "rows": [r.as_dict() for r in self.rows], "validation_rows": later}


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def mean_rows(per_seed: Sequence[Sequence[MetricRow]]) -> list[MetricRow]:
    """Per row (same metric and class in every seed): the mean simulated value and the mean error over
    the seeds that have one, judged against the tolerance (None when no seed's row is judged); a lower
    bound on any seed stays a lower bound. One seed: its rows unchanged."""
    if len(per_seed) == 1:
        return list(per_seed[0])
    out = []
    for rows in zip(*per_seed, strict=True):
        first = rows[0]
        assert all((r.metric, r.job_class) == (first.metric, first.job_class) for r in rows)
        error = _mean([r.error for r in rows])
        judged = any(r.within is not None for r in rows) and error is not None
        tolerance = max(r.tolerance for r in rows)
        out.append(
            replace(
                first, simulated=_mean([r.simulated for r in rows]), error=error, tolerance=tolerance,
                within=error <= tolerance if judged and error is not None else None,
                simulated_lower_bound=any(r.simulated_lower_bound for r in rows),
            )
        )  # fmt: skip
    return out


def seed_summary(replays: Sequence[SeedReplay], part: str) -> list[dict[str, Any]]:
    """Per row of ``part`` (``fit`` or ``validation``): the error on each seed, their mean, min and max,
    and how many seeds are within the tolerance (calibration.json ``seed_summary``)."""
    per_seed = [r.rows if part == "fit" else r.validation for r in replays]
    if any(rows is None for rows in per_seed):
        return []
    out = []
    for rows in zip(*[rows for rows in per_seed if rows is not None], strict=True):
        errors = [r.error for r in rows]
        known = [e for e in errors if e is not None]
        out.append(
            {"part": part, "job_class": rows[0].job_class, "metric": rows[0].metric,
             "measured": rows[0].measured, "tolerance": rows[0].tolerance,
             "seeds": [r.seed for r in replays], "errors": errors,
             "mean": _mean(errors), "min": min(known, default=None), "max": max(known, default=None),
             "within_seeds": sum(r.within is True for r in rows),
             "judged_seeds": sum(r.within is not None for r in rows)}
        )  # fmt: skip
    return out
