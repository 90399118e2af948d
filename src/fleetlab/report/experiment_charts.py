"""The experiment report's charts as plotly figures, shared by the HTML page and the PNG export.

Each chart is one ``ChartSection``: a heading, the figure (None where the experiment has nothing to show,
e.g. no Kueue queues) and a note saying what the chart shows or why it is absent. Every name that comes
from input (variants, queues, job classes) is HTML-escaped before plotly sees it, since plotly renders a
subset of HTML in labels.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fleetlab.cost.billing import BACKGROUND, BUCKETS
from fleetlab.experiment.results import ExperimentResults
from fleetlab.experiment.stats import Interval
from fleetlab.report import experiment_data as data

MAX_CDF_POINTS = 2000
_BUCKET_COLOURS = {
    "compute": "#2a9d8f",
    "prep": "#e9c46a",
    "idle": "#adb5bd",
    "lost": "#e76f51",
    "wait": "#8d99ae",
    BACKGROUND: "#6d597a",
}


@dataclass(frozen=True)
class ChartSection:
    """One chart of the report (or the reason it has none)."""

    key: str
    heading: str
    figure: Any | None
    note: str


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _colours(order: Sequence[str]) -> dict[str, str]:
    import plotly.colors

    palette = plotly.colors.qualitative.Plotly
    return {v: palette[k % len(palette)] for k, v in enumerate(order)}


def _figure(title: str, x_title: str, y_title: str, **layout: Any) -> Any:
    import plotly.graph_objects as go

    figure = go.Figure()
    # The legend sits under the plot, clear of the axes and the title, however long the variant names.
    layout = {
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0},
        "margin": {"t": 60, "b": 110},
        **layout,
    }
    figure.update_layout(
        title=title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white", **layout
    )
    return figure


def queue_wait_cdf(waits: dict[str, data.FloatArray], order: Sequence[str]) -> ChartSection:
    """Empirical CDF of queue wait per variant, thinned to at most MAX_CDF_POINTS points."""
    import plotly.graph_objects as go

    colours = _colours(order)
    figure = _figure(
        "Queue wait (submit → last pod bound), all seeds pooled",
        "queue wait (log scale; waits under 1 s drawn at 1 s)",
        "fraction of jobs waiting at most this long",
        xaxis={
            "type": "log",
            "tickvals": [1, 10, 60, 600, 3600, 36000, 360000],
            "ticktext": ["≤1 s", "10 s", "1 min", "10 min", "1 h", "10 h", "100 h"],
        },
        yaxis={"range": [0, 1.02], "tickformat": ".0%"},
    )
    for variant in order:
        values = waits.get(variant)
        if values is None or len(values) == 0:
            continue
        step = max(1, math.ceil(len(values) / MAX_CDF_POINTS))
        index = np.unique(np.append(np.arange(0, len(values), step), len(values) - 1))
        figure.add_trace(
            go.Scatter(
                x=np.maximum(values[index], 1.0),
                y=(index + 1) / len(values),
                mode="lines",
                name=_e(variant),
                line={"shape": "hv", "color": colours[variant]},
            )
        )
    return ChartSection("queue_wait_cdf", "Queue wait", figure, "")


def _error_bars(intervals: Sequence[Interval | None], scale: float) -> dict[str, Any]:
    high = [0.0 if i is None or math.isnan(i.high) else (i.high - i.mean) / scale for i in intervals]
    low = [0.0 if i is None or math.isnan(i.low) else (i.mean - i.low) / scale for i in intervals]
    return {"type": "data", "array": high, "arrayminus": low, "visible": True}


def completion_by_class(
    by_class: dict[str, dict[str, Interval]],
    order: Sequence[str],
    counts: dict[str, dict[str, tuple[int, int]]] | None = None,
) -> ChartSection:
    """Grouped bars: mean completion time of each job class, one bar per variant, CI over seeds; each bar
    says how many of the class's jobs completed (the rest are censored: not in the mean)."""
    import plotly.graph_objects as go

    colours = _colours(order)
    counts = counts or {}
    classes = sorted(set(by_class) | set(counts))
    figure = _figure(
        "Completion time (submit → done) of completed jobs by job class, mean over seeds",
        "job class",
        "mean completion time (hours)",
        barmode="group",
    )
    censored = False
    for variant in order:
        intervals = [by_class.get(c, {}).get(variant) for c in classes]
        done = [counts.get(c, {}).get(variant) for c in classes]
        censored = censored or any(d is not None and d[0] < d[1] for d in done)
        figure.add_trace(
            go.Bar(
                x=[_e(c) for c in classes],
                y=[0.0 if i is None else i.mean / 3600.0 for i in intervals],
                error_y=_error_bars(intervals, 3600.0),
                text=["" if d is None else f"{d[0]}/{d[1]} done" for d in done],
                textposition="outside",
                name=_e(variant),
                marker_color=colours[variant],
            )
        )
    note = "Error bars: the confidence interval of the mean over seeds. Each bar is labelled with the jobs of"
    note += " its class that completed, over all seeds (a bar with none completed is empty)."
    if censored:
        note += " Some jobs did not complete: their completion times are censored, not in the means."
    return ChartSection("completion_by_class", "Completion time by job class", figure, note)


