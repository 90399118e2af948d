"""Node lifecycle settings: Cluster Autoscaler node-group options, stockouts and node failures.

Names and defaults follow the Kubernetes Cluster Autoscaler (``--scan-interval=10s``,
``--scale-down-utilization-threshold=0.5``, ``--scale-down-unneeded-time=10m``,
``--scale-down-delay-after-add=10m``, ``--max-node-provision-time=15m``, node-group backoff 5m
doubling to 30m, ``--expander``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fleetlab.model.limits import Float, Int, NodeCount, Priority
from fleetlab.model.units import Seconds

Expander = Literal["least-waste", "price", "priority", "random"]


class SpecModel(BaseModel):
    """Frozen, unknown fields rejected (as the cluster's own spec objects; kept here to avoid a cycle)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid", populate_by_name=True)


class BootTime(SpecModel):
    """Request-to-ready time of a new node: fixed, uniform in [low, high], or lognormal by median/sigma."""

    kind: Literal["fixed", "uniform", "lognormal"] = "fixed"
    median: Seconds = 300.0
    low: Seconds = 0.0
    high: Seconds = 0.0
    sigma: Float = Field(default=0.3, ge=0)

    @model_validator(mode="after")
    def _range(self) -> BootTime:
        if self.kind == "uniform" and self.high < self.low:
            raise ValueError(f"uniform boot time needs low ({self.low}) <= high ({self.high})")
        return self


class TimeWindow(SpecModel):
    """A span of simulated time, [start_s, end_s)."""

    start_s: Seconds
    end_s: Seconds

    @model_validator(mode="after")
    def _ordered(self) -> TimeWindow:
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s ({self.end_s}) must be after start_s ({self.start_s})")
        return self


class Stockout(SpecModel):
    """When the cloud has no capacity for a pool: each scale-up fails with ``probability`` (seeded), and
    every scale-up requested inside one of ``windows`` (a capacity trace) fails."""

    probability: Float = Field(default=0.0, ge=0.0, le=1.0)
    windows: tuple[TimeWindow, ...] = ()


class PoolAutoscaling(SpecModel):
    """Cluster Autoscaler options of one node group (pool); ``count`` is the pool's initial size."""

    min: NodeCount = 0
    max: NodeCount
    scale_down_utilization_threshold: Float = Field(default=0.5, ge=0.0, le=1.0)
    scale_down_unneeded_time: Seconds = 600.0
    #: Time from the cloud request until the node registers ready (the pool's boot_time_s if unset).
    boot_time: BootTime | None = None
    stockout: Stockout = Stockout()
    #: For the priority expander: higher wins (upstream's priority-expander ConfigMap, by pool name).
    priority: Priority = 0

    @model_validator(mode="after")
    def _bounds(self) -> PoolAutoscaling:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


class FailureEvent(SpecModel):
    """One node failure from a trace: node name, when it fails and how long its repair takes."""

    node: str = Field(min_length=1)
    at_s: Seconds
    repair_s: Seconds


class NodeFailures(SpecModel):
    """Per-pool failures: exponential time between failures (``mtbf``) with a repair time, and/or a trace."""

    mtbf: Seconds | None = None
    repair_time: Seconds = 3600.0
    repair_distribution: Literal["fixed", "exponential"] = "fixed"
    trace: tuple[FailureEvent, ...] = ()

    @model_validator(mode="after")
    def _something(self) -> NodeFailures:
        if self.mtbf is not None and self.mtbf <= 0:
            raise ValueError("mtbf must be > 0")
        if self.mtbf is None and not self.trace:
            raise ValueError("failures needs mtbf or a trace")
        return self


class ClusterAutoscalerConfig(SpecModel):
    """Cluster-wide autoscaler flags and the account's GPU quota across all pools."""

    expander: Expander = "least-waste"
    #: Account-wide limit on GPUs of all existing nodes (cloud quota, CA's --gpu-total maximum).
    gpu_quota: Int | None = Field(default=None, ge=0)
    #: How often pending pods are checked (CA's --scan-interval); at least 1 s (each scan is work).
    scan_interval: Seconds = Field(default=10.0, ge=1.0)
    scale_down_delay_after_add: Seconds = 600.0
    initial_backoff: Seconds = 300.0
    max_backoff: Seconds = 1800.0
    #: A node not ready this long after its request is deleted and its pool backed off.
    max_node_provision_time: Seconds = 900.0
    scale_down_enabled: bool = True
    #: Empty nodes removed at once per scan (--max-empty-bulk-delete); non-empty nodes drain one per scan.
    max_empty_bulk_delete: Int = Field(default=10, ge=1)
