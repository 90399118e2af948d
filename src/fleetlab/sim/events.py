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
#: The pod events: what an evicted or re-timed pod's attempt makes stale.
POD_KINDS = frozenset((PREP_DONE, POD_FINISH))


class EventQueue:
    """A min-heap of (time_ms, seq, kind, index, attempt); equal times pop in insertion order.

    Pod events (prep done, finish) pushed one right after another for the same time and kind share one
    heap entry: events pushed with nothing between them get consecutive sequence numbers, so they pop one
    after another anyway, and a gang's members' events (bound, started together) cost one push and one pop.
    The entry's first pod is in the tuple; the rest are in ``more`` under its sequence number, as flat
    (pod, attempt) pairs, and whoever pops the entry handles them in order, each checked for staleness
    when its turn comes. An entry is open for more only until anything else is pushed or it is popped.
    """

    #: Pod events of one time and kind pushed in a row share an entry (GatedEventQueue: never).
    coalesce = True

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int, int, int]] = []
        self._seq = 0
        #: Per entry holding several pod events, the pods after its first one and their attempts.
        self.more: dict[int, list[int]] = {}
        #: The entry pushed last, while more pod events may join it: its sequence number (-1: none),
        #: time and kind.
        self.open_seq = -1
        self._open_time = -1
        self._open_kind = -1

    def push(self, time_ms: int, kind: int, index: int, attempt: int = 0) -> None:
        """Schedule an event; ``attempt`` lets the receiver drop events of a pod run that was evicted."""
        if kind == self._open_kind and time_ms == self._open_time and self.open_seq >= 0:
            more = self.more.get(self.open_seq)
            if more is None:
                self.more[self.open_seq] = [index, attempt]
            else:
                more += (index, attempt)
            return
        seq = self._seq
        heappush(self._heap, (time_ms, seq, int(kind), index, attempt))
        self._seq = seq + 1
        if self.coalesce and kind in POD_KINDS:
            self.open_seq, self._open_time, self._open_kind = seq, time_ms, kind
        else:
            self.open_seq = -1

    def taken(self, seq: int) -> list[int] | None:
        """The entry ``seq`` left the heap (popped directly by the event loop): it is closed, and its pods
        after the first (flat (pod, attempt) pairs) are returned, or None when it holds one."""
        if seq == self.open_seq:
            self.open_seq = -1
        return self.more.pop(seq, None) if self.more else None

    def pop(self) -> tuple[int, int, int, int]:
        """Remove and return the earliest (time_ms, kind, index, attempt); an entry holding several pod
        events gives them one per call, in order."""
        time_ms, seq, kind, index, attempt = heappop(self._heap)
        more = self.taken(seq)
        if more is not None:  # the rest go back under the same sequence number: they pop next
            heappush(self._heap, (time_ms, seq, kind, more[0], more[1]))
            if len(more) > 2:
                self.more[seq] = more[2:]
        return time_ms, kind, index, attempt

    def peek(self) -> tuple[int, int, int, int] | None:
        """The earliest (time_ms, kind, index, attempt) without removing it, or None when empty."""
        if not self._heap:
            return None
        time_ms, _, kind, index, attempt = self._heap[0]
        return time_ms, kind, index, attempt

    @property
    def heap(self) -> list[tuple[int, int, int, int, int]]:
        """The heap itself, for the event loop's fast path (read it with ``heapq`` only, and hand every
        entry it pops to ``taken``)."""
        return self._heap

    def peek_time(self) -> int | None:
        """Time of the earliest event, or None when empty."""
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap) + sum(len(more) for more in self.more.values()) // 2


class GatedEventQueue(EventQueue):
    """The heap when some kinds are *optional*: while only their events are left and every ``quiet()``
    says they could change nothing, it reports no next event, so they alone never stretch the run.
    Every event is its own entry here (its counts are of entries)."""

    coalesce = False

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
