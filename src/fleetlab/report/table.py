"""Terminal rendering: the side-by-side comparison table and pending-job explanations (rich)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleetlab.experiment.run import Run
from fleetlab.metrics.summary import Summary, summarize
from fleetlab.report.metric_names import ROWS, duration_text, format_value, money_text, scaled

_duration = duration_text
_money = money_text

#: Summary figures that are censored when jobs are unfinished: the lower bound shown instead ("≥"), and
#: the count of jobs it censored (docs/metrics.md).
CENSORED: dict[str, tuple[str, Callable[[Summary], int]]] = {
    "queue_wait_mean_s": ("queue_wait_mean_s_lower_bound", lambda s: s.jobs_pending_at_end),
    "queue_wait_p50_s": ("queue_wait_p50_s_lower_bound", lambda s: s.jobs_pending_at_end),
    "queue_wait_p95_s": ("queue_wait_p95_s_lower_bound", lambda s: s.jobs_pending_at_end),
    "queue_wait_p99_s": ("queue_wait_p99_s_lower_bound", lambda s: s.jobs_pending_at_end),
    "completion_mean_s": (
        "completion_mean_s_lower_bound",
        lambda s: s.jobs_pending_at_end + s.jobs_running_at_end,
    ),
    "completion_p95_s": (
        "completion_p95_s_lower_bound",
        lambda s: s.jobs_pending_at_end + s.jobs_running_at_end,
    ),
}


def row_values(key: str, s: Summary) -> tuple[float, bool]:
    """A row's figure for one run and whether it is a lower bound (jobs it describes were unfinished)."""
    censored = CENSORED.get(key)
    if censored is not None and censored[1](s) > 0:
        return float(getattr(s, censored[0])), True
    return float(getattr(s, key)), False


def best_of(values: Sequence[float], lower: Sequence[bool], better: str) -> float | None:
    """The winning value of a row, or None: only an exact figure can win, and a "min" row's exact winner
    must also beat every lower bound (a run that left jobs waiting cannot win on wait by leaving them)."""
    exact = [v for v, low in zip(values, lower, strict=True) if not low and not math.isnan(v)]
    finite = [v for v in values if not math.isnan(v)]
    if not exact or len(finite) < 2 or all(v == finite[0] for v in finite):
        return None
    best = max(exact) if better == "max" else min(exact)
    bounds = [v for v, low in zip(values, lower, strict=True) if low]
    if better == "min" and any(b < best for b in bounds):
        return None
    return best


def comparison_table(runs: Sequence[Run], title: str) -> Table:
    """Policies as columns, metrics as rows; the best value per row is bold (ties all bold). Waits and
    completion times of runs with unfinished jobs are lower bounds, shown as "≥" (docs/metrics.md).
    Rows with no value in any run (service figures without services) are left out."""
    summaries = [summarize(run.result) for run in runs]
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("metric", style="bold")
    for run in runs:
        table.add_column(run.label, justify="right")
    for row in ROWS:
        pairs = [row_values(row.key, s) for s in summaries]
        values = [scaled(row.key, v) for v, _ in pairs]
        lower = [low for _, low in pairs]
        if all(math.isnan(v) for v in values):
            continue
        cells: list[Text] = [
            Text(("≥ " if low else "") + format_value(row.key, v))
            for v, low in zip(values, lower, strict=True)
        ]
        best = best_of(values, lower, row.better) if row.better and len(summaries) > 1 else None
        if best is not None:
            for cell, v, low in zip(cells, values, lower, strict=True):
                if v == best and not low:
                    cell.stylize("bold green")
        table.add_row(row.label, *cells)
    if len(runs) > 1:
        _window_rows(table, runs, summaries)
    return table


def _window_rows(table: Table, runs: Sequence[Run], summaries: Sequence[Summary]) -> None:
    """Total cost and cost per completed job over the common accounting window (metrics/window.py)."""
    from fleetlab.metrics.window import common_window, window_cost

    window_ms, source = common_window([run.result for run in runs])
    costs = [
        window_cost(run.result, s.cost_total, s.jobs_completed, window_ms, source)
        for run, s in zip(runs, summaries, strict=True)
    ]
    span = f"0–{_duration(window_ms / 1000.0)}, {source}"
    for label, values in (
        (f"total cost, common window ({span})", [c.cost_total for c in costs]),
        ("cost per completed job, common window", [c.cost_per_completed_job for c in costs]),
    ):
        cells = [Text(_money(v)) for v in values]
        best = best_of(values, [False] * len(values), "min")
        for cell, v in zip(cells, values, strict=True):
            if best is not None and v == best:
                cell.stylize("bold green")
        table.add_row(label, *cells)