def gpu_allocation(series: data.TimelineSeries, order: Sequence[str]) -> ChartSection:
    """Allocated GPUs (solid) and ready GPU capacity (dotted) over time per variant."""
    import plotly.graph_objects as go

    colours = _colours(order)
    hours = series.t_s / 3600.0
    figure = _figure(
        "GPU allocation over time, mean over seeds (dotted: GPUs on ready nodes)", "time (hours)", "GPUs"
    )
    for variant in order:
        if variant not in series.allocated:
            continue
        name, colour = _e(variant), colours[variant]
        figure.add_trace(
            go.Scatter(
                x=hours,
                y=series.allocated[variant],
                mode="lines",
                name=name,
                legendgroup=name,
                line={"color": colour},
            )
        )
        figure.add_trace(
            go.Scatter(
                x=hours,
                y=series.total[variant],
                mode="lines",
                name=f"{name} capacity",
                legendgroup=name,
                showlegend=False,
                line={"color": colour, "dash": "dot", "width": 1},
            )
        )
        if series.busy is not None and variant in series.busy:
            figure.add_trace(
                go.Scatter(
                    x=hours,
                    y=series.busy[variant],
                    mode="lines",
                    name=f"{name} busy",
                    legendgroup=name,
                    line={"color": colour, "dash": "dash"},
                )
            )
    note = (
        "Allocated = GPUs requested by bound pods (solid); busy = GPUs doing useful work (dashed): only "
        "pods that are computing (not pulling images, downloading data or waiting for gang peers), times "
        "each job's gpu_utilization, divided by its slowdown (time-slicing, interference)."
        if series.busy is not None
        else "Allocated = GPUs requested by bound pods. This store predates the busy-GPU column, so only "
        "allocation is shown."
    )
    return ChartSection("gpu_allocation", "GPU allocation and utilisation over time", figure, note)


def fragmentation(series: data.TimelineSeries, order: Sequence[str]) -> ChartSection:
    """Free GPUs stranded on partly used nodes over time (or whole free nodes when shapes differ)."""
    import plotly.graph_objects as go

    colours = _colours(order)
    hours = series.t_s / 3600.0
    if series.free_on_used_nodes is not None:
        values, y_title = series.free_on_used_nodes, "free GPUs on partly used nodes"
        note = (
            f"Free GPUs that sit on nodes already running GPU pods (every GPU node has "
            f"{series.gpus_per_node} GPUs): a job that needs a whole node cannot use them."
        )
    else:
        values, y_title = series.whole_free_nodes, "whole free GPU nodes"
        note = "GPU nodes differ in GPU count, so whole free GPU nodes are shown instead of stranded GPUs."
    figure = _figure("Fragmentation over time, mean over seeds", "time (hours)", y_title)
    largest = series.largest_free_block
    if largest is not None:
        figure.update_layout(
            yaxis2={"title": "largest free block (GPUs on one node)", "overlaying": "y", "side": "right"}
        )
        note += " Dashed (right axis): the largest free block, the most free GPUs on any one node."
    for variant in order:
        if variant in values:
            figure.add_trace(
                go.Scatter(
                    x=hours,
                    y=values[variant],
                    mode="lines",
                    name=_e(variant),
                    legendgroup=_e(variant),
                    line={"color": colours[variant]},
                )
            )
        if largest is not None and variant in largest:
            figure.add_trace(
                go.Scatter(
                    x=hours,
                    y=largest[variant],
                    mode="lines",
                    name=f"{_e(variant)} largest free block",
                    legendgroup=_e(variant),
                    yaxis="y2",
                    line={"color": colours[variant], "dash": "dash"},
                )
            )
    return ChartSection("fragmentation", "Fragmentation over time", figure, note)


def cost_split(costs: dict[str, dict[str, float]], order: Sequence[str]) -> ChartSection:
    """Stacked bars: each variant's mean bill per run split into compute / prep / idle / lost / wait."""
    import plotly.graph_objects as go

    variants = [v for v in order if v in costs]
    figure = _figure("Cost split per run, mean over seeds", "variant", "USD per run", barmode="stack")
    present = (*BUCKETS, BACKGROUND) if any(BACKGROUND in costs[v] for v in variants) else BUCKETS
    for bucket in present:
        figure.add_trace(
            go.Bar(
                x=[_e(v) for v in variants],
                y=[costs[v][bucket] for v in variants],
                name=bucket,
                marker_color=_BUCKET_COLOURS.get(bucket),
            )
        )
    note = (
        "compute: GPU time of work that counted; lost: compute thrown away by evictions; prep: image pull "
        "and data download; wait: held by gang pods waiting for peers; idle: nothing bound."
    )
    if BACKGROUND in present:
        note += " background: held by work the history does not list (the scenario's background load)."
    return ChartSection("cost_split", "Cost split", figure, note)


