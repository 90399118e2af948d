"""The clock and the event heap: integer milliseconds, ordered by (time, sequence) for determinism.

Like SimPy's core, the heap knows nothing of what events mean; the engine dispatches on the kind (its own
three, then the kinds features register: sim/handle.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import IntEnum
from heapq import heappop, heappush

#: Engine milliseconds in one hour (GPU-hours, per-hour rates and prices).
MS_PER_HOUR = 3_600_000


class EventKind(IntEnum):
    """The engine's own events; the payload is a node (NODE_READY) or a pod index. Features' kinds follow."""

    NODE_READY = 0
    PREP_DONE = 1
    POD_FINISH = 2


#: The kinds the event loop and the pod lifecycle test and push most, as plain ints.
NODE_READY = int(EventKind.NODE_READY)
PREP_DONE = int(EventKind.PREP_DONE)
POD_FINISH = int(EventKind.POD_FINISH)


class EventQueue:
    """A min-heap of (time_ms, seq, kind, index, attempt); equal times pop in insertion order."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int, int, int]] = []
        self._seq = 0

    def push(self, time_ms: int, kind: int, index: int, attempt: int = 0) -> None:
        """Schedule an event; ``attempt`` lets the receiver drop events of a pod run that was evicted."""
        heappush(self._heap, (time_ms, self._seq, int(kind), index, attempt))
        self._seq += 1

    def pop(self) -> tuple[int, int, int, int]:
        """Remove and return the earliest (time_ms, kind, index, attempt)."""
        time_ms, _, kind, index, attempt = heappop(self._heap)
        return time_ms, kind, index, attempt

    def peek(self) -> tuple[int, int, int, int] | None:
        """The earliest (time_ms, kind, index, attempt) without removing it, or None when empty."""
        if not self._heap:
            return None
        time_ms, _, kind, index, attempt = self._heap[0]
        return time_ms, kind, index, attempt

    @property
    def heap(self) -> list[tuple[int, int, int, int, int]]:
        """The heap itself, for the event loop's fast path (read it with ``heapq`` only)."""
        return self._heap

    def peek_time(self) -> int | None:
        """Time of the earliest event, or None when empty."""
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


class GatedEventQueue(EventQueue):
    """The heap when some kinds are *optional*: while only their events are left and every ``quiet()``
    says they could change nothing, it reports no next event, so they alone never stretch the run."""

    def __init__(self, optional: Iterable[int], quiet: Iterable[Callable[[], bool]]) -> None:
        super().__init__()
        self.optional = frozenset(optional)
        self.quiet = tuple(quiet)
        self.optional_events = 0

    def push(self, time_ms: int, kind: int, index: int, attempt: int = 0) -> None:
        """Schedule an event (see EventQueue.push), counting optional ones."""
        super().push(time_ms, kind, index, attempt)
        if kind in self.optional:
            self.optional_events += 1

    def pop(self) -> tuple[int, int, int, int]:
        """Remove and return the earliest event (see EventQueue.pop)."""
        out = super().pop()
        if out[1] in self.optional:
            self.optional_events -= 1
        return out

    def peek_time(self) -> int | None:
        """Earliest event time; None while only optional events are left and they can change nothing."""
        only_optional = self.optional_events and self.optional_events == len(self._heap)
        if only_optional and all(quiet() for quiet in self.quiet):
            return None
        return super().peek_time()


def to_ms(seconds: float) -> int:
    """Seconds to the engine's integer milliseconds (rounded half up)."""
    return int(seconds * 1000 + 0.5)


def transfer_ms(size_bytes: int, bytes_per_second: int) -> int:
    """Time to move ``size_bytes`` at ``bytes_per_second``, rounded up to a whole millisecond."""
    if size_bytes <= 0:
        return 0
    return -(-size_bytes * 1000 // bytes_per_second)
