"""Per-pod and per-job bookkeeping of one run: where each pod is, how far its work got, what it held.

Every time a pod gives its node back (it finished or was evicted) a *segment* is logged — node, bound,
ready (prep done), start (computing), end, and the compute lost — so cost and lost work are computed
from what really happened, however often a pod was placed.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fleetlab.placement.element_views import float_elements, int_elements
from fleetlab.sim.result import NEVER

IntArray = NDArray[np.int64]


def scenario_positions(order: IntArray) -> IntArray:
    """Per job in scenario order, its index in submit order (``order[i]`` is the scenario index of the i-th
    job submitted): indexing a per-job array in submit order with it gives scenario order."""
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
    return inverse


@dataclass
class Segment:
    """One stay of a pod on a node."""

    pod: int
    node: int
    bound_ms: int
    ready_ms: int
    start_ms: int
    end_ms: int
    lost_ms: int
    evicted: bool


#: SegmentLog's integer columns, in Segment's field order.
SEGMENT_COLUMNS = ("pod", "node", "bound_ms", "ready_ms", "start_ms", "end_ms", "lost_ms")


class SegmentLog:
    """Every closed stay, kept as columns (seven int64 arrays and a byte of flags: 57 bytes a stay,
    several times less than a Segment object); readers of a few recent stays get Segment views."""

    def __init__(self) -> None:
        self.columns: tuple[array[int], ...] = tuple(array("q") for _ in SEGMENT_COLUMNS)
        self.evicted = bytearray()
        #: Each column's bound ``append``, in SEGMENT_COLUMNS order: ``PodBook.log_release``, the one
        #: writer, logs a stay with seven calls and the flag byte.
        self.appends = tuple(column.append for column in self.columns)

    def __len__(self) -> int:
        return len(self.evicted)

    def _segment(self, k: int) -> Segment:
        pod, node, bound, ready, start, end, lost = (int(column[k]) for column in self.columns)
        return Segment(pod, node, bound, ready, start, end, lost, bool(self.evicted[k]))

    def __getitem__(self, index: slice) -> list[Segment]:
        return [self._segment(k) for k in range(*index.indices(len(self)))]

    def __iter__(self) -> Iterator[Segment]:
        return (self._segment(k) for k in range(len(self)))


@dataclass
class PodBook:
    """Arrays indexed by pod (jobs sorted by submit time, pods of a job contiguous)."""

    n_pods: int
    n_jobs: int
    job: IntArray
    first_pod: IntArray
    node: IntArray = field(init=False)
    bound_ms: IntArray = field(init=False)
    ready_ms: IntArray = field(init=False)
    start_ms: IntArray = field(init=False)
    end_ms: IntArray = field(init=False)
    image_wait_ms: IntArray = field(init=False)
    data_ms: IntArray = field(init=False)
    attempt: IntArray = field(init=False)
    evictions: IntArray = field(init=False)
    #: Fraction of the pod's work saved by checkpoints (0..1), carried across evictions.
    done_fraction: NDArray[np.float64] = field(init=False)
    #: Full runtime (ms) the current run was started with, and when it will finish.
    run_total_ms: IntArray = field(init=False)
    #: The work (ms at full speed) of a paced pod's last run (sim/pod_pace.py), -1 when none is waiting to
    #: be read by an eviction.
    work_done_ms: IntArray = field(init=False)
    #: The pod failed (an OOM kill; not retried).
    failed: NDArray[np.bool_] = field(init=False)
    segments: SegmentLog = field(default_factory=SegmentLog)
    #: Per job: pods prepared and waiting for their gang peers in the current attempt.
    job_ready: IntArray = field(init=False)
    #: Queue wait: time spent pending (submitted or evicted, not bound), summed over the pod's attempts,
    #: and since when the pod has been pending now (NEVER while bound, done, failed or deleted).
    waited_ms: IntArray = field(init=False)
    pending_since_ms: IntArray = field(init=False)
    #: Element views of the per-pod columns above (fleetlab.placement.element_views) for the event loop's
    #: one-pod reads and writes; the arrays stay the storage vector code reads, and are never replaced.
    job_at: memoryview[int] = field(init=False, repr=False, compare=False)
    first_pod_at: memoryview[int] = field(init=False, repr=False, compare=False)
    node_at: memoryview[int] = field(init=False, repr=False, compare=False)
    bound_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    ready_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    start_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    end_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    image_wait_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    data_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    attempt_at: memoryview[int] = field(init=False, repr=False, compare=False)
    done_fraction_at: memoryview[float] = field(init=False, repr=False, compare=False)
    run_total_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    work_done_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    job_ready_at: memoryview[int] = field(init=False, repr=False, compare=False)
    waited_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)
    pending_since_ms_at: memoryview[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = self.n_pods
        self.node = np.full(n, -1, dtype=np.int64)
        for name in ("bound_ms", "ready_ms", "start_ms", "end_ms"):
            setattr(self, name, np.full(n, NEVER, dtype=np.int64))
        self.image_wait_ms = np.zeros(n, dtype=np.int64)
        self.data_ms = np.zeros(n, dtype=np.int64)
        self.attempt = np.zeros(n, dtype=np.int64)
        self.evictions = np.zeros(n, dtype=np.int64)
        self.done_fraction = np.zeros(n, dtype=np.float64)
        self.run_total_ms = np.zeros(n, dtype=np.int64)
        self.work_done_ms = np.full(n, -1, dtype=np.int64)
        self.failed = np.zeros(n, dtype=bool)
        self.job_ready = np.zeros(self.n_jobs, dtype=np.int64)
        self.waited_ms = np.zeros(n, dtype=np.int64)
        self.pending_since_ms = np.full(n, NEVER, dtype=np.int64)
        self.job_at = int_elements(self.job)
        self.first_pod_at = int_elements(self.first_pod)
        self.node_at = int_elements(self.node)
        self.bound_ms_at = int_elements(self.bound_ms)
        self.ready_ms_at = int_elements(self.ready_ms)
        self.start_ms_at = int_elements(self.start_ms)
        self.end_ms_at = int_elements(self.end_ms)
        self.image_wait_ms_at = int_elements(self.image_wait_ms)
        self.data_ms_at = int_elements(self.data_ms)
        self.attempt_at = int_elements(self.attempt)
        self.done_fraction_at = float_elements(self.done_fraction)
        self.run_total_ms_at = int_elements(self.run_total_ms)
        self.work_done_ms_at = int_elements(self.work_done_ms)
        self.job_ready_at = int_elements(self.job_ready)
        self.waited_ms_at = int_elements(self.waited_ms)
        self.pending_since_ms_at = int_elements(self.pending_since_ms)

    def pods_of(self, job: int) -> range:
        """The pod indices of a job."""
        first_pod_at = self.first_pod_at
        return range(first_pod_at[job], first_pod_at[job + 1])

    def log_release(self, pod: int, now: int, lost_ms: int, evicted: bool) -> None:
        """Record the end of a pod's stay on its node."""
        ready, start = self.ready_ms_at[pod], self.start_ms_at[pod]
        segments = self.segments
        add_pod, add_node, add_bound, add_ready, add_start, add_end, add_lost = segments.appends
        add_pod(pod)
        add_node(self.node_at[pod])
        add_bound(self.bound_ms_at[pod])
        add_ready(ready if ready >= 0 else now)
        add_start(start if start >= 0 else now)
        add_end(now)
        add_lost(lost_ms)
        segments.evicted.append(1 if evicted else 0)

    def start_pending(self, pod: int, now: int) -> None:
        """The pod waits for a node from ``now`` (submitted, evicted, or a replica slot re-activated)."""
        if self.pending_since_ms_at[pod] < 0:
            self.pending_since_ms_at[pod] = now

    def stop_pending(self, pod: int, now: int) -> None:
        """The pod stops waiting (bound, failed or deleted): its open pending interval joins its wait."""
        since = self.pending_since_ms_at[pod]
        if since >= 0:
            self.waited_ms_at[pod] += now - since
            self.pending_since_ms_at[pod] = NEVER

    def waited_until(self, now: int) -> IntArray:
        """Per pod, queue wait up to ``now``: closed pending intervals plus the one still open."""
        open_ms = np.where(self.pending_since_ms >= 0, now - self.pending_since_ms, 0)
        return self.waited_ms + np.maximum(open_ms, 0)

    def reset_for_requeue(self, pod: int, now: int) -> None:
        """Forget the pod's node and times of the run that was evicted (its saved progress stays); it is
        pending again from ``now`` (the time it ran is lost work, not queue wait)."""
        self.start_pending(pod, now)
        self.node_at[pod] = -1
        self.bound_ms_at[pod] = self.ready_ms_at[pod] = self.start_ms_at[pod] = NEVER
        self.attempt_at[pod] += 1
        self.evictions[pod] += 1
