"""The folder ``fleetlab import`` writes and ``baseline``/``calibrate`` read: ``jobs.parquet``,
``nodes.parquet``, ``bill.parquet`` (the model.history schemas) and ``history.json`` (epoch, end, sources,
skipped counts by reason, row counts by state). Written atomically; read back with every column checked.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from fleetlab.model.history import BILL_SCHEMA, JOB_SCHEMA, JOB_STATES, NODE_SCHEMA, History
from fleetlab.spec.atomic_dir import atomic_dir
from fleetlab.spec.errors import SpecError, read_text_file

FORMAT = "fleetlab-history/1"
TABLES = (("jobs", JOB_SCHEMA), ("nodes", NODE_SCHEMA), ("bill", BILL_SCHEMA))
IMPORT_HINT = "write one with `fleetlab import SOURCE... --out DIR`"
MAX_META_BYTES = 16 * 1024 * 1024


def jobs_by_state(history: History) -> dict[str, int]:
    """Job counts for every state in JOB_STATES (zeros included), in that order."""
    counts = Counter(history.jobs.column("state").to_pylist())
    return {state: counts.get(state, 0) for state in JOB_STATES}


def history_meta(history: History) -> dict[str, Any]:
    """The content of history.json (also the ``--json`` summary of an import)."""
    return {
        "format": FORMAT,
        "epoch": history.epoch,
        "end_s": history.end_s,
        "sources": list(history.sources),
        "jobs": history.jobs.num_rows,
        "jobs_by_state": jobs_by_state(history),
        "nodes": history.nodes.num_rows,
        "bill_lines": history.bill.num_rows,
        "skipped": dict(sorted(history.skipped.items())),
    }


def write_history(history: History, out: Path) -> None:
    """Write the history folder at ``out`` atomically (the old folder stays whole until the new one is)."""
    import pyarrow.parquet as pq

    with atomic_dir(out) as staging:
        for name, schema in TABLES:
            table: pa.Table = getattr(history, name)
            pq.write_table(table.cast(schema), staging / f"{name}.parquet", compression="zstd")
        text = json.dumps(history_meta(history), indent=2, sort_keys=True, allow_nan=False)
        (staging / "history.json").write_text(text + "\n", encoding="utf-8")


def _table(folder: Path, name: str, schema: pa.Schema) -> pa.Table:
    import pyarrow.parquet as pq

    file = folder / f"{name}.parquet"
    if not file.is_file():
        raise SpecError(str(file), [f"not found; {IMPORT_HINT}"])
    try:
        table = pq.read_table(file)
    except Exception as exc:  # pyarrow raises several types for unreadable or foreign files
        raise SpecError(str(file), [f"cannot be read as Parquet: {str(exc)[:200]}"]) from None
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            if not f.nullable:
                raise SpecError(str(file), [f"missing column {f.name}; {IMPORT_HINT}"])
            columns.append(pa.nulls(table.num_rows, f.type))  # a column added to the schema later
            continue
        column = table.column(f.name)
        try:
            column = column.cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise SpecError(str(file), [f"column {f.name}: type {column.type}, expected {f.type}"]) from None
        if not f.nullable and column.null_count:
            raise SpecError(str(file), [f"column {f.name}: {column.null_count} null value(s); none allowed"])
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def load_history(folder: Path) -> History:
    """The History in a folder written by :func:`write_history`, or a SpecError naming what is wrong."""
    if not folder.is_dir():
        raise SpecError(str(folder), [f"not a folder; {IMPORT_HINT}"])
    meta_file = folder / "history.json"
    if meta_file.is_file() and meta_file.stat().st_size > MAX_META_BYTES:
        raise SpecError(str(meta_file), [f"larger than {MAX_META_BYTES // 2**20} MiB; not a history.json"])
    text = read_text_file(meta_file, f"no history.json in this folder; {IMPORT_HINT}")
    try:
        meta = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpecError(
            str(meta_file), [f"invalid JSON: {getattr(exc, 'msg', 'nested too deeply')}"]
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SpecError(str(meta_file), [f"'format' is not {FORMAT!r}; {IMPORT_HINT}"])
    end_s = meta.get("end_s")
    if not isinstance(end_s, int | float) or isinstance(end_s, bool) or not math.isfinite(end_s) or end_s < 0:
        raise SpecError(str(meta_file), [f"end_s: expected a number >= 0, got {str(end_s)[:40]}"])
    epoch = meta.get("epoch")
    skipped = meta.get("skipped") or {}
    sources = meta.get("sources") or []
    if not isinstance(epoch, str) or not isinstance(skipped, dict) or not isinstance(sources, list):
        raise SpecError(str(meta_file), ["expected 'epoch' (text), 'skipped' (mapping), 'sources' (list)"])
    jobs, nodes, bill = (_table(folder, name, schema) for name, schema in TABLES)
    bad = set(jobs.column("state").to_pylist()) - set(JOB_STATES)
    if bad:
        raise SpecError(
            str(folder / "jobs.parquet"), [f"state {sorted(bad)}; allowed: {', '.join(JOB_STATES)}"]
        )
    return History(
        jobs=jobs,
        nodes=nodes,
        bill=bill,
        epoch=epoch,
        end_s=float(end_s),
        sources=tuple(str(s) for s in sources),
        skipped={str(k): int(v) for k, v in skipped.items() if isinstance(v, int)},
    )
