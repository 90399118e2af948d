"""The inference-service table printed under the comparison when a scenario declares services."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.table import Table

from fleetlab.experiment.run import Run
from fleetlab.metrics.services import ServiceSummary, service_rows


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


_ROWS: list[tuple[str, Callable[[ServiceSummary], str]]] = [
    ("SLO attainment (% of time)", lambda s: f"{s.slo_attainment_pct:.1f}"),
    ("requests served late (%)", lambda s: f"{s.late_requests:,.0f} ({s.late_requests_pct:.2f})"),
    ("p99 latency, time-weighted mean (ms)", lambda s: _ms(s.p99_ms_mean)),
    ("ready replicas (mean)", lambda s: f"{s.ready_replicas_mean:.2f}"),
    (
        "replicas lost: failures / preemption / spot",
        lambda s: (
            f"{s.replicas_lost_to_failures} / {s.replicas_lost_to_preemption} / {s.replicas_lost_to_spot}"
        ),
    ),
]
#: Rows shown when some run recorded replica speeds (a cluster whose GPUs replicas can share).
_SHARING_ROWS: list[tuple[str, Callable[[ServiceSummary], str]]] = [
    ("p99 spread under sharing, std (ms)", lambda s: _ms(s.p99_ms_std)),
    ("saturated (% of time)", lambda s: "—" if s.saturated_pct is None else f"{s.saturated_pct:.1f}"),
    (
        "replica speed under sharing (mean)",
        lambda s: "—" if s.replica_speed_mean is None else f"{s.replica_speed_mean:.2f}",
    ),
]


def services_table(runs: Sequence[Run]) -> Table | None:
    """One column per run, a block of rows per service; None when no run has services."""
    if all(run.result.services is None for run in runs):
        return None
    per_run = [{row.service: row for row in service_rows(run.result)} for run in runs]
    names = list(dict.fromkeys(name for rows in per_run for name in rows))
    table = Table(title="inference services (latency SLO)", title_justify="left")
    table.add_column("metric", style="bold")
    for run in runs:
        table.add_column(run.label, justify="right")
    shared = any(row.saturated_pct is not None for rows in per_run for row in rows.values())
    for name in names:
        for label, cell in _ROWS + (_SHARING_ROWS if shared else []):
            table.add_row(
                f"{name}: {label}", *(cell(rows[name]) if name in rows else "—" for rows in per_run)
            )
    return table
