"""The Standard Workload Format of the Parallel Workloads Archive (SWF v2.2).

Header lines start with ``;`` (``; UnixStartTime: N`` is required: field times are seconds from it). Each
job line has 18 whitespace-separated fields, ``-1`` meaning unknown: 1 job number, 2 submit, 3 wait,
4 run time, 5 allocated processors, 6 average CPU time, 7 used memory (KB per processor), 8 requested
processors, 9 requested time, 10 requested memory (KB per processor), 11 status (1 completed, 0 failed,
5 cancelled; 2/3/4 partial executions of a checkpointed job: 2 goes on, 3 ended it, 4 failed it), 12 user,
13 group, 14 executable, 15 queue, 16 partition, 17 preceding job, 18 think time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import MAX_COUNT, JobRecord, SourceData, checked_unix, open_text, short

FIELDS = 18
MAX_LINE_CHARS = 4096
#: status field -> (state, end reason); -1 (unknown) with a known run time counts as completed.
STATUS = {1: ("completed", "Completed"), 0: ("failed", "Failed"), 5: ("cancelled", "Cancelled"),
          3: ("completed", "Completed"), 4: ("failed", "Failed"), -1: ("completed", "Unknown")}  # fmt: skip


def read_swf(
    path: Path, processors_as: str = "cpus", progress: Callable[[int], None] | None = None
) -> SourceData:
    """Jobs from one SWF file; ``processors_as`` is ``cpus`` (the archive's meaning) or ``gpus`` (to replay a
    CPU-cluster log on GPUs, one processor = one GPU)."""
    if processors_as not in ("cpus", "gpus"):
        raise SpecError(str(path), [f"processors_as {processors_as!r}: allowed are cpus, gpus"])
    source = str(path)
    data = SourceData(label=source, kind="swf")
    start: float | None = None
    partials: dict[str, int] = {}
    with open_text(path) as fh:
        try:
            for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=1):
                if len(line) >= MAX_LINE_CHARS and not line.endswith("\n"):
                    raise SpecError(source, [f"line {number}: longer than {MAX_LINE_CHARS} characters"])
                text = line.strip()
                if not text:
                    continue
                if text.startswith(";"):
                    key, _, value = text[1:].partition(":")
                    if key.strip() == "UnixStartTime":
                        start = _header_time(value.strip(), source, number)
                    continue
                if start is None:
                    raise SpecError(
                        source,
                        [f"line {number}: a job line before the '; UnixStartTime: N' header line; SWF times "
                         "are seconds from it"],
                    )  # fmt: skip
                data.count_rows(number)
                record = _job(text, number, start, path, processors_as, data, partials)
                if record is not None:
                    data.jobs.append(record)
                if progress is not None and number % 65536 == 0:
                    progress(fh.tell())
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None
    for job in data.jobs:
        job.restarts = partials.get(job.job_id, 0)
    return data


def _header_time(value: str, source: str, number: int) -> float:
    try:
        return checked_unix(float(int(value)), source, f"line {number}, UnixStartTime")
    except ValueError:
        raise SpecError(
            source, [f"line {number}: UnixStartTime {short(value)} is not a whole number"]
        ) from None


def _job(
    text: str, number: int, start: float, path: Path, processors_as: str, data: SourceData,
    partials: dict[str, int],
) -> JobRecord | None:  # fmt: skip
    source = str(path)
    cells = text.split()
    if len(cells) != FIELDS:
        raise SpecError(source, [f"line {number}: {len(cells)} fields; SWF job lines have {FIELDS}"])
    try:
        values = [float(c) for c in cells]
    except ValueError:
        bad = next(c for c in cells if not _is_number(c))
        raise SpecError(
            source, [f"line {number}: field {cells.index(bad) + 1} is {short(bad)}, not a number"]
        ) from None
    for i, value in enumerate(values):
        if value != value or not -1 <= value <= 100 * 365 * 86400 or (value < 0 and value != -1):
            raise SpecError(source, [f"line {number}: field {i + 1} is {cells[i]}; allowed: -1 or 0..3.2e9"])
    job_id = f"{path.stem}/{int(values[0])}"
    status = int(values[10])
    if status == 2:
        partials[job_id] = partials.get(job_id, 0) + 1
        data.skip("partial execution line (status 2) folded into its job")
        return None
    if status not in STATUS:
        raise SpecError(
            source, [f"line {number}: status (field 11) {cells[10]}; allowed: -1, 0, 1, 2, 3, 4, 5"]
        )
    submit_rel, wait, run = values[1], values[2], values[3]
    if submit_rel < 0:
        data.skip("job without a submit time")
        return None
    procs = values[4] if values[4] >= 0 else values[7]
    if procs < 0 or procs > MAX_COUNT:
        data.skip("job without a processor count")
        return None
    state, reason = STATUS[status]
    submit = start + submit_rel
    began = submit + wait if wait >= 0 else None
    end = began + run if began is not None and run >= 0 else None
    if state in ("completed", "failed") and end is None:
        if state == "completed" and run < 0:
            data.skip("job with unknown run time")
            return None
        data.skip("job with unknown wait or run time")
        return None
    if state == "cancelled" and began is None:
        end = None
    memory_kb = values[9] if values[9] >= 0 else values[6]
    data.saw(submit, end)
    return JobRecord(
        job_id=job_id, source="swf", owner_kind="SWFJob",
        team=f"group-{int(values[12])}" if values[12] >= 0 else None,
        queue=f"queue-{int(values[14])}" if values[14] >= 0 else None,
        job_class="training" if processors_as == "gpus" else "batch",
        gpus_per_pod=procs if processors_as == "gpus" else 0.0,
        cpu_per_pod=procs if processors_as == "cpus" else 0.0,
        memory_per_pod=int(memory_kb * 1024 * procs) if memory_kb >= 0 else 0,
        submit=submit, scheduled=began, running=began, end=end, state=state, end_reason=reason,
    )  # fmt: skip


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
