"""The decision report as one self-contained HTML page, for the person who decides: a title that says what
was compared, the date and fleetlab version, the calibration banner, the recommendation and verdict with
every interval, the assumptions (prices, replicates, minimum effects), the measurements (each level and
its paired difference in columns of their own, the measured baseline beside them, the table scrolling
inside the page), the charts, the job classes, the placement YAML (collapsed) and the cost sheet.
Every name that comes from input is HTML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetlab import __version__
from fleetlab.experiment.stats import compare_variants
from fleetlab.report.assumptions import banner_html, prices_table
from fleetlab.report.baseline_report import baseline_body
from fleetlab.report.compare_seeds import (
    STATES,
    change_text,
    level_text,
    mean_states,
    shown_metrics,
    verdict_words,
)
from fleetlab.report.decision import DecisionData, baseline_figures
from fleetlab.report.experiment_charts import build_charts
from fleetlab.report.experiment_html import _e, _section, html_page, verdict_html
from fleetlab.report.measured_column import MeasuredColumn
from fleetlab.report.metric_names import BY_KEY, duration_text, format_value, metric_label, money_text, scaled
from fleetlab.report.verdict_text import bounds_text

_CSS_MORE = """
body{max-width:100%;box-sizing:border-box}
pre{background:#f6f6f6;padding:1em;overflow-x:auto;max-width:100%;font-size:90%}
.recommend{font-size:1.1em;border-left:4px solid #0a0;padding:.5em 1em}
.meta{color:#555;margin-top:-.5em}nav a{margin-right:1em}section{margin-top:2em}
.scroll{max-width:100%;overflow-x:auto}.scroll table{margin:0 0 1em 0}
.caption{font-weight:bold;margin:1em 0 .3em}
table[data-table=measurements] td{white-space:nowrap}
table[data-table=classes] td,table[data-table=costs] td,table[data-table=prices] td{text-align:left}
table[data-table=classes] td:nth-child(8){min-width:24em}
details{margin:.5em 0}summary{cursor:pointer;font-weight:bold}td.delta{color:#555}
#baseline table{display:block;max-width:100%;overflow-x:auto}p,li{overflow-wrap:anywhere}
"""
_WORD_CSS = {"better": "better", "worse": "worse"}


def _table(caption: str, head: Sequence[str], rows: Sequence[Sequence[str]], key: str) -> str:
    """A table whose cells are already HTML (escape before calling), inside a box that scrolls sideways
    rather than widening the page."""
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (
        f"<p class='caption'>{_e(caption)}</p>"
        f"<div class='scroll'><table data-table='{_e(key)}'><tr>{header}</tr>{body}</table></div>"
    )


def page_title(data: DecisionData) -> str:
    """What was compared: ``NAME: BASELINE vs A, B, C (N paired seeds)``."""
    results = data.results
    others = [data.context.column_name(v) for v in results.samples if v != results.baseline]
    seeds = len(results.samples.get(results.baseline, {}))
    return f"{results.name}: {results.baseline} vs {', '.join(others)} ({seeds} paired seeds)"


def _verdict_section(data: DecisionData) -> str:
    rec = data.recommendation
    return (
        "<section id='decision'><h2>Decision</h2>"
        f"<p class='recommend'>Recommended: <b>{_e(rec.variant)}</b> — {_e(rec.reason)}.</p>"
        f"{verdict_html(data.results, data.verdicts, data.context)}</section>"
    )


def _assumptions_section(data: DecisionData) -> str:
    context = data.context
    window = context.window_source or "latest end"
    lines = [
        f"Replicates: each paired seed varies {context.varied}." if context.varied else "",
        f"Costs are compared over each seed's common accounting window ({window}): a fixed cluster bills "
        "the same whatever the policy; only capacity that really scales down is cheaper. Rates: dollars per "
        "hour over that window, and per month (730 h) at that rate.",
    ]
    notes = "".join(f"<p class='note'>{_e(line)}</p>" for line in lines if line)
    prices = prices_table(context.prices) if context.prices else ""
    return f"<section id='assumptions'><h2>Assumptions</h2>{prices}{notes}</section>"


def _measured_cell(metric: str, measured: MeasuredColumn | None) -> list[str]:
    if measured is None:
        return []
    got = measured.values.get(metric)
    if got is None:
        return ["-"]
    value, lower = got
    return [("≥ " if lower else "") + _e(format_value(metric, scaled(metric, value)))]


def _measurements_section(data: DecisionData) -> str:
    results = data.results
    labels = list(results.samples)
    shown, folded = shown_metrics(results.samples)
    comparisons = {
        (c.metric, c.variant): c
        for c in compare_variants(results.samples, results.baseline, shown, results.confidence)
    }
    words = verdict_words(data.verdicts)
    measured = data.measured
    heads = ["metric", *(["measured (history)"] if measured is not None else [])]
    for i, label in enumerate(labels):
        heads.append(f"{data.context.column_name(label)}: {results.changes.get(label, '')}".rstrip(": "))
        if i:
            heads.append(f"Δ vs {results.baseline}")
    states = [" / ".join(f"{mean_states(results.samples, x)[s]:g}" for s in STATES) for x in labels]
    first = [_e(f"jobs {' / '.join(STATES)}"), *(["-"] if measured is not None else [])]
    rows = [first + _with_deltas([_e(s) for s in states], [""] * len(states))]
    for metric in shown:
        levels, deltas = [], [""]
        for label in labels:
            c = comparisons[metric, label]
            levels.append(("≥ " if c.lower_bound else "") + _e(level_text(metric, c.value)))
            if c.difference is not None:
                change, _ = change_text(c)
                span = "" if math.isnan(c.difference.low) else f" [{bounds_text(metric, c.difference)}]"
                css = _WORD_CSS.get(words.get((metric, label), ""), "delta")
                deltas.append(f"<span class='{css}'>{_e(change + span)}</span>")
        label_text = BY_KEY[metric].label.strip() if metric in BY_KEY else metric_label(metric)
        rows.append([_e(label_text), *_measured_cell(metric, measured), *_with_deltas(levels, deltas)])
    pct = f"{results.confidence:.0%}"
    caption = (
        f"Level: mean [{pct} interval over seeds, clipped to what the figure can be]; Δ: mean paired "
        f"difference to {results.baseline} [its {pct} interval], * where it excludes zero; green or red "
        "only where the verdict calls the change better or worse"
    )
    body = _table(caption, heads, rows, "measurements")
    if folded:
        body += (
            f"<p class='note'>Zero in every run, not shown: {_e(', '.join(map(metric_label, folded)))}.</p>"
        )
    body += _baseline_note(data)
    return f"<section id='measurements'><h2>Measurements</h2>{body}</section>"


def _with_deltas(levels: list[str], deltas: list[str]) -> list[str]:
    out = [levels[0]]
    for level, delta in zip(levels[1:], deltas[1:], strict=True):
        out.extend([level, delta])
    return out


def _baseline_note(data: DecisionData) -> str:
    if data.baseline is None:
        return "<p class='note'>No measured baseline given (--baseline DIR with baseline.json).</p>"
    if data.measured is None:
        figures = baseline_figures(data.baseline)
        measured = [[_e(metric_label(k)), _e(f"{v:,.4g}")] for k, v in sorted(figures.items())]
        return _table("Measured baseline (baseline.json)", ["figure", "measured"], measured, "baseline")
    return (
        "<p class='note'>The column <i>measured (history)</i> is the measured baseline over the history "
        "it measured; its own tables are in <a href='#baseline'>their section</a>.</p>"
    )


def _baseline_section(payload: dict[str, Any]) -> str | None:
    """The measured baseline's section with the tables of ``fleetlab baseline``'s own page, when
    baseline.json has its shape (``rows`` of groups); ``None`` for other shapes (their figures are then
    listed under the measurements), including rows a hand-edited file broke."""
    rows = payload.get("rows")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return None
    try:
        return baseline_body(payload, "<h2>Measured baseline</h2>")
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _classes_section(classes: Sequence[dict[str, Any]], variant: str) -> str:
    head = ["class", "team", "queue", "priority", "jobs", "pods", "GPUs", "pod shapes (count)"]
    head += ["runtime p50", "runtime p95", "preemptible", "gang", "topology"]
    rows = [
        [
            _e(r["class"]), _e(r["team"]), _e(r["queue"] or "-"), str(r["priority"]), str(r["jobs"]),
            str(r["pods"]), str(r["gpus"]), _e(r["shapes"]), _e(duration_text(r["runtime_p50_s"])),
            _e(duration_text(r["runtime_p95_s"])), "yes" if r["preemptible"] else "no",
            "yes" if r["gang"] else "no", _e(r["topology"] or "-"),
        ]
        for r in classes
    ]  # fmt: skip
    caption = (
        f"Job classes of {variant} (the workload as the scenario gives it for the first seed; replicates "
        "of a recorded one resample it)"
    )
    return (
        f"<section id='classes'><h2>Job classification</h2>{_table(caption, head, rows, 'classes')}</section>"
    )


def _placement_section(placement: dict[str, str], variant: str) -> str:
    blocks = "".join(
        f"<details><summary>{_e(name)}</summary><pre>{_e(text)}</pre></details>"
        for name, text in placement.items()
    )
    return (
        f"<section id='placement'><h2>Placement conditions: {_e(variant)}</h2>"
        "<p class='note'>Kubernetes scheduler, Kueue and NVIDIA device-plugin configuration of the chosen "
        f"variant, as `fleetlab export` writes it (open a file to read it).</p>{blocks}</section>"
    )


def _costs_section(costs: Sequence[dict[str, Any]], variant: str) -> str:
    head = ["team", "class", "pool", "instance type", "billing mode", "currency", "cost per run"]
    head += ["$/h per node", "price source", "price date"]
    rows = [
        [_e(r[k]) for k in ("team", "class", "pool", "instance_type", "billing_mode", "currency")]
        + [
            _e(money_text(r["cost_per_run"])),
            "no price ($0)" if r["unpriced"] else _e(money_text(r["price_per_node_hour"] or math.nan)),
            _e(r["price_source"]),
            _e(r["price_date"]),
        ]
        for r in costs
    ]
    total = math.fsum(r["cost_per_run"] for r in costs)
    caption = f"Cost sheet of {variant}: ledger totals, mean per run over seeds (total {money_text(total)})"
    return f"<section id='costs'><h2>Cost sheet</h2>{_table(caption, head, rows, 'costs')}</section>"


def render_decision_html(folder: Path, data: DecisionData) -> str:
    """The whole page, plotly.js inlined once in the head."""
    results = data.results
    charts = build_charts(folder, results)
    variant = data.recommendation.variant
    baseline = None if data.baseline is None else _baseline_section(data.baseline)
    links = [("decision", "decision"), ("assumptions", "assumptions"), ("measurements", "measurements")]
    links += [("baseline", "measured baseline")] if baseline else []
    links += [("charts", "charts"), ("classes", "job classes"), ("placement", "placement")]
    links += [("costs", "cost sheet")]
    nav = "".join(f"<a href='#{k}'>{_e(t)}</a>" for k, t in links)
    meta = (
        f"<p class='meta'>Report date {_e(data.date)} ({_e(data.date_source)}) · fleetlab "
        f"{_e(__version__)} · {results.finished} of {results.planned} runs</p>"
    )
    sections = "".join(_section(s) for s in charts.sections)
    body = (
        f"{meta}<nav>{nav}</nav>{banner_html(data.context)}{_verdict_section(data)}"
        f"{_assumptions_section(data)}{_measurements_section(data)}{baseline or ''}"
        f"<section id='charts'><h2>Charts</h2>{sections}</section>"
        f"{_classes_section(data.classes, variant)}{_placement_section(data.placement, variant)}"
        f"{_costs_section(data.costs, variant)}"
    )
    return html_page(page_title(data), body, _CSS_MORE)
