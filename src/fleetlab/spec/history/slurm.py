"""Slurm accounting: ``sacct --parsable2`` (``|``-separated with a header) and ``sacct --json``.

Fields: JobID (steps ``123.batch`` / ``123.0`` / ``123.extern`` fold into job ``123``), Submit, Start, End,
State, AllocTRES (``cpu=``, ``mem=``, ``node=``, ``gres/gpu=``, ``gres/gpu:TYPE=``; ReqTRES while pending),
Partition (queue), Account (team), QOS, Priority, NodeList. With ``--duplicates`` a requeued job appears
once per attempt: the attempts fold into one job whose restarts count them (:mod:`.slurm_fold`). Times
without a zone are read as UTC (run ``TZ=UTC sacct ...``).

The parsable format is read in blocks by Arrow's CSV reader and converted column by column, so a
million-row dump is imported in seconds with memory for its columns only; a cell the fast path cannot
read goes through the per-cell reader, which names the line and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from fleetlab.model.limits import MAX_SECONDS
from fleetlab.spec.bounded import open_binary_stream
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    MAX_COUNT,
    MAX_UNIX_S,
    MIN_UNIX_S,
    SourceData,
    checked_unix,
    head_bytes,
    open_text,
    parse_naive_utc,
    short,
)
from fleetlab.spec.history.job_columns import trim_heap
from fleetlab.spec.history.json_stream import STREAM_END, stream_list
from fleetlab.spec.history.slurm_fold import (
    ATTEMPT_SCHEMA,
    EMPTY,
    NO_TEXT,
    expand_hostlist,
    fold_attempts,
    job_rows,
    owned,
    parse_tres,
)

__all__ = ["expand_hostlist", "parse_tres", "read_slurm"]

REQUIRED = ("JobID", "Submit", "Start", "End", "State")
OPTIONAL = (
    "AllocTRES",
    "ReqTRES",
    "Partition",
    "Account",
    "Priority",
    "NodeList",
    "User",
    "Timelimit",
    "QOS",
)
TIME_HINT = "YYYY-MM-DDTHH:MM:SS (run `TZ=UTC sacct --parsable2 ...`)"
MAX_LINE_CHARS = 1 << 20
#: Rows read at a time (Arrow's block size in bytes): memory holds one block's text.
BLOCK_BYTES = 1 << 19
#: Jobs of ``sacct --json`` converted to columns at a time.
JSON_BLOCK = 1 << 14
_NO_TIME = pa.array(["", "Unknown", "None", "N/A", "NULL", "null"])
T = TypeVar("T")


def located(read: Callable[[str, str], T], text: str, where: Callable[[], str]) -> T:
    """``read(text, place)``, with the place (often costly to find: a line number) worked out only when
    ``read`` refuses the text, so the error names it."""
    try:
        return read(text, "")
    except SpecError:
        return read(text, where())


def _header(path: Path) -> list[str]:
    source = str(path)
    with open_text(path) as fh:
        line = fh.readline(MAX_LINE_CHARS)
    header = [name.strip() for name in line.rstrip("\r\n").split("|")]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise SpecError(
            source,
            [f"line 1: missing column(s) {', '.join(missing)}; expected the header of "
             f"`sacct --parsable2 --format=JobID,Submit,Start,End,State,AllocTRES,Partition,Account,QOS,"
             f"NodeList` (got {short(line.strip())})"],
        )  # fmt: skip
    twice = sorted({name for name in header if header.count(name) > 1 and name in REQUIRED + OPTIONAL})
    if twice:
        raise SpecError(source, [f"line 1: column {twice[0]!r} appears twice; each column may appear once"])
    return header


def _line_of_row(path: Path, row: int) -> int:
    """The line of data row ``row`` (0-based after the header; empty lines are not rows)."""
    seen, number = -1, 1
    with open_text(path) as fh:
        fh.readline(MAX_LINE_CHARS)
        for number, text in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=2):
            if text.rstrip("\r\n"):
                seen += 1
                if seen == row:
                    return number
    return number


def _times(texts: pa.Array, name: str, where: Callable[[int], str], source: str) -> pa.Array:
    """Unix seconds of sacct times (null for Unknown/None/empty): the ``YYYY-MM-DDTHH:MM:SS`` ones
    vectorised, other ISO 8601 forms and every refusal through ``parse_naive_utc``."""
    texts = pc.utf8_trim_whitespace(texts)
    blank = pc.is_in(texts, value_set=_NO_TIME)
    stamps = pc.strptime(texts, format="%Y-%m-%dT%H:%M:%S", unit="s", error_is_null=True)
    values = np.array(pc.cast(pc.cast(stamps, pa.int64()), pa.float64()).to_numpy(zero_copy_only=False))
    outside = (values < MIN_UNIX_S) | (values > MAX_UNIX_S)
    slow = (~blank.to_numpy(zero_copy_only=False) & np.isnan(values)) | outside

    def read(text: str, place: str) -> float | None:
        return parse_naive_utc(text, source, place, TIME_HINT)

    def place(at: int) -> Callable[[], str]:
        return lambda: f"{where(at)} {name}"

    for i in np.nonzero(slow)[0]:
        value = located(read, texts[int(i)].as_py(), place(int(i)))
        values[i] = math.nan if value is None else value
    return owned(values, mask=np.isnan(values))


_WALL = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_wall(text: str, source: str, where: str) -> float | None:
    """Slurm's ``[days-]hours:minutes:seconds``, ``minutes:seconds`` or minutes alone, in seconds (at
    most MAX_SECONDS); ``UNLIMITED``/``Partition_Limit``/empty: None."""
    text = text.strip()
    if text in ("", "UNLIMITED", "INFINITE", "Partition_Limit"):
        return None
    match = _WALL.match(text) if len(text) <= 40 else None
    if match is None:
        raise SpecError(source, [f"{where}: {short(text)} is not a Slurm time such as 2-00:00:00"])
    days, first, second, third = (int(g) if g else 0 for g in match.groups())
    if match.group(3) is None:  # minutes alone (days-hours with a dash)
        seconds = 86400.0 * days + (3600.0 * first if match.group(1) else 60.0 * first)
    elif match.group(4) is None:
        seconds = 86400.0 * days + (3600.0 * first + 60 * second if match.group(1) else 60.0 * first + second)
    else:
        seconds = 86400.0 * days + 3600.0 * first + 60 * second + third
    if seconds > MAX_SECONDS:
        raise SpecError(
            source, [f"{where}: {short(text)} is longer than 100 years, the longest fleetlab models"]
        )
    return seconds


def _walls(texts: pa.Array, where: Callable[[int], str], source: str) -> pa.Array:
    """Timelimit cells in seconds: each distinct text read once (a dump repeats a few limits)."""
    encoded = pc.dictionary_encode(pc.utf8_trim_whitespace(texts))
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    values: list[float | None] = []
    for code, text in enumerate(encoded.dictionary.to_pylist()):

        def place(code: int = code) -> str:
            return f"{where(int(np.nonzero(indices == code)[0][0]))} Timelimit"

        values.append(located(lambda t, p: parse_wall(t, source, p), text, place))
    return pc.take(pa.array(values, pa.float64()), encoded.indices)


def _column(batch: pa.RecordBatch, name: str) -> pa.Array:
    index = batch.schema.get_field_index(name)
    return batch.column(index) if index >= 0 else pa.array([""] * batch.num_rows, pa.string())


def _parsable_batch(batch: pa.RecordBatch, where: Callable[[int], str], source: str) -> pa.Table:
    """The attempts (job rows; steps dropped) of one block of sacct rows."""
    job_id = pc.utf8_trim_whitespace(batch.column(batch.schema.get_field_index("JobID")))
    jobs = pc.invert(pc.match_substring(job_id, "."))
    batch = batch.filter(jobs)
    rows = np.nonzero(jobs.to_numpy(zero_copy_only=False))[0]

    def place(i: int) -> str:
        return where(int(rows[i]))

    alloc = _column(batch, "AllocTRES")
    priority = pc.utf8_trim_whitespace(_column(batch, "Priority"))
    digits = pc.match_substring_regex(priority, r"^[0-9]+$")
    attempts = pa.table(
        {
            "job_id": job_id.filter(jobs),
            "submit": _times(_column(batch, "Submit"), "Submit", place, source),
            "start": _times(_column(batch, "Start"), "Start", place, source),
            "end": _times(_column(batch, "End"), "End", place, source),
            "state": pc.utf8_trim_whitespace(_column(batch, "State")),
            "tres": pc.if_else(pc.equal(alloc, EMPTY), _column(batch, "ReqTRES"), alloc),
            "partition": _column(batch, "Partition"),
            "account": _column(batch, "Account"),
            "priority": pc.cast(pc.if_else(digits, priority, NO_TEXT), pa.float64()),
            "nodes": pc.utf8_trim_whitespace(_column(batch, "NodeList")),
            "restarts": pa.array(np.zeros(batch.num_rows, dtype=np.int32)),
            "user": pc.utf8_trim_whitespace(_column(batch, "User")),
            "timelimit": _walls(_column(batch, "Timelimit"), place, source),
            "qos": pc.utf8_trim_whitespace(_column(batch, "QOS")),
        },
        schema=ATTEMPT_SCHEMA,
    )
    return job_rows(attempts, source)


def _parsable_attempts(path: Path, data: SourceData) -> pa.Table:
    source = str(path)
    header = _header(path)
    used = [name for name in REQUIRED + OPTIONAL if name in header]
    invalid: list[Any] = []

    def on_invalid(row: Any) -> str:
        invalid.append(row)
        return "skip"

    def where(row: int) -> str:
        return f"line {_line_of_row(path, first + row)}"

    parts: list[pa.Table] = []
    first = 0
    with open_binary_stream(path) as fh:
        try:
            reader = pacsv.open_csv(
                fh,
                read_options=pacsv.ReadOptions(
                    column_names=header, skip_rows=1, block_size=BLOCK_BYTES, use_threads=False
                ),
                parse_options=pacsv.ParseOptions(
                    delimiter="|", quote_char=False, invalid_row_handler=on_invalid
                ),
                convert_options=pacsv.ConvertOptions(
                    include_columns=used,
                    column_types=dict.fromkeys(used, pa.string()),
                    strings_can_be_null=False,
                ),
            )
            for batch in reader:
                parts.append(_parsable_batch(batch, where, source))
                first += batch.num_rows
                data.count_rows(sum(p.num_rows for p in parts))
                if invalid:
                    break
        except pa.ArrowInvalid as exc:
            text = str(exc)
            problem = (
                "is not UTF-8 text" if "UTF8" in text else f"cannot be read as sacct output ({text[:200]})"
            )
            raise SpecError(source, [problem]) from None
    if invalid:
        row = invalid[0]
        line = _line_of_row(path, (row.number or 2) - 2)
        raise SpecError(
            source,
            [f"line {line}: {row.actual_columns} fields, the header has {row.expected_columns} (truncated, "
             "or a '|' inside a value? run sacct with --parsable2 and a --delimiter no value holds)"],
        )  # fmt: skip
    return pa.concat_tables(parts) if parts else job_rows(ATTEMPT_SCHEMA.empty_table(), source)


# --- sacct --json ---------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A plain number or Slurm's ``{"set": true, "infinite": false, "number": N}`` (v0.0.40+)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _mapping(job: dict[str, Any], key: str, source: str, where: str) -> dict[str, Any]:
    value = job.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(source, [f"{where}.{key}: expected an object, got {type(value).__name__}"])
    return value


def _text(job: dict[str, Any], key: str, source: str, where: str) -> str | None:
    value = job.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SpecError(source, [f"{where}.{key}: expected a string, got {type(value).__name__}"])
    return value.strip() or None


def _limit_minutes(value: Any) -> float | None:
    """``time.limit`` of ``sacct --json``: minutes, as a plain number or ``{set, infinite, number}``."""
    minutes = _number(value)
    return None if minutes is None or minutes <= 0 else min(60.0 * minutes, float(MAX_SECONDS))


def _json_time(value: Any, source: str, where: str) -> float | None:
    number = _number(value)
    if number is None or number == 0:
        return None  # sacct writes 0 for "not yet"
    return checked_unix(number, source, where)


def _json_tres(items: Any, source: str, where: str) -> str:
    """A ``tres.allocated`` list as AllocTRES text (``cpu=8,mem=65536M,gres/gpu=2``)."""
    if items is None:
        return ""
    if not isinstance(items, list):
        raise SpecError(source, [f"{where}: expected a list of TRES objects, got {type(items).__name__}"])
    parts: list[str] = []
    for item in items:
        count = _number(item.get("count")) if isinstance(item, dict) else None
        if count is None:
            continue
        kind, name = str(item.get("type") or ""), str(item.get("name") or "")
        key = f"{kind}/{name}" if name else kind
        text = str(int(count)) if count.is_integer() and abs(count) < 1e18 else repr(count)
        parts.append(f"{key}={text}" + ("M" if kind == "mem" else ""))  # sacct --json counts memory in MB
    return ",".join(parts)


def _state_text(job: dict[str, Any], source: str, where: str) -> str:
    state = job.get("state")
    current = state.get("current") if isinstance(state, dict) else state
    if current is None:
        return ""
    if isinstance(current, list) and all(isinstance(c, str) for c in current):
        return " ".join(current).strip()
    if isinstance(current, str):
        return current.strip()
    raise SpecError(source, [f"{where}.state: expected a state name or a list of them, got {short(current)}"])


def _json_job(job: Any, index: int, source: str) -> tuple[Any, ...]:
    """One attempt's cells from one ``jobs[]`` object of ``sacct --json``."""
    where = f"jobs[{index}]"
    if not isinstance(job, dict):
        raise SpecError(source, [f"{where}: expected a job object, got {type(job).__name__}"])
    times = _mapping(job, "time", source, where)
    tres = _mapping(job, "tres", source, where)
    array = _mapping(job, "array", source, where)
    job_id = _number(job.get("job_id"))
    if job_id is None or not job_id.is_integer() or not 0 <= job_id < 2**63:
        raise SpecError(source, [f"{where}.job_id: {short(job.get('job_id'))} is not a job number 0..2^63"])
    array_id, task = _number(array.get("job_id")), _number(array.get("task_id"))
    name = str(int(job_id))
    if array_id and task is not None and array_id.is_integer() and task.is_integer() and 0 <= task < 2**63:
        name = f"{int(array_id)}_{int(task)}"
    priority = _number(job.get("priority"))
    restarts = _number(job.get("restart_cnt")) or 0.0
    if not 0 <= restarts <= MAX_COUNT:
        raise SpecError(source, [f"{where}.restart_cnt: {short(restarts)} is outside 0..{MAX_COUNT:,}"])
    return (
        name,
        _json_time(times.get("submission"), source, f"{where}.time.submission"),
        _json_time(times.get("start"), source, f"{where}.time.start"),
        _json_time(times.get("end"), source, f"{where}.time.end"),
        _state_text(job, source, where),
        _json_tres(tres.get("allocated"), source, f"{where}.tres.allocated")
        or _json_tres(tres.get("requested"), source, f"{where}.tres.requested"),
        _text(job, "partition", source, where),
        _text(job, "account", source, where),
        priority if priority is not None and 0 <= priority < 2**62 else None,
        _text(job, "nodes", source, where),
        int(restarts),
        _text(job, "user", source, where),
        _limit_minutes(times.get("limit")),
        _text(job, "qos", source, where),
    )


