"""The measured baseline as a column beside the simulated variants, over the window it measured.

``fleetlab baseline`` measures a history over [0, H]; the simulated variants are costed over their common
accounting window. Each measured figure is put in the row of the simulated figure defined the same way
(docs/baseline.md against docs/metrics.md); totals are compared as rates ($/h over the window) as well,
since the two windows need not have the same length. A measured baseline of another cluster or workload
(other node or job counts than the scenario's) is shown with a warning: its column is not comparable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fleetlab.experiment.accounting import HOURS_PER_MONTH

#: Simulated metric -> (baseline.json part, key): ``row`` is the all-jobs row, ``cluster`` the
#: cluster-wide figures.
MEASURED: dict[str, tuple[str, str]] = {
    "jobs_completed": ("row", "completed"),
    "jobs_failed": ("row", "failed"),
    "queue_wait_mean_s": ("row", "wait_mean"),
    "queue_wait_p50_s": ("row", "wait_p50"),
    "queue_wait_p95_s": ("row", "wait_p95"),
    "queue_wait_p99_s": ("row", "wait_p99"),
    "prep_mean_s": ("row", "prep_mean_s"),
    "evictions": ("row", "evictions"),
    "gpu_allocation_ratio": ("cluster", "gpu_allocation_ratio"),
    "gpu_hours_idle": ("cluster", "gpu_hours_idle"),
    "accounting_window_s": ("cluster", "history_end_s"),
    "cost_total_window": ("cluster", "cost_total"),
    "cost_per_completed_job_window": ("row", "cost_per_completed_job"),
}


@dataclass(frozen=True)
class MeasuredColumn:
    """The measured figures by simulated metric (value, whether it is a lower bound) and the warnings."""

    values: dict[str, tuple[float, bool]]
    warnings: tuple[str, ...]
    window_s: float | None


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def measured_column(
    baseline: dict[str, Any], scenario_nodes: tuple[int, int], scenario_jobs: int, window_s: float | None
) -> MeasuredColumn | None:
    """The column of a ``fleetlab baseline`` baseline.json (None for another shape); ``scenario_nodes``:
    (nodes at the start, the most the pools can have), ``window_s``: the simulated common window (mean)."""
    rows = baseline.get("rows")
    cluster = baseline.get("cluster")
    if not isinstance(rows, list) or not isinstance(cluster, dict):
        return None
    row = next((r for r in rows if isinstance(r, dict) and r.get("group_by") == "all"), None)
    if row is None:
        return None
    values: dict[str, tuple[float, bool]] = {}
    for metric, (part, key) in MEASURED.items():
        source = row if part == "row" else cluster
        raw = source.get(f"{key}_s") if key.startswith("wait_") else source.get(key)
        value = _number(raw)
        if value is not None:
            lower = bool(source.get(f"{key}_lower_bound")) if key.startswith("wait_") else False
            values[metric] = (value, lower)
    history = values.get("accounting_window_s", (math.nan, False))[0]
    cost = values.get("cost_total_window")
    if cost is not None and history > 0:
        rate = cost[0] / (history / 3600.0)
        values["cost_rate_per_hour"] = (rate, False)
        values["cost_per_month"] = (rate * HOURS_PER_MONTH, False)
    warnings = []
    nodes, jobs = _number(cluster.get("nodes")), _number(row.get("jobs_submitted"))
    low, high = scenario_nodes
    if (nodes is not None and not low <= nodes <= high) or (jobs is not None and jobs != scenario_jobs):
        shown_nodes = f"{low}" if low == high else f"{low}..{high}"
        warnings.append(
            f"the measured baseline is another cluster or workload ({nodes or 0:.0f} nodes, "
            f"{jobs or 0:.0f} jobs measured; {shown_nodes} nodes, {scenario_jobs} jobs simulated): its "
            "column is not comparable"
        )
    if window_s is not None and history > 0 and abs(history - window_s) > 0.01 * max(history, window_s):
        warnings.append(
            f"the measured baseline covers 0–{history / 3600:.2f} h, the simulated common window "
            f"0–{window_s / 3600:.2f} h: compare totals as rates ($/h) and per-job figures"
        )
    return MeasuredColumn(values, tuple(warnings), history if history > 0 else None)
