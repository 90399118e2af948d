"""The verdict: for each candidate, what it changes against the first column on the decision metrics.

The decision weighs completion time, queue wait, service quality and cost per completed job over the
common accounting window. Each metric gets one word (docs/decision.md, "Statistics"):

* ``better`` / ``worse``: the paired interval lies wholly beyond the larger of the minimum practical effect
  and the model error, and the test of that stays significant after Holm's correction over every
  candidate × decision metric;
* ``within model error``: beyond the practical minimum, but not beyond what calibration says the model
  can tell apart;
* ``no practical difference``: the interval lies wholly inside ±(that floor);
* ``inconclusive``: anything else; it keeps its interval, and says how many more pairs might decide it.

When the replicates differ only in tie-breaks (or not at all), intervals over them would describe the
scheduler's coin, not the uncertainty of the workload: the first replicate is then the answer, compared
exactly against the same floors, and no interval is formed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from fleetlab.experiment.effects import COST_METRIC, DEFAULT_MIN_EFFECTS, MinEffect, ModelError
from fleetlab.experiment.stats import (
    Interval,
    Samples,
    better_direction,
    beyond_margin_p,
    holm,
    mean_interval,
    pairs_needed,
    run_value,
    sample_sd,
)

#: The metrics a decision weighs, in the order the verdict names them.
DECISION_METRICS = (
    "completion_p95_s",
    "queue_wait_mean_s",
    "queue_wait_p95_s",
    "service_slo_attainment_pct",
    "service_late_requests_pct",
    COST_METRIC,
)
#: The cost metric of runs recorded before the common window was (no ``accounting`` in the manifest).
OWN_RUN_COST = "cost_per_completed_job"

BETTER, WORSE = "better", "worse"
INCONCLUSIVE = "inconclusive"
NO_PRACTICAL = "no practical difference"
MODEL_ERROR = "within model error"
NO_DATA = "no data"
TOO_FEW = "not enough replicates"
#: The most pairs an estimate of "how many more would decide it" looks at.
MAX_PAIRS = 10_000
#: Words that decide a metric (``--seeds auto`` stops when every metric has one).
DECIDED = (BETTER, WORSE, NO_PRACTICAL, MODEL_ERROR, NO_DATA)


@dataclass(frozen=True)
class DecisionRules:
    """What the verdict needs besides the samples."""

    confidence: float = 0.95
    min_effects: Mapping[str, MinEffect] = field(default_factory=lambda: dict(DEFAULT_MIN_EFFECTS))
    model_errors: Mapping[str, ModelError] = field(default_factory=dict)
    #: The replicates vary only the scheduler's tie-breaks (or nothing): the first one is the answer.
    deterministic: bool = False
    metrics: tuple[str, ...] = DECISION_METRICS

    @property
    def alpha(self) -> float:
        """The family-wise error rate: 1 − confidence."""
        return 1.0 - self.confidence


@dataclass(frozen=True)
class Finding:
    """One decision metric of one candidate: the paired difference, its floors and its word."""

    metric: str
    baseline_mean: float
    #: The paired difference; an exact one (``exact``) has NaN bounds.
    difference: Interval
    word: str
    #: The minimum practical effect and the model error at the baseline's level (the metric's unit).
    min_effect: float = 0.0
    model_error: float = 0.0
    #: One replicate is the answer (deterministic replicates), or every replicate gave the same difference.
    exact: bool = False
    p_value: float = math.nan
    p_holm: float = math.nan
    #: For an inconclusive finding: further pairs that would decide it if mean and spread stay as they are.
    more_pairs: int | None = None
    note: str = ""

    @property
    def relative(self) -> float:
        """The change as a fraction of the baseline mean (NaN when the baseline is 0)."""
        if self.baseline_mean == 0 or math.isnan(self.baseline_mean):
            return math.nan
        return self.difference.mean / abs(self.baseline_mean)

    @property
    def floor(self) -> float:
        """The change a better/worse must clear: the larger of the practical minimum and the model error."""
        return max(self.min_effect, self.model_error)

    @property
    def decided(self) -> bool:
        """Whether more replicates could change the word."""
        return self.word in DECIDED


@dataclass(frozen=True)
class CandidateVerdict:
    """A candidate's findings on every decision metric measured in the comparison."""

    candidate: str
    baseline: str
    pairs: int
    findings: tuple[Finding, ...]
    #: The first replicate is the answer (see the module docstring).
    deterministic: bool = False
    #: Tests in the Holm family (every candidate × decision metric with an interval).
    family: int = 0

    def _with(self, *words: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.word in words)

    @property
    def better(self) -> tuple[Finding, ...]:
        """The findings that are improvements."""
        return self._with(BETTER)

    @property
    def worse(self) -> tuple[Finding, ...]:
        """The findings that are regressions."""
        return self._with(WORSE)

    @property
    def inconclusive(self) -> tuple[Finding, ...]:
        """Findings more replicates could still decide."""
        return tuple(f for f in self.findings if not f.decided)

    @property
    def no_data(self) -> tuple[str, ...]:
        """Metrics the candidate has no value for while the baseline has."""
        return tuple(f.metric for f in self._with(NO_DATA))


