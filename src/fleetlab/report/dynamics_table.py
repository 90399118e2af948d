"""The node-lifecycle table printed under the comparison when a run has autoscaled or failing pools."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.table import Table

from fleetlab.experiment.run import Run
from fleetlab.metrics.dynamics import DynamicsSummary, summarize_dynamics

_ROWS: list[tuple[str, Callable[[DynamicsSummary], str]]] = [
    ("scale-ups (nodes added)", lambda d: f"{d.scale_ups} ({d.nodes_added})"),
    ("nodes removed by scale-down", lambda d: str(d.nodes_removed)),
    ("scale-ups refused (stockout)", lambda d: str(d.stockouts)),
    (
        "pod-hours waiting for capacity",
        lambda d: f"{d.capacity_wait_pod_hours:,.1f} ({d.pods_waited_for_capacity} pods)",
    ),
    ("node-hours billed", lambda d: f"{d.node_hours_billed:,.1f}"),
    ("idle node-hours", lambda d: f"{d.node_hours_idle:,.1f}"),
    ("idle cost", lambda d: f"${d.cost_idle:,.2f}"),
    ("node boot cost", lambda d: f"${d.cost_boot:,.2f}"),
    ("node down (repair) cost", lambda d: f"${d.cost_down:,.2f}"),
    ("node failures", lambda d: str(d.failures)),
    ("pods evicted per failure (max)", lambda d: f"{d.pods_evicted_per_failure:.2f} ({d.pods_evicted_max})"),
    ("GPU-hours lost per failure", lambda d: f"{d.gpu_hours_lost_per_failure:,.2f}"),
    ("GPU-hours lost to failures", lambda d: f"{d.gpu_hours_lost_to_failures:,.1f}"),
]


def dynamics_table(runs: Sequence[Run]) -> Table | None:
    """One column per run; None when no run had autoscaled or failing pools."""
    if all(run.result.lifecycle is None for run in runs):
        return None
    rows = [summarize_dynamics(run.result) for run in runs]
    table = Table(title="node lifecycle (autoscaling, failures)", title_justify="left")
    table.add_column("metric", style="bold")
    for run in runs:
        table.add_column(run.label, justify="right")
    for label, cell in _ROWS:
        table.add_row(label, *(cell(r) for r in rows))
    return table
