"""Read a spot interruption trace: CSV rows ``time, pool[, node]`` naming when the provider reclaimed what.

``time`` is seconds from the start of the run (or a duration such as ``1h30m``); ``node`` is a node name
(``<pool>-<index>``) or an index within the pool, and when it is left out the simulator picks one of the
pool's running nodes with its interruption random stream. Relative paths are resolved against the
scenario file's folder before validation, as workload traces are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetlab.model.units import parse_duration
from fleetlab.spec.bounded import csv_rows, read_text_file
from fleetlab.spec.errors import SpecError

COLUMNS = ("time", "pool", "node")


@dataclass(frozen=True)
class TraceInterruption:
    """One row: when, which pool, and which node of it (None = any running node)."""

    time_s: float
    pool: str
    node: int | None


def _node_index(text: str, pool: str, count: int | None) -> int:
    value = text.strip()
    index_text = value.removeprefix(f"{pool}-") if value.startswith(f"{pool}-") else value
    if not index_text.isdigit():
        raise ValueError(f"node {value!r} is neither a node name {pool}-<index> nor an index")
    index = int(index_text)
    if count is not None and index >= count:
        raise ValueError(f"node {value!r}: pool {pool} has {count} node(s), indices 0..{count - 1}")
    return index


def parse_interruption_trace(label: str, text: str, pools: dict[str, int | None]) -> list[TraceInterruption]:
    """Rows of a trace (sorted by time, file order for ties); ``pools`` maps spot pool names to counts."""
    reader = csv_rows(label, text)
    header = [h.strip().lower() for h in next(reader, [])]
    if header[:2] != ["time", "pool"] or len(header) > 3 or (len(header) == 3 and header[2] != "node"):
        raise SpecError(
            label, [f"line 1: header must be 'time,pool' or 'time,pool,node', got {','.join(header)!r}"]
        )
    problems: list[str] = []
    rows: list[TraceInterruption] = []
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header) and not (len(header) == 3 and len(row) == 2):
            problems.append(f"line {line}: {len(row)} column(s), the header has {len(header)}")
            continue
        pool = row[1].strip()
        try:
            time_s = parse_duration(row[0].strip())
        except ValueError as exc:
            problems.append(f"line {line}, column time: {exc}")
            continue
        if pool not in pools:
            known = ", ".join(sorted(pools)) or "none"
            problems.append(
                f"line {line}, column pool: {pool!r} is not a spot pool with this trace ({known})"
            )
            continue
        node = None
        if len(row) == 3 and row[2].strip():
            try:
                node = _node_index(row[2], pool, pools[pool])
            except ValueError as exc:
                problems.append(f"line {line}, column node: {exc}")
                continue
        rows.append(TraceInterruption(time_s, pool, node))
    if problems:
        raise SpecError(label, problems)
    return sorted(rows, key=lambda r: r.time_s)


def read_interruption_trace(path: Path, pools: dict[str, int | None]) -> list[TraceInterruption]:
    """The rows of a trace file, or a SpecError naming the file, line and column."""
    text = read_text_file(path, "interruption trace file not found")
    return parse_interruption_trace(str(path), text, pools)


def _trace_pools(pools: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """Raw pools per trace path (a file may serve several pools)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for pool in pools:
        spec = pool.get("interruptions") if isinstance(pool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("trace"), str):
            out.setdefault(spec["trace"], []).append(pool)
    return out


def resolve_interruption_traces(data: dict[str, Any], label: str, base: Path | None) -> None:
    """Make the scenario's interruption trace paths absolute and check each file's rows (raw mapping)."""
    cluster = data.get("cluster")
    pools = cluster.get("pools") if isinstance(cluster, dict) else None
    if not isinstance(pools, list):
        return
    for path, users in _trace_pools(pools).items():
        file = Path(path)
        if not file.is_absolute() and base is not None:
            file = base / file
        names: dict[str, int | None] = {}
        for pool in users:
            count = pool.get("count")
            names[str(pool.get("name"))] = count if isinstance(count, int) else None
            pool["interruptions"] = {**pool["interruptions"], "trace": str(file)}
        read_interruption_trace(file, names)
