"""Which jobs of the fit part score a calibration candidate (docs/calibration.md, "Which jobs score").

With an inferred policy a candidate is judged out of sample inside the fit part, the way the validation
judges the final fit: limits (and the drawn delay) are read from what the record showed at an origin and
the jobs submitted after it score. One origin judges on one stretch of weeks, and a stretch can be
unlike the rest (on HPC2N the jobs between a third and a half of the log waited a quarter as long at the
95th percentile as those before and after): a search judged on it alone picks the knobs of that
stretch. So the fit part's submissions are cut in thirds and each candidate is judged on two *folds*
(an expanding window): read from the first third, judged on the second; read from the first two, judged
on the last. Each fold replays the fit part only up to the end of the jobs it judges (the record as it
stood then, so the measured and the replayed waits are censored alike), and the candidate is judged on
the folds' scored jobs together (``pooled_wait_score``: one KS distance, one p95 over them all), as the
validation judges its one set of jobs: a quiet stretch weighs by its jobs, not by the ratio of its small
p95.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fleetlab.experiment.calibration_compare import BoolArray, Measured, MetricRow, Side, compare_class
from fleetlab.experiment.history_split import history_until, split_instant
from fleetlab.model.history import History

#: Origins of the folds, as shares of the fit part's submissions: each fold reads before its origin and is
#: judged on the jobs submitted from it up to the next origin (the last: up to the fit part's end).
FOLD_ORIGINS = (1.0 / 3.0, 2.0 / 3.0)
#: The last origin: with only one fold (too few waits for the first), the rolling origin as it was.
INNER_FIT_SHARE = FOLD_ORIGINS[-1]
#: A fold judges only with at least this many measured waits after its origin (else: the fold is left
#: out; with none left, every job of the fit part scores, in sample).
MIN_SCORED_WAITS = 20


@dataclass(frozen=True)
class ScoringFold:
    """One origin: the part replayed (the fit part up to ``until_s``), where limits are read for it
    (``source``: before ``read_until_s``; None: the part itself) and the jobs that score it."""

    history: History = field(compare=False, repr=False)
    read_until_s: float | None
    until_s: float | None
    scored_jobs: int
    source: History | None = field(default=None, compare=False, repr=False)

    def scored(self, measured: Measured) -> BoolArray | None:
        """The mask of the scored jobs of ``measured`` (this fold's part; None: every job)."""
        return None if self.read_until_s is None else measured.submit >= self.read_until_s

    def as_dict(self) -> dict[str, Any]:
        return {"read_until_s": self.read_until_s, "until_s": self.until_s, "scored_jobs": self.scored_jobs}


@dataclass(frozen=True)
class FitScoring:
    """How the fit part scores a candidate: ``in-sample`` (one fold, every job of the fit part, limits read
    from the whole of it) or ``rolling-origin`` (one fold per origin, each judged after its origin)."""

    method: str
    folds: tuple[ScoringFold, ...]
    reason: str

    @property
    def read_until_s(self) -> float | None:
        """The last fold's origin (None: in sample)."""
        return self.folds[-1].read_until_s

    @property
    def scored_jobs(self) -> int:
        """The jobs that score a candidate, over the folds (each job scores in one fold at most)."""
        return sum(f.scored_jobs for f in self.folds)

    def as_dict(self) -> dict[str, Any]:
        """What calibration.json shows under ``fit_scoring``."""
        return {"method": self.method, "read_until_s": self.read_until_s, "scored_jobs": self.scored_jobs,
                "folds": [f.as_dict() for f in self.folds], "reason": self.reason}  # fmt: skip


def _fold(part: History, origin: float, until: float | None) -> ScoringFold | None:
    """The fold judged on ``part``'s jobs submitted at or after ``origin``; None when fewer than
    MIN_SCORED_WAITS of them have a measured wait or none before it has."""
    measured = Measured.of(part)
    later = (measured.submit >= origin) & measured.known
    earlier = (measured.submit < origin) & measured.known
    if origin >= float(part.end_s) or int(later.sum()) < MIN_SCORED_WAITS or not earlier.any():
        return None
    scored = int((measured.submit >= origin).sum())
    return ScoringFold(part, origin, until, scored, source=history_until(part, origin))


def fit_scoring(fit_history: History, inferred: bool, horizon: float | None = None) -> FitScoring:
    """Rolling origin where the policy is inferred (module docstring): a limit read from the record is
    judged on jobs it was not read from, on two stretches of the fit part where each has enough measured
    waits, on the later one alone where only it has; in sample otherwise (a recorded policy or a latency
    reads nothing from the jobs, and every job of the fit part scores). ``horizon``: where the replays of
    the whole fit part stop (None: its record's end)."""
    every = len(Measured.of(fit_history).ids)
    whole = ScoringFold(fit_history, None, horizon, every)
    if not inferred:
        return FitScoring("in-sample", (whole,), "no inferred policy: nothing is read from the jobs")
    origins = [split_instant(fit_history, share) for share in FOLD_ORIGINS]
    last = _fold(fit_history, origins[-1], horizon)
    if last is None:
        return FitScoring(
            "in-sample", (whole,),
            f"fewer than {MIN_SCORED_WAITS} measured waits after the fit part's earlier "
            f"{INNER_FIT_SHARE:.0%} of submissions: scored on every job of the fit part",
        )  # fmt: skip
    folds = [last]
    for origin, until in zip(origins[-2::-1], origins[:0:-1], strict=True):
        earlier = _fold(history_until(fit_history, until), origin, until) if origin < until else None
        if earlier is None:
            break
        folds.insert(0, earlier)
    words = "; ".join(
        f"read before {f.read_until_s:.0f} s, judged on the {f.scored_jobs} job(s) submitted from then"
        + (f" to {f.until_s:.0f} s" if f is not last else " to the fit part's end")
        for f in folds
    )
    return FitScoring(
        "rolling-origin", tuple(folds),
        f"inferred limits read out of sample in {len(folds)} fold(s) of the fit part ({words}); each "
        "candidate is judged on their scored jobs together",
    )  # fmt: skip


def pooled_side(sides: list[Side]) -> Side:
    """The folds' scored jobs as one set (waits, starts, known; hours summed; no makespan): a candidate is
    judged on them together, as the validation judges its part, so a fold whose jobs waited little (a
    quiet stretch) weighs by its jobs, not by the ratio of its small p95."""
    if len(sides) == 1:
        return sides[0]
    return Side(
        np.concatenate([s.waits for s in sides]), np.concatenate([s.started for s in sides]),
        sum(s.gpu_hours for s in sides), None, np.concatenate([s.known for s in sides]),
        sum(s.cpu_hours for s in sides),
    )  # fmt: skip


def pooled_wait_score(sides: list[tuple[Side, Side]], tol: dict[str, float]) -> dict[str, float]:
    """The fit's objective for a candidate: the worse of its KS distance and its p95 relative error
    (``p95_rel_error``), each over its tolerance, over the scored jobs of every fold pooled (each job
    scores in one fold at most), as the validation judges its one set of jobs. ``sides``: per fold, the
    measured and the replayed side of its scored jobs."""
    measured, simulated = pooled_side([m for m, _ in sides]), pooled_side([s for _, s in sides])
    rows = {r.metric: r for r in compare_class("all", measured, simulated, tol)}
    ks = rows["wait_ks"].error or 0.0
    rel = p95_rel_error(rows["wait_p95_s"])
    score = max(ks / tol["wait_ks"], (rel or 0.0) / tol["wait_quantile_rel"])
    out = {"wait_ks": ks, "score": score}
    if rel is not None:
        out["wait_p95_rel"] = rel
    return out


def p95_rel_error(p95: MetricRow) -> float | None:
    """|replayed − measured| / measured p95. A replayed p95 that is a lower bound (the replay left more
    than 5 % of the jobs waiting at its end) at or above the measured one is at least that far off and
    counts so — else a backlog that never clears would be judged by KS alone; any other lower bound, on
    either side, gives None (the p95 then counts only through KS)."""
    m, s = p95.measured, p95.simulated
    if m is None or s is None or p95.measured_lower_bound:
        return None
    if not p95.simulated_lower_bound:
        return abs(s - m) / m if m else (0.0 if s == m else 1.0)
    return (s - m) / m if m and s >= m else None
