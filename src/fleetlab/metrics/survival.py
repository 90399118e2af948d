"""Kaplan–Meier estimates for waits that may be censored (jobs still pending when the record ends).

A job that never started tells us only that its wait is at least its follow-up time; dropping it biases
every percentile low, counting it as starting at the end biases them too. The product-limit estimator uses
it exactly as far as it is known. Quantiles the curve never reaches are reported as lower bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Estimate:
    """A quantile or mean: ``value`` (None with no data) and whether it is only a lower bound (``≥``)."""

    value: float | None
    lower_bound: bool = False

    def text(self, fmt: str = "{:.0f}") -> str:
        """``≥ 12`` for a lower bound, ``12`` for an estimate, ``—`` for no data."""
        if self.value is None:
            return "—"
        return ("≥ " if self.lower_bound else "") + fmt.format(self.value)


@dataclass(frozen=True)
class KaplanMeier:
    """The survival curve S(t) = P(wait > t) as steps: S drops to ``survival[i]`` at ``times[i]``."""

    times: FloatArray
    survival: FloatArray
    #: The largest follow-up time seen (an event or a censoring); the curve is unknown past it.
    horizon: float
    observed: int
    censored: int

    def quantile(self, q: float) -> Estimate:
        """The smallest t with 1 − S(t) ≥ q; a lower bound (``horizon``) when the curve never gets there."""
        if self.observed + self.censored == 0:
            return Estimate(None)
        reached = np.nonzero(1.0 - self.survival >= q - 1e-12)[0]
        if len(reached):
            return Estimate(float(self.times[reached[0]]))
        return Estimate(self.horizon, lower_bound=True)

    def restricted_mean(self) -> Estimate:
        """∫ S(t) dt over [0, horizon]: the plain mean without censoring, a lower bound with it."""
        if self.observed + self.censored == 0:
            return Estimate(None)
        edges = np.concatenate(([0.0], self.times, [self.horizon]))
        levels = np.concatenate(([1.0], self.survival))
        widths = np.diff(np.clip(edges, 0.0, self.horizon))
        area = float(np.dot(widths, levels))
        tail_open = bool(len(self.survival) == 0 or self.survival[-1] > 1e-12)
        return Estimate(area, lower_bound=tail_open and self.censored > 0)


def kaplan_meier(durations: FloatArray, observed: NDArray[np.bool_]) -> KaplanMeier:
    """Product-limit estimator; at tied times events come before censorings (the usual convention)."""
    d = np.asarray(durations, dtype=np.float64)
    e = np.asarray(observed, dtype=bool)
    n = len(d)
    if n == 0:
        return KaplanMeier(np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.float64), 0.0, 0, 0)
    times, inverse = np.unique(d, return_inverse=True)
    deaths = np.bincount(inverse, weights=e.astype(np.float64), minlength=len(times))
    leaving = np.bincount(inverse, minlength=len(times)).astype(np.float64)
    at_risk = n - np.concatenate(([0.0], np.cumsum(leaving)[:-1]))
    factors = np.where(at_risk > 0, 1.0 - deaths / np.where(at_risk > 0, at_risk, 1.0), 1.0)
    survival = np.asarray(np.cumprod(factors), dtype=np.float64)
    has_event = deaths > 0
    return KaplanMeier(
        times=times[has_event],
        survival=survival[has_event],
        horizon=float(d.max()),
        observed=int(e.sum()),
        censored=int(n - e.sum()),
    )
