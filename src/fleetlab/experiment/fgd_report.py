"""Tables, curves and the plot of an FGD experiment, written to a folder in one atomic swap.

Files: ``curves.csv`` / ``curves.parquet`` (variant, policy, seed, arrived %, unallocated GPU %, cluster
fragmentation %), ``runs.csv`` (one row per run: pods, failures, unallocated GPU % at the reference
arrival), ``summary.csv`` and ``table.md`` (per variant and policy: mean, standard deviation,
min, median and max over seeds at that arrival) and ``unallocated.html`` (plotly: median over seeds with
the min-max band per policy, and the paper's "Ideal" line), as the paper's Fig. 9(a) draws it. The same
runs give byte-identical files: wall times are printed, not written.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fleetlab.experiment.fgd import TOP_PERCENT, Trajectory
from fleetlab.spec.csv_out import csv_text
from fleetlab.spec.out_folder import staged_output

REFERENCE_PERCENT = 100


@dataclass(frozen=True)
class Cell:
    """Unallocated GPU % at the reference arrival for one variant and policy, over seeds."""

    variant: str
    policy: str
    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0


def summary_cells(runs: Sequence[Trajectory], percent: int = REFERENCE_PERCENT) -> list[Cell]:
    """Per (variant, policy) in first-seen order, the unallocated GPU % at ``percent`` arrived per seed."""
    groups: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        groups.setdefault((run.variant, run.policy), []).append(float(run.by_percent()[0][percent]))
    return [Cell(v, p, tuple(vals)) for (v, p), vals in groups.items()]


def markdown_table(cells: Sequence[Cell], percent: int = REFERENCE_PERCENT) -> str:
    """Variants as rows, policies as columns: ``mean ± sd`` of unallocated GPU % (best per row in bold)."""
    variants = list(dict.fromkeys(c.variant for c in cells))
    policies = list(dict.fromkeys(c.policy for c in cells))
    by_key = {(c.variant, c.policy): c for c in cells}
    lines = [
        f"Unallocated GPUs (% of cluster) at {percent} % arrived workload, mean ± sd over seeds",
        "",
        "| variant | " + " | ".join(policies) + " |",
        "|---|" + "---:|" * len(policies),
    ]
    for variant in variants:
        row = [by_key.get((variant, p)) for p in policies]
        best = min((c.mean for c in row if c is not None), default=float("nan"))
        texts = []
        for cell in row:
            if cell is None:
                texts.append("")
                continue
            text = f"{cell.mean:.2f} ± {cell.std:.2f}"
            texts.append(f"**{text}**" if cell.mean == best else text)
        lines.append(f"| {variant} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


def _curve_columns(runs: Sequence[Trajectory]) -> dict[str, list[object]]:
    cols: dict[str, list[object]] = {
        k: [] for k in ("variant", "policy", "seed", "arrived_pct", "unallocated_pct", "frag_pct")
    }
    percents = list(range(TOP_PERCENT + 1))
    for run in runs:
        unalloc, frag = run.by_percent()
        for p in percents:
            if np.isnan(unalloc[p]):
                continue
            cols["variant"].append(run.variant)
            cols["policy"].append(run.policy)
            cols["seed"].append(run.seed)
            cols["arrived_pct"].append(p)
            cols["unallocated_pct"].append(round(float(unalloc[p]), 6))
            cols["frag_pct"].append(round(float(frag[p]), 6))
    return cols


def _write_csv(path: Path, columns: dict[str, list[object]]) -> None:
    text = csv_text(list(columns), zip(*columns.values(), strict=True), line_end="\r\n")
    path.write_text(text, encoding="utf-8", newline="")


def _write_parquet(path: Path, columns: dict[str, list[object]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)


def build_figure(runs: Sequence[Trajectory]) -> Any:
    """One panel per variant: unallocated GPU % vs arrived workload %, median over seeds, min-max band."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    variants = list(dict.fromkeys(r.variant for r in runs))
    policies = list(dict.fromkeys(r.policy for r in runs))
    cols = min(3, len(variants))
    rows = (len(variants) + cols - 1) // cols
    figure = make_subplots(rows=rows, cols=cols, subplot_titles=variants, shared_yaxes=True)
    colours = ["#7f7f7f", "#9467bd", "#8c564b", "#2ca02c", "#1f77b4", "#d62728", "#ff7f0e"]
    x = np.arange(TOP_PERCENT + 1)
    for k, variant in enumerate(variants):
        row, col = k // cols + 1, k % cols + 1
        for j, policy in enumerate(policies):
            mine = [r.by_percent()[0] for r in runs if r.variant == variant and r.policy == policy]
            if not mine:
                continue
            curves = np.stack(mine)
            colour = colours[j % len(colours)]
            with warnings.catch_warnings():  # bins before the first arrival are NaN in every seed
                warnings.simplefilter("ignore", RuntimeWarning)
                low, mid, high = (
                    np.nanmin(curves, axis=0),
                    np.nanmedian(curves, axis=0),
                    np.nanmax(curves, axis=0),
                )
            band = go.Scatter(
                x=np.r_[x, x[::-1]],
                y=np.r_[high, low[::-1]],
                fill="toself",
                line={"width": 0},
                fillcolor=colour,
                opacity=0.2,
                hoverinfo="skip",
                showlegend=False,
                legendgroup=policy,
            )
            line = go.Scatter(
                x=x, y=mid, name=policy, line={"color": colour}, legendgroup=policy, showlegend=k == 0
            )
            figure.add_trace(band, row=row, col=col)
            figure.add_trace(line, row=row, col=col)
        ideal = go.Scatter(
            x=[0, 100, TOP_PERCENT],
            y=[100, 0, 0],
            name="ideal",
            line={"color": "black", "dash": "dot"},
            legendgroup="ideal",
            showlegend=k == 0,
        )
        figure.add_trace(ideal, row=row, col=col)
    figure.update_xaxes(title_text="arrived workload (% of cluster GPU capacity)", range=[75, TOP_PERCENT])
    figure.update_yaxes(title_text="unallocated GPUs (%)", range=[0, 30])
    figure.update_layout(template="plotly_white", height=360 * rows, title="FGD experiment: unallocated GPUs")
    return figure


