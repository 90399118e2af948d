"""Terminal rendering of an experiment: per metric, each variant's mean and interval over seeds and its
paired difference to the baseline, with the verdict (better / worse / not significant)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleetlab.experiment.stats import Interval, MetricComparison, verdict
from fleetlab.report.metric_names import clipped, format_change, format_value, metric_label, scaled

_STYLE = {"better": "bold green", "worse": "bold red", "n.s.": "dim", "baseline": "cyan"}


def format_metric(metric: str, value: float) -> str:
    """A metric value in its unit: durations, dollars, percent or a plain number (report/metric_names)."""
    return format_value(metric, scaled(metric, value))


def metric_title(metric: str) -> str:
    """The metric's human name with its summary field, e.g. ``completion time mean (completion_mean_s)``."""
    return f"{metric_label(metric)} ({metric})"


def _interval(metric: str, interval: Interval, level: bool = False) -> str:
    """``[low, high]``; a level's is clipped to what the figure can be (a difference's is not)."""
    if math.isnan(interval.low):
        return "-"
    low, high = clipped(metric, interval.low, interval.high) if level else (interval.low, interval.high)
    return f"[{format_metric(metric, low)}, {format_metric(metric, high)}]"


def _signed(metric: str, value: float) -> str:
    return format_change(metric, scaled(metric, value))


def comparison_table(
    comparisons: Sequence[MetricComparison], changes: dict[str, str], title: str, confidence: float
) -> Table:
    """One block of rows per metric; a row per variant."""
    pct = f"{confidence:.0%}"
    table = Table(title=Text(title), title_justify="left")
    for name in ("metric", "variant", "change", "mean", f"{pct} CI", "Δ vs baseline", f"Δ {pct} CI", ""):
        table.add_column(name, justify="right" if name not in ("metric", "variant", "change", "") else "left")
    previous = None
    for c in comparisons:
        word = verdict(c)
        diff = c.difference
        table.add_row(
            metric_title(c.metric) if c.metric != previous else "",
            Text(c.variant),
            Text(changes.get(c.variant, "")),
            format_metric(c.metric, c.value.mean),
            _interval(c.metric, c.value, level=True),
            _signed(c.metric, diff.mean) if diff is not None else "",
            _interval(c.metric, diff) if diff is not None else "",
            Text(word, style=_STYLE.get(word, "")),
            end_section=False,
        )
        previous = c.metric
    return table


def print_experiment(
    console: Console,
    comparisons: Sequence[MetricComparison],
    changes: dict[str, str],
    title: str,
    confidence: float,
) -> None:
    """The comparison table and a note on how to read it."""
    console.print(comparison_table(comparisons, changes, title, confidence))
    console.print(
        f"Δ: mean of per-seed differences to the baseline (paired seeds), Student-t {confidence:.0%} "
        "interval; n.s. = the interval contains 0.",
        highlight=False,
    )
