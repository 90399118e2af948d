"""The queueing model against closed forms, a table value and a small discrete-event simulation."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from fleetlab.services.queueing import (
    cosmetatos_factor,
    erlang_c,
    mean_wait,
    response_percentile,
    response_tail,
    saturated,
    wait_tail,
)


def test_mm1_response_time_is_exponential_with_rate_mu_minus_lambda() -> None:
    lam, mu = 0.7, 1.3
    t = np.linspace(0.0, 20.0, 41)
    assert np.allclose(response_tail(t, lam, mu, 1), np.exp(-(mu - lam) * t), rtol=1e-12, atol=1e-15)
    for q in (0.5, 0.9, 0.99):
        assert response_percentile(q, lam, mu, 1) == pytest.approx(-np.log(1 - q) / (mu - lam), rel=1e-9)


def test_erlang_c_matches_the_erlang_table_value_for_ten_servers_and_eight_erlangs() -> None:
    # Standard Erlang C table: 10 agents, 8 Erlangs offered -> P(wait) = 0.4092.
    assert float(erlang_c(8.0, 1.0, 10)) == pytest.approx(0.4092, abs=5e-5)


def test_erlang_c_is_stable_for_thousands_of_servers() -> None:
    value = float(erlang_c(1900.0, 1.0, 2000))
    assert 0.0 < value < 1.0
    assert np.isfinite(float(response_percentile(0.99, 1900.0, 1.0, 2000)))


def test_md1_mean_wait_is_pollaczek_khinchine() -> None:
    lam, mu = 0.6, 1.0
    rho = lam / mu
    assert float(mean_wait(lam, mu, 1, "M/D/c")) == pytest.approx(rho / (2 * mu * (1 - rho)), rel=1e-12)
    assert float(cosmetatos_factor(lam, mu, 1)) == 0.5


def test_mmc_wait_tail_and_mean_are_consistent() -> None:
    lam, mu, c = 5.0, 1.0, 7
    cw = float(erlang_c(lam, mu, c))
    assert float(wait_tail(0.0, lam, mu, c)) == pytest.approx(cw)
    assert float(mean_wait(lam, mu, c)) == pytest.approx(cw / (c * mu - lam))


def test_response_tail_is_continuous_where_wait_rate_equals_service_rate() -> None:
    # theta = c*mu - lambda = mu: the tail is (1 + C*mu*t) e^{-mu t}; neighbours must agree.
    mu, c = 1.0, 2
    lam = c * mu - mu
    t = np.array([0.5, 3.0, 10.0])
    exact = np.exp(-mu * t) * (1 + float(erlang_c(lam, mu, c)) * mu * t)
    assert np.allclose(response_tail(t, lam, mu, c), exact, rtol=1e-12)
    assert np.allclose(response_tail(t, lam + 1e-9, mu, c), exact, rtol=1e-6)


def test_saturated_queues_miss_every_target() -> None:
    lam = np.array([10.0, 12.0, 1.0])
    c = np.array([10, 10, 0])
    assert saturated(lam, 1.0, c).tolist() == [True, True, True]
    assert np.all(np.isinf(response_percentile(0.99, lam, 1.0, c)))
    assert np.all(response_tail(1e6, lam, 1.0, c) == 1.0)
    assert np.all(np.isinf(mean_wait(lam, 1.0, c, "M/D/c")))


def test_percentiles_are_vectorised_and_monotone_in_servers() -> None:
    c = np.arange(4, 20)
    p99 = response_percentile(0.99, 3.5, 1.0, c)
    assert p99.shape == c.shape
    assert np.all(np.diff(p99) <= 1e-12)
    assert np.all(response_percentile(0.5, 3.5, 1.0, c) < p99)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError):
        erlang_c(1.0, 0.0, 2)
    with pytest.raises(ValueError):
        response_percentile(1.0, 1.0, 2.0, 1)


def _fcfs_responses(arrivals: np.ndarray, services: np.ndarray, c: int) -> np.ndarray:
    """A discrete-event FCFS c-server queue: each arrival takes the earliest free server."""
    free = [0.0] * c
    out = np.empty(len(arrivals))
    for i, (a, s) in enumerate(zip(arrivals.tolist(), services.tolist(), strict=True)):
        start = max(a, heapq.heappop(free))
        heapq.heappush(free, start + s)
        out[i] = start + s - a
    return out


def test_mmc_p99_and_md_c_mean_wait_agree_with_a_discrete_event_simulation() -> None:
    rng = np.random.default_rng(1)
    lam, mu, c, n = 2.25, 1.0, 3, 300_000
    arrivals = np.cumsum(rng.exponential(1 / lam, n))
    exp_resp = _fcfs_responses(arrivals, rng.exponential(1 / mu, n), c)[n // 10 :]
    assert np.percentile(exp_resp, 99) == pytest.approx(
        float(response_percentile(0.99, lam, mu, c)), rel=0.05
    )
    assert np.percentile(exp_resp, 50) == pytest.approx(float(response_percentile(0.5, lam, mu, c)), rel=0.05)
    det_resp = _fcfs_responses(arrivals, np.full(n, 1 / mu), c)[n // 10 :]
    wait = det_resp.mean() - 1 / mu
    assert wait == pytest.approx(float(mean_wait(lam, mu, c, "M/D/c")), rel=0.06)
    # The percentile shape is an approximation: within 15 % at this load.
    p99 = float(response_percentile(0.99, lam, mu, c, "M/D/c"))
    assert np.percentile(det_resp, 99) == pytest.approx(p99, rel=0.15)