def decision_metrics(samples: Samples, metrics: tuple[str, ...] = DECISION_METRICS) -> tuple[str, ...]:
    """The decision metrics, with the own-run cost standing in for the common-window cost when no run
    carries the latter (runs recorded before it existed)."""
    has_window = any(COST_METRIC in f for by_seed in samples.values() for f in by_seed.values())
    return tuple(OWN_RUN_COST if m == COST_METRIC and not has_window else m for m in metrics)


@dataclass
class _Pending:
    """A finding waiting for its Holm-adjusted p-value."""

    candidate: str
    finding: Finding
    practical_beyond: bool
    sd: float
    #: Whether the candidate's and the baseline's figures are lower bounds (jobs left unfinished).
    lows: tuple[bool, bool]


def _word(metric: str, mean: float, lower: bool, base_lower: bool) -> tuple[str, str]:
    """better / worse for a change beyond the floor, unless a lower bound forbids it (docs/metrics.md)."""
    up = mean > 0
    word = BETTER if up == (better_direction(metric) == "max") else WORSE
    if better_direction(metric) == "min" and ((word == BETTER and lower) or (word == WORSE and base_lower)):
        return INCONCLUSIVE, "a lower bound (jobs unfinished) cannot show this"
    return word, ""


def _exact(metric: str, base_mean: float, d: float, floors: tuple[float, float], lows: tuple[bool, bool],
           n: int, note: str) -> Finding:  # fmt: skip
    practical, model = floors
    floor = max(practical, model)
    interval = Interval(d, math.nan, math.nan, n)
    if d != 0 and abs(d) >= floor:
        word, why = _word(metric, d, *lows)
        note = "; ".join(x for x in (note, why) if x)
    elif d != 0 and abs(d) >= practical:
        word = MODEL_ERROR
    else:
        word = NO_PRACTICAL
    return Finding(metric, base_mean, interval, word, practical, model, True, note=note)


