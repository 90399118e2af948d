"""The values the admission manager, its preemption strategies and the simulator exchange: a workload as
submitted, its admission, what preemption sees of an admitted workload, a preemption request, and a head
nominated in a cycle (re-exported by :mod:`fleetlab.admission.manager`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fleetlab.admission.flavors import Assignment, PodSetRequest
from fleetlab.admission.tree import FlavorResource

__all__ = ["Admission", "AdmittedWorkload", "Nominee", "PreemptionRequest", "Tracked", "Workload"]


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


@dataclass(frozen=True)
class AdmittedWorkload:
    """What the preemption module sees of an admitted workload."""

    workload: Workload
    cluster_queue: str
    usage: Mapping[FlavorResource, int]
    admission: Admission


@dataclass(frozen=True)
class PreemptionRequest:
    """Victims a preemptor needs evicted before it can be admitted (issued, not yet carried out)."""

    preemptor_id: str
    cluster_queue: str
    victims: tuple[str, ...]
    issued_ms: int


@dataclass(slots=True)
class Nominee:
    """A head nominated in a cycle: its flavor assignment and, when it needs preemption, the victims."""

    workload: Workload
    cluster_queue: str
    timestamp_ms: int
    assignment: Assignment
    targets: tuple[str, ...] = ()
    seq: int = 0
    requeue_reason: str = ""
    #: Why it was not admitted when that is not the assignment's own message (built only when needed).
    message: str = ""


@dataclass(slots=True)
class Tracked:
    """The manager's entry for a submitted workload: its queue, order, state, pending reason and, once
    admitted, its admission and usage."""

    workload: Workload
    cluster_queue: str
    seq: int
    timestamp_ms: int
    state: str = "queued"  # queued | inadmissible | admitted
    message: str = ""
    #: The assignment whose message is the pending reason when ``message`` is empty (formatted on read).
    answer: Assignment | None = None
    admission: Admission | None = None
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    #: The nomination cache's key, once computed (None while the timestamp is part of it).
    nomination_key: tuple[object, ...] | None = None

    def key(self) -> tuple[int, int, int, str]:
        """Heap order: higher priority, then earlier timestamp, then submission order."""
        return (-self.workload.priority, self.timestamp_ms, self.seq, self.workload.id)
