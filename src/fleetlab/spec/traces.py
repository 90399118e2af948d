"""Trace files as job lists: fleetlab's native table or the Alibaba 2023 "openb" pod list.

The scenario loader calls :func:`load_trace` for ``workload.trace``; each format's reader lives in its own
module (:mod:`fleetlab.spec.native_trace`, :mod:`fleetlab.spec.alibaba`). A process keeps the last few
parsed traces (keyed by the file's bytes and the reading options), so an experiment's variants and seeds that
share a trace parse it once per process; a JobTable is immutable, so the cached one is shared as is.
"""

from __future__ import annotations

import hashlib
import logging
import stat
from collections import OrderedDict
from pathlib import Path

import numpy as np

from fleetlab.model.job_table import JobTable
from fleetlab.model.workload import TraceSource
from fleetlab.spec.alibaba import load_openb_pods
from fleetlab.spec.errors import SpecError
from fleetlab.spec.native_trace import load_native_trace

__all__ = ["clear_trace_cache", "load_trace"]

#: Parsed traces kept per process (each can be large: a 1M-row trace is a few GB of jobs).
CACHED_TRACES = 2

log = logging.getLogger(__name__)

_TraceKey = tuple[str, str, str, int | None, float, bool]
_cache: OrderedDict[_TraceKey, tuple[JobTable, tuple[str, ...]]] = OrderedDict()


def clear_trace_cache() -> None:
    """Forget every parsed trace (to free their memory, or to time a parse)."""
    _cache.clear()


def _key(path: Path, source: TraceSource) -> _TraceKey | None:
    """The path as given (warnings quote it), a digest of the file's bytes (exact even when a file is
    rewritten within one mtime tick; hashing costs a small part of parsing) and the reading options;
    None for anything but a readable regular file (the parser then reports or reads it itself)."""
    digest = hashlib.blake2b(digest_size=16)
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None  # a FIFO or device has no stable bytes to key on
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return None
    return (
        str(path),
        digest.hexdigest(),
        source.format,
        source.limit,
        float(source.time_scale),
        bool(source.round_up_gpu_shares),
    )


def load_trace(path: Path, source: TraceSource) -> tuple[JobTable, list[str]]:
    """Jobs of a trace file in submit order (ties keep file order), plus warnings for the user.

    ``source.limit`` keeps the first rows of the file; ``source.time_scale`` multiplies submit times and
    runtimes."""
    key = _key(path, source)
    hit = _cache.get(key) if key is not None else None
    if key is not None and hit is not None:
        _cache.move_to_end(key)
        log.info("trace %s: %d jobs reused from this process's parse", path, len(hit[0]))
        return hit[0], list(hit[1])
    jobs, warnings = _parse(path, source)
    if key is not None:
        _cache[key] = (jobs, tuple(warnings))
        while len(_cache) > CACHED_TRACES:
            _cache.popitem(last=False)
    return jobs, warnings


def _parse(path: Path, source: TraceSource) -> tuple[JobTable, list[str]]:
    jobs: JobTable
    if source.format == "native":
        jobs, warnings = load_native_trace(path, limit=source.limit, time_scale=source.time_scale)
    elif source.format == "alibaba-openb":
        pods, warnings = load_openb_pods(
            path, limit=source.limit, time_scale=source.time_scale, round_up=source.round_up_gpu_shares
        )
        jobs = JobTable.from_jobs(pods)
    else:  # pragma: no cover - TraceSource.format is a Literal, so pydantic refuses anything else
        raise SpecError(str(path), [f"unknown trace format {source.format!r}: use native or alibaba-openb"])
    submit = jobs.column("submit_s")
    if np.any(submit[1:] < submit[:-1]):
        jobs = jobs.take(np.argsort(submit, kind="stable"))  # ties keep file order
    return jobs, warnings
