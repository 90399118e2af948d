"""A self-contained HTML report of an experiment: a queue-wait CDF per variant (plotly, with plotly.js
inlined so the file opens offline) and the decision table (mean, interval, paired difference, winner).

Every name that comes from input (experiment, variants, changes, job ids) is HTML-escaped.
"""

from __future__ import annotations

import html
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fleetlab.experiment.results import ExperimentResults, load_results
from fleetlab.experiment.stats import MetricComparison, better_direction, verdict
from fleetlab.experiment.store import DATABASE
from fleetlab.report.experiment_table import format_metric
from fleetlab.spec.errors import SpecError

DECISION_METRICS = ("completion_mean_s", "cost_per_completed_job")
MAX_CDF_POINTS = 2000
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child,td.l{text-align:left}.better{color:#0a0;font-weight:bold}
.worse{color:#c00;font-weight:bold}.ns{color:#888}caption{text-align:left;font-weight:bold}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def winner(comparisons: Sequence[MetricComparison], baseline: str) -> str:
    """The variant significantly better than the baseline with the best mean, else the baseline."""
    better = [c for c in comparisons if verdict(c) == "better"]
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
    value = _e(format_metric(c.metric, c.value.mean))
    if not math.isnan(c.value.low):
        low, high = format_metric(c.metric, c.value.low), format_metric(c.metric, c.value.high)
        value += f"<br><small>[{_e(low)}, {_e(high)}]</small>"
    if c.difference is not None:
        word = verdict(c)
        delta = ("+" if c.difference.mean > 0 else "") + format_metric(c.metric, c.difference.mean)
        css = {"better": "better", "worse": "worse", "n.s.": "ns"}.get(word, "")
        value += f'<br><span class="{css}">Δ {_e(delta)} ({_e(word)})</span>'
    return value


def decision_table(results: ExperimentResults) -> str:
    """Metrics as rows, variants as columns, and the winner per metric."""
    metrics = tuple(dict.fromkeys((*DECISION_METRICS, *results.metrics)))
    comparisons = results.comparisons(metrics)
    variants = list(results.samples)
    pct = f"{results.confidence:.0%}"
    head = "".join(f"<th>{_e(v)}<br><small>{_e(results.changes.get(v, ''))}</small></th>" for v in variants)
    rows = []
    for metric in metrics:
        mine = {c.variant: c for c in comparisons if c.metric == metric}
        cells = "".join(f"<td>{_cell(mine[v])}</td>" for v in variants if v in mine)
        best = winner(list(mine.values()), results.baseline)
        best += " (baseline: no variant significantly better)" if best == results.baseline else ""
        rows.append(f"<tr><td>{_e(metric)}</td>{cells}<td class='l'>{_e(best)}</td></tr>")
    return (
        f"<table><caption>Decision table: mean [{pct} CI over seeds]; Δ = paired difference to the baseline "
        f"{_e(results.baseline)}; n.s. = its interval contains 0</caption>"
        f"<tr><th>metric</th>{head}<th>winner</th></tr>{''.join(rows)}</table>"
    )


def _queue_waits(folder: Path) -> dict[str, np.ndarray]:
    import duckdb

    path = folder / DATABASE
    if not path.is_file():
        raise SpecError(str(folder), [f"no {DATABASE}: rerun `fleetlab experiment run` to build it"])
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.sql("SELECT variant, queue_wait_s FROM jobs WHERE queue_wait_s IS NOT NULL").fetchnumpy()
        slow = con.sql(
            "SELECT variant, seed, job_id, queue_wait_s FROM jobs WHERE queue_wait_s IS NOT NULL "
            "QUALIFY row_number() OVER (PARTITION BY variant ORDER BY queue_wait_s DESC, seed, job_id) <= 5 "
            "ORDER BY variant, queue_wait_s DESC"
        ).fetchall()
    finally:
        con.close()
    names = np.asarray(rows["variant"], dtype=object)
    waits = np.asarray(rows["queue_wait_s"], dtype=np.float64)
    out = {str(v): np.sort(waits[names == v]) for v in dict.fromkeys(names.tolist())}
    out["__slowest__"] = np.asarray(slow, dtype=object)
    return out


def _cdf_figure(waits: dict[str, np.ndarray], order: Sequence[str]) -> str:
    import plotly.graph_objects as go
    import plotly.io as pio

    figure = go.Figure()
    for variant in order:
        values = waits.get(variant)
        if values is None or len(values) == 0:
            continue
        step = max(1, len(values) // MAX_CDF_POINTS)
        xs = values[::step] / 60.0
        ys = (np.arange(len(values))[::step] + 1) / len(values)
        figure.add_trace(
            go.Scatter(x=xs, y=ys, mode="lines", name=html.escape(variant), line={"shape": "hv"})
        )
    figure.update_layout(
        title="Queue wait (submit → last pod bound), all seeds pooled",
        xaxis_title="queue wait (minutes)",
        yaxis_title="fraction of jobs",
        template="plotly_white",
    )
    return str(pio.to_html(figure, include_plotlyjs=True, full_html=False))


def _slowest_table(slow: np.ndarray) -> str:
    rows = "".join(
        f"<tr><td>{_e(v)}</td><td>{int(s)}</td><td class='l'>{_e(j)}</td>"
        f"<td>{_e(format_metric('wait_s', float(w)))}</td></tr>"
        for v, s, j, w in slow
    )
    return (
        "<table><caption>Longest queue waits per variant</caption>"
        f"<tr><th>variant</th><th>seed</th><th>job</th><th>queue wait</th></tr>{rows}</table>"
    )


def render_html(folder: Path) -> str:
    """The report as one HTML document."""
    results = load_results(folder)
    waits = _queue_waits(folder)
    slow = waits.pop("__slowest__")
    title = f"{results.name}: {results.finished}/{results.planned} runs"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{_CSS}</style>"
        f"</head><body><h1>{_e(title)}</h1>{decision_table(results)}"
        f"{_cdf_figure(waits, list(results.samples))}{_slowest_table(slow)}</body></html>\n"
    )


def write_html_report(folder: Path, target: Path) -> None:
    """Render and write atomically."""
    text = render_html(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
