"""What Kueue's queue manager admits (:mod:`fleetlab.admission.manager`): a workload of podsets and its
admission. Plain data, kept apart so the manager module holds only the queues and the cycle."""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.admission.flavors import PodSetRequest

__all__ = ["Admission", "Workload"]


@dataclass(frozen=True)
class Workload:
    """A unit of admission: podsets submitted to a LocalQueue, with a priority and a creation time."""

    id: str
    namespace: str
    local_queue: str
    priority: int
    created_ms: int
    podsets: tuple[PodSetRequest, ...]


@dataclass(frozen=True)
class Admission:
    """An admitted workload: its ClusterQueue, the flavor of each podset resource, whether it borrows."""

    workload_id: str
    cluster_queue: str
    flavors: dict[str, dict[str, str]]  # podset -> resource -> flavor name
    borrowing: bool
    admitted_ms: int
