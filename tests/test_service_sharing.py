"""GPU sharing reaches a service's latency (services/sharing.py), worked by hand.

The issue's case: one time-sliced H100 (α = slowdown 1.0 per extra pod) runs one replica that serves
μ = 10 requests/s alone and is offered λ = 5 requests/s; a batch pod shares the GPU for 2 of 4 hours.

* alone (2 h): M/M/1, P(T > t) = e^{-(μ-λ)t}, so p99 = ln(100)/(10 − 5) s = 0.92103 s = 921.03 ms;
* shared (2 h): speed 1/(1 + 1.0·1) = 0.5, μ = 5 = λ: saturated, p99 = ∞, every request late.

With a p99 target of 1000 ms the first half meets it and the second does not: attainment 2/4 = 50 %.
"""

from __future__ import annotations

import math

import pytest

from fleetlab.services.sharing import ServiceStretch, pool_rate, replica_speed, sharing_outcome

HOUR = 3600.0
P99_ALONE_MS = 1000.0 * math.log(100) / 5.0  # 921.034...


def two_halves(shared_speed: float) -> list[ServiceStretch]:
    return [
        ServiceStretch(2 * HOUR, 5.0, 10.0, (1.0,)),
        ServiceStretch(2 * HOUR, 5.0, 10.0, (shared_speed,)),
    ]


def test_time_sliced_h100_halves_capacity_and_slo_attainment() -> None:
    speed = replica_speed("time-slicing", pods_on_gpu=2, slowdown_per_extra_pod=1.0)
    assert speed == 0.5
    out = sharing_outcome(two_halves(speed), p99_target_ms=1000.0)
    assert out.p99_ms[0] == pytest.approx(P99_ALONE_MS, rel=1e-6)
    assert math.isinf(out.p99_ms[1])
    assert out.slo_met == (True, False)
    assert out.slo_attainment_pct == pytest.approx(50.0)
    assert out.saturated_pct == pytest.approx(50.0)
    # only the unshared half has a finite p99: mean 921.03 ms, no spread
    assert (out.p99_ms_mean, out.p99_ms_std) == (pytest.approx(P99_ALONE_MS, rel=1e-6), pytest.approx(0.0))


def test_milder_slowdown_still_misses_and_spreads_latency() -> None:
    # α = 0.5: speed 1/1.5, μ = 6.667, p99 = ln(100)/(6.667 − 5) = 2.7631 s — late, not saturated.
    speed = replica_speed("time-slicing", pods_on_gpu=2, slowdown_per_extra_pod=0.5)
    out = sharing_outcome(two_halves(speed), p99_target_ms=1000.0)
    shared_ms = 1000.0 * math.log(100) / (10.0 / 1.5 - 5.0)
    assert out.p99_ms[1] == pytest.approx(shared_ms, rel=1e-6)
    assert out.slo_attainment_pct == pytest.approx(50.0) and out.saturated_pct == 0.0
    # equal halves: mean (921.03 + 2763.10)/2 = 1842.07 ms, standard deviation half the gap, 921.03 ms
    assert out.p99_ms_mean == pytest.approx((P99_ALONE_MS + shared_ms) / 2, rel=1e-6)
    assert out.p99_ms_std == pytest.approx((shared_ms - P99_ALONE_MS) / 2, rel=1e-6)


def test_fractions_mps_and_mig() -> None:
    # a KAI / gpu_milli share time-shares like time-slicing: three pods on the GPU, α = 1 → 1/3
    assert replica_speed("fraction", pods_on_gpu=3) == pytest.approx(1 / 3)
    # MPS with 2 replicas: half the GPU whatever the other client does → μ = 5 = λ, saturated all 4 h
    mps = replica_speed("mps", mps_replicas=2)
    out = sharing_outcome([ServiceStretch(4 * HOUR, 5.0, 10.0, (mps,))], p99_target_ms=1000.0)
    assert out.slo_attainment_pct == 0.0
    # MIG 4g (4 of 7 compute slices): μ = 40/7 = 5.714 > 5, p99 = ln(100)/(40/7 − 5) = 6.4472 s
    mig = replica_speed("mig", mig_compute_slices=4)
    out = sharing_outcome([ServiceStretch(HOUR, 5.0, 10.0, (mig,))], p99_target_ms=10_000.0)
    assert out.p99_ms[0] == pytest.approx(1000.0 * math.log(100) / (40 / 7 - 5), rel=1e-6)
    assert out.slo_attainment_pct == 100.0


def test_replicas_slowed_differently_are_pooled_at_their_mean_rate() -> None:
    # two replicas, one alone (1.0) and one sharing (0.5): 2 servers at (10 + 5)/2 = 7.5 requests/s
    assert pool_rate(10.0, [1.0, 0.5]) == (2, 7.5)
    assert pool_rate(10.0, []) == (0, 10.0)
    with pytest.raises(ValueError):
        replica_speed("time-slicing", pods_on_gpu=0)
