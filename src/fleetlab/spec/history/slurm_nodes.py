"""Slurm's partitions and nodes as ``scontrol`` prints them (docs/history-import.md, "Slurm partitions and
nodes").

* ``scontrol show partition --oneliner`` (or without ``--oneliner``: a record per partition, its lines
  indented): ``PartitionName``, ``Nodes`` (a hostlist expression), ``PriorityTier``, ``PreemptMode``,
  ``MaxTime``, ``DefaultTime``, ``PriorityJobFactor``, ``GraceTime`` (seconds), ``Default``;
* ``scontrol show node --oneliner``: per node its shape (``CPUTot``, ``RealMemory`` in MiB, ``Gres``
  ``gpu[:TYPE]:N``) and, as a usage sample, what was allocated on it (``CPUAlloc``, ``AllocMem`` in MiB,
  ``AllocTRES`` ``gres/gpu``). A line holding only a time (``date -u +%FT%T``) starts a snapshot taken
  then, so a file of repeated snapshots is the nodes' recorded allocation over time; a file without one
  gives the shapes alone.

Hostlist expressions (``node[001-064,070]``, ``rack[1-2]-n[01-04]``, ``a,b``) are expanded strictly: an
unbalanced bracket, a range that is not two whole numbers low to high, or more than ``MAX_HOSTS`` names is
an error naming the file, line, field and value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import product
from pathlib import Path

from fleetlab.model.history_policy import HistoryPolicy, SlurmPartition
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    NodeRecord,
    NodeUsageRecord,
    SourceData,
    labels_json,
    open_text,
    parse_naive_utc,
    short,
)
from fleetlab.spec.history.slurm import parse_wall
from fleetlab.spec.history.slurm_fold import MODELS_LOWER, parse_tres

__all__ = ["parse_hostlist", "read_scontrol_nodes", "read_scontrol_partitions"]

MAX_LINE_CHARS = 1 << 16
#: Names one hostlist expression may stand for, and records one file may hold.
MAX_HOSTS = 100_000
MAX_RECORDS = 2_000_000
#: Lines one record may span (``scontrol show`` without ``--oneliner`` prints a node in about 20).
MAX_RECORD_LINES = 1_000
#: Node names all partitions of one file may list together (partitions share nodes, so above MAX_HOSTS).
MAX_PARTITION_HOSTS = 1_000_000
MAX_PRIORITY_TIER = 65_533  # Slurm's PriorityTier is a uint16 below NO_VAL16 - 1
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/.:]*)=")
_RANGE = re.compile(r"^(\d{1,9})(?:-(\d{1,9}))?$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d$")
_GRES = re.compile(r"^gpu(?::([^:(]+))?:(\d{1,6})(?:\(.*\))?$")
TIME_HINT = "YYYY-MM-DDTHH:MM:SS in UTC (`date -u +%FT%T`)"


def _split_top(text: str, source: str, where: str) -> list[str]:
    """Comma-separated items, commas inside brackets kept."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
            if depth > 1:
                raise SpecError(source, [f"{where}: {short(text)} nests brackets; write name[1-4] lists"])
        elif c == "]":
            depth -= 1
            if depth < 0:
                raise SpecError(source, [f"{where}: {short(text)} has a ']' without its '['"])
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise SpecError(source, [f"{where}: {short(text)} has a '[' without its ']'"])
    items.append(text[start:])
    return [i.strip() for i in items if i.strip()]


def _bracket(body: str, source: str, where: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise SpecError(
                source, [f"{where}: [{short(body)}]: {short(part)} is not a number or a range such as 01-64"]
            )
        lo, hi = match.group(1), match.group(2) or match.group(1)
        if int(hi) < int(lo):
            raise SpecError(source, [f"{where}: [{short(body)}]: range {short(part)} runs high to low"])
        if int(hi) - int(lo) + len(out) >= MAX_HOSTS:
            raise SpecError(source, [f"{where}: [{short(body)}] names more than {MAX_HOSTS} hosts"])
        out.extend(str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1))
    return out


