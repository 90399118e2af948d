"""Utilisation and free-block figures of a run (definitions in fleetlab.sim.usage_meter): the timeline
columns and the summary numbers, and the time-weighted mean of a step series that every summary mean uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.cost.billing import MS_PER_HOUR
from fleetlab.model.gpu_share import MILLI_PER_GPU

if TYPE_CHECKING:
    from fleetlab.metrics.sharing_columns import Columns
    from fleetlab.sim.result import SimulationResult, Timeline


def time_weighted_mean(t_ms: NDArray[np.int64], values: NDArray[np.float64], end_ms: int) -> float:
    """Mean of a step function over [0, end_ms] (value 0 before the first step)."""
    if end_ms <= 0 or len(t_ms) == 0:
        return float(values[-1]) if len(values) else 0.0
    t = np.clip(t_ms, 0, end_ms)
    widths = np.diff(np.append(t, end_ms))
    return float(np.dot(widths, values) / end_ms)


def usage_timeline_columns(timeline: Timeline) -> Columns:
    """``busy_gpus`` (full-speed GPU equivalents doing work) and the free-block counts per step."""
    usage = timeline.usage
    if not usage:
        return {}
    out: Columns = {"busy_gpus": usage["busy_gpu_milli"] / float(MILLI_PER_GPU)}
    out.update({name: values for name, values in usage.items() if name != "busy_gpu_milli"})
    return out


def utilization_ratio(timeline: Timeline, end_ms: int) -> float:
    """Time-weighted busy GPU equivalents over time-weighted allocatable GPUs of ready nodes."""
    busy = timeline.usage.get("busy_gpu_milli")
    if busy is None or len(timeline.t_ms) == 0:
        return 0.0
    used = time_weighted_mean(timeline.t_ms, busy.astype(np.float64) / MILLI_PER_GPU, end_ms)
    total = time_weighted_mean(timeline.t_ms, timeline.total_gpus.astype(np.float64), end_ms)
    return used / total if total > 0 else 0.0


def usage_summary(result: SimulationResult) -> dict[str, Any]:
    """Summary fields: mean GPU utilisation ratio and the time-weighted mean largest free block."""
    tl = result.timeline
    largest = tl.usage.get("largest_free_block")
    interference = result.interference
    return {
        "interference_extra_hours": float(interference.job_extra_ms.sum()) / MS_PER_HOUR
        if interference is not None
        else 0.0,
        "gpu_utilization_ratio": utilization_ratio(tl, result.end_ms),
        "largest_free_block_mean": time_weighted_mean(tl.t_ms, largest.astype(np.float64), result.end_ms)
        if largest is not None and len(tl.t_ms)
        else 0.0,
    }


def job_interference_columns(result: SimulationResult) -> Columns:
    """interference_extra_s and interference_slowdown (wall over work while under the model) per job;
    none when the scenario has no interference model."""
    table = result.interference
    if table is None:
        return {}
    return {
        "interference_extra_s": table.job_extra_ms / 1000.0,
        "interference_slowdown": table.job_slowdown(),
    }
