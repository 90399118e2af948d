"""What every history reader shares: one record per job and node in absolute Unix seconds, skip counts by
reason, time parsing, and the step that shifts everything to the history's epoch and builds the Arrow tables.

Readers fill :class:`SourceData`; :func:`assemble` merges several sources (a kubectl dump and Prometheus
describe the same pods: rows with one ``job_id`` are merged, the first source's values winning and later
sources filling its gaps), so no reader knows about the others.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.model.gpus import GPU_MODELS
from fleetlab.model.history import BILL_SCHEMA, NODE_DOWN_SCHEMA, NODE_SCHEMA, NODE_USAGE_SCHEMA, History
from fleetlab.model.history_policy import HistoryPolicy
from fleetlab.spec.bounded import open_stream
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.job_columns import check_ranges, finish_jobs, merge_jobs, records_table

#: Times outside 1990..2100 are not from a real record (a zero or a millisecond value read as seconds).
MIN_UNIX_S = 631_152_000.0
MAX_UNIX_S = 4_102_444_800.0
#: Largest count, size or duration a reader accepts in one cell.
MAX_COUNT = 10_000_000
MAX_GPUS_PER_POD = 4096
#: Rows one source may give (jobs or attempts, pods, kubectl objects, bill lines, Prometheus series):
#: a year of a busy cluster; memory grows with them, so a larger export is split by time.
MAX_SOURCE_ROWS = 2_000_000

PRODUCT_TO_MODEL: dict[str, str] = {}
for _name, _gpu in GPU_MODELS.items():
    PRODUCT_TO_MODEL.setdefault(_gpu.product, _name)


@dataclass(slots=True)
class JobRecord:
    """One job as a reader saw it; times are absolute Unix seconds (None where the record has none)."""

    job_id: str
    source: str
    submit: float
    job_class: str = "training"
    owner_kind: str | None = None
    namespace: str | None = None
    team: str | None = None
    queue: str | None = None
    priority: int | None = None
    pods: int = 1
    gpus_per_pod: float = 0.0
    gpu_milli_per_pod: int | None = None
    cpu_per_pod: float = 0.0
    memory_per_pod: int = 0
    gpu_model: str | None = None
    admitted: float | None = None
    scheduled: float | None = None
    running: float | None = None
    end: float | None = None
    state: str = "pending"
    end_reason: str | None = None
    restarts: int = 0
    evictions: int = 0
    nodes: str | None = None
    gpu_util_mean: float | None = None
    gpu_mem_used_max: float | None = None
    image_pull_s: float | None = None
    run_s: float | None = None  # end - running, filled in when the tables are built
    user: str | None = None
    walltime_s: float | None = None  # requested wall time
    qos: str | None = None  # Slurm QOS


@dataclass(slots=True)
class NodeRecord:
    """One node; ``created``/``deleted`` are absolute Unix seconds or None."""

    node: str
    gpus: int = 0
    cpu: float = 0.0
    memory: int = 0
    pool: str | None = None
    gpu_model: str | None = None
    instance_type: str | None = None
    capacity_type: str | None = None
    zone: str | None = None
    labels_json: str | None = None
    created: float | None = None
    deleted: float | None = None


@dataclass(slots=True)
class NodeDownRecord:
    """A window a node took no new work (NODE_DOWN_SCHEMA); absolute Unix seconds, ``end`` None: open."""

    node: str | None
    start: float
    end: float | None
    state: str  # down | drain
    reason: str | None
    source: str


@dataclass(slots=True)
class NodeUsageRecord:
    """A node's recorded allocation at one instant (NODE_USAGE_SCHEMA; absolute Unix seconds)."""

    node: str
    time: float
    cpu: float
    gpus: int
    memory: int


