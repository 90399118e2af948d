"""The decision report as one self-contained HTML page: the verdict and recommendation first, then the
measurements with intervals and censoring counts, the charts, the job classes, the chosen variant's
placement conditions and its cost sheet. Every name that comes from input is HTML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetlab.experiment.stats import compare_variants
from fleetlab.report.baseline_report import baseline_body
from fleetlab.report.compare_seeds import (
    STATES,
    change_text,
    mean_states,
    shown_metrics,
    value_text,
)
from fleetlab.report.decision import DecisionData, baseline_figures
from fleetlab.report.experiment_charts import build_charts
from fleetlab.report.experiment_html import _e, _section, html_page, verdict_html
from fleetlab.report.metric_names import duration_text, metric_label, money_text

_CSS_MORE = """
pre{background:#f6f6f6;padding:1em;overflow-x:auto;
max-width:100%;font-size:90%}.recommend{font-size:1.1em;border-left:4px solid #0a0;padding:.5em 1em}
nav a{margin-right:1em}section{margin-top:2em}table[data-table=measurements] td{white-space:nowrap}
table[data-table=classes] td,table[data-table=costs] td{text-align:left}
table[data-table=classes] td:nth-child(8){min-width:24em}
"""
_WORD_CSS = {"better": "better", "worse": "worse", "n.s.": "ns"}


def _table(caption: str, head: Sequence[str], rows: Sequence[Sequence[str]], key: str) -> str:
    """A table whose cells are already HTML (escape before calling)."""
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table data-table='{_e(key)}'><caption>{_e(caption)}</caption><tr>{header}</tr>{body}</table>"


def _verdict_section(data: DecisionData) -> str:
    rec = data.recommendation
    return (
        "<section id='decision'><h2>Decision</h2>"
        f"<p class='recommend'>Recommended: <b>{_e(rec.variant)}</b> — {_e(rec.reason)}.</p>"
        f"{verdict_html(data.results, data.verdicts)}</section>"
    )


def _measurements_section(data: DecisionData) -> str:
    results = data.results
    labels = list(results.samples)
    shown, folded = shown_metrics(results.samples)
    comparisons = {
        (c.metric, c.variant): c for c in compare_variants(results.samples, results.baseline, shown)
    }
    rows = [
        [f"jobs {' / '.join(STATES)}"]
        + [_e(" / ".join(f"{mean_states(results.samples, x)[s]:g}" for s in STATES)) for x in labels]
    ]
    for metric in shown:
        cells = [_e(metric_label(metric))]
        for label in labels:
            c = comparisons[metric, label]
            change, word = change_text(c)
            extra = f" <span class='{_WORD_CSS.get(word, '')}'>{_e(change)}</span>" if change else ""
            cells.append(_e(value_text(metric, c.value)) + extra)
        rows.append(cells)
    pct = f"{results.confidence:.0%}"
    caption = (
        f"Mean ± half-width of the {pct} interval over seeds; (Δ) paired difference to {results.baseline}, "
        "* = significant (green better, red worse); jobs by state: mean count at the end of the run"
    )
    heads = ["metric", *(f"{x}: {results.changes.get(x, '')}" for x in labels)]
    body = _table(caption, heads, rows, "measurements")
    if folded:
        body += (
            f"<p class='note'>Zero in every run, not shown: {_e(', '.join(map(metric_label, folded)))}.</p>"
        )
    if data.baseline is None:
        body += "<p class='note'>No measured baseline given (--baseline DIR with baseline.json).</p>"
    elif _baseline_section(data.baseline) is None:
        figures = baseline_figures(data.baseline)
        measured = [[_e(metric_label(k)), _e(f"{v:,.4g}")] for k, v in sorted(figures.items())]
        body += _table("Measured baseline (baseline.json)", ["figure", "measured"], measured, "baseline")
    else:
        body += "<p class='note'>The measured baseline is in <a href='#baseline'>its own section</a>.</p>"
    return f"<section id='measurements'><h2>Measurements</h2>{body}</section>"


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
            _e(r["class"]),
            _e(r["team"]),
            _e(r["queue"] or "-"),
            str(r["priority"]),
            str(r["jobs"]),
            str(r["pods"]),
            str(r["gpus"]),
            _e(r["shapes"]),
            _e(duration_text(r["runtime_p50_s"])),
            _e(duration_text(r["runtime_p95_s"])),
            "yes" if r["preemptible"] else "no",
            "yes" if r["gang"] else "no",
            _e(r["topology"] or "-"),
        ]
        for r in classes
    ]
    caption = f"Job classes of {variant} (first seed's workload)"
    return (
        f"<section id='classes'><h2>Job classification</h2>{_table(caption, head, rows, 'classes')}</section>"
    )


def _placement_section(placement: dict[str, str], variant: str) -> str:
    blocks = "".join(f"<h3>{_e(name)}</h3><pre>{_e(text)}</pre>" for name, text in placement.items())
    return (
        f"<section id='placement'><h2>Placement conditions: {_e(variant)}</h2>"
        "<p class='note'>Kubernetes scheduler, Kueue and NVIDIA device-plugin configuration of the chosen "
        f"variant, as `fleetlab export` writes it.</p>{blocks}</section>"
    )


def _costs_section(costs: Sequence[dict[str, Any]], variant: str) -> str:
    head = ["team", "class", "pool", "instance type", "billing mode", "currency", "cost per run"]
    head += ["price source", "price date"]
    rows = [
        [_e(r[k]) for k in ("team", "class", "pool", "instance_type", "billing_mode", "currency")]
        + [_e(money_text(r["cost_per_run"])), _e(r["price_source"]), _e(r["price_date"])]
        for r in costs
    ]
    total = math.fsum(r["cost_per_run"] for r in costs)
    caption = f"Cost sheet of {variant}: ledger totals, mean per run over seeds (total {money_text(total)})"
    return f"<section id='costs'><h2>Cost sheet</h2>{_table(caption, head, rows, 'costs')}</section>"


def render_decision_html(folder: Path, data: DecisionData) -> str:
    """The whole page, plotly.js inlined once in the head."""
    results = data.results
    charts = build_charts(folder, results)
    title = f"Decision report: {results.name} ({results.finished}/{results.planned} runs)"
    variant = data.recommendation.variant
    baseline = None if data.baseline is None else _baseline_section(data.baseline)
    links = [("decision", "decision"), ("measurements", "measurements")]
    links += [("baseline", "measured baseline")] if baseline else []
    links += [("charts", "charts"), ("classes", "job classes"), ("placement", "placement")]
    links += [("costs", "cost sheet")]
    nav = "".join(f"<a href='#{k}'>{_e(t)}</a>" for k, t in links)
    sections = "".join(_section(s) for s in charts.sections)
    body = (
        f"<nav>{nav}</nav>{_verdict_section(data)}{_measurements_section(data)}{baseline or ''}"
        f"<section id='charts'><h2>Charts</h2>{sections}</section>"
        f"{_classes_section(data.classes, variant)}{_placement_section(data.placement, variant)}"
        f"{_costs_section(data.costs, variant)}"
    )
    return html_page(title, body, _CSS_MORE)
