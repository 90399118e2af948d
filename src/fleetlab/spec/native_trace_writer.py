"""Writing fleetlab's native job table (CSV or Parquet), the inverse of ``native_trace``'s reader.

Kept apart from the reader so each module has one job; the column layout is documented in
``fleetlab.spec.native_trace`` and docs/trace-format.md.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.model.job import Job
from fleetlab.model.quantity import format_quantity
from fleetlab.model.resources import CPU, GPU, MEMORY, format_amount
from fleetlab.spec.csv_out import neutral_cell
from fleetlab.spec.native_trace import COLUMNS, RUNTIME_PREFIX
from fleetlab.spec.table_cells import CSV_SUFFIXES, PARQUET_SUFFIXES


def _format_seconds(value: float) -> str:
    return repr(float(value))


def _check_text(job: Job, what: str, text: str, forbidden: str) -> str:
    bad = [c for c in forbidden if c in text]
    if bad or "\n" in text:
        raise ValueError(
            f"job {job.id!r}: {what} {text!r} contains {bad[0] if bad else 'a newline'!r}, "
            "which the native trace format cannot represent"
        )
    return text


def _format_tolerations(job: Job) -> str:
    parts: list[str] = []
    for t in job.tolerations:
        if t.toleration_seconds is not None:
            raise ValueError(f"job {job.id!r}: tolerationSeconds cannot be written to a native trace")
        key = _check_text(job, "toleration key", t.key, ";:=")
        if t.operator in ("Lt", "Gt"):
            raise ValueError(
                f"job {job.id!r}: a toleration with operator {t.operator} cannot be written to a native trace"
            )
        if t.operator == "Exists":
            if not key:
                body = "*"
            elif key == "*":
                raise ValueError(f"job {job.id!r}: toleration key '*' cannot be written to a native trace")
            else:
                body = key
        else:
            body = f"{key}={_check_text(job, 'toleration value', t.value, ';:')}"
        parts.append(f"{body}:{t.effect}" if t.effect else body)
    return ";".join(parts)


def _format_selector(job: Job) -> str:
    return ";".join(
        f"{_check_text(job, 'node selector key', k, ';=')}={_check_text(job, 'node selector value', v, ';')}"
        for k, v in job.node_selector.items()
    )


def _row(job: Job, models: Sequence[str]) -> dict[str, Any]:
    if job.shares_gpu or job.gpu_memory is not None:
        raise ValueError(
            f"job {job.id!r}: a GPU share (gpu_milli / gpu_memory) cannot be written to a native trace "
            "(it has no such column); read the Alibaba trace with round_up_gpu_shares: true to convert it"
        )
    extra = sorted(set(job.requests) - {CPU, MEMORY, GPU})
    if extra:
        raise ValueError(
            f"job {job.id!r}: requests {', '.join(extra)} cannot be written to a native trace "
            "(only cpu, memory and nvidia.com/gpu have columns)"
        )
    row: dict[str, Any] = {
        "id": job.id,
        "submit_s": float(job.submit_s),
        "class": job.job_class.value,
        "priority": job.priority,
        "team": job.team,
        "pods": job.pods,
        "cpu": format_amount(CPU, job.requests[CPU]) if CPU in job.requests else None,
        "memory": format_quantity(job.requests[MEMORY]) if MEMORY in job.requests else None,
        "gpus": job.requests.get(GPU, 0),
        "runtime_s": float(job.runtime.default),
        "image": job.image.name if job.image is not None else None,
        "image_size": format_quantity(job.image.size) if job.image is not None else None,
        "data_size": format_quantity(job.data_size),
        "preemptible": job.preemptible,
        "node_selector": _format_selector(job),
        "tolerations": _format_tolerations(job),
        "affinity": (
            json.dumps(
                job.affinity.model_dump(mode="json", by_alias=True, exclude_defaults=True),
                separators=(",", ":"),
            )
            if job.affinity is not None
            else None
        ),
    }
    for model in models:
        value = job.runtime.by_gpu.get(model)
        row[f"{RUNTIME_PREFIX}{model}]"] = None if value is None else float(value)
    return row


def _csv_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _format_seconds(value)
    return str(value)


def write_native_trace(jobs: Sequence[Job], path: Path) -> None:
    """Write jobs as a native CSV/Parquet table (by suffix) that loads back to equal jobs.

    The file is written next to ``path`` and moved into place, so a reader never sees half a table."""
    suffix = path.suffix.lower()
    if suffix not in CSV_SUFFIXES + PARQUET_SUFFIXES:
        raise ValueError(f"unknown table suffix {path.suffix!r}: use .csv, .parquet or .pq")
    models = sorted({m for job in jobs for m in job.runtime.by_gpu})
    columns = [c for c in COLUMNS if c != "affinity" or any(j.affinity is not None for j in jobs)]
    runtime_at = columns.index("runtime_s") + 1
    columns[runtime_at:runtime_at] = [f"{RUNTIME_PREFIX}{m}]" for m in models]
    rows = [_row(job, models) for job in jobs]

    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        if suffix in CSV_SUFFIXES:
            with open(fd, "w", encoding="utf-8", newline="") as text:
                writer = csv.writer(text, lineterminator="\n")
                writer.writerow(columns)
                for row in rows:  # text cells neutralised before numbers are formatted (-5 stays -5)
                    writer.writerow([_csv_text(neutral_cell(row[c])) for c in columns])
        else:
            os.close(fd)
            types = {
                "submit_s": pa.float64(),
                "runtime_s": pa.float64(),
                "priority": pa.int64(),
                "pods": pa.int64(),
                "gpus": pa.int64(),
                "preemptible": pa.bool_(),
            }
            arrays = [
                pa.array(
                    [row[c] for row in rows],
                    type=types.get(c, pa.float64() if c.startswith(RUNTIME_PREFIX) else pa.string()),
                )
                for c in columns
            ]
            pq.write_table(pa.Table.from_arrays(arrays, names=columns), str(tmp))
        # mkstemp makes the file private (0600); give it the mode the file it replaces had, else 0644.
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
