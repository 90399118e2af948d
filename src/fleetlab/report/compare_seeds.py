"""``compare`` over seeds, rendered: the verdict in words first, then each metric's mean ± interval per
column with its paired difference to the first column, rows that are zero in every run folded away.

The same figures go to ``--json`` (``compare_payload``), so the table and the JSON never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleetlab.experiment.seeded import SeededComparison
from fleetlab.experiment.stats import Interval, MetricComparison, Samples, compare_variants, verdict
from fleetlab.experiment.verdict import CandidateVerdict, Finding, verdicts
from fleetlab.report.metric_names import ROWS, format_change, format_value, metric_label, scaled

CONFIDENCE = 0.95
_STYLE = {"better": "bold green", "worse": "bold red", "higher": "bold", "lower": "bold"}
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


def _states_text(states: dict[str, float]) -> str:
    return " / ".join(_count(states[s]) for s in STATES)


def shown_metrics(samples: Samples) -> tuple[list[str], list[str]]:
    """(rows to show, rows folded away because they are zero or empty in every run of every column)."""
    shown: list[str] = []
    folded: list[str] = []
    for row in ROWS:
        values = [f.get(row.key, math.nan) for by_seed in samples.values() for f in by_seed.values()]
        if all(math.isnan(v) or v == 0 for v in values):
            folded.append(row.key)
        else:
            shown.append(row.key)
    return shown, folded


def _half(interval: Interval) -> float:
    return (interval.high - interval.low) / 2.0


def value_text(metric: str, interval: Interval) -> str:
    """``mean ±half-width`` in the metric's unit (the mean alone with one seed)."""
    mean = scaled(metric, interval.mean)
    text = format_value(metric, mean)
    if not math.isnan(interval.low):
        half = scaled(metric, _half(interval))
        text += " ±" + format_change(metric, half)[1:]
    return text


def change_text(c: MetricComparison) -> tuple[str, str]:
    """``(+1.1m*)`` and its verdict word (better / worse / higher / lower / n.s.); empty for the baseline."""
    if c.difference is None or math.isnan(c.difference.mean):
        return "", ""
    mark = "*" if c.significant else ""
    return f"({format_change(c.metric, scaled(c.metric, c.difference.mean))}{mark})", verdict(c)


def _cell(c: MetricComparison) -> Text:
    cell = Text(("≥ " if c.lower_bound else "") + value_text(c.metric, c.value))
    change, word = change_text(c)
    if change:
        cell.append(" " + change, style=_STYLE.get(word, "dim"))
    return cell


def seeded_table(cmp: SeededComparison, confidence: float = CONFIDENCE) -> tuple[Table, list[str]]:
    """Metrics as rows, columns as columns; the folded-away rows are returned beside the table."""
    shown, folded = shown_metrics(cmp.samples)
    comparisons = compare_variants(cmp.samples, cmp.baseline, shown, confidence)
    table = Table(title=Text(cmp.title), title_justify="left")
    table.add_column("metric", style="bold")
    for label in cmp.labels:
        table.add_column(label, justify="right")
    table.add_row(
        "jobs completed / running / pending / failed",
        *(_states_text(mean_states(cmp.samples, x)) for x in cmp.labels),
    )
    by_key = {(c.metric, c.variant): c for c in comparisons}
    for metric in shown:
        table.add_row(
            next(r.label for r in ROWS if r.key == metric), *(_cell(by_key[metric, x]) for x in cmp.labels)
        )
    return table, folded


def finding_text(f: Finding) -> str:
    """``queue wait mean +1.1m (+23%, 95% CI +0.4m..+1.8m)``."""
    low = format_change(f.metric, scaled(f.metric, f.difference.low))
    high = format_change(f.metric, scaled(f.metric, f.difference.high))
    size = format_change(f.metric, scaled(f.metric, f.difference.mean))
    in_points = f.metric.endswith(("_pct", "ratio"))  # a relative change of a percentage misleads
    relative = "" if math.isnan(f.relative) or in_points else f"{f.relative:+.0%}, ".replace("-", "−")
    return f"{metric_label(f.metric)} {size} ({relative}interval {low} .. {high})"


def verdict_summary(v: CandidateVerdict) -> str:
    """One word for the candidate: better, worse, mixed, or no significant difference."""
    if v.pairs < 2:
        return "not enough seeds to tell"
    if v.better and v.worse:
        return "mixed"
    if v.better:
        return "better"
    if v.worse:
        return "worse"
    if v.findings:
        return "different, no preferred direction"
    return "no significant difference"


def verdict_text(v: CandidateVerdict) -> str:
    """The candidate's verdict as one sentence."""
    head = f"{v.candidate}: {verdict_summary(v)}"
    parts: list[str] = []
    for word in ("better", "worse", "higher", "lower"):
        items = [finding_text(f) for f in v.findings if f.word == word]
        if items:
            parts.append(f"{word}: " + "; ".join(items))
    if v.unchanged:
        parts.append("within noise: " + ", ".join(metric_label(m) for m in v.unchanged))
    if v.no_data:
        parts.append("no data: " + ", ".join(metric_label(m) for m in v.no_data))
    return head + (" — " + ". ".join(parts) if parts else "") + "."


