"""The cluster timeline: after every step the allocation counters and the usage meter's columns, a row kept
whenever they changed (sim/step_series.py).

Subscribes to ``after_step`` (one sample) and ``run_end`` (the Timeline table).
May change: nothing.
"""

from __future__ import annotations

from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.result import Timeline
from fleetlab.sim.step_series import StepSeries
from fleetlab.sim.usage_meter import COLUMNS as USAGE_COLUMNS
from fleetlab.sim.usage_meter import UsageMeter

#: A timeline row: the time, the allocation counters, then the usage meter's columns.
TIMELINE_COLUMNS = (
    "t_ms",
    "allocated_gpus",
    "total_gpus",
    "whole_free_gpu_nodes",
    "gpu_nodes",
    *USAGE_COLUMNS,
)


class TimelineRecorder:
    """Samples the counters and the usage meter after each step."""

    def __init__(self, sim: EngineHandle, usage: UsageMeter) -> None:
        self.counters = sim.counters
        self.usage_sample = usage.sample
        self.series = StepSeries(len(TIMELINE_COLUMNS))
        sim.on.after_step.append(self.sample)
        sim.on.run_end.append(self.finish)

    def sample(self, now: int) -> None:
        """Record the cluster's figures after the step at ``now`` (a row only when they changed)."""
        c = self.counters
        # A tuple sum, once per step: ``(*a, *b)`` would build a list first and convert it.
        sample = (c.allocated_gpus, c.total_gpus, c.whole_free, c.gpu_nodes) + self.usage_sample()  # noqa: RUF005
        self.series.record(now, sample)

    def finish(self, parts: ResultParts) -> None:
        """The cluster's GPU totals after each step that changed them."""
        cols = self.series.close().T  # views of the rows, not a copy
        parts.timeline = Timeline(
            t_ms=cols[0],
            allocated_gpus=cols[1],
            total_gpus=cols[2],
            whole_free_gpu_nodes=cols[3],
            gpu_nodes=cols[4],
            usage={name: cols[5 + k] for k, name in enumerate(USAGE_COLUMNS)},
        )