def parse_hostlist(text: str, source: str, where: str) -> list[str]:
    """The host names of a Slurm hostlist expression, in order, or a SpecError naming ``where``."""
    if len(text) > MAX_LINE_CHARS:
        raise SpecError(source, [f"{where}: a hostlist of {len(text)} characters (at most {MAX_LINE_CHARS})"])
    if text.strip() in ("", "(null)"):
        return []
    names: list[str] = []
    for item in _split_top(text, source, where):
        choices: list[list[str]] = []
        count = 1
        for piece in re.split(r"(\[[^\]]*\])", item):
            if piece:  # the product checked after each bracket: at most one is expanded past the bound
                choices.append(_bracket(piece[1:-1], source, where) if piece.startswith("[") else [piece])
                count *= len(choices[-1])
                if len(names) + count > MAX_HOSTS:
                    raise SpecError(source, [f"{where}: {short(text)} names more than {MAX_HOSTS} hosts"])
        names.extend("".join(combo) for combo in product(*choices))
    return names


def _fields(line: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs of one scontrol record (a value runs to the next key; it may hold spaces)."""
    keys = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for k, match in enumerate(keys):
        end = keys[k + 1].start() if k + 1 < len(keys) else len(line)
        out.setdefault(match.group(1), line[match.end() : end].strip())
    return out


def _records(path: Path, first_key: str) -> Iterator[tuple[int, float | None, dict[str, str]]]:
    """(line, snapshot time, fields) per record: a record starts at a line beginning with ``first_key=``
    and takes the indented lines after it; a line that is only a time starts a snapshot."""
    source = str(path)
    snapshot: float | None = None
    current: tuple[int, list[str]] | None = None
    count = 0
    with open_text(path) as fh:
        try:
            for number, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=1):
                if not raw.endswith("\n") and len(raw) >= MAX_LINE_CHARS:
                    raise SpecError(source, [f"line {number}: longer than {MAX_LINE_CHARS} characters"])
                line = raw.strip()
                if line.startswith(f"{first_key}=") or _TIME.match(line) or not line:
                    if current is not None:
                        yield current[0], snapshot, _fields(" ".join(current[1]))
                        current = None
                    if _TIME.match(line):
                        snapshot = parse_naive_utc(line, source, f"line {number}", TIME_HINT)
                    elif line:
                        count += 1
                        if count > MAX_RECORDS:
                            raise SpecError(source, [f"more than {MAX_RECORDS} records"])
                        current = (number, [line])
                elif current is not None and raw[:1].isspace():
                    if len(current[1]) >= MAX_RECORD_LINES:
                        raise SpecError(
                            source,
                            [f"line {number}: the record begun on line {current[0]} spans more than "
                             f"{MAX_RECORD_LINES} lines (`scontrol show` prints one in a few dozen)"],
                        )  # fmt: skip
                    current[1].append(line)
                else:
                    raise SpecError(
                        source,
                        [f"line {number}: {short(line)} is not part of a `scontrol show` record "
                         f"(records start with {first_key}=)"],
                    )  # fmt: skip
            if current is not None:
                yield current[0], snapshot, _fields(" ".join(current[1]))
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None


def _whole(text: str, source: str, where: str, hi: int) -> int:
    if not text.isdigit() or len(text) > 18 or int(text) > hi:
        raise SpecError(source, [f"{where}: {short(text)} is not a whole number in 0..{hi}"])
    return int(text)


def read_scontrol_partitions(path: Path) -> SourceData:
    """``scontrol show partition`` records as the history's ``slurm_partitions``."""
    source = str(path)
    data = SourceData(label=source, kind="scontrol-partition")
    partitions: list[SlurmPartition] = []
    seen: set[str] = set()
    listed = 0
    for number, _, row in _records(path, "PartitionName"):
        where = f"line {number}"
        name = row.get("PartitionName", "")
        if not name or name in seen:
            raise SpecError(source, [f"{where}: PartitionName {short(name)!r} is empty or given twice"])
        seen.add(name)
        tier = row.get("PriorityTier", "1") or "1"
        mode = row.get("PreemptMode") or None
        grace = _whole(row.get("GraceTime", "0") or "0", source, f"{where} GraceTime", 1 << 31)
        factor = row.get("PriorityJobFactor", "1") or "1"
        nodes = tuple(parse_hostlist(row.get("Nodes", ""), source, f"{where} Nodes"))
        listed += len(nodes)
        if listed > MAX_PARTITION_HOSTS:
            raise SpecError(
                source, [f"{where} Nodes: the partitions up to here list {listed} node names together "
                         f"(at most {MAX_PARTITION_HOSTS} in one file)"]
            )  # fmt: skip
        partitions.append(
            SlurmPartition(
                name=name, nodes=nodes,
                priority_tier=_whole(tier, source, f"{where} PriorityTier", MAX_PRIORITY_TIER),
                preempt_mode=mode.upper() if mode else None,
                max_time_s=parse_wall(row.get("MaxTime", ""), source, f"{where} MaxTime"),
                default=row.get("Default", "NO").upper() == "YES",
                default_time_s=parse_wall(_none(row.get("DefaultTime", "")), source, f"{where} DefaultTime"),
                grace_time_s=float(grace) or None,
                priority_job_factor=_whole(factor, source, f"{where} PriorityJobFactor", MAX_PRIORITY_TIER),
            )
        )  # fmt: skip
    if not partitions:
        raise SpecError(source, ["no PartitionName= record; expected `scontrol show partition --oneliner`"])
    data.policy = HistoryPolicy(slurm_partitions=tuple(partitions))
    return data


def _none(text: str) -> str:
    """``NONE`` (``DefaultTime`` not set) as empty."""
    return "" if text.strip().upper() == "NONE" else text


def _mib(text: str, source: str, where: str) -> int:
    return _whole(text or "0", source, where, 1 << 40) << 20


def _gres_gpus(text: str) -> tuple[int, str | None]:
    """GPUs and their type in a ``Gres=gpu:a100:4(S:0-1),shard:8`` cell (0 when it lists none)."""
    gpus, model = 0, None
    for part in text.split(","):
        match = _GRES.match(part.strip())
        if match:
            gpus += int(match.group(2))
            model = model or match.group(1)
    return gpus, model


def _model(kind: str | None) -> str | None:
    """The fleetlab GPU model of a gres type (the type itself where fleetlab has none), as sacct's."""
    return MODELS_LOWER.get(kind.lower().replace("-", "").replace("_", ""), kind) if kind else None


def _alloc_gpus(tres: str) -> int:
    """The ``gres/gpu`` count of an AllocTRES, read as sacct's AllocTRES is (0 when absent or not a count)."""
    value = parse_tres(tres).get("gres/gpu", "")
    return int(value) if value.isdigit() else 0


def read_scontrol_nodes(path: Path) -> SourceData:
    """``scontrol show node`` records as nodes (the last record of each node gives its shape) and, under
    a snapshot time, their allocation as node-usage samples."""
    source = str(path)
    data = SourceData(label=source, kind="scontrol-node")
    shapes: dict[str, NodeRecord] = {}
    for number, snapshot, row in _records(path, "NodeName"):
        where = f"line {number}"
        name = row.get("NodeName", "")
        if not name:
            raise SpecError(source, [f"{where}: NodeName is empty"])
        cpu = _whole(row.get("CPUTot") or row.get("CPUEfctv") or "0", source, f"{where} CPUTot", 1 << 20)
        gpus, model = _gres_gpus(row.get("Gres", ""))
        partitions = sorted(p for p in row.get("Partitions", "").split(",") if p and p != "(null)")
        shapes[name] = NodeRecord(
            node=name, gpus=gpus, cpu=float(cpu), memory=_mib(row.get("RealMemory", "0"), source,
            f"{where} RealMemory"), gpu_model=_model(model),
            pool=partitions[0] if partitions else None, labels_json=labels_json({}),
        )  # fmt: skip
        if snapshot is not None:
            data.node_usage.append(
                NodeUsageRecord(
                    name, snapshot,
                    float(_whole(row.get("CPUAlloc", "0") or "0", source, f"{where} CPUAlloc", 1 << 20)),
                    _alloc_gpus(row.get("AllocTRES", "")),
                    _mib(row.get("AllocMem", "0"), source, f"{where} AllocMem"),
                )
            )  # fmt: skip
            data.saw(snapshot, snapshot)
    if not shapes:
        raise SpecError(source, ["no NodeName= record; expected `scontrol show node --oneliner`"])
    data.nodes = list(shapes.values())
    return data
