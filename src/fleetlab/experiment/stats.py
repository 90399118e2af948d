"""Means and Student-t confidence intervals over seeds, and paired differences to the baseline.

Seeds pair runs: the same seed draws the same workload in every variant, so a variant's effect is
estimated from the per-seed differences (a paired t interval), which removes the workload-to-workload
spread that unpaired intervals would carry. The t quantile is computed here (no scipy at run time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    f = d
    for m in range(1, 500):
        for coeff in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + coeff * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + coeff / c
            c = c if abs(c) > _TINY else _TINY
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return f


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on the cdf; p in (0, 1))."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Interval:
    """A sample mean with its two-sided confidence interval (NaN bounds with fewer than two values)."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of zero."""
        return self.n >= 2 and (self.low > 0.0 or self.high < 0.0)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean and Student-t interval, mean ± t(1-α/2, n-1)·s/√n; NaN values are left out."""
    xs = [float(v) for v in values if not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = math.fsum(xs) / n
    if n < 2:
        return Interval(mean, math.nan, math.nan, n)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def sample_sd(values: Sequence[float]) -> float:
    """The sample standard deviation (n − 1 in the denominator); NaN with fewer than two values."""
    xs = [float(v) for v in values if not math.isnan(float(v))]
    if len(xs) < 2:
        return math.nan
    mean = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def beyond_margin_p(mean: float, sd: float, n: int, margin: float = 0.0) -> float:
    """Two-sided p-value of a paired t test that the true difference lies beyond ``±margin`` on the side of
    ``mean``: t = (|mean| − margin) / (sd/√n), p = 2·P(T > t) = I_{df/(df+t²)}(df/2, 1/2), 1 when t ≤ 0.

    With ``margin`` 0 this is the ordinary paired t test; p < α exactly when the (1 − α) interval lies
    beyond the margin. NaN with fewer than two pairs; with no spread (sd 0) the difference is exact: 0
    when it is beyond the margin, else 1."""
    if n < 2 or math.isnan(mean) or math.isnan(sd):
        return math.nan
    if sd == 0.0:
        return 0.0 if abs(mean) > margin else 1.0
    t = (abs(mean) - margin) / (sd / math.sqrt(n))
    if t <= 0.0:
        return 1.0
    df = n - 1.0
    return min(1.0, regularized_beta(df / 2.0, 0.5, df / (df + t * t)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN entries are not tests: they stay NaN and do not count).

    Sorted ascending, p_(i) (i = 1..m) becomes max over j ≤ i of min(1, (m − j + 1)·p_(j)); a test is
    rejected at level α when its adjusted p is below α. This controls the chance of any false "better" or
    "worse" across the whole family at α, whatever the dependence between the tests."""
    tests = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    order = sorted(tests, key=lambda i: p_values[i])
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p_values[i]))
        out[i] = running
    return out


def pairs_needed(mean: float, sd: float, margin: float, alpha: float, cap: int = 10_000) -> int | None:
    """How many pairs a paired t interval at level ``1 − alpha`` needs, if the mean and spread stay as
    they are, to lie wholly beyond ``±margin`` (when |mean| > margin) or wholly within it (when |mean| <
    margin): the smallest n with t(1 − α/2, n − 1)·sd/√n < gap, gap = ||mean| − margin|. None when the
    mean sits on the margin or more than ``cap`` pairs would be needed."""
    if math.isnan(mean) or math.isnan(sd):
        return None
    gap = abs(abs(mean) - margin)
    if gap == 0.0:
        return None
    if sd == 0.0:
        return 2

    def enough(n: int) -> bool:
        return t_quantile(1.0 - alpha / 2.0, n - 1) * sd / math.sqrt(n) < gap

    if not enough(cap):
        return None
    lo, hi = 2, cap
    while lo < hi:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def paired_difference(
    variant: Mapping[int, float], baseline: Mapping[int, float], confidence: float = 0.95
) -> Interval:
    """Mean of variant - baseline over the seeds both have (a paired t interval)."""
    seeds = sorted(set(variant) & set(baseline))
    return mean_interval([variant[s] - baseline[s] for s in seeds], confidence)


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one variant: its interval over seeds and its paired difference to the baseline."""

    variant: str
    metric: str
    value: Interval
    difference: Interval | None  # None for the baseline itself
    #: Some run of this variant (of the baseline) left jobs unfinished, so its figure is a lower bound.
    lower_bound: bool = False
    baseline_lower_bound: bool = False

    @property
    def significant(self) -> bool:
        """The difference's interval excludes zero (False for the baseline and with fewer than 2 pairs)."""
        return self.difference is not None and self.difference.excludes_zero