def queue_borrowing(balances: Sequence[data.QueueBalance], order: Sequence[str]) -> ChartSection:
    """Per ClusterQueue: quota borrowed from the cohort (up) and lent to it (down), per variant."""
    import plotly.graph_objects as go

    if not balances:
        return ChartSection(
            "queue_borrowing",
            "Kueue borrowing and lending",
            None,
            "There are no Kueue queues in this experiment.",
        )
    colours = _colours(order)
    labels = list(dict.fromkeys(f"{b.cluster_queue} · {b.flavor_resource}" for b in balances))
    figure = _figure(
        "Quota borrowed (up) and lent (down) per ClusterQueue, time-weighted mean over seeds",
        "ClusterQueue · flavor/resource",
        "quota units (GPUs for nvidia.com/gpu)",
        barmode="relative",
    )
    for variant in order:
        mine = {f"{b.cluster_queue} · {b.flavor_resource}": b for b in balances if b.variant == variant}
        if not mine:
            continue
        name, colour = _e(variant), colours[variant]
        x = [_e(label) for label in labels]
        for kind, sign, pattern in (("borrowed", 1.0, ""), ("lent", -1.0, "/")):
            figure.add_trace(
                go.Bar(
                    x=x,
                    y=[sign * getattr(mine[lb], kind) if lb in mine else math.nan for lb in labels],
                    name=f"{name} {kind}",
                    legendgroup=name,
                    offsetgroup=name,
                    marker={"color": colour, "pattern": {"shape": pattern}},
                )
            )
    return ChartSection("queue_borrowing", "Kueue borrowing and lending", figure, "")


def slo_attainment(rows: Sequence[data.SloAttainment], order: Sequence[str]) -> ChartSection:
    """Share of each service class's jobs that met their SLO, per variant."""
    import plotly.graph_objects as go

    if not rows:
        return ChartSection(
            "slo_attainment",
            "SLO attainment",
            None,
            "There are no services in this experiment: no job class has an SLO.",
        )
    colours = _colours(order)
    classes = list(dict.fromkeys(r.job_class for r in rows))
    services = any(not math.isnan(r.p99_ms) for r in rows)  # rows from the services time series
    figure = _figure(
        "SLO attainment, mean over seeds",
        "service" if services else "job class",
        "evaluation steps within the SLO (%)" if services else "jobs within their SLO (%)",
        barmode="group",
    )
    for variant in order:
        mine = {r.job_class: r.attained for r in rows if r.variant == variant}
        p99 = {r.job_class: r.p99_ms for r in rows if r.variant == variant and not math.isnan(r.p99_ms)}
        if mine:
            figure.add_trace(
                go.Bar(
                    x=[_e(c) for c in classes],
                    y=[100.0 * mine[c] if c in mine else math.nan for c in classes],
                    customdata=[p99.get(c, math.nan) for c in classes],
                    hovertemplate="%{y:.1f} % within SLO, p99 %{customdata:.0f} ms<extra></extra>"
                    if p99
                    else None,
                    name=_e(variant),
                    marker_color=colours[variant],
                )
            )
    return ChartSection("slo_attainment", "SLO attainment", figure, "")


@dataclass(frozen=True)
class ReportCharts:
    """All chart sections, plus the longest waits for the report's table."""

    sections: list[ChartSection]
    slowest: list[tuple[Any, ...]]
    #: Per variant the mean jobs per run in each end state (experiment_data.state_counts).
    states: dict[str, dict[str, float]] | None = None


def build_charts(folder: Path, results: ExperimentResults) -> ReportCharts:
    """Every chart of the report, read from the sweep's store."""
    order = list(results.samples)
    con = data.open_store(folder)
    try:
        waits, slowest = data.queue_waits(con)
        by_class = data.completion_by_class(con, results.confidence)
        counts = data.completion_counts(con)
        states = data.state_counts(con)
        series = data.timeline_series(con)
        costs = data.cost_split(con)
        balances = data.queue_balances(con)
        slo = data.service_slo(con) or data.slo_attainment(con)
    finally:
        con.close()
    sections = [
        queue_wait_cdf(waits, order),
        completion_by_class(by_class, order, counts),
        gpu_allocation(series, order),
        fragmentation(series, order),
        cost_split(costs, order),
        queue_borrowing(balances, order),
        slo_attainment(slo, order),
    ]
    return ReportCharts(sections, slowest, states)
