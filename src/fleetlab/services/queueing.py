"""Latency of a pool of identical replicas fed by Poisson requests: M/M/c exactly, M/D/c approximately.

Every function is vectorised over arrays of (arrival rate, servers) so a whole run's time series is
evaluated at once. A queue with ``λ >= c·μ`` (or no server) is saturated: its wait grows without bound,
so its percentiles are ``inf`` and every request counts as late.

M/M/c (Erlang C, FCFS): the waiting time has an atom ``1 - C`` at zero and otherwise is exponential with
rate ``θ = cμ - λ``, so ``P(W > t) = C·exp(-θt)``; the response time ``T = W + S`` (``S ~ Exp(μ)``) has
``P(T > t) = exp(-μt)·(1 + C·μt·φ((θ-μ)t))`` with ``φ(x) = (1 - e^-x)/x`` (written with ``expm1`` so it
stays exact as ``θ → μ``). Percentiles solve ``P(T > t) = 1 - q`` by bisection.

M/D/c (deterministic service ``d = 1/μ``): Cosmetatos' approximation of the mean wait,
``Wq(M/D/c) ≈ ½·Wq(M/M/c)·(1 + (1-ρ)(c-1)(√(4+5c) - 2)/(16ρc))`` (G. P. Cosmetatos, "Approximate
explicit formulae for the average queueing time in the processes (M/D/r) and (D/M/r)", INFOR 13(3),
1975, pp. 328–331); exact for c = 1 (the Pollaczek–Khinchine mean ``ρd/(2(1-ρ))``). For percentiles the
delay probability is taken as Erlang C and the conditional wait as exponential with mean ``Wq/C`` — the
usual two-moment shape of GI/G/c approximations (W. Whitt, "Approximations for the GI/G/m queue",
Production and Operations Management 2(2), 1993) — so ``T = d + W``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
Discipline = Literal["M/M/c", "M/D/c"]
#: Bisection steps for the M/M/c percentile: the bracket shrinks by 2^-80, past float64 resolution.
BISECTION_STEPS = 80


def _arrays(lam: ArrayLike, mu: ArrayLike, c: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    lam_a, mu_a, c_a = np.broadcast_arrays(
        np.asarray(lam, dtype=np.float64), np.asarray(mu, dtype=np.float64), np.asarray(c, dtype=np.float64)
    )
    if np.any(lam_a < 0) or np.any(mu_a <= 0) or np.any(c_a < 0) or np.any(c_a != np.floor(c_a)):
        raise ValueError("need arrival rate >= 0, service rate > 0 and a whole number of servers >= 0")
    return lam_a.astype(np.float64), mu_a.astype(np.float64), c_a.astype(np.float64)


def saturated(lam: ArrayLike, mu: ArrayLike, c: ArrayLike) -> NDArray[np.bool_]:
    """True where the queue has no steady state: offered load ``λ/μ`` at or above the ``c`` servers."""
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    return np.asarray((c_a <= 0) | (lam_a >= c_a * mu_a))


def erlang_c(lam: ArrayLike, mu: ArrayLike, c: ArrayLike) -> FloatArray:
    """Probability an arriving request waits, ``C(c, λ/μ)``; 1 where saturated, 0 where ``λ = 0``.

    Computed through the Erlang B recursion ``B(k) = aB(k-1)/(k + aB(k-1))`` (no factorials, so it is
    stable for thousands of servers) and ``C = B/(1 - ρ(1 - B))``.
    """
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    a = lam_a / mu_a
    b = np.ones_like(a)
    top = int(c_a.max()) if c_a.size else 0
    for k in range(1, top + 1):
        step = a * b / (k + a * b)
        b = np.where(k <= c_a, step, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(c_a > 0, a / np.maximum(c_a, 1.0), np.inf)
        out = b / (1.0 - rho * (1.0 - b))
    out = np.where(lam_a == 0, 0.0, out)
    return np.asarray(np.where(saturated(lam_a, mu_a, c_a), 1.0, out), dtype=np.float64)


def mean_wait(lam: ArrayLike, mu: ArrayLike, c: ArrayLike, discipline: Discipline = "M/M/c") -> FloatArray:
    """Mean time in queue (seconds when rates are per second); ``inf`` where saturated."""
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    sat = saturated(lam_a, mu_a, c_a)
    theta = np.where(sat, 1.0, c_a * mu_a - lam_a)
    wq = erlang_c(lam_a, mu_a, c_a) / theta
    if discipline == "M/D/c":
        wq = wq * cosmetatos_factor(lam_a, mu_a, c_a)
    return np.asarray(np.where(sat, np.inf, wq), dtype=np.float64)


def cosmetatos_factor(lam: ArrayLike, mu: ArrayLike, c: ArrayLike) -> FloatArray:
    """``Wq(M/D/c) / Wq(M/M/c)`` by Cosmetatos (1975): ½ for one server, a little more for several."""
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    servers = np.maximum(c_a, 1.0)
    rho = lam_a / (servers * mu_a)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = (1.0 - rho) * (servers - 1.0) * (np.sqrt(4.0 + 5.0 * servers) - 2.0) / (16.0 * rho * servers)
    corr = np.where((rho > 0) & (rho < 1), corr, 0.0)
    return np.asarray(0.5 * (1.0 + corr), dtype=np.float64)


def wait_tail(t: ArrayLike, lam: ArrayLike, mu: ArrayLike, c: ArrayLike) -> FloatArray:
    """M/M/c ``P(W > t) = C·exp(-(cμ - λ)t)``; 1 where saturated."""
    t_a = np.asarray(t, dtype=np.float64)
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    sat = saturated(lam_a, mu_a, c_a)
    theta = np.where(sat, 0.0, c_a * mu_a - lam_a)
    tail = erlang_c(lam_a, mu_a, c_a) * np.exp(-theta * t_a)
    return np.asarray(np.where(sat, 1.0, tail), dtype=np.float64)


def _phi(x: FloatArray) -> FloatArray:
    """``(1 - e^-x)/x``, 1 at x = 0, without cancellation near 0."""
    safe = np.where(x == 0, 1.0, x)
    return np.asarray(np.where(x == 0, 1.0, -np.expm1(-safe) / safe), dtype=np.float64)


def response_tail(
    t: ArrayLike, lam: ArrayLike, mu: ArrayLike, c: ArrayLike, discipline: Discipline = "M/M/c"
) -> FloatArray:
    """``P(T > t)`` for the response time (wait + service); 1 where saturated."""
    t_a = np.asarray(t, dtype=np.float64)
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    sat = saturated(lam_a, mu_a, c_a)
    cw = erlang_c(lam_a, mu_a, c_a)
    if discipline == "M/D/c":
        d = 1.0 / mu_a
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(cw > 0, cw / mean_wait(lam_a, mu_a, c_a, "M/D/c"), np.inf)
            tail = np.where(t_a < d, 1.0, cw * np.exp(-rate * np.maximum(t_a - d, 0.0)))
        return np.asarray(np.where(sat, 1.0, np.nan_to_num(tail, nan=0.0)), dtype=np.float64)
    theta = np.where(sat, mu_a, c_a * mu_a - lam_a)
    return np.asarray(np.where(sat, 1.0, _mmc_tail(t_a, mu_a, cw, theta)), dtype=np.float64)


def _mmc_tail(t: FloatArray, mu: FloatArray, cw: FloatArray, theta: FloatArray) -> FloatArray:
    tail = np.exp(-mu * t) * (1.0 + cw * mu * t * _phi((theta - mu) * t))
    return np.asarray(np.clip(tail, 0.0, 1.0), dtype=np.float64)


def response_percentile(
    q: float, lam: ArrayLike, mu: ArrayLike, c: ArrayLike, discipline: Discipline = "M/M/c"
) -> FloatArray:
    """The ``q`` quantile (0 < q < 1) of the response time; ``inf`` where saturated."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"percentile level must be between 0 and 1, got {q}")
    lam_a, mu_a, c_a = _arrays(lam, mu, c)
    sat = saturated(lam_a, mu_a, c_a)
    cw = erlang_c(lam_a, mu_a, c_a)
    miss = 1.0 - q
    if discipline == "M/D/c":
        wq = mean_wait(lam_a, mu_a, c_a, "M/D/c")
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = np.where(cw > miss, (wq / cw) * np.log(cw / miss), 0.0)
        return np.asarray(np.where(sat, np.inf, 1.0 / mu_a + wait), dtype=np.float64)
    theta = np.where(sat, 1.0, c_a * mu_a - lam_a)
    # P(T > t) <= P(W > t/2) + P(S > t/2): both at most miss/2 at this t.
    t_service = -np.log(miss / 2.0) / mu_a
    t_wait = np.maximum(np.log(np.maximum(2.0 * cw / miss, 1.0)), 0.0) / theta
    lo = np.zeros_like(lam_a)
    hi = 2.0 * np.maximum(t_service, t_wait)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        above = _mmc_tail(mid, mu_a, cw, theta) > miss
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return np.asarray(np.where(sat, np.inf, 0.5 * (lo + hi)), dtype=np.float64)
