"""Jobs as Arrow columns: every source's jobs in one table (JOB_SCHEMA, times still absolute Unix seconds),
range-checked, merged by job id, shifted to the epoch and sorted, all vectorised.

A million-row Slurm dump never becomes a million Python objects: readers that build records
(:class:`.common.JobRecord`) are turned into a table here, and readers that parse columns (Slurm) hand
their table over as it is. The merge keeps, per job id, the first source's value of each column and fills
its gaps from later sources (Arrow's ordered ``first``, which skips nulls).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.model.history import JOB_SCHEMA
from fleetlab.spec.errors import SpecError

#: JobRecord's time attributes and the JOB_SCHEMA column each becomes.
TIME_FIELDS = {"submit": "submit_s", "admitted": "admitted_s", "scheduled": "scheduled_s",
               "running": "running_s", "end": "end_s"}  # fmt: skip


@contextlib.contextmanager
def returned_memory() -> Iterator[None]:
    """Allocate Arrow memory from jemalloc with no decay while a history is imported or written, where
    Arrow has it: blocks freed along the way go back to the system at once, so a million-row import peaks
    near its live data instead of what the default allocator keeps cached (about 120 MB more). Arrays made
    here stay valid after the block. On leaving, glibc's heap is trimmed too: numpy's freed work arrays
    otherwise stay mapped (about 25 MB after a million Slurm rows, still held while the folder is written)."""
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowNotImplementedError):
        yield
        trim_heap()
        return
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
        trim_heap()


def trim_heap() -> None:
    """Give the C heap's free pages back to the system where the C library is glibc (elsewhere: nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def records_table(jobs: Sequence[Any]) -> pa.Table:
    """JOB_SCHEMA columns of ``jobs`` (``common.JobRecord`` dataclasses) with absolute times (``run_s`` as
    the record has it)."""
    columns: dict[str, list[Any]] = {name: [] for name in JOB_SCHEMA.names}
    if not jobs:
        return JOB_SCHEMA.empty_table()
    names = [(f.name, TIME_FIELDS.get(f.name, f.name)) for f in fields(jobs[0])]
    for attr, column in names:
        if column in columns:
            columns[column] = list(map(attrgetter(attr), jobs))
    return pa.Table.from_pydict(columns, schema=JOB_SCHEMA)


