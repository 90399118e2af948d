"""Slurm accounting: ``sacct --parsable2`` (``|``-separated with a header) and ``sacct --json``.

Fields: JobID (steps ``123.batch`` / ``123.0`` / ``123.extern`` fold into job ``123``), Submit, Start, End,
State, AllocTRES (``cpu=``, ``mem=``, ``node=``, ``gres/gpu=``, ``gres/gpu:TYPE=``; ReqTRES while pending),
Partition (queue), Account (team), QOS, Priority, NodeList. With ``--duplicates`` a requeued job appears
once per attempt: the attempts fold into one job whose restarts count them. Times without a zone are read
as UTC (run ``TZ=UTC sacct ...``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetlab.model.gpus import GPU_MODELS
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    MAX_COUNT,
    JobRecord,
    SourceData,
    bounded_number,
    checked_unix,
    head_bytes,
    open_text,
    parse_naive_utc,
    short,
)
from fleetlab.spec.history.json_stream import STREAM_END, stream_list

REQUIRED = ("JobID", "Submit", "Start", "End", "State")
TIME_HINT = "YYYY-MM-DDTHH:MM:SS (run `TZ=UTC sacct --parsable2 ...`)"
MAX_LINE_CHARS = 1 << 20
MAX_NODES_LISTED = 10_000
COMPLETED = frozenset({"COMPLETED"})
FAILED = frozenset({"FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "TIMEOUT", "BOOT_FAIL", "DEADLINE", "PREEMPTED"})
#: States where the job was taken away rather than failing by itself.
EVICTED = frozenset({"PREEMPTED", "NODE_FAIL", "REQUEUED"})
WAITING = frozenset({"PENDING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
_MODELS_LOWER = {name.lower().replace("-", ""): name for name in GPU_MODELS}
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$")
_MEM_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


@dataclass(slots=True)
class Attempt:
    """One accounting record of a job (one attempt when sacct ran with --duplicates)."""

    job_id: str
    submit: float | None
    start: float | None
    end: float | None
    state: str
    tres: dict[str, str]
    partition: str | None
    account: str | None
    priority: int | None
    nodes: str | None
    restarts: int = 0
    user: str | None = None
    timelimit_s: float | None = None


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=8,gres/gpu=2,mem=64G`` as a mapping."""
    out: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if sep:
            out[name.strip()] = value.strip()
    return out


def expand_hostlist(text: str) -> list[str]:
    """``gpu[01-03,07],cpu1`` -> gpu01, gpu02, gpu03, gpu07, cpu1 (one bracket per name, bounded)."""
    names: list[str] = []
    for prefix, body, suffix, plain in re.findall(r"([^,\[]*)\[([^\]]*)\]([^,]*)|([^,\[\]]+)", text):
        if plain:
            names.append(plain)
            continue
        for item in body.split(","):
            lo, _, hi = item.partition("-")
            if hi and lo.isdigit() and hi.isdigit() and int(hi) - int(lo) < MAX_NODES_LISTED:
                names.extend(f"{prefix}{str(n).zfill(len(lo))}{suffix}" for n in range(int(lo), int(hi) + 1))
            else:
                names.append(f"{prefix}{item}{suffix}")
        if len(names) > MAX_NODES_LISTED:
            break
    return names[:MAX_NODES_LISTED]


def _memory_bytes(text: str, source: str, where: str) -> int:
    match = _MEM.match(text.strip())
    if match is None:
        raise SpecError(source, [f"{where}: mem={short(text)} is not a size such as 64G or 512000M"])
    return int(float(match.group(1)) * _MEM_UNITS[match.group(2)])


def _gpu_model(tres: dict[str, str]) -> str | None:
    for name in tres:
        if name.startswith("gres/gpu:"):
            kind = name.split(":", 1)[1]
            return _MODELS_LOWER.get(kind.lower().replace("-", "").replace("_", ""), kind)
    return None


def _count(text: str | None, source: str, where: str) -> float:
    if text is None or text == "":
        return 0.0
    return bounded_number(text, source, where, 0, MAX_COUNT)


