"""A self-contained HTML report of an experiment: the decision table (mean, interval, paired difference,
winner) and the charts of experiment_charts (plotly, with plotly.js inlined once so the file opens offline).

Every name that comes from input (experiment, variants, changes, job ids) is HTML-escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetlab.experiment.decision_context import DecisionContext, results_context
from fleetlab.experiment.results import ExperimentResults, load_results
from fleetlab.experiment.stats import MetricComparison, better_direction, verdict
from fleetlab.experiment.verdict import CandidateVerdict
from fleetlab.report.assumptions import banner_html, prices_table
from fleetlab.report.experiment_charts import ChartSection, build_charts
from fleetlab.report.experiment_table import format_metric, metric_title
from fleetlab.report.metric_names import clipped, format_change, scaled
from fleetlab.report.verdict_text import min_effects_line, verdict_heading, verdict_lines, verdict_summary
from fleetlab.spec.out_folder import replace_file

DECISION_METRICS = ("completion_mean_s", "cost_per_completed_job")
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child,td.l{text-align:left}.better{color:#0a0;font-weight:bold}
.worse{color:#c00;font-weight:bold}.ns{color:#888}caption{text-align:left;font-weight:bold}
.note{color:#555;max-width:60em}.chart{min-height:450px}
.verdict li{margin:.3em 0}.verdict .head{font-weight:bold}.warning{color:#a50;font-weight:bold}
.banner{padding:.6em 1em;margin:1em 0;border-left:6px solid}.banner.fail{background:#fde8e8;border-color:#c00}
.banner.ok{background:#eef7ee;border-color:#0a0}tr.unpriced td{color:#c00;font-weight:bold}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def winner(
    comparisons: Sequence[MetricComparison], baseline: str, words: dict[tuple[str, str], str] | None = None
) -> str:
    """The variant better than the baseline with the best mean, else the baseline: on a decision metric
    better as the verdict says (beyond its floor, after Holm: ``words``), on another significantly."""
    words = words or {}
    decided = {metric for metric, _ in words}

    def is_better(c: MetricComparison) -> bool:
        return (words.get((c.metric, c.variant)) if c.metric in decided else verdict(c)) == "better"

    better = [c for c in comparisons if is_better(c)]
    if not better:
        return baseline
    direction = better_direction(better[0].metric)
    best = (
        max(better, key=lambda c: c.value.mean)
        if direction == "max"
        else min(better, key=lambda c: c.value.mean)
    )
    return best.variant


def _cell(c: MetricComparison) -> str:
    value = ("≥ " if c.lower_bound else "") + _e(format_metric(c.metric, c.value.mean))
    if not math.isnan(c.value.low):
        lo, hi = clipped(c.metric, c.value.low, c.value.high)
        low, high = format_metric(c.metric, lo), format_metric(c.metric, hi)
        value += f"<br><small>[{_e(low)}, {_e(high)}]</small>"
    if c.difference is not None:
        word = verdict(c)
        delta = format_change(c.metric, scaled(c.metric, c.difference.mean))
        css = {"better": "better", "worse": "worse", "n.s.": "ns"}.get(word, "")
        value += f'<br><span class="{css}">Δ {_e(delta)} ({_e(word)})</span>'
    return value


def decision_table(results: ExperimentResults, found: Sequence[CandidateVerdict] = ()) -> str:
    """Metrics as rows, variants as columns, and the winner per metric (by the verdict on decision
    metrics)."""
    words = {(f.metric, v.candidate): f.word for v in found for f in v.findings}
    metrics = tuple(dict.fromkeys((*DECISION_METRICS, *results.metrics)))
    comparisons = results.comparisons(metrics)
    variants = list(results.samples)
    pct = f"{results.confidence:.0%}"
    head = "".join(f"<th>{_e(v)}<br><small>{_e(results.changes.get(v, ''))}</small></th>" for v in variants)
    rows = []
    for metric in metrics:
        mine = {c.variant: c for c in comparisons if c.metric == metric}
        cells = "".join(f"<td>{_cell(mine[v])}</td>" for v in variants if v in mine)
        best = winner(list(mine.values()), results.baseline, words)
        best += " (baseline: no variant better)" if best == results.baseline else ""
        rows.append(f"<tr><td>{_e(metric_title(metric))}</td>{cells}<td class='l'>{_e(best)}</td></tr>")
    return (
        f"<table><caption>Decision table: mean [{pct} CI over seeds]; Δ = paired difference to the baseline "
        f"{_e(results.baseline)}; n.s. = its interval contains 0</caption>"
        f"<tr><th>metric</th>{head}<th>winner</th></tr>{''.join(rows)}</table>"
    )


def _slowest_table(slow: Sequence[tuple[Any, ...]]) -> str:
    rows = "".join(
        f"<tr><td>{_e(v)}</td><td>{int(s)}</td><td class='l'>{_e(j)}</td>"
        f"<td>{'≥ ' if c else ''}{_e(format_metric('wait_s', float(w)))}</td></tr>"
        for v, s, j, w, c in slow
    )
    return (
        "<table><caption>Longest queue waits per variant (≥: still pending at the end, wait so far)</caption>"
        f"<tr><th>variant</th><th>seed</th><th>job</th><th>queue wait</th></tr>{rows}</table>"
    )


def states_table(states: dict[str, dict[str, float]] | None, variants: Sequence[str]) -> str:
    """Jobs by end state per variant (mean per run): every average above describes only some of them."""
    if not states:
        return ""
    names = list(next(iter(states.values())))
    head = "".join(f"<th>{_e(v)}</th>" for v in variants if v in states)
    rows = "".join(
        f"<tr><td>{_e(name)}</td>"
        + "".join(f"<td>{states[v][name]:,.1f}</td>" for v in variants if v in states)
        + "</tr>"
        for name in names
    )
    return (
        "<table><caption>Jobs by state at the end, mean per run: waits count only jobs that left the queue, "
        f"completion times only completed jobs</caption><tr><th>state</th>{head}</tr>{rows}</table>"
    )


def _section(section: ChartSection) -> str:
    import plotly.io as pio

    body = f"<h2>{_e(section.heading)}</h2>"
    if section.note:
        body += f"<p class='note'>{_e(section.note)}</p>"
    if section.figure is not None:
        chart = pio.to_html(
            section.figure, include_plotlyjs=False, full_html=False, div_id=f"chart-{section.key}"
        )
        body += f"<div class='chart' data-chart='{_e(section.key)}'>{chart}</div>"
    return f"<section id='{_e(section.key)}'>{body}</section>"


def html_page(title: str, body: str, css: str = "") -> str:
    """A whole HTML document: the title as heading, plotly.js inlined once in the head (works offline)."""
    from plotly.offline import get_plotlyjs

    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{_CSS}{css}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script>"
        f"</head><body><h1>{_e(title)}</h1>{body}</body></html>\n"
    )


def verdict_html(
    results: ExperimentResults, found: Sequence[CandidateVerdict], context: DecisionContext
) -> str:
    """The verdict as a list: each variant's word against the baseline, then one item per decision metric
    with its interval, then the warnings."""
    n_seeds = len(results.samples.get(results.baseline, {}))
    items = []
    for v in found:
        lines = verdict_lines(v, context)
        css = {"better": "better", "worse": "worse"}.get(verdict_summary(v), "")
        rest = "".join(f"<li>{_e(line)}</li>" for line in lines[1:])
        items.append(f"<li><span class='head {css}'>{_e(lines[0])}</span><ul>{rest}</ul></li>")
    family = found[0].family if found else 0
    heading = "".join(
        f"<p{' class=note' if i else ''}>{_e(line)}</p>"
        for i, line in enumerate(verdict_heading(results.baseline, n_seeds, context, family))
    )
    metrics = tuple(f.metric for f in found[0].findings) if found else ()
    effects = f"<p class='note'>{_e(min_effects_line(metrics, context))}</p>" if metrics else ""
    warnings = "".join(f"<p class='warning'>warning: {_e(w)}</p>" for w in context.warnings)
    return f"{heading}<ul class='verdict'>{''.join(items)}</ul>{effects}{warnings}"


def render_html(folder: Path) -> str:
    """The report as one HTML document, plotly.js inlined once in the head; the verdict first."""
    results = load_results(folder)
    charts = build_charts(folder, results)
    title = f"{results.name}: {results.finished}/{results.planned} runs"
    sections = "".join(_section(s) for s in charts.sections)
    context = results_context(results)
    found = context.verdicts(results.samples, results.baseline)
    verdict = (
        f"{banner_html(context)}<section id='verdict'><h2>Verdict</h2>{verdict_html(results, found, context)}"
        f"{prices_table(context.prices) if context.prices else ''}</section>"
    )
    states = states_table(charts.states, list(results.samples))
    return html_page(
        title, f"{verdict}{decision_table(results, found)}{states}{sections}{_slowest_table(charts.slowest)}"
    )


def write_html_report(folder: Path, target: Path) -> None:
    """Render and write atomically (``spec.out_folder.replace_file``: never over or inside an input)."""
    replace_file(target, render_html(folder), "--html")