def verdict_lines(v: CandidateVerdict) -> list[str]:
    """The verdict for a terminal: the candidate and its word, then one line per kind of change."""
    lines = [f"{v.candidate}: {verdict_summary(v)}"]
    for word in ("better", "worse", "higher", "lower"):
        lines.extend(f"{word}: {finding_text(f)}" for f in v.findings if f.word == word)
    if v.unchanged:
        lines.append("within noise: " + ", ".join(metric_label(m) for m in v.unchanged))
    if v.no_data:
        lines.append("no data: " + ", ".join(metric_label(m) for m in v.no_data))
    return lines


def verdict_heading(baseline: str, n_seeds: int, confidence: float = CONFIDENCE) -> str:
    """What the verdict is measured against."""
    if n_seeds < 2:
        return (
            f"Verdict against {baseline}: one seed gives no interval, so no change can be called real; "
            "run with --seeds 5 or more."
        )
    return (
        f"Verdict against {baseline} ({n_seeds} paired seeds, {confidence:.0%} intervals; "
        "only changes whose interval excludes zero are named):"
    )


def print_verdicts(console: Console, samples: Samples, baseline: str, confidence: float = CONFIDENCE) -> None:
    """The verdict block: the heading, then each candidate's word and its changes."""
    n_seeds = len(samples.get(baseline, {}))
    console.print(Text(verdict_heading(baseline, n_seeds, confidence), style="bold"))
    for v in verdicts(samples, baseline, confidence):
        for i, line in enumerate(verdict_lines(v)):
            style = _STYLE.get(verdict_summary(v), "bold") if i == 0 else ""
            console.print(Text(("  " if i == 0 else "      ") + line, style=style))
    console.print()


def print_seeded(console: Console, cmp: SeededComparison, confidence: float = CONFIDENCE) -> None:
    """Verdict first, then the table and how to read it."""
    print_verdicts(console, cmp.samples, cmp.baseline, confidence)
    table, folded = seeded_table(cmp, confidence)
    console.print(table)
    console.print(
        Text(
            f"mean ± half-width of the {confidence:.0%} interval over seeds; (Δ) = mean paired difference to "
            f"{cmp.baseline}, * = its interval excludes zero (green better, red worse); "
            "unmarked differences are within noise. Jobs by state: mean over seeds at the end of the run.",
            style="dim",
        )
    )
    if folded:
        names = ", ".join(metric_label(m) for m in folded)
        console.print(Text(f"zero in every run, not shown: {names}", style="dim"))
    if len(cmp.seeds) > 1:
        console.print(Text(f"tables below (if any): seed {cmp.seeds[0]} only", style="dim"))


def _interval_json(interval: Interval, metric: str) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else scaled(metric, x)

    return {"mean": num(interval.mean), "low": num(interval.low), "high": num(interval.high), "n": interval.n}


def verdict_json(v: CandidateVerdict) -> dict[str, Any]:
    """A verdict as plain JSON."""
    return {
        "candidate": v.candidate,
        "baseline": v.baseline,
        "pairs": v.pairs,
        "summary": verdict_summary(v),
        "text": verdict_text(v),
        "findings": [
            {
                "metric": f.metric,
                "label": metric_label(f.metric),
                "verdict": f.word,
                "difference": _interval_json(f.difference, f.metric),
                "relative": None if math.isnan(f.relative) else f.relative,
            }
            for f in v.findings
        ],
        "within_noise": list(v.unchanged),
        "no_data": list(v.no_data),
    }


def compare_payload(cmp: SeededComparison, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Everything the table and the verdict show, as JSON (null for no value)."""
    return {
        "title": cmp.title,
        "columns": list(cmp.labels),
        **comparison_payload(cmp.samples, cmp.baseline, confidence),
    }


def comparison_payload(samples: Samples, baseline: str, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Every column's intervals, paired differences, jobs by state and verdict, as JSON."""
    shown, folded = shown_metrics(samples)
    comparisons = compare_variants(samples, baseline, shown, confidence)
    metrics: list[dict[str, Any]] = []
    for metric in shown:
        mine = [c for c in comparisons if c.metric == metric]
        metrics.append(
            {
                "metric": metric,
                "label": metric_label(metric),
                "values": {c.variant: _interval_json(c.value, metric) for c in mine},
                "differences": {
                    c.variant: {
                        **_interval_json(c.difference, metric),
                        "significant": c.significant,
                        "verdict": verdict(c),
                    }
                    for c in mine
                    if c.difference is not None
                },
            }
        )
    return {
        "baseline": baseline,
        "seeds": sorted(samples.get(baseline, {})),
        "confidence": confidence,
        "jobs_by_state": {label: mean_states(samples, label) for label in samples},
        "verdict": [verdict_json(v) for v in verdicts(samples, baseline, confidence)],
        "metrics": metrics,
        "folded_zero_everywhere": folded,
    }
