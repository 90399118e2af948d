"""Several columns (policies or one-change scenario variants) over paired seeds, and the verdict as objects:
``compare`` here is ``fleetlab compare``; :class:`Samples` is what it shares with an experiment's results
(the verdict, the best variant on a metric, the per-run figures as a frame)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetlab.api.core import Result, Scenario
from fleetlab.api.frames import Frame, records_table, to_frame
from fleetlab.experiment.comparison import run_compare
from fleetlab.experiment.decision_context import DecisionContext
from fleetlab.experiment.output import write_results
from fleetlab.experiment.seeded import SeededComparison
from fleetlab.experiment.stats import Interval, MetricComparison, better_direction, compare_variants, verdict
from fleetlab.experiment.verdict import BETTER, CandidateVerdict
from fleetlab.report.compare_seeds import compare_payload
from fleetlab.spec.loader import load as _load

__all__ = ["Best", "Comparison", "Samples", "compare"]

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Best:
    """The variant to choose on one metric: the one with the best mean among those the verdict calls
    better (on a decision metric: beyond its minimum practical effect and the model error, after Holm;
    on another metric: a paired interval excluding zero; docs/decision.md); the baseline itself when none
    is, so nothing is "best" by a difference within the seed-to-seed noise."""

    metric: str
    variant: str
    mean: float
    interval: Interval
    #: The paired difference to the baseline (None when the choice is the baseline).
    difference: Interval | None
    significant: bool
    reason: str


@dataclass(frozen=True)
class Samples:
    """Per-run figures of several columns over paired seeds: column -> seed -> summary field -> value."""

    samples: Mapping[str, Mapping[int, Mapping[str, float]]] = field(repr=False)
    baseline: str
    confidence: float = CONFIDENCE
    #: The verdict's rules (minimum effects, model error, deterministic replicates) and what it must say.
    context: DecisionContext = field(default_factory=DecisionContext, repr=False)

    def verdicts(self) -> list[CandidateVerdict]:
        """For each column but the baseline: one finding per decision metric, each with its paired
        interval and its word (better, worse, within model error, no practical difference, inconclusive),
        as ``fleetlab compare`` prints them."""
        return self.context.verdicts(self.samples, self.baseline)

    def comparisons(self, metrics: Sequence[str]) -> list[MetricComparison]:
        """Each column's interval over seeds and its paired difference to the baseline, per metric."""
        return compare_variants(self.samples, self.baseline, list(metrics), self.confidence)

    def best(self, metric: str) -> Best:
        """The column to choose on ``metric`` (see :class:`Best`); a metric with no better direction (a
        count, a capacity) has no best and raises ValueError."""
        direction = better_direction(metric)
        if not direction:
            raise ValueError(f"{metric}: neither higher nor lower is better, so no variant is best on it")
        rows = self.comparisons([metric])
        if all(math.isnan(c.value.mean) for c in rows):
            raise ValueError(f"{metric}: no run has a value for it (a summary field name, e.g. cost_total)")
        if metric in self.context.rules.metrics:
            words = {v.candidate: f.word for v in self.verdicts() for f in v.findings if f.metric == metric}
            better = [c for c in rows if words.get(c.variant) == BETTER]
        else:
            better = [c for c in rows if verdict(c) == "better"]
        if better:
            sign = -1.0 if direction == "min" else 1.0
            pick = max(better, key=lambda c: sign * c.value.mean)
            reason = f"better than {self.baseline} (docs/decision.md) with the best mean"
            return Best(metric, pick.variant, pick.value.mean, pick.value, pick.difference, True, reason)
        base = next(c for c in rows if c.variant == self.baseline)
        reason = f"no variant is significantly better than {self.baseline} on {metric}"
        return Best(metric, self.baseline, base.value.mean, base.value, None, False, reason)

    def runs(self, library: str = "pandas") -> Frame:
        """One row per column and seed with every summary figure (``variant``, ``seed`` first)."""
        rows = [
            {"variant": label, "seed": seed, **figures}
            for label, by_seed in self.samples.items()
            for seed, figures in sorted(by_seed.items())
        ]
        return to_frame(records_table(rows), library)


@dataclass(frozen=True)
class Comparison(Samples):
    """``fleetlab compare``'s result: the first seed's runs whole, every seed's figures, the verdict."""

    result: SeededComparison | None = field(default=None, repr=False)

    @property
    def columns(self) -> tuple[str, ...]:
        """The column labels, the baseline first."""
        assert self.result is not None
        return self.result.labels

    @property
    def seeds(self) -> tuple[int, ...]:
        """The paired seeds every column ran on."""
        assert self.result is not None
        return self.result.seeds

    @property
    def first_runs(self) -> dict[str, Result]:
        """The first seed's run of each column, whole (tables, summary, files)."""
        assert self.result is not None
        return {run.label: Result(run) for run in self.result.first_runs}

    @property
    def payload(self) -> dict[str, Any]:
        """comparison.json as a dict (what ``compare --json`` prints)."""
        assert self.result is not None
        return compare_payload(self.result, self.context)

    def write(self, out: str | Path) -> Path:
        """The files of ``compare --out``: one folder per column (first seed) and comparison.json."""
        assert self.result is not None
        folder = Path(out)
        write_results(
            list(self.result.first_runs), folder, single=False, extra={"comparison.json": self.payload}
        )
        return folder

    def __repr__(self) -> str:
        return (
            f"<fleetlab Comparison {self.result.title if self.result else ''!r}: {', '.join(self.columns)}>"
        )


def _source(scenario: Scenario | str | Path | None) -> str | None:
    if isinstance(scenario, Scenario):
        if scenario.source is None:
            raise ValueError(
                "compare runs each seed from the scenario's file; this Scenario has none "
                "(write it first, e.g. Calibration.write(out), and pass its file)"
            )
        return scenario.source
    return None if scenario is None else str(scenario)


def compare(
    scenarios: Scenario | str | Path | Sequence[Scenario | str | Path] | None = None,
    policies: Sequence[str] | None = None,
    seeds: int | str | Sequence[int] = 5,
    seed: int | None = None,
    workers: int | None = None,
    min_effects: Sequence[str] | None = None,
    prices: Sequence[str] | None = None,
    resample: str = "auto",
) -> Comparison:
    """The same workload under several policies (or one column per scenario file: variants that each make
    one change) on ``seeds`` paired seeds (a count from ``seed`` or the scenario's seed up, a list, or
    ``"auto"``), as ``fleetlab compare`` runs them (``min_effects`` as ``--min-effect METRIC=VALUE``,
    ``prices`` as ``--price POOL=USD/h``, ``resample`` as ``--resample``); the verdict is
    :meth:`Comparison.verdicts`."""
    listed: list[Any] = list(scenarios) if isinstance(scenarios, list | tuple) else [scenarios]
    files = [_source(s) for s in listed]
    first = seed if seed is not None else _load(files[0]).scenario.seed
    if isinstance(seeds, str):
        text = seeds
    elif isinstance(seeds, int):
        if not 1 <= seeds <= 1000:
            raise ValueError(f"seeds {seeds}: a count 1..1000, a list of seeds, or 'auto'")
        text = str(seeds)
    else:
        text = ",".join(str(s) for s in seeds)
    result, context = run_compare(
        files, list(policies) if policies else None, text, first, min_effects, prices, resample, None, workers
    )
    return Comparison(result.samples, result.baseline, context.rules.confidence, context, result)
