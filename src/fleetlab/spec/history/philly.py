"""Philly (Microsoft's 2017 GPU cluster) job logs: the raw ``cluster_job_log`` JSON of
msr-fiddle/philly-traces and the per-job summary CSV derived from it
(``timestamp,duration,num_gpus,gpu_time,cluster``, as in the Pollux artifact's ``traces/philly.csv``).

cluster_job_log: a JSON array of jobs ``{"jobid", "user", "vc", "status": Pass|Killed|Failed,
"submitted_time", "attempts": [{"start_time", "end_time", "detail": [{"ip", "gpus": [...]}]}]}``; times are
``YYYY-MM-DD HH:MM:SS`` (read as UTC) or ``None``. A job's nodes are the machines of all its attempts; its
pods and GPUs those of its widest attempt (the one holding the most GPUs). The summary CSV has no start
instant, only a measured duration: its jobs start at submit (wait 0, an assumption counted under the skip
reasons so every report shows it) and end ``duration`` later.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleetlab.spec.bounded import csv_dict_reader
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    MAX_COUNT,
    MAX_GPUS_PER_POD,
    JobRecord,
    SourceData,
    bounded_number,
    head_bytes,
    open_text,
    parse_naive_utc,
    short,
)
from fleetlab.spec.history.json_stream import STREAM_END, stream_list

SUMMARY_COLUMNS = ("timestamp", "duration", "num_gpus")
TIME_HINT = "YYYY-MM-DD HH:MM:SS"
STATUS = {"Pass": ("completed", "Pass"), "Failed": ("failed", "Failed"), "Killed": ("cancelled", "Killed")}
MAX_DURATION_S = 10 * 365 * 86400.0
#: Shown with the skip counts: the summary's rows are kept, but their wait is an assumption, not a measure.
NO_WAIT = "summary CSV rows have no start time: kept with wait 0 (run time measured; use cluster_job_log)"


def read_philly(path: Path, progress: Callable[[int], None] | None = None) -> SourceData:
    """Jobs from a Philly cluster_job_log (JSON) or the summary CSV, told apart by the first character."""
    head = head_bytes(path, 256).lstrip()
    if head.startswith((b"[", b"{")):
        return _read_log(path, progress)
    return _read_summary(path)


def _read_summary(path: Path) -> SourceData:
    source = str(path)
    data = SourceData(label=source, kind="philly")
    with open_text(path) as fh:
        reader = csv_dict_reader(fh)
        header = reader.fieldnames or []
        missing = [c for c in SUMMARY_COLUMNS if c not in header]
        if missing:
            raise SpecError(
                source,
                [f"line 1: missing column(s) {', '.join(missing)}; expected a Philly summary CSV "
                 "(timestamp,duration,num_gpus[,gpu_time,cluster]) or the cluster_job_log JSON"],
            )  # fmt: skip
        try:
            for number, row in enumerate(reader, start=2):
                data.count_rows(number)
                where = f"line {number}"
                if any(row.get(c) is None for c in SUMMARY_COLUMNS):
                    raise SpecError(source, [f"{where}: fewer fields than the header (truncated?)"])
                submit = parse_naive_utc(row["timestamp"], source, f"{where}, column timestamp", TIME_HINT)
                if submit is None:
                    data.skip("job without a submit time")
                    continue
                duration = bounded_number(
                    row["duration"], source, f"{where}, column duration", 0, MAX_DURATION_S
                )
                gpus = bounded_number(
                    row["num_gpus"], source, f"{where}, column num_gpus", 0, MAX_GPUS_PER_POD
                )
                cluster = (row.get("cluster") or "").strip() or None
                data.saw(submit + duration)
                data.skip(NO_WAIT)
                data.jobs.append(
                    JobRecord(
                        job_id=f"{path.stem}/{number - 1}", source="philly", owner_kind="PhillyJob",
                        team=cluster, queue=cluster, job_class="training" if gpus else "batch",
                        gpus_per_pod=gpus, submit=submit, scheduled=submit, running=submit,
                        end=submit + duration, state="completed", end_reason="Pass",
                    )
                )  # fmt: skip
        except csv.Error as exc:
            raise SpecError(source, [f"line {reader.reader.line_num}: not valid CSV: {exc}"]) from None
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None
    return data


def _read_log(path: Path, progress: Callable[[int], None] | None) -> SourceData:
    source = str(path)
    data = SourceData(label=source, kind="philly")
    for index, (job, _) in enumerate(stream_list(path, "jobs", progress)):
        if job is STREAM_END:
            break
        data.count_rows(index + 1)
        record = _log_job(job, source, f"[{index}]", data)
        if record is not None:
            data.jobs.append(record)
    return data


def _log_job(job: Any, source: str, where: str, data: SourceData) -> JobRecord | None:
    if not isinstance(job, dict):
        raise SpecError(source, [f"{where}: expected a job object, got {type(job).__name__}"])
    status = str(job.get("status") or "")
    if status not in STATUS:
        raise SpecError(source, [f"{where}.status: {short(status)}; allowed: {', '.join(STATUS)}"])
    submit = parse_naive_utc(
        str(job.get("submitted_time") or ""), source, f"{where}.submitted_time", TIME_HINT
    )
    if submit is None:
        data.skip("job without submitted_time")
        return None
    attempts = job.get("attempts") or []
    if not isinstance(attempts, list) or len(attempts) > MAX_COUNT:
        raise SpecError(source, [f"{where}.attempts: expected a list of attempts"])
    starts: list[float] = []
    ends: list[float] = []
    machines: list[str] = []
    every: set[str] = set()
    gpus = 0
    for i, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            raise SpecError(source, [f"{where}.attempts[{i}]: expected an object"])
        here = f"{where}.attempts[{i}]"
        start = parse_naive_utc(str(attempt.get("start_time") or ""), source, f"{here}.start_time", TIME_HINT)
        end = parse_naive_utc(str(attempt.get("end_time") or ""), source, f"{here}.end_time", TIME_HINT)
        if start is not None and end is not None and end < start:
            data.skip("job whose attempt ended before it started (clocks went backwards)")
            return None
        starts += [start] if start is not None else []
        ends += [end] if end is not None else []
        detail = attempt.get("detail") or []
        if isinstance(detail, list):  # every attempt's machines; the shape of the widest attempt
            hosts = [d for d in detail if isinstance(d, dict)]
            if any(not isinstance(d.get("gpus") or [], list) for d in hosts):
                raise SpecError(source, [f"{here}.detail[].gpus: expected a list of GPU names"])
            here_machines = [str(d.get("ip")) for d in hosts if d.get("ip")]
            here_gpus = sum(len(d.get("gpus") or []) for d in hosts)
            every.update(here_machines)
            if here_gpus > gpus or (here_gpus == gpus and len(here_machines) > len(machines)):
                machines, gpus = here_machines, here_gpus
    state, reason = STATUS[status]
    end_at = max(ends) if ends and state != "running" else None
    if state in ("completed", "failed") and end_at is None:
        data.skip("job finished with no end_time")
        return None
    pods = max(len(machines), 1)
    data.saw(submit, end_at)
    return JobRecord(
        job_id=str(job.get("jobid") or where), source="philly", owner_kind="PhillyJob",
        team=str(job.get("vc") or "") or None, queue=str(job.get("vc") or "") or None,
        user=str(job.get("user") or "") or None,
        job_class="training" if gpus else "batch", pods=pods, gpus_per_pod=gpus / pods, submit=submit,
        scheduled=min(starts) if starts else None, running=min(starts) if starts else None, end=end_at,
        state=state, end_reason=reason, restarts=max(len(attempts) - 1, 0),
        nodes=",".join(sorted(every)) or None,
    )  # fmt: skip
