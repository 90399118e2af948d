"""Pods whose compute speed changes while they run: time-slicing and interference slow them down.

A paced pod keeps the work it has left at full speed and the slowdown it runs at now (the product of a
time-slicing and an interference factor). Whenever a factor changes its work so far is settled at the old
speed and its finish event is rescheduled at the new one (the old event is dropped by bumping the pod's
attempt). The extra wall time is split between the two causes: time-slicing's share is spent − spent /
slicing, interference's is the rest, so the two add up to spent − work done.

Subscribes to ``run_end`` only (GPU tenancy and interference drive it).
May change: a paced pod's finish (``retime_finish``) and the pod book's ``work_done_ms``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fleetlab.sim.handle import EngineHandle, ResultParts


@dataclass
class Pace:
    """A paced pod's current run: work left at full speed, when it was last settled, its factors."""

    nominal_wall_ms: float
    left_ms: float
    last_ms: int
    finish_ms: int
    sliced: bool
    interfered: bool
    slicing: float = 1.0
    interference: float = 1.0


class PodPace:
    """The paced pods of a run and per pod the extra wall time each cause added."""

    def __init__(self, sim: EngineHandle, slowdown: Callable[[int, float], None]) -> None:
        self.sim = sim
        #: Tells the usage meter a pod's new slowdown.
        self.slowdown = slowdown
        n = sim.book.n_pods
        self.paces: dict[int, Pace] = {}
        #: Per pod the work (ms at full speed) of its last paced run, -1 when none is waiting to be read
        #: (the book's column: the engine reads it when it evicts the pod; a pod that finishes never does).
        self.work_done = sim.book.work_done_ms
        #: Time-slicing: wall time spent on time-sliced GPUs and the extra it cost.
        self.sliced_ms = np.zeros(n, dtype=np.float64)
        self.extra_ms = np.zeros(n, dtype=np.float64)
        #: Interference: wall time spent under the model and the extra it cost.
        self.interfered_ms = np.zeros(n, dtype=np.float64)
        self.interference_extra_ms = np.zeros(n, dtype=np.float64)
        sim.on.run_end.append(self.finish)

    def begin(self, pod: int, wall_ms: int, sliced: bool = False, interfered: bool = False) -> Pace:
        """Pace the pod from now with ``wall_ms`` of work left at full speed (once per run; a second
        caller, time-slicing or interference, joins the same pace)."""
        pace = self.paces.get(pod)
        if pace is None:
            now = self.sim.now
            pace = Pace(float(wall_ms), float(wall_ms), now, now + wall_ms, sliced, interfered)
            self.paces[pod] = pace
        pace.sliced = pace.sliced or sliced
        pace.interfered = pace.interfered or interfered
        return pace

    def end(self, pod: int) -> None:
        """The pod stopped computing: settle it and keep the work it did for ``work_ms``."""
        pace = self.paces.pop(pod, None)
        if pace is None:
            return
        self._settle(pod, pace)
        self.work_done[pod] = round(pace.nominal_wall_ms - pace.left_ms)

    def _settle(self, pod: int, pace: Pace) -> None:
        now = self.sim.now
        spent = now - pace.last_ms
        if spent > 0:
            done = spent / (pace.slicing * pace.interference)
            pace.left_ms = max(0.0, pace.left_ms - done)
            if pace.sliced:
                self.sliced_ms[pod] += spent
                self.extra_ms[pod] += (
                    spent - done if pace.interference == 1.0 else spent - spent / pace.slicing
                )
            if pace.interfered:
                self.interfered_ms[pod] += spent
                self.interference_extra_ms[pod] += spent / pace.slicing - done
        pace.last_ms = now

    def set_factors(self, pod: int, slicing: float | None = None, interference: float | None = None) -> None:
        """New slowdown factor(s) for a paced pod; reschedules its finish when the speed changed."""
        pace = self.paces[pod]
        new_slicing = pace.slicing if slicing is None else slicing
        new_interference = pace.interference if interference is None else interference
        if new_slicing == pace.slicing and new_interference == pace.interference:
            return
        self._settle(pod, pace)
        pace.slicing, pace.interference = new_slicing, new_interference
        factor = new_slicing * new_interference
        self.slowdown(pod, factor)
        finish = self.sim.now + max(0, math.ceil(pace.left_ms * factor - 1e-6))
        if finish == pace.finish_ms:
            return  # (its work is done: the finish event at this very time stands)
        pace.finish_ms = finish
        self.sim.retime_finish(pod, finish)  # the finish event scheduled at the old speed is dropped

    def finish(self, parts: ResultParts) -> None:
        """Per pod the wall time on time-sliced GPUs and the extra it cost."""
        parts.sliced_ms = self.sliced_ms
        parts.sliced_extra_ms = self.extra_ms