@dataclass
class SourceData:
    """What one reader produced from one input: records, bill lines, skips and the latest time it saw."""

    label: str  # what the user named: a file path or the Prometheus URL (never with credentials)
    kind: str  # kubectl, prometheus, slurm, focus, philly, swf
    jobs: list[JobRecord] = field(default_factory=list)
    #: Jobs a reader parsed as columns (JOB_SCHEMA, absolute times) instead of records; None otherwise.
    job_table: pa.Table | None = None
    nodes: list[NodeRecord] = field(default_factory=list)
    bill: pa.Table | None = None  # BILL_SCHEMA with absolute Unix seconds
    skipped: Counter[str] = field(default_factory=Counter)
    latest: float | None = None  # the latest instant any record mentions
    end: float | None = None  # when the record itself ends (a query's end), if the source says
    node_down: list[NodeDownRecord] = field(default_factory=list)
    node_usage: list[NodeUsageRecord] = field(default_factory=list)
    policy: HistoryPolicy = field(default_factory=HistoryPolicy)
    notes: list[str] = field(default_factory=list)  # what the reader assumed (shown with the history)

    def skip(self, reason: str, count: int = 1) -> None:
        """Count a row left out, under a reason a reader can act on."""
        self.skipped[f"{self.kind}: {reason}"] += count

    def take_table(self) -> pa.Table:
        """This source's jobs as JOB_SCHEMA columns (absolute times), handed over: the source keeps none,
        so a million-row table is not held twice while it is shifted."""
        table = self.job_table if self.job_table is not None else records_table(self.jobs)
        self.job_table, self.jobs = None, []
        return table

    def count_rows(self, rows: int) -> None:
        """Refuse a source past MAX_SOURCE_ROWS rows, with what to do instead."""
        if rows > MAX_SOURCE_ROWS:
            raise SpecError(
                self.label,
                [f"holds more than {MAX_SOURCE_ROWS:,} rows (jobs, pods, objects, bill lines or series); "
                 "import a shorter time range (sacct -S/-E, a kubectl dump per week, a shorter --end)"],
            )  # fmt: skip

    def saw(self, *times: float | None) -> None:
        """Note instants the record mentions, so the history's end covers them."""
        for t in times:
            if t is not None and (self.latest is None or t > self.latest):
                self.latest = t


def open_text(path: Path, encoding: str = "utf-8") -> TextIO:
    """An input file opened for reading text a piece at a time (universal newlines off, for CSV), or a
    SpecError saying why it cannot be: only regular files, bounded in size (``spec.bounded``)."""
    return open_stream(path, encoding=encoding)


def head_bytes(path: Path, count: int) -> bytes:
    """The first ``count`` bytes of an input file (to tell its format), or a SpecError."""
    with open_text(path, "latin-1") as fh:
        return fh.read(count).encode("latin-1")


