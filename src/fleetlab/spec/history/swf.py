"""The Standard Workload Format of the Parallel Workloads Archive (SWF v2.2).

Header lines start with ``;`` (``; UnixStartTime: N`` is required: field times are seconds from it;
``MaxNodes`` and ``MaxProcs`` give the machine). Each job line has 18 whitespace-separated fields, ``-1``
meaning unknown: 1 job number, 2 submit, 3 wait, 4 run time, 5 allocated processors, 6 average CPU time,
7 used memory (KB per processor), 8 requested processors, 9 requested time, 10 requested memory (KB per
processor), 11 status (1 completed, 0 failed, 5 cancelled; 2/3/4 partial executions of a checkpointed job:
2 goes on, 3 ended it, 4 failed it), 12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding
job, 18 think time.

A log without wait times (NASA iPSC/860, LCG: field 3 is -1) keeps its jobs with their run times and no
start instant ("wait unmeasured"); a job that started but has no run time keeps its measured wait. A line
that is not 18 numbers in range is skipped and counted (the first one named), unless no line is good.
The machine becomes the history's node list: ``--swf-nodes COUNTxPROCS[xMEMORY]`` or, without it, the
header's ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` processors (a note says which).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fleetlab.model.quantity import QuantityError, to_int
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    MAX_COUNT,
    JobRecord,
    NodeRecord,
    SourceData,
    checked_unix,
    labels_json,
    open_text,
    short,
)

FIELDS = 18
MAX_LINE_CHARS = 4096
MAX_NODES = 100_000
#: status field -> (state, end reason); -1 (unknown) with a known run time counts as completed.
STATUS = {1: ("completed", "Completed"), 0: ("failed", "Failed"), 5: ("cancelled", "Cancelled"),
          3: ("completed", "Completed"), 4: ("failed", "Failed"), -1: ("completed", "Unknown")}  # fmt: skip
#: Node memory per processor when no job records its memory (the log says nothing about it).
DEFAULT_MEMORY_PER_PROC = 1 << 30
_NODES = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*(?:[xX×]\s*(\S+))?\s*$")


@dataclass(frozen=True)
class SwfNodes:
    """The machine an SWF log ran on: ``count`` nodes of ``procs`` processors (and ``memory`` bytes)."""

    count: int
    procs: int
    memory: int | None = None


def parse_swf_nodes(text: str) -> SwfNodes:
    """``120x2`` or ``120x2x1Gi`` (nodes × processors per node × memory per node), or a ValueError."""
    match = _NODES.match(text)
    if match is None:
        raise ValueError(f"--swf-nodes {text!r}: expected COUNTxPROCS or COUNTxPROCSxMEMORY, e.g. 120x2x1Gi")
    count, procs = int(match.group(1)), int(match.group(2))
    if not (1 <= count <= MAX_NODES and 1 <= procs <= MAX_COUNT):
        raise ValueError(f"--swf-nodes {text!r}: allowed 1..{MAX_NODES} nodes of 1..{MAX_COUNT} processors")
    memory = None
    if match.group(3):
        try:
            memory = to_int(match.group(3))
        except QuantityError as exc:
            raise ValueError(f"--swf-nodes {text!r}: memory {exc}") from None
        if memory <= 0:
            raise ValueError(f"--swf-nodes {text!r}: memory must be > 0")
    return SwfNodes(count, procs, memory)


@dataclass
class _Reading:
    """What the reader keeps between lines."""

    start: float | None = None
    max_nodes: int | None = None
    max_procs: int | None = None
    corrupt: int = 0
    first_corrupt: str = ""
    max_memory_per_proc: int = 0


def read_swf(
    path: Path,
    processors_as: str = "cpus",
    progress: Callable[[int], None] | None = None,
    nodes: SwfNodes | None = None,
) -> SourceData:
    """Jobs (and the machine's nodes) from one SWF file; ``processors_as`` is ``cpus`` (the archive's
    meaning) or ``gpus`` (to replay a CPU-cluster log on GPUs, one processor = one GPU)."""
    if processors_as not in ("cpus", "gpus"):
        raise SpecError(str(path), [f"processors_as {processors_as!r}: allowed are cpus, gpus"])
    source = str(path)
    data = SourceData(label=source, kind="swf")
    state = _Reading()
    partials: dict[str, int] = {}
    stem = path.stem
    with open_text(path) as fh:
        try:
            for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=1):
                if len(line) >= MAX_LINE_CHARS and not line.endswith("\n"):
                    raise SpecError(source, [f"line {number}: longer than {MAX_LINE_CHARS} characters"])
                text = line.strip()
                if not text:
                    continue
                if text.startswith(";"):
                    _header(text, number, source, state)
                    continue
                if state.start is None:
                    raise SpecError(
                        source,
                        [f"line {number}: a job line before the '; UnixStartTime: N' header line; SWF times "
                         "are seconds from it"],
                    )  # fmt: skip
                data.count_rows(number)
                try:
                    record = _job(text, number, state, stem, processors_as, data, partials)
                except _Corrupt as bad:
                    state.corrupt += 1
                    state.first_corrupt = state.first_corrupt or str(bad)
                    continue
                if record is not None:
                    data.jobs.append(record)
                if progress is not None and number % 65536 == 0:
                    progress(fh.tell())
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None
    if state.corrupt:
        if not data.jobs and not partials:
            raise SpecError(source, [state.first_corrupt])
        data.skip(f"corrupt job line (the first: {state.first_corrupt})", state.corrupt)
    for job in data.jobs:
        job.restarts = partials.get(job.job_id, 0)
    _machine(path, nodes, state, processors_as, data)
    return data


def _header(text: str, number: int, source: str, state: _Reading) -> None:
    key, _, value = text[1:].partition(":")
    key, value = key.strip(), value.strip()
    if key == "UnixStartTime":
        try:
            state.start = checked_unix(float(int(value)), source, f"line {number}, UnixStartTime")
        except ValueError:
            raise SpecError(
                source, [f"line {number}: UnixStartTime {short(value)} is not a whole number"]
            ) from None
    elif key in ("MaxNodes", "MaxProcs") and value.isdigit() and 0 < int(value) <= MAX_COUNT:
        setattr(state, "max_nodes" if key == "MaxNodes" else "max_procs", int(value))


#: The largest value of a job line's field (a hundred years of seconds).
MAX_FIELD = 100 * 365 * 86400


def _in_range(values: list[float]) -> bool:
    """Whether every value is -1 or in 0..MAX_FIELD, checked in C: sorted, the -1s (unknown) come first and
    the value after them is the smallest real one; a NaN anywhere makes the sum NaN."""
    ordered = sorted(values)
    unknown = ordered.count(-1.0)
    total = sum(values)
    return (
        total == total
        and ordered[-1] <= MAX_FIELD
        and (unknown == len(ordered) or ordered[unknown] >= 0)
        and ordered[0] >= -1
    )


class _Corrupt(ValueError):
    """A job line that cannot be read; skipped and counted unless no line is good."""


def _job(
    text: str, number: int, state: _Reading, stem: str, processors_as: str, data: SourceData,
    partials: dict[str, int],
) -> JobRecord | None:  # fmt: skip
    cells = text.split()
    if len(cells) != FIELDS:
        raise _Corrupt(f"line {number}: {len(cells)} fields; SWF job lines have {FIELDS}")
    try:
        values = list(map(float, cells))
    except ValueError:
        bad = next(c for c in cells if not _is_number(c))
        raise _Corrupt(f"line {number}: field {cells.index(bad) + 1} is {short(bad)}, not a number") from None
    if not _in_range(values):
        for i, value in enumerate(values):
            if value != value or not -1 <= value <= MAX_FIELD or (value < 0 and value != -1):
                raise _Corrupt(f"line {number}: field {i + 1} is {cells[i]}; allowed: -1 or 0..3.2e9")
    job_id = f"{stem}/{int(values[0])}"
    status = int(values[10])
    if status == 2:
        partials[job_id] = partials.get(job_id, 0) + 1
        data.skip("partial execution line (status 2) folded into its job")
        return None
    if status not in STATUS:
        raise _Corrupt(f"line {number}: status (field 11) {cells[10]}; allowed: -1, 0, 1, 2, 3, 4, 5")
    submit_rel, wait, run = values[1], values[2], values[3]
    if submit_rel < 0:
        data.skip("job without a submit time")
        return None
    procs = values[4] if values[4] >= 0 else values[7]
    if procs <= 0 or procs > MAX_COUNT:
        data.skip("job without a processor count")
        return None
    job_state, reason = STATUS[status]
    assert state.start is not None
    submit = state.start + submit_rel
    began = submit + wait if wait >= 0 else None
    end = began + run if began is not None and run >= 0 else None
    if began is None and job_state != "cancelled" and run < 0:
        data.skip("job with neither a wait nor a run time")
        return None
    memory_kb = values[9] if values[9] >= 0 else values[6]
    if memory_kb >= 0:
        state.max_memory_per_proc = max(state.max_memory_per_proc, int(memory_kb * 1024))
    data.saw(submit, end, submit + run if began is None and run >= 0 else None)
    return JobRecord(
        job_id=job_id, source="swf", owner_kind="SWFJob",
        team=f"group-{int(values[12])}" if values[12] >= 0 else None,
        queue=f"queue-{int(values[14])}" if values[14] >= 0 else None,
        user=f"user-{int(values[11])}" if values[11] >= 0 else None,
        job_class="training" if processors_as == "gpus" else "batch",
        gpus_per_pod=procs if processors_as == "gpus" else 0.0,
        cpu_per_pod=procs if processors_as == "cpus" else 0.0,
        memory_per_pod=int(memory_kb * 1024 * procs) if memory_kb >= 0 else 0,
        submit=submit, scheduled=began, running=began, end=end, state=job_state, end_reason=reason,
        # no wait recorded: the job ran for its run time, but when it started is not known
        run_s=run if began is None and run >= 0 and job_state != "cancelled" else None,
        walltime_s=values[8] if values[8] > 0 else None,
    )  # fmt: skip


def _machine(
    path: Path, given: SwfNodes | None, state: _Reading, processors_as: str, data: SourceData
) -> None:
    """The node list: ``given``, else the header's MaxNodes x (MaxProcs / MaxNodes), else none (noted)."""
    nodes = given
    origin = "--swf-nodes"
    if nodes is None and state.max_nodes and state.max_procs and state.max_procs % state.max_nodes == 0:
        nodes = SwfNodes(state.max_nodes, state.max_procs // state.max_nodes)
        origin = f"the header (MaxNodes {state.max_nodes}, MaxProcs {state.max_procs})"
    if nodes is None:
        data.notes.append(
            f"{path.name}: no node list (the header has no MaxNodes/MaxProcs); give --swf-nodes COUNTxPROCS"
        )
        return
    per_proc = state.max_memory_per_proc or DEFAULT_MEMORY_PER_PROC
    memory = nodes.memory if nodes.memory is not None else per_proc * nodes.procs
    pool = f"{path.stem}-nodes"
    label = labels_json({"fleetlab.io/pool": pool})
    for i in range(nodes.count):
        data.nodes.append(
            NodeRecord(
                node=f"{path.stem}-node-{i:0{len(str(nodes.count - 1))}d}", pool=pool,
                gpus=nodes.procs if processors_as == "gpus" else 0,
                cpu=float(nodes.procs),
                memory=memory, capacity_type="owned", labels_json=label,
            )
        )  # fmt: skip
    where = "given" if nodes.memory is not None else (
        "the largest per-processor memory a job recorded" if state.max_memory_per_proc
        else "1 GiB per processor: no job records its memory"
    )  # fmt: skip
    unit = "GPU" if processors_as == "gpus" else "CPU"
    data.notes.append(
        f"{path.name}: {nodes.count} node(s) of {nodes.procs} {unit}(s) from {origin}, "
        f"{memory / 2**30:.3g} GiB memory each ({where})"
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