def pending_table(run: Run, limit: int = 10) -> Table | None:
    """The first pending jobs of a run: kube-scheduler's message and fleetlab's shortage verdict."""
    pending = run.result.pending
    if not pending:
        return None
    table = Table(title=f"{run.label}: {len(pending)} job(s) still pending", title_justify="left")
    table.add_column("job")
    table.add_column("pods")
    table.add_column("blocked by")
    table.add_column("why")
    for p in pending[:limit]:
        table.add_row(p.job_id, str(p.pods_pending), p.blocked_by, f"{p.message}\n{p.detail}")
    return table


def print_runs(console: Console, runs: Sequence[Run], title: str, show_pending: bool = True) -> None:
    """The comparison table, then warnings and pending explanations."""
    console.print(comparison_table(runs, title))
    print_notes(console, runs, show_pending)


def _amount(flavor_resource: str, value: float) -> str:
    """A quota figure in the unit a person writes: cores for cpu, Gi for memory, counts otherwise."""
    resource = flavor_resource.split("/", 1)[-1]
    if resource == "cpu":
        return f"{value / 1000:,.1f}"
    if resource in ("memory", "ephemeral-storage"):
        return f"{value / 2**30:,.0f}Gi"
    return f"{value:,.1f}" if value != int(value) else f"{int(value):,}"


def queue_table(run: Run) -> Table | None:
    """Per ClusterQueue: nominal (guaranteed) vs mean/max usage, borrowed, lent, and its jobs' waits."""
    from fleetlab.metrics.queues import queue_rows

    rows = queue_rows(run.result)
    if not rows:
        return None
    table = Table(title=f"{run.label}: Kueue ClusterQueues (time-weighted)", title_justify="left")
    for name in (
        "ClusterQueue",
        "flavor/resource",
        "nominal",
        "max allowed",
        "usage mean / max",
        "borrowed mean / max",
        "lent mean",
        "jobs",
        "wait for quota",
        "wait for node",
    ):
        table.add_column(name, justify="left" if name in ("ClusterQueue", "flavor/resource") else "right")
    for r in rows:
        table.add_row(
            r.cluster_queue,
            r.flavor_resource,
            _amount(r.flavor_resource, r.nominal),
            "cohort" if r.max_allowed < 0 else _amount(r.flavor_resource, r.max_allowed),
            f"{_amount(r.flavor_resource, r.usage_mean)} / {_amount(r.flavor_resource, r.usage_max)}",
            f"{_amount(r.flavor_resource, r.borrowed_mean)} / {_amount(r.flavor_resource, r.borrowed_max)}",
            _amount(r.flavor_resource, r.lent_mean),
            str(r.jobs),
            _duration(r.quota_wait_mean_s),
            _duration(r.node_wait_mean_s),
        )
    return table


def team_table(runs: Sequence[Run]) -> Table | None:
    """Per team and run: waits (for quota, overall), completion time, evictions and lost GPU-hours."""
    from fleetlab.metrics.teams import team_rows

    per_run = [(run.label, team_rows(run.result)) for run in runs]
    if all(len(rows) < 2 for _, rows in per_run):
        return None
    table = Table(title="per team", title_justify="left")
    for name in (
        "run",
        "team",
        "jobs done",
        "pending at end",
        "queue wait",
        "of which quota",
        "completion",
        "evictions",
        "lost GPU-h",
        "delay from evictions",
    ):
        table.add_column(name, justify="left" if name in ("run", "team") else "right")
    for label, rows in per_run:
        for r in rows:
            table.add_row(
                label,
                r.team,
                f"{r.completed}/{r.jobs}",
                str(r.pending),
                ("≥ " + _duration(r.queue_wait_mean_s_lower_bound))
                if r.pending
                else _duration(r.queue_wait_mean_s),
                _duration(r.quota_wait_mean_s),
                _duration(r.completion_mean_s),
                str(r.evictions),
                f"{r.lost_gpu_hours:,.1f}",
                _duration(r.eviction_delay_hours * 3600),
            )
    return table


def print_notes(console: Console, runs: Sequence[Run], show_pending: bool = True) -> None:
    """Per-team and per-queue tables, warnings and pending-job explanations of each run."""
    from fleetlab.report.dynamics_table import dynamics_table
    from fleetlab.report.services_table import services_table

    if (lifecycle := dynamics_table(runs)) is not None:
        console.print(lifecycle)
    if (services := services_table(runs)) is not None:
        console.print(services)
    teams = team_table(runs)
    if teams is not None:
        console.print(teams)
    for run in runs:
        table = queue_table(run)
        if table is not None:
            console.print(table)
    for run in runs:
        for warning in dict.fromkeys(run.result.warnings):
            console.print(Text.assemble(("warning", "yellow"), f" ({run.label}): {warning}"), highlight=False)
    if show_pending:
        for run in runs:
            table = pending_table(run)
            if table is not None:
                console.print(table)
