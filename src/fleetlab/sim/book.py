"""Per-pod and per-job bookkeeping of one run: where each pod is, how far its work got, what it held.

Every time a pod gives its node back (it finished or was evicted) a *segment* is logged — node, bound,
ready (prep done), start (computing), end, and the compute lost — so cost and lost work are computed
from what really happened, however often a pod was placed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.result import NEVER

IntArray = NDArray[np.int64]


def scenario_positions(order: Sequence[int]) -> IntArray:
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
    segments: list[Segment] = field(default_factory=list)
    #: Per job: pods prepared and waiting for their gang peers in the current attempt.
    job_ready: IntArray = field(init=False)
    #: Queue wait: time spent pending (submitted or evicted, not bound), summed over the pod's attempts,
    #: and since when the pod has been pending now (NEVER while bound, done, failed or deleted).
    waited_ms: IntArray = field(init=False)
    pending_since_ms: IntArray = field(init=False)

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
        self.job_ready = np.zeros(self.n_jobs, dtype=np.int64)
        self.waited_ms = np.zeros(n, dtype=np.int64)
        self.pending_since_ms = np.full(n, NEVER, dtype=np.int64)

    def pods_of(self, job: int) -> range:
        """The pod indices of a job."""
        return range(int(self.first_pod[job]), int(self.first_pod[job + 1]))

    def log_release(self, pod: int, now: int, lost_ms: int, evicted: bool) -> None:
        """Record the end of a pod's stay on its node."""
        self.segments.append(
            Segment(
                pod=pod,
                node=int(self.node[pod]),
                bound_ms=int(self.bound_ms[pod]),
                ready_ms=int(self.ready_ms[pod]) if self.ready_ms[pod] >= 0 else now,
                start_ms=int(self.start_ms[pod]) if self.start_ms[pod] >= 0 else now,
                end_ms=now,
                lost_ms=lost_ms,
                evicted=evicted,
            )
        )

    def start_pending(self, pod: int, now: int) -> None:
        """The pod waits for a node from ``now`` (submitted, evicted, or a replica slot re-activated)."""
        if self.pending_since_ms[pod] < 0:
            self.pending_since_ms[pod] = now

    def stop_pending(self, pod: int, now: int) -> None:
        """The pod stops waiting (bound, failed or deleted): its open pending interval joins its wait."""
        since = int(self.pending_since_ms[pod])
        if since >= 0:
            self.waited_ms[pod] += now - since
            self.pending_since_ms[pod] = NEVER

    def waited_until(self, now: int) -> IntArray:
        """Per pod, queue wait up to ``now``: closed pending intervals plus the one still open."""
        open_ms = np.where(self.pending_since_ms >= 0, now - self.pending_since_ms, 0)
        return self.waited_ms + np.maximum(open_ms, 0)

    def reset_for_requeue(self, pod: int, now: int) -> None:
        """Forget the pod's node and times of the run that was evicted (its saved progress stays); it is
        pending again from ``now`` (the time it ran is lost work, not queue wait)."""
        self.start_pending(pod, now)
        self.node[pod] = -1
        for arr in (self.bound_ms, self.ready_ms, self.start_ms):
            arr[pod] = NEVER
        self.attempt[pod] += 1
        self.evictions[pod] += 1
