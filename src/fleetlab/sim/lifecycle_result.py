"""What the node lifecycle recorded: billed node windows, autoscaler decisions and node failures."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NodeWindow:
    """One life of a node slot: requested from the cloud, ready, removed (-1: still there at the end)."""

    node: int
    requested_ms: int
    ready_ms: int
    removed_ms: int


@dataclass(frozen=True)
class ScaleEvent:
    """One autoscaler decision: ``kind`` is up, down, stockout (a scale-up the cloud refused) or timeout
    (a node not ready within max_node_provision_time, deleted)."""

    t_ms: int
    pool: str
    kind: str
    nodes: int
    pods: int = 0


@dataclass(frozen=True)
class FailureRecord:
    """One node failure and its blast radius: pods evicted (gang peers elsewhere included), GPU-h lost."""

    t_ms: int
    node: str
    pool: str
    pods_evicted: int
    gpu_hours_lost: float
    repair_ms: int


@dataclass
class LifecycleRecord:
    """Everything the autoscaler and the failure model did in one run."""

    windows: list[NodeWindow] = field(default_factory=list)
    #: Spans a node was down for repair, (node, failed_ms, repaired_ms or -1).
    down: list[tuple[int, int, int]] = field(default_factory=list)
    scale_events: list[ScaleEvent] = field(default_factory=list)
    failures: list[FailureRecord] = field(default_factory=list)
    #: Pod-ms spent pending while only new capacity (a node not yet there) could hold the pod.
    capacity_wait_ms: int = 0
    pods_waited_for_capacity: int = 0