def _fold(attempts: list[Attempt], source: str, data: SourceData) -> JobRecord | None:
    """One job from its attempts (file order = attempt order)."""
    last = attempts[-1]
    where = f"job {last.job_id}"
    submits = [a.submit for a in attempts if a.submit is not None]
    if not submits:
        data.skip("job without a Submit time")
        return None
    state_word = last.state.split()[0] if last.state else ""
    if last.start is not None and last.end is not None and last.end < last.start:
        data.skip("job ended before it started (clocks went backwards)")
        return None
    tres = last.tres
    nodes = max(int(_count(tres.get("node"), source, f"{where} AllocTRES node")), 1)
    gpus = _count(tres.get("gres/gpu"), source, f"{where} AllocTRES gres/gpu")
    cpus = _count(tres.get("cpu"), source, f"{where} AllocTRES cpu")
    memory = _memory_bytes(tres["mem"], source, f"{where} AllocTRES") if tres.get("mem") else 0
    if state_word in COMPLETED:
        state, reason = "completed", "COMPLETED"
    elif state_word in FAILED:
        state, reason = "failed", state_word
    elif state_word == "CANCELLED":
        state, reason = "cancelled", "CANCELLED"
    elif state_word in WAITING or (state_word == "REQUEUED" and last.start is None):
        state, reason = "pending", None
    else:  # RUNNING, SUSPENDED, RESIZING, REQUEUED with a start
        state, reason = "running", None
    starts = [a.start for a in attempts if a.start is not None]
    end = last.end if state in ("completed", "failed", "cancelled") else None
    if state in ("completed", "failed") and end is None:
        data.skip("job finished with no End time")
        return None
    evictions = sum(1 for a in attempts if a.state.split()[0:1] and a.state.split()[0] in EVICTED)
    node_names = ",".join(sorted({n for a in attempts if a.nodes for n in expand_hostlist(a.nodes)}))
    data.saw(*(t for a in attempts for t in (a.submit, a.start, a.end)))
    return JobRecord(
        job_id=last.job_id,
        source="slurm",
        owner_kind="SlurmJob",
        team=last.account,
        queue=last.partition,
        job_class="training" if gpus > 0 else "batch",
        priority=last.priority,
        user=last.user,
        walltime_s=last.timelimit_s,
        pods=nodes,
        gpus_per_pod=gpus / nodes,
        cpu_per_pod=cpus / nodes,
        memory_per_pod=memory // nodes,
        gpu_model=_gpu_model(tres),
        submit=min(submits),
        scheduled=min(starts) if starts else None,
        running=min(starts) if starts else None,
        end=end,
        state=state,
        end_reason=reason,
        restarts=len(attempts) - 1 + sum(a.restarts for a in attempts),
        evictions=evictions,
        nodes=node_names or None,
    )


def _collect(attempts: Iterator[Attempt], source: str, data: SourceData) -> None:
    by_job: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_job.setdefault(attempt.job_id, []).append(attempt)
    for attempts_of_job in by_job.values():
        record = _fold(attempts_of_job, source, data)
        if record is not None:
            data.jobs.append(record)


def _parsable_rows(path: Path) -> Iterator[Attempt]:
    source = str(path)
    with open_text(path) as fh:
        header_line = fh.readline(MAX_LINE_CHARS)
        header = header_line.rstrip("\r\n").split("|")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise SpecError(
                source,
                [f"line 1: missing column(s) {', '.join(missing)}; expected the header of "
                 f"`sacct --parsable2 --format=JobID,Submit,Start,End,State,AllocTRES,Partition,Account,QOS,"
                 f"NodeList` (got {short(header_line.strip())})"],
            )  # fmt: skip
        index = {name: i for i, name in enumerate(header)}
        for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=2):
            if not line.endswith("\n") and len(line) >= MAX_LINE_CHARS:
                raise SpecError(source, [f"line {number}: longer than {MAX_LINE_CHARS} characters"])
            cells = line.rstrip("\r\n").split("|")
            if cells == [""]:
                continue
            if len(cells) < len(header):
                raise SpecError(
                    source, [f"line {number}: {len(cells)} fields, the header has {len(header)} (truncated?)"]
                )
            row = {name: cells[i] for name, i in index.items()}
            job_id = row["JobID"]
            if "." in job_id:
                continue  # a step (123.batch, 123.0, 123.extern) of a job read on its own line
            where = f"line {number}"
            tres = parse_tres(row.get("AllocTRES") or row.get("ReqTRES") or "")
            priority = row.get("Priority") or ""
            yield Attempt(
                job_id=job_id,
                submit=parse_naive_utc(row["Submit"], source, f"{where} Submit", TIME_HINT),
                start=parse_naive_utc(row["Start"], source, f"{where} Start", TIME_HINT),
                end=parse_naive_utc(row["End"], source, f"{where} End", TIME_HINT),
                state=row["State"].strip(),
                tres=tres,
                partition=row.get("Partition") or None,
                account=row.get("Account") or None,
                priority=int(priority) if priority.isdigit() else None,
                user=(row.get("User") or "").strip() or None,
                timelimit_s=parse_wall(row.get("Timelimit") or "", source, f"{where} Timelimit"),
                nodes=(row.get("NodeList") or "").strip() or None,
            )