def plot_html(runs: Sequence[Trajectory]) -> str:
    """The figure as one self-contained HTML page (plotly.js inlined)."""
    import plotly.io as pio

    return str(
        pio.to_html(build_figure(runs), include_plotlyjs=True, full_html=True, div_id="fgd-unallocated")
    )


def write_report(runs: Sequence[Trajectory], out: Path, png: bool = False, force: bool = False) -> list[str]:
    """Write every file into a staging folder next to ``out`` and swap it in; returns warnings."""
    notes: list[str] = []
    with staged_output(out, force) as staging:
        curves = _curve_columns(runs)
        _write_csv(staging / "curves.csv", curves)
        _write_parquet(staging / "curves.parquet", curves)
        runs_cols: dict[str, list[object]] = {
            "variant": [r.variant for r in runs],
            "policy": [r.policy for r in runs],
            "seed": [r.seed for r in runs],
            "pods": [len(r.arrived_milli) for r in runs],
            "failed": [r.failed for r in runs],
            f"unallocated_pct_at_{REFERENCE_PERCENT}": [
                round(float(r.by_percent()[0][REFERENCE_PERCENT]), 6) for r in runs
            ],
        }
        _write_csv(staging / "runs.csv", runs_cols)
        cells = summary_cells(runs)
        summary: dict[str, list[object]] = {
            k: [] for k in ("variant", "policy", "seeds", "mean", "sd", "min", "median", "max")
        }
        for c in cells:
            for key, value in zip(
                summary,
                (
                    c.variant,
                    c.policy,
                    len(c.values),
                    c.mean,
                    c.std,
                    min(c.values),
                    float(np.median(c.values)),
                    max(c.values),
                ),
                strict=True,
            ):
                summary[key].append(round(value, 6) if isinstance(value, float) else value)
        _write_csv(staging / "summary.csv", summary)
        (staging / "table.md").write_text(markdown_table(cells), encoding="utf-8")
        html = plot_html(runs)
        (staging / "unallocated.html").write_text(html, encoding="utf-8")
        if png:
            notes.extend(_write_png(runs, staging / "unallocated.png"))
    return notes


def _write_png(runs: Sequence[Trajectory], path: Path) -> list[str]:
    """PNG export needs kaleido and a browser; without them, say so instead of failing the run."""
    from fleetlab.experiment.png_export import PngUnavailable, draw_png

    try:
        draw_png([build_figure(runs)], [path])
    except PngUnavailable as exc:
        return [f"--png: {exc}; wrote the HTML plot only"]
    return []
