"""A scheduling delay drawn per job (``scheduler.scheduling_delay``): a job that arrives (its submit time
plus ``scheduling_latency_s``) is held for its own delay before anything else sees it — job limits, Kueue,
the scheduling queue (docs/scenario.md, "Scheduling delay drawn per job").

The draw is a pure function of (the run's seed, the job's position in the workload): a counter-based hash
(SplitMix64) gives each job a level u in [0, 1), and its delay is the distribution's quantile at u, linear
between the listed points. So a job's delay is the same whatever the placement policy or the other jobs
did, and a what-if that keeps the jobs keeps their delays. The delays are computed once when the run is
built; each held job costs one timer.

Subscribes to ``arrive`` (first of all: nothing sees a job before its delay has passed), ``withdraw`` (a
job withdrawn while held is dropped) and its own event kind.
May change: holds jobs at arrival and hands them on (``hand_on``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.sim.handle import EngineHandle

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: Stream id mixed into the seed for delay draws (distinct from every other generator's stream).
DELAY_STREAM = 0xDE1A
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SplitMix64's output function of ``x + golden`` (modulo 2**64), element-wise."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MUL1
    z = (z ^ (z >> np.uint64(27))) * _MUL2
    return z ^ (z >> np.uint64(31))


def job_levels(seed: int, positions: IntArray) -> FloatArray:
    """Per job its level in [0, 1): the top 53 bits of splitmix64(splitmix64(seed xor stream) + position),
    over 2**53."""
    key = _splitmix64(np.asarray([seed ^ DELAY_STREAM], dtype=np.uint64))
    mixed = _splitmix64(key + np.asarray(positions, dtype=np.uint64))
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def delay_at(delay: SchedulingDelay, levels: FloatArray) -> FloatArray:
    """The delay's quantile at each level: with k points at levels i / (k − 1), linear in between."""
    points = np.asarray(delay.quantiles_s, dtype=np.float64)
    if len(points) == 1:
        return np.full(len(levels), points[0])
    return np.asarray(np.interp(levels, np.linspace(0.0, 1.0, len(points)), points), dtype=np.float64)


def drawn_delays_s(delay: SchedulingDelay, seed: int, positions: IntArray) -> FloatArray:
    """Each job's drawn delay in seconds, by its position in the workload."""
    return delay_at(delay, job_levels(seed, positions))


class DrawnDelay:
    """Holds each arriving job for its drawn delay, then hands it on."""

    def __init__(self, sim: EngineHandle, delay: SchedulingDelay) -> None:
        self.sim = sim
        drawn = drawn_delays_s(delay, sim.seed, sim.order)
        #: Per job (submit order) its delay in engine milliseconds, rounded as ``to_ms`` rounds.
        self.delay_ms: list[int] = np.floor(drawn * 1000 + 0.5).astype(np.int64).tolist()
        self.held: set[int] = set()
        self.kind = sim.on.event_kind(self.due, stale=self.stale)
        sim.on.arrive.append(self.arrived)
        sim.on.withdraw.append(self.held.discard)

    def arrived(self, job: int, now: int) -> bool:
        """Hold a job whose delay is longer than 0 until it has passed."""
        wait = self.delay_ms[job]
        if wait <= 0:
            return False
        self.held.add(job)
        self.sim.schedule(now + wait, self.kind, job)
        return True

    def stale(self, job: int, _: int) -> bool:
        """The job is no longer held (it was withdrawn meanwhile)."""
        return job not in self.held

    def due(self, job: int, _: int) -> None:
        """The job's delay has passed: it goes on to the next holder or the scheduling queue."""
        if job in self.held:
            self.held.discard(job)
            self.sim.hand_on(job, self.arrived)