def _json_block(rows: list[tuple[Any, ...]], source: str) -> pa.Table:
    """The job rows of a block of ``sacct --json`` attempts (cells as :func:`_json_job` gives them)."""
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [() for _ in ATTEMPT_SCHEMA]
    table = pa.table(
        {f.name: pa.array(list(column), f.type) for f, column in zip(ATTEMPT_SCHEMA, columns, strict=True)},
        schema=ATTEMPT_SCHEMA,
    )
    return job_rows(table, source)


def _json_attempts(path: Path, progress: Callable[[int], None] | None, data: SourceData) -> pa.Table:
    """Job rows of every ``jobs[]`` object, converted a block at a time (memory holds one block of Python
    objects, not a million)."""
    source = str(path)
    rows: list[tuple[Any, ...]] = []
    parts: list[pa.Table] = []
    for index, (job, top) in enumerate(stream_list(path, "jobs", progress)):
        if job is STREAM_END:
            if "jobs" not in top:
                raise SpecError(source, ["no 'jobs' list; expected `sacct --json` output"])
            if top["jobs"] is not STREAM_END:
                kind = type(top["jobs"]).__name__
                raise SpecError(source, [f"'jobs' is a {kind}; `sacct --json` output holds a list of jobs"])
            break
        rows.append(_json_job(job, index, source))
        if len(rows) == JSON_BLOCK:
            parts.append(_json_block(rows, source))
            rows = []
            data.count_rows(index + 1)
    parts.append(_json_block(rows, source))
    return pa.concat_tables(parts)


def read_slurm(path: Path, progress: Callable[[int], None] | None = None) -> SourceData:
    """Jobs from one sacct file; ``--json`` output is recognised by its first character."""
    data = SourceData(label=str(path), kind="slurm")
    try:
        if head_bytes(path, 64).lstrip().startswith(b"{"):
            attempts = _json_attempts(path, progress, data)
        else:
            attempts = _parsable_attempts(path, data)
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), [f"is not UTF-8 text ({exc.reason})"]) from None
    data.count_rows(attempts.num_rows)
    trim_heap()  # the parsed blocks' Python and numpy leftovers, before the fold builds the job table
    data.job_table = fold_attempts(attempts, data)
    return data