def _floats(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return column.cast(pa.float64())


def outside(label: str, job: Any, name: str, value: Any, lo: float, hi: float) -> SpecError:
    """The error for a job's value outside its column's range."""
    text = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return SpecError(label, [f"job {job}: {name} {text} is outside the allowed {lo:g}..{hi:g}"])


def _all_in_ranges(ranges: dict[str, tuple[float, float]], records: Sequence[Any]) -> bool:
    """Whether every record's values are within ``ranges`` (None allowed), a column at a time in C: its
    least and greatest value; a NaN among them makes the sum NaN. False sends the caller to its loop,
    which names the first value outside."""
    try:
        for name, (lo, hi) in ranges.items():
            values = [v for v in map(attrgetter(name), records) if v is not None]
            total = sum(values)
            if values and not (total == total and lo <= min(values) and max(values) <= hi):
                return False
    except TypeError:
        return False
    return True


def check_ranges(
    label: str, ranges: dict[str, tuple[float, float]], records: Sequence[Any] = (),
    table: pa.Table | None = None,
) -> None:  # fmt: skip
    """The first value outside ``ranges`` in ``records`` (checked before they become a table, whose
    integer columns would overflow) or in a reader's ``table``, as a SpecError."""
    for job in records if records and not _all_in_ranges(ranges, records) else ():
        for name, (lo, hi) in ranges.items():
            value = getattr(job, name)
            if value is not None and not lo <= value <= hi:
                raise outside(label, job.job_id, name, value, lo, hi)
    for name, (lo, hi) in ranges.items() if table is not None else ():
        assert table is not None
        values = _floats(table.column(name))
        bad = pc.or_(pc.less(values, pa.scalar(float(lo))), pc.greater(values, pa.scalar(float(hi))))
        if pc.any(bad).as_py():
            row = pc.index(bad, pa.scalar(True)).as_py()
            raise outside(
                label, table.column("job_id")[row].as_py(), name, table.column(name)[row].as_py(), lo, hi
            )


def merge_jobs(tables: Sequence[pa.Table]) -> pa.Table:
    """One row per job id: the first table's values, gaps (nulls) filled from later tables."""
    if not tables:
        return JOB_SCHEMA.empty_table()
    table = pa.concat_tables([t.select(JOB_SCHEMA.names).cast(JOB_SCHEMA) for t in tables])
    if len(tables) == 1 or not has_repeats(table.column("job_id")):  # each reader's ids are its jobs'
        return table
    others = [name for name in JOB_SCHEMA.names if name != "job_id"]
    grouped = table.group_by("job_id", use_threads=False).aggregate([(name, "first") for name in others])
    return pa.Table.from_arrays(
        [grouped.column("job_id"), *(grouped.column(f"{name}_first") for name in others)],
        names=["job_id", *others],
    ).cast(JOB_SCHEMA)


def has_repeats(ids: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a job id appears twice. Whole-number ids (Slurm's) are compared as integers, which costs
    a sort of 8 bytes an id instead of a hash set of the strings."""
    numeric = pc.all(pc.match_substring_regex(ids, r"^[0-9]{1,18}$")).as_py()
    if numeric is not False and not ids.null_count:  # all whole numbers (or no ids at all)
        values = np.empty(len(ids), np.int64)  # filled chunk by chunk and sorted in place: one copy
        at = 0
        for chunk in ids.chunks if isinstance(ids, pa.ChunkedArray) else [ids]:
            values[at : at + len(chunk)] = pc.cast(chunk, pa.int64()).to_numpy(zero_copy_only=False)
            at += len(chunk)
        values.sort()
        return bool(np.any(values[1:] == values[:-1]))
    return bool(pc.count_distinct(ids).as_py() < len(ids))


def latest_time(table: pa.Table) -> float | None:
    """The latest instant any job time in ``table`` mentions (None for no times)."""
    tops = [pc.max(table.column(name)).as_py() for name in TIME_FIELDS.values()]
    present = [t for t in tops if t is not None]
    return max(present) if present else None


def _in_order(table: pa.Table) -> bool:
    """Whether rows are already sorted by submit, then job id (a dump usually is: no sort needed)."""
    if table.num_rows < 2:
        return True
    submit, ids = table.column("submit_s"), table.column("job_id")
    before, after = submit.slice(0, table.num_rows - 1), submit.slice(1)
    rising = pc.less(before, after)
    tied = pc.and_(pc.equal(before, after), pc.less(ids.slice(0, table.num_rows - 1), ids.slice(1)))
    return bool(pc.all(pc.fill_null(pc.or_(rising, tied), False)).as_py())


def finish_jobs(holder: list[pa.Table], epoch: float) -> pa.Table:
    """The table taken out of ``holder`` (so that nothing else keeps its absolute times while they are
    replaced) with ``run_s`` filled where end and running are known, times shifted to seconds from
    ``epoch``, and rows sorted by submit then job id (so the history is the same whatever order the
    sources came in)."""
    table = holder.pop()
    end, running = table.column("end_s"), table.column("running_s")
    run = pc.if_else(pc.is_null(table.column("run_s")), pc.subtract(end, running), table.column("run_s"))
    table = table.set_column(JOB_SCHEMA.get_field_index("run_s"), JOB_SCHEMA.field("run_s"), run)
    del end, running, run
    for name in TIME_FIELDS.values():
        column = table.column(name)
        if column.null_count < len(column):  # a column of nulls stays as it is (and shared)
            shifted = pc.subtract(column, pa.scalar(epoch))
            table = table.set_column(JOB_SCHEMA.get_field_index(name), JOB_SCHEMA.field(name), shifted)
    if not _in_order(table):
        table = table.take(
            pc.sort_indices(table, sort_keys=[("submit_s", "ascending"), ("job_id", "ascending")])
        )
    return table.cast(JOB_SCHEMA)
