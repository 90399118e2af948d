"""Terminal rendering: the side-by-side comparison table and pending-job explanations (rich)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleetlab.experiment.run import Run
from fleetlab.metrics.summary import Summary, summarize


def _duration(seconds: float) -> str:
    if math.isnan(seconds):
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.2f}h"


def _money(value: float) -> str:
    return "-" if math.isnan(value) else f"${value:,.2f}"


Row = tuple[str, Callable[[Summary], float], Callable[[float], str], str]
#: Rows whose figure is censored when jobs are unfinished: the lower bound shown instead ("≥"), and the
#: count of jobs it censored.
CENSORED: dict[str, tuple[Callable[[Summary], float], Callable[[Summary], int]]] = {
    "queue wait mean": (lambda s: s.queue_wait_mean_s_lower_bound, lambda s: s.jobs_pending_at_end),
    "queue wait p50": (lambda s: s.queue_wait_p50_s_lower_bound, lambda s: s.jobs_pending_at_end),
    "queue wait p95": (lambda s: s.queue_wait_p95_s_lower_bound, lambda s: s.jobs_pending_at_end),
    "queue wait p99": (lambda s: s.queue_wait_p99_s_lower_bound, lambda s: s.jobs_pending_at_end),
    "completion time mean": (
        lambda s: s.completion_mean_s_lower_bound,
        lambda s: s.jobs_pending_at_end + s.jobs_running_at_end,
    ),
}


def _row(label: str, value: Callable[[Summary], float], fmt: Callable[[float], str], better: str) -> Row:
    return (label, value, fmt, better)


ROWS: list[Row] = [
    _row("jobs completed", lambda s: s.jobs_completed, lambda v: f"{v:.0f}", "max"),
    _row("jobs running at end", lambda s: s.jobs_running_at_end, lambda v: f"{v:.0f}", ""),
    _row("jobs pending at end", lambda s: s.jobs_pending_at_end, lambda v: f"{v:.0f}", "min"),
    _row("jobs failed", lambda s: s.jobs_failed, lambda v: f"{v:.0f}", "min"),
    _row("queue wait mean", lambda s: s.queue_wait_mean_s, _duration, "min"),
    _row("queue wait p50", lambda s: s.queue_wait_p50_s, _duration, "min"),
    _row("queue wait p95", lambda s: s.queue_wait_p95_s, _duration, "min"),
    _row("queue wait p99", lambda s: s.queue_wait_p99_s, _duration, "min"),
    _row("  of which waiting for quota (mean)", lambda s: s.quota_wait_mean_s, _duration, "min"),
    _row("prep (pull + data) mean", lambda s: s.prep_mean_s, _duration, "min"),
    _row("completion time mean", lambda s: s.completion_mean_s, _duration, "min"),
    _row("GPU allocation ratio", lambda s: s.gpu_allocation_ratio, lambda v: f"{v:.1%}", "max"),
    _row("GPU utilisation ratio", lambda s: s.gpu_utilization_ratio, lambda v: f"{v:.1%}", "max"),
    _row("whole free GPU nodes (mean)", lambda s: s.whole_free_gpu_nodes_mean, lambda v: f"{v:.2f}", "max"),
    _row(
        "fragmented GPUs, FGD F_N(M) (mean)",
        lambda s: s.frag_gpu_milli_mean / 1000,
        lambda v: f"{v:.2f}",
        "min",
    ),
    _row(
        "free GPUs no typical pod can use (mean)", lambda s: s.stranded_gpus_mean, lambda v: f"{v:.2f}", "min"
    ),
    _row("free GPUs no job can use (end)", lambda s: s.stranded_gpus_end, lambda v: f"{v:.2f}", "min"),
    _row("largest free GPU block (mean)", lambda s: s.largest_free_block_mean, lambda v: f"{v:.2f}", "max"),
    _row("extra hours from interference", lambda s: s.interference_extra_hours, lambda v: f"{v:,.2f}", "min"),
    _row("idle GPU-hours", lambda s: s.gpu_hours_idle, lambda v: f"{v:,.1f}", "min"),
    _row("GPU-hours held waiting for gang peers", lambda s: s.gpu_hours_wait, lambda v: f"{v:,.1f}", "min"),
    _row("evictions", lambda s: s.evictions, lambda v: f"{v:.0f}", "min"),
    _row("GPU-hours lost to evictions", lambda s: s.gpu_hours_lost, lambda v: f"{v:,.1f}", "min"),
    _row("spot interruptions", lambda s: s.interruptions, lambda v: f"{v:.0f}", "min"),
    _row("  pods evicted by them", lambda s: s.interruption_pods_evicted, lambda v: f"{v:.0f}", "min"),
    _row("  GPU-hours lost to them", lambda s: s.interruption_gpu_hours_lost, lambda v: f"{v:,.1f}", "min"),
    _row("  dollars lost to them", lambda s: s.interruption_cost_lost, _money, "min"),
    _row("total cost", lambda s: s.cost_total, _money, "min"),
    _row("  of which compute", lambda s: s.cost_compute, _money, ""),
    _row("  of which lost work", lambda s: s.cost_lost, _money, "min"),
    _row("  of which prep", lambda s: s.cost_prep, _money, ""),
    _row("  of which gang wait", lambda s: s.cost_wait, _money, "min"),
    _row("  of which node boot", lambda s: s.cost_boot, _money, "min"),
    _row("  of which node down (repair)", lambda s: s.cost_down, _money, "min"),
    _row("  of which minimum billed time", lambda s: s.cost_minimum, _money, "min"),
    _row("  of which unused commitment", lambda s: s.cost_commitment_unused, _money, "min"),
    _row("  of which data transfer", lambda s: s.cost_data_transfer, _money, "min"),
    _row("  of which data storage", lambda s: s.cost_storage, _money, "min"),
    _row("  of which idle", lambda s: s.cost_idle, _money, "min"),
    _row("cost per completed job", lambda s: s.cost_per_completed_job, _money, "min"),
    _row("makespan", lambda s: s.makespan_s, _duration, "min"),
]


def row_values(label: str, value: Callable[[Summary], float], s: Summary) -> tuple[float, bool]:
    """A row's figure for one run and whether it is a lower bound (jobs it describes were unfinished)."""
    censored = CENSORED.get(label)
    if censored is not None and censored[1](s) > 0:
        return float(censored[0](s)), True
    return float(value(s)), False


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
    completion times of runs with unfinished jobs are lower bounds, shown as "≥" (docs/metrics.md)."""
    summaries = [summarize(run.result) for run in runs]
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("metric", style="bold")
    for run in runs:
        table.add_column(run.label, justify="right")
    for label, value, fmt, better in ROWS:
        pairs = [row_values(label, value, s) for s in summaries]
        values, lower = [v for v, _ in pairs], [low for _, low in pairs]
        cells: list[Text] = [Text(("≥ " if low else "") + fmt(v)) for v, low in pairs]
        best = best_of(values, lower, better) if better and len(summaries) > 1 else None
        if best is not None:
            for cell, v, low in zip(cells, values, lower, strict=True):
                if v == best and not low:
                    cell.stylize("bold green")
        table.add_row(label, *cells)
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
