"""Step functions over time built from intervals, and how long a condition on them held inside a window.

Used where a history is read as "what was running, and how much of each resource it held, at every
instant": sums of ``[start, stop)`` intervals become a step function (``steps``); the time a condition on it
held inside each of many windows comes from a prefix integral (``time_where``) or, when the condition
depends on the window's own job (does *this* job fit?), from every step the window spans (``time_short``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
#: Window-step pairs expanded at once by ``time_short`` (bounds memory on long logs).
CHUNK_PAIRS = 2_000_000


@dataclass(frozen=True)
class Steps:
    """``levels[k]`` holds on ``[times[k], times[k + 1])`` (the last level to infinity); before
    ``times[0]`` the level is 0. ``levels`` is (k,) or (k, resources)."""

    times: FloatArray
    levels: FloatArray

    def at(self, t: FloatArray) -> FloatArray:
        """The level at each instant in ``t``."""
        index = np.searchsorted(self.times, t, side="right") - 1
        zero = np.zeros((len(t), *self.levels.shape[1:]))
        if not len(self.times):
            return zero
        picked = self.levels[np.clip(index, 0, None)]
        mask = (index >= 0).reshape((-1,) + (1,) * (self.levels.ndim - 1))
        return np.where(mask, picked, zero)


def steps(starts: FloatArray, stops: FloatArray, weights: FloatArray | None = None) -> Steps:
    """The sum of ``weights`` over the intervals ``[start, stop)`` covering each instant (empty intervals
    count nothing). ``weights`` is (n,) or (n, resources); None counts each interval as 1."""
    n = len(starts)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = stops > starts
    starts, stops, w = starts[keep], stops[keep], w[keep]
    times = np.concatenate((starts, stops))
    deltas = np.concatenate((w, -w))
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    unique, first = np.unique(times, return_index=True)
    if not len(unique):
        return Steps(np.zeros(0), np.zeros((0, *w.shape[1:])))
    summed = np.add.reduceat(deltas, first, axis=0)
    levels = np.cumsum(summed, axis=0)
    levels[np.abs(levels) < 1e-9] = 0.0  # float residue of +w - w
    return Steps(unique, levels)


def merge(*series: Steps) -> tuple[FloatArray, list[FloatArray]]:
    """Common breakpoints of several step functions and each one's level on every piece."""
    times = np.unique(np.concatenate([s.times for s in series])) if series else np.zeros(0)
    return times, [s.at(times) for s in series]


def time_where(times: FloatArray, flag: BoolArray, a: FloatArray, b: FloatArray) -> FloatArray:
    """For each window ``[a, b)``, how long ``flag`` (one value per piece ``[times[k], times[k + 1])``,
    false before ``times[0]`` and the last piece running to infinity) was true."""
    if not len(times):
        return np.zeros(len(a))
    width = np.diff(times)
    cumulative = np.concatenate(([0.0], np.cumsum(np.where(flag[:-1], width, 0.0))))

    def integral(t: FloatArray) -> FloatArray:
        k = np.searchsorted(times, t, side="right") - 1
        kc = np.clip(k, 0, None)
        inside = cumulative[kc] + np.where(flag[kc], t - times[kc], 0.0)
        return np.where(k >= 0, inside, 0.0)

    return np.maximum(integral(b) - integral(a), 0.0)


def time_short(
    times: FloatArray, free: FloatArray, need: FloatArray, a: FloatArray, b: FloatArray
) -> FloatArray:
    """For each window ``[a, b)`` (one per row of ``need``), how long some resource the window needs
    (``need`` > 0) had less free (``free``: one row per piece, one column per resource) than it needs;
    before ``times[0]`` nothing is short."""
    out = np.zeros(len(a))
    if not len(times) or not len(a):
        return out
    first = np.searchsorted(times, a, side="right") - 1
    last = np.searchsorted(times, b, side="left")  # pieces first..last-1 overlap [a, b)
    first = np.clip(first, 0, None)
    counts = np.maximum(last - first, 0)
    bounds = np.concatenate((times, [np.inf]))
    start = 0
    while start < len(a):
        stop = start + 1
        total = int(counts[start])
        while stop < len(a) and total + counts[stop] <= CHUNK_PAIRS:
            total += int(counts[stop])
            stop += 1
        c = counts[start:stop]
        job = np.repeat(np.arange(start, stop), c)
        piece = np.repeat(first[start:stop], c) + (np.arange(len(job)) - np.repeat(np.cumsum(c) - c, c))
        lo = np.maximum(bounds[piece], a[job])
        hi = np.minimum(bounds[piece + 1], b[job])
        wanted = need[job]
        short = np.any((wanted > 0) & (free[piece] < wanted - 1e-9), axis=1)
        out += np.bincount(job, np.where(short, np.maximum(hi - lo, 0.0), 0.0), minlength=len(out))
        start = stop
    return out
