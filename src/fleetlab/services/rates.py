"""Request rates over time for a service's rate curve, evaluated at many times at once."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fleetlab.model.service import ConstantRate, DiurnalRate, RateCurve, TraceRate

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0


def diurnal_rps(t_s: NDArray[np.float64], curve: DiurnalRate) -> NDArray[np.float64]:
    """The documented sinusoid: mean ``mean_rps``, peak ``mean_rps·(1+amplitude)`` at ``peak_hour``."""
    hour = curve.start_hour + t_s / SECONDS_PER_HOUR
    phase = 2.0 * np.pi * (hour - curve.peak_hour) / HOURS_PER_DAY
    return np.asarray(curve.mean_rps * (1.0 + curve.amplitude * np.cos(phase)), dtype=np.float64)


def trace_rps(t_s: NDArray[np.float64], curve: TraceRate) -> NDArray[np.float64]:
    """Step function of the trace: each row's rate holds from its time to the next row's; 0 before the
    first row."""
    times = np.asarray(curve.times_s, dtype=np.float64)
    values = np.asarray(curve.rps, dtype=np.float64)
    if len(times) == 0:
        raise ValueError(f"rate trace {curve.path} has no rows")
    index = np.searchsorted(times, t_s, side="right") - 1
    return np.asarray(np.where(index >= 0, values[np.maximum(index, 0)], 0.0), dtype=np.float64)


def rate_at(curve: RateCurve, t_s: ArrayLike) -> NDArray[np.float64]:
    """Requests per second at each time (seconds from the start of the run)."""
    t = np.asarray(t_s, dtype=np.float64)
    if isinstance(curve, ConstantRate):
        return np.full(t.shape, curve.rps, dtype=np.float64)
    if isinstance(curve, DiurnalRate):
        return diurnal_rps(t, curve)
    return trace_rps(t, curve)