def parse_rfc3339(value: Any, source: str, where: str) -> float | None:
    """An RFC 3339 timestamp as Kubernetes writes it (``2024-05-01T10:00:00Z``), as Unix seconds."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SpecError(source, [f"{where}: expected an RFC 3339 timestamp string, got {_short(value)}"])
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise SpecError(
            source, [f"{where}: {_short(value)} is not an RFC 3339 timestamp (e.g. 2024-05-01T10:00:00Z)"]
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return checked_unix(parsed.timestamp(), source, where)


def parse_naive_utc(value: str, source: str, where: str, fmt_hint: str) -> float | None:
    """A ``YYYY-MM-DD[ T]HH:MM:SS`` time with no zone, read as UTC; ``Unknown``/``None``/empty is None."""
    text = value.strip()
    if text in ("", "Unknown", "None", "N/A", "NULL", "null"):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise SpecError(source, [f"{where}: {_short(text)} is not a time; expected {fmt_hint}"]) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return checked_unix(parsed.timestamp(), source, where)


def checked_unix(value: float, source: str, where: str) -> float:
    """Unix seconds inside 1990..2100, or a SpecError naming the value."""
    if not math.isfinite(value) or not MIN_UNIX_S <= value <= MAX_UNIX_S:
        raise SpecError(
            source,
            [f"{where}: time {_short(value)} is outside 1990..2100 (Unix seconds; is it in milliseconds?)"],
        )
    return value


def bounded_number(text: str, source: str, where: str, lo: float, hi: float) -> float:
    """A finite number within [lo, hi] from a table cell, or a SpecError naming cell, value and range."""
    try:
        value = float(text)
    except ValueError:
        raise SpecError(source, [f"{where}: {_short(text)} is not a number"]) from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise SpecError(source, [f"{where}: {_short(text)} is outside the allowed range {lo:g}..{hi:g}"])
    return value


_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration_s(text: str) -> float | None:
    """A Go ``time.Duration`` string (``1m2.5s``, ``523ms``) in seconds; None when it is not one."""
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def gpu_model_of(product: str | None) -> str | None:
    """The fleetlab GPU model for a GFD ``nvidia.com/gpu.product`` value (``-SHARED``/``-MIG`` suffixes
    dropped); the product text itself where fleetlab has no such model, so nothing is silently renamed."""
    if not product:
        return None
    base = product.removesuffix("-SHARED")
    return PRODUCT_TO_MODEL.get(base, base)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def short(value: Any) -> str:
    """A value for an error message, cut to 80 characters."""
    return _short(value)


def iso_utc(unix_s: float) -> str:
    """``2024-05-01T10:00:00Z`` (microseconds only where the instant has them)."""
    moment = datetime.fromtimestamp(unix_s, tz=UTC)
    text = moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def unix_from_iso(text: str) -> float:
    """The inverse of :func:`iso_utc`."""
    return datetime.fromisoformat(text).timestamp()


def _merge_into(first: Any, later: Any) -> None:
    """Fill ``first``'s None fields from ``later`` (same dataclass)."""
    for f in fields(first):
        if getattr(first, f.name) is None:
            setattr(first, f.name, getattr(later, f.name))


def _merged(items: list[Any], key: str) -> list[Any]:
    by_key: dict[str, Any] = {}
    for item in items:
        seen = by_key.get(getattr(item, key))
        if seen is None:
            by_key[getattr(item, key)] = item
        else:
            _merge_into(seen, item)
    return list(by_key.values())


def _shift(value: float | None, epoch: float) -> float | None:
    return None if value is None else value - epoch


#: Allowed ranges of the integer and size columns (a value outside is from a corrupt or hostile file).
RANGES: dict[str, tuple[float, float]] = {
    "pods": (0, MAX_COUNT),
    "gpus_per_pod": (0, MAX_GPUS_PER_POD),
    "cpu_per_pod": (0, 1e7),
    "memory_per_pod": (0, 2.0**60),
    "priority": (-(2.0**31), 2.0**31),
    "restarts": (0, MAX_COUNT),
    "evictions": (0, MAX_COUNT),
    "gpu_util_mean": (0, 1),
    "gpu_mem_used_max": (0, 2.0**50),
    "image_pull_s": (0, 1e7),
}


def _check_ranges(part: SourceData) -> None:
    """A SpecError naming the source, job, column, value and range for the first value out of range."""
    check_ranges(part.label, RANGES, part.jobs, part.job_table)
    for node in part.nodes:
        for name, hi in (("gpus", MAX_GPUS_PER_POD), ("cpu", 1e7), ("memory", 2.0**60)):
            value = getattr(node, name)
            if not 0 <= value <= hi:
                raise SpecError(part.label, [f"node {node.node}: {name} {short(value)} is outside 0..{hi:g}"])


