"""Trace files as job lists: fleetlab's native table or the Alibaba 2023 "openb" pod list.

The scenario loader calls :func:`load_trace` for ``workload.trace``; each format's reader lives in its own
module (:mod:`fleetlab.spec.native_trace`, :mod:`fleetlab.spec.alibaba`).
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from fleetlab.model.job import Job
from fleetlab.model.workload import TraceSource
from fleetlab.spec.alibaba import load_openb_pods
from fleetlab.spec.errors import SpecError
from fleetlab.spec.native_trace import load_native_trace

__all__ = ["load_trace"]


def load_trace(path: Path, source: TraceSource) -> tuple[list[Job], list[str]]:
    """Jobs of a trace file in submit order (ties keep file order), plus warnings for the user.

    ``source.limit`` keeps the first rows of the file; ``source.time_scale`` multiplies submit times and
    runtimes."""
    if source.format == "native":
        jobs, warnings = load_native_trace(path, limit=source.limit, time_scale=source.time_scale)
    elif source.format == "alibaba-openb":
        jobs, warnings = load_openb_pods(
            path, limit=source.limit, time_scale=source.time_scale, round_up=source.round_up_gpu_shares
        )
    else:  # pragma: no cover - TraceSource.format is a Literal, so pydantic refuses anything else
        raise SpecError(str(path), [f"unknown trace format {source.format!r}: use native or alibaba-openb"])
    if any(a.submit_s > b.submit_s for a, b in pairwise(jobs)):
        jobs.sort(key=lambda job: job.submit_s)  # list.sort is stable
    return jobs, warnings