def _number(value: Any) -> float | None:
    """A plain number or Slurm's ``{"set": true, "infinite": false, "number": N}`` (v0.0.40+)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _limit_minutes(value: Any) -> float | None:
    """``time.limit`` of ``sacct --json``: minutes, as a plain number or ``{set, infinite, number}``."""
    minutes = _number(value)
    return None if minutes is None or minutes <= 0 else 60.0 * minutes


_WALL = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_wall(text: str, source: str, where: str) -> float | None:
    """Slurm's ``[days-]hours:minutes:seconds``, ``minutes:seconds`` or minutes alone, in seconds;
    ``UNLIMITED``/``Partition_Limit``/empty: None."""
    text = text.strip()
    if text in ("", "UNLIMITED", "INFINITE", "Partition_Limit"):
        return None
    match = _WALL.match(text)
    if match is None:
        raise SpecError(source, [f"{where}: {short(text)} is not a Slurm time such as 2-00:00:00"])
    days, first, second, third = (int(g) if g else 0 for g in match.groups())
    if match.group(3) is None:  # minutes alone (days-hours with a dash)
        return 86400.0 * days + (3600.0 * first if match.group(1) else 60.0 * first)
    if match.group(4) is None:
        return 86400.0 * days + (3600.0 * first + 60 * second if match.group(1) else 60.0 * first + second)
    return 86400.0 * days + 3600.0 * first + 60 * second + third


def _json_time(value: Any, source: str, where: str) -> float | None:
    number = _number(value)
    if number is None or number == 0:
        return None  # sacct writes 0 for "not yet"
    return checked_unix(number, source, where)


def _json_tres(items: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or _number(item.get("count")) is None:
            continue
        kind, name = str(item.get("type") or ""), str(item.get("name") or "")
        count = _number(item.get("count"))
        key = f"{kind}/{name}" if name else kind
        text = str(int(count)) if count is not None and count.is_integer() else repr(count)
        out[key] = text if kind != "mem" else f"{text}M"  # sacct --json counts memory in MB
    return out


def _json_rows(path: Path, progress: Callable[[int], None] | None) -> Iterator[Attempt]:
    source = str(path)
    for index, (job, top) in enumerate(stream_list(path, "jobs", progress)):
        if job is STREAM_END:
            if "jobs" not in top:
                raise SpecError(source, ["no 'jobs' list; expected `sacct --json` output"])
            return
        where = f"jobs[{index}]"
        if not isinstance(job, dict):
            raise SpecError(source, [f"{where}: expected a job object, got {type(job).__name__}"])
        times = job.get("time") or {}
        state = job.get("state") or {}
        current = state.get("current") if isinstance(state, dict) else state
        state_text = " ".join(current) if isinstance(current, list) else str(current or "")
        tres = job.get("tres") or {}
        allocated = _json_tres(tres.get("allocated"))
        array = job.get("array") or {}
        task = _number(array.get("task_id") if isinstance(array, dict) else None)
        job_id = _number(job.get("job_id"))
        if job_id is None:
            raise SpecError(source, [f"{where}.job_id: missing or not a number"])
        array_id = _number(array.get("job_id")) if isinstance(array, dict) else None
        name = f"{int(array_id)}_{int(task)}" if array_id and task is not None else str(int(job_id))
        priority = _number(job.get("priority"))
        yield Attempt(
            job_id=name,
            submit=_json_time(times.get("submission"), source, f"{where}.time.submission"),
            start=_json_time(times.get("start"), source, f"{where}.time.start"),
            end=_json_time(times.get("end"), source, f"{where}.time.end"),
            state=state_text.strip(),
            tres=allocated or _json_tres(tres.get("requested")),
            partition=str(job.get("partition") or "") or None,
            account=str(job.get("account") or "") or None,
            priority=int(priority) if priority is not None and 0 <= priority < 2**62 else None,
            nodes=str(job.get("nodes") or "").strip() or None,
            restarts=int(_number(job.get("restart_cnt")) or 0),
            user=str(job.get("user") or "") or None,
            timelimit_s=_limit_minutes(times.get("limit")),
        )


def read_slurm(path: Path, progress: Callable[[int], None] | None = None) -> SourceData:
    """Jobs from one sacct file; ``--json`` output is recognised by its first character."""
    data = SourceData(label=str(path), kind="slurm")
    head = head_bytes(path, 64).lstrip()
    rows = _json_rows(path, progress) if head.startswith(b"{") else _parsable_rows(path)
    try:
        _collect(rows, str(path), data)
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), [f"is not UTF-8 text ({exc.reason})"]) from None
    return data
