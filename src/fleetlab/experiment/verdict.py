"""The verdict: for each candidate, what it changes against the first column on the decision metrics.

The decision weighs completion time, queue wait, service quality and cost per completed job. Only changes
whose paired interval excludes zero are named, with their size; everything else is "no significant
change", so a difference within the seed-to-seed noise is never called better or worse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleetlab.experiment.stats import Interval, Samples, compare_variants, verdict

#: The metrics a decision weighs, in the order the verdict names them.
DECISION_METRICS = (
    "completion_p95_s",
    "queue_wait_mean_s",
    "queue_wait_p95_s",
    "service_slo_attainment_pct",
    "service_late_requests_pct",
    "cost_per_completed_job",
)


@dataclass(frozen=True)
class Finding:
    """One significant change of one metric: the paired difference and its direction."""

    metric: str
    baseline_mean: float
    difference: Interval
    #: better | worse (metrics with a preferred direction) or higher | lower
    word: str

    @property
    def relative(self) -> float:
        """The change as a fraction of the baseline mean (NaN when the baseline is 0)."""
        if self.baseline_mean == 0 or math.isnan(self.baseline_mean):
            return math.nan
        return self.difference.mean / abs(self.baseline_mean)


@dataclass(frozen=True)
class CandidateVerdict:
    """A candidate's significant changes, the metrics it leaves unchanged and those it has no value for
    while the baseline has (e.g. cost per completed job when no job completed)."""

    candidate: str
    baseline: str
    pairs: int
    findings: tuple[Finding, ...]
    unchanged: tuple[str, ...]
    no_data: tuple[str, ...]

    @property
    def better(self) -> tuple[Finding, ...]:
        """The findings that are improvements."""
        return tuple(f for f in self.findings if f.word == "better")

    @property
    def worse(self) -> tuple[Finding, ...]:
        """The findings that are regressions."""
        return tuple(f for f in self.findings if f.word == "worse")


def verdicts(
    samples: Samples,
    baseline: str,
    confidence: float = 0.95,
    metrics: tuple[str, ...] = DECISION_METRICS,
) -> list[CandidateVerdict]:
    """One verdict per column other than ``baseline``, in column order."""
    comparisons = compare_variants(samples, baseline, metrics, confidence)
    base_means = {c.metric: c.value.mean for c in comparisons if c.variant == baseline}
    out: list[CandidateVerdict] = []
    for candidate, by_seed in samples.items():
        if candidate == baseline:
            continue
        findings: list[Finding] = []
        unchanged: list[str] = []
        no_data: list[str] = []
        for c in comparisons:
            if c.variant != candidate or c.difference is None or math.isnan(base_means[c.metric]):
                continue  # not measured in this comparison at all (e.g. SLOs without services)
            if c.difference.n == 0 or math.isnan(c.difference.mean):
                no_data.append(c.metric)
            elif c.significant:
                findings.append(Finding(c.metric, base_means[c.metric], c.difference, verdict(c)))
            else:
                unchanged.append(c.metric)
        pairs = len(set(by_seed) & set(samples.get(baseline, {})))
        out.append(
            CandidateVerdict(candidate, baseline, pairs, tuple(findings), tuple(unchanged), tuple(no_data))
        )
    return out
