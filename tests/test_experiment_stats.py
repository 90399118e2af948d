"""Student-t intervals over seeds and paired differences, checked against scipy on known samples."""

from __future__ import annotations

import math

import pytest

from fleetlab.experiment.stats import (
    MetricComparison,
    compare_variants,
    mean_interval,
    paired_difference,
    t_quantile,
    verdict,
)

scipy_stats = pytest.importorskip("scipy.stats")

SAMPLES = [
    [12.0, 15.5, 9.25, 14.0, 11.75],
    [3.0, 3.0, 3.5],
    [100.0, 250.0],
    [0.41, 0.39, 0.44, 0.40, 0.43, 0.38, 0.45, 0.42, 0.37, 0.46],
]


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 29, 120])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_t_quantile_matches_scipy(df: int, p: float) -> None:
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-10)
    assert t_quantile(1 - p, df) == pytest.approx(scipy_stats.t.ppf(1 - p, df), rel=1e-10)


@pytest.mark.parametrize("values", SAMPLES)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_mean_interval_matches_scipy_t_interval(values: list[float], confidence: float) -> None:
    got = mean_interval(values, confidence)
    low, high = scipy_stats.t.interval(
        confidence, len(values) - 1, loc=sum(values) / len(values), scale=scipy_stats.sem(values)
    )
    assert got.mean == pytest.approx(sum(values) / len(values))
    assert (got.low, got.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert got.n == len(values)


def test_paired_difference_matches_scipy_ttest_rel_interval() -> None:
    baseline = {1: 50.0, 2: 61.0, 3: 47.5, 4: 70.0, 5: 55.0, 6: 66.0}
    variant = {1: 46.0, 2: 58.5, 3: 45.0, 4: 64.0, 5: 53.5, 6: 61.0, 7: 999.0}  # seed 7 has no pair
    seeds = sorted(baseline)
    got = paired_difference(variant, baseline)
    ci = scipy_stats.ttest_rel([variant[s] for s in seeds], [baseline[s] for s in seeds]).confidence_interval(
        0.95
    )
    assert got.n == 6
    assert (got.low, got.high) == (pytest.approx(ci.low, rel=1e-9), pytest.approx(ci.high, rel=1e-9))
    assert got.excludes_zero  # a consistent small drop is significant once seeds are paired
    unpaired = mean_interval([variant[s] for s in seeds])
    assert unpaired.low < mean_interval([baseline[s] for s in seeds]).high  # unpaired intervals overlap


def test_single_seed_and_nan_values_give_no_interval() -> None:
    one = mean_interval([4.0])
    assert one.mean == 4.0 and math.isnan(one.low) and math.isnan(one.high)
    assert not paired_difference({1: 5.0}, {1: 4.0}).excludes_zero
    assert mean_interval([1.0, float("nan"), 3.0]).n == 2


def test_comparisons_flag_not_significant_and_name_the_direction() -> None:
    samples = {
        "base": {
            1: {"cost_total": 10.0, "jobs_completed": 5},
            2: {"cost_total": 12.0, "jobs_completed": 6},
            3: {"cost_total": 11.0, "jobs_completed": 5},
        },
        "noisy": {
            1: {"cost_total": 13.0, "jobs_completed": 5},
            2: {"cost_total": 10.0, "jobs_completed": 6},
            3: {"cost_total": 11.5, "jobs_completed": 5},
        },
        "cheaper": {
            1: {"cost_total": 8.0, "jobs_completed": 7},
            2: {"cost_total": 10.1, "jobs_completed": 8},
            3: {"cost_total": 9.0, "jobs_completed": 7},
        },
    }
    rows = {
        (c.variant, c.metric): c for c in compare_variants(samples, "base", ["cost_total", "jobs_completed"])
    }
    assert rows["base", "cost_total"].difference is None and verdict(rows["base", "cost_total"]) == "baseline"
    assert verdict(rows["noisy", "cost_total"]) == "n.s." and not rows["noisy", "cost_total"].significant
    assert verdict(rows["cheaper", "cost_total"]) == "better"  # lower cost is better
    assert verdict(rows["cheaper", "jobs_completed"]) == "better"  # more completed jobs is better
    worse = MetricComparison("x", "queue_wait_mean_s", mean_interval([5, 6]), mean_interval([1.0, 1.1, 1.2]))
    assert verdict(worse) == "worse"


def test_a_variant_never_wins_on_wait_by_leaving_jobs_pending() -> None:
    """Three paired seeds. The starving variant leaves 2 jobs pending in every run: its known waits
    (60, 61, 62 s) look shorter than the baseline's 600, 610, 620 s, but its lower bounds over every job
    (900, 905, 910 s) are what it is compared by, marked as lower bounds; a longer lower bound is a real
    "worse" (the true figure is at least that), while a shorter known wait is never "better"."""
    base = {s: {"queue_wait_mean_s": 600.0 + 10 * s, "jobs_pending_at_end": 0} for s in range(3)}
    for s in range(3):
        base[s]["queue_wait_mean_s_lower_bound"] = base[s]["queue_wait_mean_s"]
    starving = {
        s: {
            "queue_wait_mean_s": 60.0 + s,
            "queue_wait_mean_s_lower_bound": 900.0 + 5 * s,
            "jobs_pending_at_end": 2,
        }
        for s in range(3)
    }
    hiding = {
        s: {
            "queue_wait_mean_s": 60.0 + s,
            "queue_wait_mean_s_lower_bound": 300.0 + s,
            "jobs_pending_at_end": 1,
        }
        for s in range(3)
    }
    samples = {"base": base, "starving": starving, "hiding": hiding}
    rows = {c.variant: c for c in compare_variants(samples, "base", ["queue_wait_mean_s"])}
    assert rows["starving"].lower_bound and not rows["base"].lower_bound
    assert rows["starving"].value.mean == 905.0  # (900 + 905 + 910) / 3, not the 61 s over started jobs
    assert verdict(rows["starving"]) == "worse"
    # 300 s is below the baseline's 610 s, but only a lower bound: not "better".
    assert rows["hiding"].significant and verdict(rows["hiding"]) == "n.s."
    # And a baseline that is itself a lower bound cannot make an exact variant "worse".
    flipped = {"base": hiding, "exact": base}
    row = next(c for c in compare_variants(flipped, "base", ["queue_wait_mean_s"]) if c.variant == "exact")
    assert row.baseline_lower_bound and row.significant and verdict(row) == "n.s."


def test_directions_of_service_and_lifecycle_metrics() -> None:
    """SLO attainment is better higher; node churn and exogenous counts have no better direction."""
    from fleetlab.experiment.stats import better_direction

    assert better_direction("service_slo_attainment_pct") == "max"
    assert better_direction("service_late_requests_pct") == "min"
    assert [better_direction(m) for m in ("scale_ups", "nodes_removed", "node_failures")] == ["", "", ""]
