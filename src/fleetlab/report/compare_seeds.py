"""``compare`` over seeds, rendered: the verdict in words first, then each metric's level (mean and interval
over seeds, clipped to what the metric can be) per column, and beside it the paired difference to the
first column; rows that are zero in every run folded away.

The same figures go to ``--json`` (``compare_payload``), so the table and the JSON never disagree. When
one replicate is the answer (the replicates vary only tie-breaks) the table shows that replicate alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleetlab.experiment.decision_context import DecisionContext, first_replicate
from fleetlab.experiment.seeded import SeededComparison
from fleetlab.experiment.stats import Interval, MetricComparison, Samples, compare_variants, verdict
from fleetlab.experiment.verdict import CandidateVerdict
from fleetlab.report.metric_names import (
    BY_KEY,
    ROWS,
    WINDOW_ROWS,
    clipped,
    format_change,
    format_value,
    metric_label,
    scaled,
)
from fleetlab.report.verdict_text import interval_json, print_verdicts, verdict_json

_STYLE = {"better": "bold green", "worse": "bold red"}
STATES = ("completed", "running", "pending", "failed")


def job_states(figures: Mapping[str, float]) -> dict[str, float]:
    """Jobs by state at the end of one run: completed, running (started, not finished), pending (never
    started) and failed; for summaries written before jobs_running_at_end, running is what is left."""
    completed = figures.get("jobs_completed", 0.0)
    pending = figures.get("jobs_pending", 0.0)
    failed = figures.get("jobs_failed", 0.0)
    running = figures.get("jobs_running_at_end", figures.get("jobs", 0.0) - completed - pending - failed)
    return {"completed": completed, "running": running, "pending": pending, "failed": failed}


def mean_states(samples: Samples, label: str) -> dict[str, float]:
    """Jobs by state, mean over the seeds."""
    per_seed = [job_states(f) for f in samples[label].values()]
    return {s: math.fsum(p[s] for p in per_seed) / len(per_seed) for s in STATES}


def _count(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def states_text(states: dict[str, float]) -> str:
    """``922 / 0 / 0 / 0``."""
    return " / ".join(_count(states[s]) for s in STATES)


def shown_metrics(samples: Samples) -> tuple[list[str], list[str]]:
    """(rows to show, rows folded away because they are zero or empty in every run of every column);
    the common-window rows follow the run's own."""
    shown: list[str] = []
    folded: list[str] = []
    for row in (*ROWS, *WINDOW_ROWS):
        values = [f.get(row.key, math.nan) for by_seed in samples.values() for f in by_seed.values()]
        if all(math.isnan(v) or v == 0 for v in values):
            folded.append(row.key)
        else:
            shown.append(row.key)
    return shown, folded


def level_text(metric: str, interval: Interval) -> str:
    """``mean [low, high]`` in the metric's unit, clipped (the mean alone with one seed)."""
    text = format_value(metric, scaled(metric, interval.mean))
    if not math.isnan(interval.low):
        low, high = clipped(metric, interval.low, interval.high)
        text += (
            f" [{format_value(metric, scaled(metric, low))}, {format_value(metric, scaled(metric, high))}]"
        )
    return text


def change_text(c: MetricComparison) -> tuple[str, str]:
    """``+1.1m*`` and its descriptive word (better / worse / higher / lower / n.s.; ``*``: the interval
    excludes zero); empty for the baseline."""
    if c.difference is None or math.isnan(c.difference.mean):
        return "", ""
    mark = "*" if c.significant else ""
    return f"{format_change(c.metric, scaled(c.metric, c.difference.mean))}{mark}", verdict(c)


def verdict_words(found: list[CandidateVerdict]) -> dict[tuple[str, str], str]:
    """(metric, column) -> the verdict's word, for colouring only the changes the verdict decides."""
    return {(f.metric, v.candidate): f.word for v in found for f in v.findings}


def _label(metric: str) -> str:
    return BY_KEY[metric].label if metric in BY_KEY else metric_label(metric)


def seeded_table(
    cmp: SeededComparison, context: DecisionContext, found: list[CandidateVerdict]
) -> tuple[Table, list[str]]:
    """Metrics as rows; per column its level and, for the others, the paired difference to the first."""
    samples = first_replicate(cmp.samples) if context.rules.deterministic else cmp.samples
    shown, folded = shown_metrics(samples)
    comparisons = compare_variants(samples, cmp.baseline, shown, context.rules.confidence)
    words = verdict_words(found)
    table = Table(title=Text(cmp.title), title_justify="left")
    table.add_column("metric", style="bold", no_wrap=True)
    for i, label in enumerate(cmp.labels):
        table.add_column(context.column_name(label), justify="right")
        if i:
            table.add_column("Δ", justify="right")
    states = [states_text(mean_states(samples, x)) for x in cmp.labels]
    table.add_row("jobs completed / running / pending / failed", *_spread(states, [""] * len(states)))
    by_key = {(c.metric, c.variant): c for c in comparisons}
    for metric in shown:
        levels = [
            ("≥ " if by_key[metric, x].lower_bound else "") + level_text(metric, by_key[metric, x].value)
            for x in cmp.labels
        ]
        deltas: list[Text | str] = [""]
        for x in cmp.labels[1:]:
            change, _ = change_text(by_key[metric, x])
            deltas.append(Text(change, style=_STYLE.get(words.get((metric, x), ""), "dim")))
        table.add_row(_label(metric), *_spread(levels, deltas))
    return table, folded


