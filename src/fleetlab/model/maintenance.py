"""Planned node maintenance: windows in which nodes are drained and then brought back.

A window works as ``kubectl cordon`` followed by ``kubectl drain --grace-period``: at ``start_s`` the nodes
stop taking new pods; pods still on them ``grace_period_s`` later are evicted (requeued, with the work since
their last checkpoint lost); at ``start_s + duration_s`` the nodes take pods again. The simulator's side is
sim/maintenance.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, model_validator

from fleetlab.model.cluster import NodePool, SpecModel
from fleetlab.model.units import Seconds


class MaintenanceWindow(SpecModel):
    """One drain window over the named nodes, or every node slot of a pool (or both)."""

    #: Drain every node slot of this pool.
    pool: str | None = Field(default=None, min_length=1)
    #: Drain these nodes (named ``<pool>-<index>``).
    nodes: tuple[str, ...] = ()
    #: When the nodes are cordoned (no new pods).
    start_s: Seconds
    #: How long the nodes stay cordoned; they take pods again at ``start_s + duration_s``.
    duration_s: Seconds
    #: How long pods may keep running after the cordon before they are evicted (kubectl drain's
    #: ``--grace-period``; Kubernetes' default terminationGracePeriodSeconds is 30 s). At most the duration.
    grace_period_s: Seconds = 30.0

    @model_validator(mode="after")
    def _shape(self) -> MaintenanceWindow:
        if self.pool is None and not self.nodes:
            raise ValueError("a maintenance window needs a pool or nodes to drain")
        if self.duration_s <= 0:
            raise ValueError(f"duration_s must be > 0 (got {self.duration_s:g})")
        if self.grace_period_s > self.duration_s:
            raise ValueError(
                f"grace_period_s ({self.grace_period_s:g}) must not exceed duration_s ({self.duration_s:g}): "
                "pods are evicted before the window ends"
            )
        return self


def check_maintenance(windows: Sequence[MaintenanceWindow], pools: Sequence[NodePool]) -> None:
    """Every window names pools and nodes of the cluster."""
    slots = {pool.name: {pool.node_name(i) for i in range(pool.node_slots)} for pool in pools}
    nodes = set().union(*slots.values()) if slots else set()
    for k, window in enumerate(windows):
        if window.pool is not None and window.pool not in slots:
            raise ValueError(
                f"maintenance[{k}].pool {window.pool!r} is not a pool of the cluster "
                f"(pools: {', '.join(sorted(slots))})"
            )
        unknown = [name for name in window.nodes if name not in nodes]
        if unknown:
            raise ValueError(
                f"maintenance[{k}].nodes names {', '.join(repr(n) for n in unknown[:5])}, not a node of the "
                "cluster (nodes are named <pool>-<index>, index from 0)"
            )