def assemble(parts: list[SourceData], end: float | None = None) -> History:
    """One History from every source: merged by job id and node name, shifted to the epoch (the earliest
    submit, else the earliest node or bill time, floored to a whole second), sorted for determinism. The
    parts' jobs are handed over (:meth:`SourceData.take_table`)."""
    for part in parts:
        _check_ranges(part)
    jobs = merge_jobs([part.take_table() for part in parts])
    nodes = _merged([n for p in parts for n in p.nodes], "node")
    bills = [p.bill for p in parts if p.bill is not None and p.bill.num_rows]
    downs = [d for p in parts for d in p.node_down]
    first = pc.min(jobs.column("submit_s")).as_py() if jobs.num_rows else None
    starts = [first] if first is not None else [n.created for n in nodes if n.created is not None]
    starts = starts or [d.start for d in downs]
    if not starts and bills:
        starts = [min(float(b.column("charge_start_s").to_numpy().min()) for b in bills)]
    epoch = float(math.floor(min(starts))) if starts else 0.0
    ends = [p.end for p in parts if p.end is not None] + [p.latest for p in parts if p.latest is not None]
    end_abs = end if end is not None else (max(ends) if ends else epoch)
    end_abs = max(end_abs, epoch)
    nodes.sort(key=lambda n: n.node)
    skipped: Counter[str] = Counter()
    policy = HistoryPolicy()
    for p in parts:
        skipped.update(p.skipped)
        policy = policy.merged(p.policy)
    holder = [jobs]
    del jobs  # finish_jobs takes it out of the holder: its absolute times are freed as they are shifted
    return History(
        jobs=finish_jobs(holder, epoch),
        nodes=_node_table(nodes, epoch),
        bill=_bill_table(bills, epoch),
        epoch=iso_utc(epoch),
        end_s=end_abs - epoch,
        sources=tuple(f"{p.kind}:{p.label}" for p in parts),
        skipped=dict(sorted(skipped.items())),
        node_down=_down_table(downs, epoch, end_abs),
        policy=policy,
        notes=tuple(n for p in parts for n in p.notes),
        node_usage=_usage_table([u for p in parts for u in p.node_usage], epoch),
    )


def _usage_table(samples: list[NodeUsageRecord], epoch: float) -> pa.Table:
    """The node-usage samples shifted to the epoch, by time then node."""
    samples.sort(key=lambda u: (u.time, u.node))
    return pa.Table.from_pydict(
        {"node": [u.node for u in samples], "time_s": [u.time - epoch for u in samples],
         "cpu": [u.cpu for u in samples], "gpus": [u.gpus for u in samples],
         "memory": [u.memory for u in samples]},
        schema=NODE_USAGE_SCHEMA,
    )  # fmt: skip


def _down_table(windows: list[NodeDownRecord], epoch: float, end: float) -> pa.Table:
    """The windows inside the record (clipped to it), shifted to the epoch, in a stable order."""
    kept = [w for w in windows if w.start < end and (w.end is None or w.end > epoch)]
    kept.sort(key=lambda w: (w.start, w.node or "", w.state))
    return pa.Table.from_pydict(
        {
            "node": [w.node for w in kept],
            "start_s": [max(w.start, epoch) - epoch for w in kept],
            "end_s": [None if w.end is None or w.end >= end else w.end - epoch for w in kept],
            "state": [w.state for w in kept],
            "reason": [w.reason for w in kept],
            "source": [w.source for w in kept],
        },
        schema=NODE_DOWN_SCHEMA,
    )


def _node_table(nodes: list[NodeRecord], epoch: float) -> pa.Table:
    columns: dict[str, list[Any]] = {name: [] for name in NODE_SCHEMA.names}
    for node in nodes:
        for name in columns:
            if name == "created_s":  # null: the node was there before the history began
                created = node.created if node.created is not None and node.created > epoch else None
                columns[name].append(_shift(created, epoch))
            elif name == "deleted_s":
                columns[name].append(_shift(node.deleted, epoch))
            else:
                columns[name].append(getattr(node, name))
    return pa.Table.from_pydict(columns, schema=NODE_SCHEMA)


def _bill_table(bills: list[pa.Table], epoch: float) -> pa.Table:
    if not bills:
        return BILL_SCHEMA.empty_table()
    import pyarrow.compute as pc

    table = pa.concat_tables(bills)
    for name in ("charge_start_s", "charge_end_s"):
        idx = table.schema.get_field_index(name)
        table = table.set_column(idx, BILL_SCHEMA.field(name), pc.subtract(table.column(name), epoch))
    return table.cast(BILL_SCHEMA)


def labels_json(labels: dict[str, str]) -> str:
    """Labels as a JSON object with sorted keys (the NODE_SCHEMA form)."""
    return json.dumps(labels, sort_keys=True, separators=(",", ":"))