def _spread(levels: list[str], deltas: list[Text | str]) -> list[Text | str]:
    """Cells in column order: the first column's level, then each other column's level and difference."""
    out: list[Text | str] = [levels[0]]
    for level, delta in zip(levels[1:], deltas[1:], strict=True):
        out.extend([level, delta])
    return out


def print_seeded(console: Console, cmp: SeededComparison, context: DecisionContext) -> None:
    """Verdict first, then the table and how to read it."""
    found = print_verdicts(console, cmp.samples, cmp.baseline, context)
    table, folded = seeded_table(cmp, context, found)
    console.print(table)
    pct = f"{context.rules.confidence:.0%}"
    how = (
        f"level: mean [{pct} interval over seeds, clipped to what the figure can be]; "
        if not context.rules.deterministic
        else "deterministic: the first seed's replicate is shown, the answer; "
    )
    console.print(
        Text(
            f"{how}Δ: the column's mean paired difference to {cmp.baseline}, * where its interval excludes "
            "zero; green or red only where the verdict calls it better or worse. Jobs by state: mean over "
            "seeds at the end of the run. Common window: each seed's runs billed over the same hours "
            f"({context.window_source or 'latest end'}; docs/metrics.md).",
            style="dim",
        )
    )
    if folded:
        names = ", ".join(metric_label(m) for m in folded)
        console.print(Text(f"zero in every run, not shown: {names}", style="dim"))
    if len(cmp.seeds) > 1:
        console.print(Text(f"tables below (if any): seed {cmp.seeds[0]} only", style="dim"))


def compare_payload(cmp: SeededComparison, context: DecisionContext) -> dict[str, Any]:
    """Everything the table and the verdict show, as JSON (null for no value)."""
    return {
        "title": cmp.title,
        "columns": list(cmp.labels),
        **comparison_payload(cmp.samples, cmp.baseline, context),
    }


def comparison_payload(samples: Samples, baseline: str, context: DecisionContext) -> dict[str, Any]:
    """Every column's intervals, paired differences, jobs by state and verdict, as JSON."""
    rules = context.rules
    shown, folded = shown_metrics(samples)
    comparisons = compare_variants(samples, baseline, shown, rules.confidence)
    metrics: list[dict[str, Any]] = []
    for metric in shown:
        mine = [c for c in comparisons if c.metric == metric]
        metrics.append(
            {
                "metric": metric,
                "label": metric_label(metric),
                "values": {c.variant: _level_json(c.value, metric) for c in mine},
                "differences": {
                    c.variant: {
                        **interval_json(c.difference, metric),
                        "significant": c.significant,
                        "verdict": verdict(c),
                    }
                    for c in mine
                    if c.difference is not None
                },
            }
        )
    found = context.verdicts(samples, baseline)
    return {
        "baseline": baseline,
        "seeds": sorted(samples.get(baseline, {})),
        "confidence": rules.confidence,
        "replicates": {"vary": context.varied, "deterministic": rules.deterministic},
        "seeds_note": context.seeds_note or None,
        "min_effects": {
            m: {"absolute": e.absolute, "relative": e.relative, "source": e.source}
            for m, e in rules.min_effects.items()
        },
        "model_errors": {
            m: {"absolute": e.absolute, "relative": e.relative, "source": e.source}
            for m, e in rules.model_errors.items()
        },
        "accounting_window": context.window_source or None,
        "calibration": None if context.calibration is None else context.calibration.as_dict(),
        "prices": [p.as_dict() for p in context.prices],
        "warnings": list(context.warnings),
        "jobs_by_state": {label: mean_states(samples, label) for label in samples},
        "verdict": [verdict_json(v, context) for v in found],
        "metrics": metrics,
        "folded_zero_everywhere": folded,
    }


def _level_json(interval: Interval, metric: str) -> dict[str, Any]:
    out = interval_json(interval, metric)
    if not math.isnan(interval.low):
        low, high = clipped(metric, interval.low, interval.high)
        out["low"], out["high"] = scaled(metric, low), scaled(metric, high)
    return out
