"""Write run results atomically: everything goes to a temporary sibling folder that is renamed into place.

A run killed half-way leaves the previous results (or nothing) at ``--out``, never a half-written file;
rerunning is always safe. The staging, marking and locking are spec.out_folder's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetlab.cost.ledger_io import run_id_of, write_ledger
from fleetlab.experiment.parquet_stream import write_parquet_columns
from fleetlab.experiment.run import Run
from fleetlab.metrics.dynamics import lifecycle_payload
from fleetlab.metrics.queues import queue_rows
from fleetlab.metrics.services import service_columns, services_payload
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import (
    job_columns,
    node_columns,
    pod_columns,
    segment_columns,
    timeline_columns,
)
from fleetlab.metrics.teams import team_rows
from fleetlab.metrics.window import common_window, window_cost
from fleetlab.spec.out_folder import safe_name, staged_output, swap_into_place, unique_names

__all__ = ["safe_name", "swap_into_place", "write_results", "write_run_files"]


def _write_parquet(columns: dict[str, Any], path: Path) -> None:
    write_parquet_columns(columns, path)


def _run_payload(run: Run, window: tuple[int, str] | None = None) -> dict[str, Any]:
    """One run's summary.json; with ``window`` (compare's common accounting window) its cost over it."""
    result = run.result
    summary = summarize(result)
    windowed: dict[str, Any] = {}
    if window is not None:
        cost = window_cost(result, summary.cost_total, summary.jobs_completed, *window)
        windowed = {"window": cost.as_dict()}
    return {
        **windowed,
        "policy": run.label,
        "policy_description": run.profile.description,
        "scenario": result.scenario,
        "seed": result.seed,
        "end_s": result.end_ms / 1000.0,
        "horizon_s": None if result.horizon_ms is None else result.horizon_ms / 1000.0,
        "summary": summary.as_dict(),
        "pending": [
            {
                "job_id": p.job_id,
                "pods_pending": p.pods_pending,
                "message": p.message,
                "blocked_by": p.blocked_by,
                "detail": p.detail,
            }
            for p in result.pending
        ],
        "warnings": list(result.warnings),
        "cluster_queues": [row.as_dict() for row in queue_rows(result)],
        "teams": [row.as_dict() for row in team_rows(result)],
        "lifecycle": lifecycle_payload(result),
        **services_payload(result),
    }


def write_run_files(run: Run, folder: Path, window: tuple[int, str] | None = None) -> None:
    """jobs, pods, nodes, timeline and ledger Parquet files and summary.json for one run."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_parquet(job_columns(run.result), folder / "jobs.parquet")
    _write_parquet(node_columns(run.result), folder / "nodes.parquet")
    _write_parquet(pod_columns(run.result), folder / "pods.parquet")
    _write_parquet(segment_columns(run.result), folder / "segments.parquet")
    _write_parquet(timeline_columns(run.result), folder / "timeline.parquet")
    if run.result.services is not None:
        _write_parquet(service_columns(run.result), folder / "services.parquet")
    if run.pools:
        write_ledger(run.pools, run.result, run_id_of(run.result, run.label), folder)
    text = json.dumps(
        _run_payload(run, window), indent=2, sort_keys=True, allow_nan=False, default=_json_default
    )
    (folder / "summary.json").write_text(text + "\n", encoding="utf-8")


def _json_default(value: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_results(
    runs: Sequence[Run],
    out: Path,
    single: bool = False,
    extra: dict[str, Any] | None = None,
    force: bool = False,
) -> None:
    """Write one run into ``out`` (single) or one sub-folder per policy plus a combined summary.json;
    ``extra`` maps further file names in ``out`` to JSON payloads (written in the same atomic swap).
    ``out`` must be missing, empty or fleetlab's own output unless ``force`` (see spec.out_folder).
    """
    with staged_output(out, force) as staging:
        if single:
            write_run_files(runs[0], staging)
        else:
            combined = []
            window = common_window([run.result for run in runs])
            for run, name in zip(runs, unique_names([run.label for run in runs]), strict=True):
                write_run_files(run, staging / name, window)
                combined.append(_run_payload(run, window))
            text = json.dumps({"runs": combined}, indent=2, sort_keys=True, allow_nan=False)
            (staging / "summary.json").write_text(text + "\n", encoding="utf-8")
        for name, payload in (extra or {}).items():
            text = json.dumps(payload, indent=2, sort_keys=True, allow_nan=False)
            (staging / name).write_text(text + "\n", encoding="utf-8")
