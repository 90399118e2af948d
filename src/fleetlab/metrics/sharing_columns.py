"""Result columns for GPU sharing: per-job OOM kills and time-slicing slowdown, per-pod GPU indices, and the
fragmentation timeline merged into the allocation timeline (definitions in fleetlab.sim.gpu_fragments)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fleetlab.sim.result import SimulationResult

Columns = dict[str, Any]
FRAG_NAMES = (
    "idle_gpu_milli",
    "stranded_gpu_milli",
    "partial_gpus",
    "frag_gpu_milli",
    "allocated_gpu_milli",
)


def job_sharing_columns(result: SimulationResult) -> Columns:
    """gpu_milli_per_pod, oom_kills, time_slicing_extra_s and time_slicing_slowdown (wall over work while
    on time-sliced GPUs; 1 where none) per job."""
    sharing = result.sharing
    n = len(result.jobs.ids)
    if sharing is None:
        return {}
    sliced = sharing.job_sliced_ms
    work = sliced - sharing.job_extra_ms
    slowdown = np.where(work > 0, sliced / np.where(work > 0, work, 1.0), 1.0)
    return {
        "gpu_milli_per_pod": sharing.job_gpu_milli[:n],
        "oom_kills": sharing.job_oom_kills,
        "time_slicing_extra_s": sharing.job_extra_ms / 1000.0,
        "time_slicing_slowdown": slowdown,
    }


def pod_gpu_column(result: SimulationResult) -> Columns:
    """The GPU indices each pod last held on its node (``"0-1"``; empty without GPUs)."""
    return {} if result.sharing is None else {"gpus": list(result.sharing.pod_gpus)}


def merged_timeline(result: SimulationResult, columns: Columns) -> Columns:
    """The allocation timeline and the fragmentation samples on one time axis (both are step functions,
    so each is carried forward to the other's times), plus ``frag_rate`` = frag / idle."""
    sharing = result.sharing
    if sharing is None:
        return columns
    frag = sharing.fragmentation
    t_alloc = np.asarray(result.timeline.t_ms, dtype=np.int64)
    t_frag = frag[:, 0]
    t = np.union1d(t_alloc, t_frag)
    out: Columns = {"t_s": t / 1000.0}
    at_alloc = np.searchsorted(t_alloc, t, side="right") - 1
    for name, values in columns.items():
        if name == "t_s":
            continue
        arr = np.asarray(values)
        out[name] = np.where(at_alloc >= 0, arr[np.maximum(at_alloc, 0)], 0) if len(arr) else arr
    at_frag = np.searchsorted(t_frag, t, side="right") - 1
    for k, name in enumerate(FRAG_NAMES, start=1):
        col = frag[:, k]
        out[name] = (
            np.where(at_frag >= 0, col[np.maximum(at_frag, 0)], 0)
            if len(col)
            else np.zeros(len(t), dtype=np.int64)
        )
    idle = out["idle_gpu_milli"].astype(np.float64)
    out["frag_rate"] = np.where(idle > 0, out["frag_gpu_milli"] / np.where(idle > 0, idle, 1.0), 0.0)
    return out