def _candidate_findings(
    samples: Samples, baseline: str, candidate: str, rules: DecisionRules, metrics: tuple[str, ...]
) -> list[Finding | _Pending]:
    out: list[Finding | _Pending] = []
    base_runs, cand_runs = samples[baseline], samples[candidate]
    for metric in metrics:
        base = {s: run_value(f, metric) for s, f in base_runs.items()}
        cand = {s: run_value(f, metric) for s, f in cand_runs.items()}
        base_mean = mean_interval([v for v, _ in base.values()]).mean
        if math.isnan(base_mean):
            continue  # not measured in this comparison at all (e.g. SLOs without services)
        effect = rules.min_effects.get(metric, MinEffect())
        error = rules.model_errors.get(metric)
        floors = (effect.of(base_mean), error.of(base_mean) if error is not None else 0.0)
        lows = (any(low for _, low in cand.values()), any(low for _, low in base.values()))
        seeds = [s for s in base if s in cand and not math.isnan(base[s][0]) and not math.isnan(cand[s][0])]
        diffs = [cand[s][0] - base[s][0] for s in seeds]
        if not diffs:
            out.append(
                Finding(metric, base_mean, Interval(math.nan, math.nan, math.nan, 0), NO_DATA, *floors)
            )
            continue
        if rules.deterministic:  # the first replicate is the answer: its own level sets the floors
            level = base[seeds[0]][0]
            floors = (effect.of(level), error.of(level) if error is not None else 0.0)
            lows = (cand[seeds[0]][1], base[seeds[0]][1])
            out.append(_exact(metric, level, diffs[0], floors, lows, 1, f"seed {seeds[0]}"))
            continue
        sd = sample_sd(diffs)
        if len(diffs) >= 2 and sd == 0.0:
            note = f"identical in all {len(diffs)} replicates"
            out.append(_exact(metric, base_mean, diffs[0], floors, lows, len(diffs), note))
            continue
        interval = mean_interval(diffs, rules.confidence)
        if len(diffs) < 2:
            out.append(Finding(metric, base_mean, interval, TOO_FEW, *floors))
            continue
        floor = max(floors)
        p = beyond_margin_p(interval.mean, sd, len(diffs), floor)
        beyond_practical = interval.low > floors[0] or interval.high < -floors[0]
        finding = Finding(metric, base_mean, interval, INCONCLUSIVE, *floors, p_value=p)
        out.append(_Pending(candidate, finding, beyond_practical, sd, lows))
    return out


def _settle(pending: _Pending, p_holm: float, rules: DecisionRules, family: int) -> Finding:
    """The word of a tested finding once its Holm-adjusted p-value is known."""
    f = replace(pending.finding, p_holm=p_holm)
    d = f.difference
    floor = f.floor
    if p_holm < rules.alpha:
        word, why = _word(f.metric, d.mean, *pending.lows)
        return replace(f, word=word, note=why)
    if pending.practical_beyond and f.model_error > f.min_effect:
        return replace(f, word=MODEL_ERROR)
    if floor > 0 and -floor < d.low and d.high < floor:
        practical = f.min_effect
        if f.model_error > practical and not (-practical < d.low and d.high < practical):
            return replace(f, word=MODEL_ERROR)  # a practical effect is possible, but not beyond the error
        return replace(f, word=NO_PRACTICAL)
    alpha = rules.alpha / max(family, 1)  # Bonferroni: a bound on what Holm needs
    needed = pairs_needed(d.mean, pending.sd, floor, alpha, MAX_PAIRS)
    if needed is None:
        on_floor = abs(d.mean) == floor
        note = "" if on_floor else f"more than {MAX_PAIRS:,} paired seeds would be needed to decide it"
        return replace(f, word=INCONCLUSIVE, note=note)
    return replace(f, word=INCONCLUSIVE, more_pairs=max(needed - d.n, 1))


def verdicts(
    samples: Samples,
    baseline: str,
    confidence: float = 0.95,
    metrics: tuple[str, ...] = DECISION_METRICS,
    rules: DecisionRules | None = None,
) -> list[CandidateVerdict]:
    """One verdict per column other than ``baseline``, in column order, Holm-corrected across them."""
    rules = rules or DecisionRules(confidence=confidence, metrics=metrics)
    chosen = decision_metrics(samples, rules.metrics)
    per_candidate: dict[str, list[Finding | _Pending]] = {}
    for candidate in samples:
        if candidate != baseline:
            per_candidate[candidate] = _candidate_findings(samples, baseline, candidate, rules, chosen)
    tested = [f for found in per_candidate.values() for f in found if isinstance(f, _Pending)]
    adjusted = holm([p.finding.p_value for p in tested])
    settled = {id(p): _settle(p, a, rules, len(tested)) for p, a in zip(tested, adjusted, strict=True)}
    out: list[CandidateVerdict] = []
    for candidate, found in per_candidate.items():
        findings = tuple(settled[id(f)] if isinstance(f, _Pending) else f for f in found)
        pairs = len(set(samples[candidate]) & set(samples.get(baseline, {})))
        out.append(CandidateVerdict(candidate, baseline, pairs, findings, rules.deterministic, len(tested)))
    return out
