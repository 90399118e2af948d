"""Every summary metric a table shows: its human name, its unit and how a value or a change is written.

One catalogue for the single-run table, the multi-seed comparison, the verdict and the decision report, so
a metric has one name everywhere. Ratios (0..1) are shown as percent and their changes in percentage points
(pp); metrics already in percent (``*_pct``) change in pp too, never in "percent of percent".
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricRow:
    """One row: the Summary field, its name, its unit kind, a display scale and the better direction."""

    key: str
    label: str
    #: duration (seconds) | money (dollars) | ratio (0..1) | percent (0..100) | number
    kind: str
    digits: int = 0
    scale: float = 1.0
    #: ``max`` / ``min`` when a higher / lower value is better, ``""`` when neither is.
    better: str = "min"


def _r(
    key: str, label: str, kind: str, digits: int = 0, better: str = "min", scale: float = 1.0
) -> MetricRow:
    return MetricRow(key, label, kind, digits, scale, better)


ROWS: tuple[MetricRow, ...] = (
    _r("jobs_completed", "jobs completed", "number", better="max"),
    _r("jobs_running_at_end", "jobs running at end", "number", better=""),
    _r("jobs_pending", "jobs pending at end", "number"),
    _r("jobs_failed", "jobs failed", "number"),
    _r("queue_wait_mean_s", "queue wait mean", "duration"),
    _r("queue_wait_p50_s", "queue wait p50", "duration"),
    _r("queue_wait_p95_s", "queue wait p95", "duration"),
    _r("queue_wait_p99_s", "queue wait p99", "duration"),
    _r("quota_wait_mean_s", "  of which waiting for quota (mean)", "duration"),
    _r("prep_mean_s", "prep (pull + data) mean", "duration"),
    _r("completion_mean_s", "completion time mean", "duration"),
    _r("completion_p95_s", "completion time p95", "duration"),
    _r("gpu_allocation_ratio", "GPU allocation ratio", "ratio", better="max"),
    _r("gpu_utilization_ratio", "GPU utilisation ratio", "ratio", better="max"),
    _r("whole_free_gpu_nodes_mean", "whole free GPU nodes (mean)", "number", 2, "max"),
    _r("frag_gpu_milli_mean", "fragmented GPUs, FGD F_N(M) (mean)", "number", 2, scale=1e-3),
    _r("stranded_gpus_mean", "free GPUs no typical pod can use (mean)", "number", 2),
    _r("stranded_gpus_end", "free GPUs no job can use (end)", "number", 2),
    _r("largest_free_block_mean", "largest free GPU block (mean)", "number", 2, "max"),
    _r("interference_extra_hours", "extra hours from interference", "number", 2),
    _r("gpu_hours_idle", "idle GPU-hours", "number", 1),
    _r("gpu_hours_wait", "GPU-hours held waiting for gang peers", "number", 1),
    _r("evictions", "evictions", "number"),
    _r("gpu_hours_lost", "GPU-hours lost to evictions", "number", 1),
    _r("interruptions", "spot interruptions", "number"),
    _r("interruption_pods_evicted", "  pods evicted by them", "number"),
    _r("interruption_gpu_hours_lost", "  GPU-hours lost to them", "number", 1),
    _r("interruption_cost_lost", "  dollars lost to them", "money"),
    _r("service_slo_attainment_pct", "SLO attainment", "percent", 1, "max"),
    _r("service_late_requests_pct", "requests served late", "percent", 2),
    _r("cost_total", "total cost", "money"),
    _r("cost_compute", "  of which compute", "money", better=""),
    _r("cost_lost", "  of which lost work", "money"),
    _r("cost_prep", "  of which prep", "money", better=""),
    _r("cost_wait", "  of which gang wait", "money"),
    _r("cost_boot", "  of which node boot", "money"),
    _r("cost_down", "  of which node down (repair)", "money"),
    _r("cost_minimum", "  of which minimum billed time", "money"),
    _r("cost_commitment_unused", "  of which unused commitment", "money"),
    _r("cost_data_transfer", "  of which data transfer", "money"),
    _r("cost_storage", "  of which data storage", "money"),
    _r("cost_idle", "  of which idle", "money"),
    _r("cost_per_completed_job", "cost per completed job", "money"),
    _r("makespan_s", "makespan", "duration"),
)
#: Figures of a comparison, not of one run: cost over the common accounting window (docs/metrics.md) and
#: the run rates at this load. Shown by ``compare`` and the reports, never by the single-run table.
WINDOW_ROWS: tuple[MetricRow, ...] = (
    _r("accounting_window_s", "common accounting window", "duration", better=""),
    _r("cost_window_extension", "  idle nodes billed on to the window's end", "money", better=""),
    _r("cost_total_window", "total cost, common window", "money"),
    _r("cost_per_completed_job_window", "cost per completed job, common window", "money"),
    _r("cost_rate_per_hour", "cost rate at this load ($/h)", "money"),
    _r("cost_per_month", "cost per month at this load (730 h)", "money"),
)
BY_KEY = {row.key: row for row in (*ROWS, *WINDOW_ROWS)}


def metric_label(key: str) -> str:
    """The human name of a summary field (the field name itself when the catalogue lacks it)."""
    row = BY_KEY.get(key)
    return row.label.strip() if row is not None else key.replace("_", " ")


def _row(key: str) -> MetricRow:
    if key in BY_KEY:
        return BY_KEY[key]
    if key.endswith("_s"):
        return MetricRow(key, key, "duration")
    if key.startswith("cost"):
        return MetricRow(key, key, "money")
    if key.endswith("ratio"):
        return MetricRow(key, key, "ratio")
    if key.endswith("_pct"):
        return MetricRow(key, key, "percent", 1)
    return MetricRow(key, key, "number", 2)


def duration_text(seconds: float) -> str:
    """Seconds as s / m / h, whichever reads best."""
    if math.isnan(seconds):
        return "-"
    if seconds < 0:
        return "-" + duration_text(-seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.2f}h"


def money_text(value: float) -> str:
    """Dollars with two decimals and thousands separators."""
    if math.isnan(value):
        return "-"
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def format_value(key: str, value: float) -> str:
    """A value of metric ``key`` in its unit (already scaled for display)."""
    if math.isnan(value):
        return "-"
    row = _row(key)
    if row.kind == "duration":
        return duration_text(value)
    if row.kind == "money":
        return money_text(value)
    if row.kind == "ratio":
        return f"{value:.1%}"
    if row.kind == "percent":
        return f"{value:.{max(row.digits, 1)}f}%"
    if row.digits == 0 and value != int(value):
        return f"{value:,.1f}"
    return f"{value:,.{row.digits}f}"


def format_change(key: str, delta: float) -> str:
    """A signed difference of metric ``key``: percentage points for ratios and percents."""
    if math.isnan(delta):
        return "-"
    row = _row(key)
    if row.kind == "ratio":
        text = f"{abs(delta) * 100:.1f} pp"
    elif row.kind == "percent":
        text = f"{abs(delta):.{max(row.digits, 1)}f} pp"
    else:
        text = format_value(key, abs(delta))
    shown = any(c in "123456789" for c in text)  # a change that rounds to zero has no sign to show
    sign = "+" if delta > 0 and shown else ("−" if delta < 0 and shown else "±")
    return sign + text


def clipped(key: str, low: float, high: float) -> tuple[float, float]:
    """A level's interval within what the figure can be: no summary figure is negative, ratios stay at
    most 1 and percentages at most 100 (a count of free GPUs is never "−11")."""
    kind = _row(key).kind
    if kind == "ratio":
        high = min(high, 1.0)
    elif kind == "percent":
        high = min(high, 100.0)
    return max(low, 0.0), high


def scaled(key: str, value: float) -> float:
    """A summary value in display units (e.g. milli-GPUs as GPUs)."""
    return value * _row(key).scale