Samples = Mapping[str, Mapping[int, Mapping[str, float]]]  # variant -> seed -> metric -> value


def compare_variants(
    samples: Samples, baseline: str, metrics: Sequence[str], confidence: float = 0.95
) -> list[MetricComparison]:
    """Every variant x metric, in the order given (baseline rows included, without a difference); a metric
    a run lacks (recorded by an older version) counts as no value."""
    out: list[MetricComparison] = []
    base = samples.get(baseline, {})
    for metric in metrics:
        base_pairs = {s: run_value(m, metric) for s, m in base.items()}
        base_values = {s: v for s, (v, _) in base_pairs.items()}
        base_lower = any(low for _, low in base_pairs.values())
        for variant, by_seed in samples.items():
            pairs = {s: run_value(m, metric) for s, m in by_seed.items()}
            values = {s: v for s, (v, _) in pairs.items()}
            value = mean_interval([values[s] for s in sorted(values)], confidence)
            diff = None if variant == baseline else paired_difference(values, base_values, confidence)
            lower = any(low for _, low in pairs.values())
            out.append(MetricComparison(variant, metric, value, diff, lower, base_lower))
    return out


#: Figures that describe only the jobs whose value is known, with the summary's lower bound counting every
#: job (docs/metrics.md) and the counts of jobs they censor.
CENSORED_BY: dict[str, tuple[str, tuple[str, ...]]] = {
    "queue_wait_mean_s": ("queue_wait_mean_s_lower_bound", ("jobs_pending_at_end",)),
    "queue_wait_p50_s": ("queue_wait_p50_s_lower_bound", ("jobs_pending_at_end",)),
    "queue_wait_p95_s": ("queue_wait_p95_s_lower_bound", ("jobs_pending_at_end",)),
    "queue_wait_p99_s": ("queue_wait_p99_s_lower_bound", ("jobs_pending_at_end",)),
    "completion_mean_s": ("completion_mean_s_lower_bound", ("jobs_pending_at_end", "jobs_running_at_end")),
    "completion_p95_s": ("completion_p95_s_lower_bound", ("jobs_pending_at_end", "jobs_running_at_end")),
}


def run_value(figures: Mapping[str, float], metric: str) -> tuple[float, bool]:
    """One run's figure, and whether it is a lower bound: a run that left jobs unfinished gives the lower
    bound over every job instead of the figure over finished ones, so leaving jobs waiting never looks
    like a shorter wait."""
    censor = CENSORED_BY.get(metric)
    if censor is not None and censor[0] in figures and any(figures.get(k, 0.0) > 0 for k in censor[1]):
        return float(figures[censor[0]]), True
    return float(figures.get(metric, math.nan)), False


_HIGHER_IS_BETTER = {
    "jobs_completed",
    "gpu_allocation_ratio",
    "whole_free_gpu_nodes_mean",
    "gpu_utilization_ratio",
    "largest_free_block_mean",
    "service_slo_attainment_pct",
}
#: Counts and totals with no better direction: node churn, exogenous events and the work itself.
_NEUTRAL = {
    "jobs",
    "gpu_hours_billed",
    "gpu_hours_busy",
    "gpu_hours_prep",
    "cost_compute",
    "cost_prep",
    "scale_ups",
    "nodes_removed",
    "node_failures",
    "interruptions",
}


def better_direction(metric: str) -> str:
    """``max`` or ``min`` when a higher or lower value is better, ``""`` when neither is."""
    if metric in _HIGHER_IS_BETTER:
        return "max"
    return "" if metric in _NEUTRAL or metric == "placements" else "min"


def verdict(comparison: MetricComparison) -> str:
    """``baseline``, ``better``, ``worse``, ``higher``/``lower`` (no preferred direction), or ``n.s.``."""
    diff = comparison.difference
    if diff is None:
        return "baseline"
    if not comparison.significant:
        return "n.s."
    direction = better_direction(comparison.metric)
    up = diff.mean > 0
    if not direction:
        return "higher" if up else "lower"
    word = "better" if up == (direction == "max") else "worse"
    # A lower bound can prove a wait long, never short: a variant whose runs left jobs unfinished is not
    # "better" on it, and no variant is "worse" than a baseline whose own figure is only a lower bound.
    if direction == "min" and (
        (word == "better" and comparison.lower_bound) or (word == "worse" and comparison.baseline_lower_bound)
    ):
        return "n.s."
    return word
