"""A history folder on disk: ``jobs.parquet``, ``nodes.parquet``, ``bill.parquet``, ``node_down.parquet``,
``node_usage.parquet`` (only when a source recorded node usage), ``policy.json`` and ``history.json``.

``history.json`` holds ``epoch``, ``end_s``, ``sources``, ``skipped`` and ``notes``; ``policy.json`` the
recorded queueing policy (:class:`fleetlab.model.history_policy.HistoryPolicy`). Reading checks every table
has the schema's columns (extra columns are ignored, a missing nullable one reads as null) and the record's
numbers are finite, so a hand-edited or foreign folder fails with one clear paragraph.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from fleetlab.model.history import (
    BILL_SCHEMA,
    JOB_SCHEMA,
    JOB_STATES,
    NODE_DOWN_SCHEMA,
    NODE_DOWN_STATES,
    NODE_SCHEMA,
    NODE_USAGE_SCHEMA,
    History,
)
from fleetlab.model.history_policy import HistoryPolicy
from fleetlab.model.validation_problems import problems_from_validation
from fleetlab.spec.bounded import load_json, read_parquet, read_text_file
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.checks import check_history
from fleetlab.spec.inputs_read import note_input

__all__ = ["HISTORY_FILES", "read_history_folder", "write_history_folder"]

HISTORY_FILES = {"jobs": JOB_SCHEMA, "nodes": NODE_SCHEMA, "bill": BILL_SCHEMA, "node_down": NODE_DOWN_SCHEMA,
                 "node_usage": NODE_USAGE_SCHEMA}  # fmt: skip
#: history.json is small; anything larger is not one.
MAX_META_BYTES = 1 << 20
#: policy.json holds a cluster's queues and limits: thousands of objects at most.
MAX_POLICY_BYTES = 64 << 20
#: A month of a 2,000-GPU cluster (~500k jobs) is tens of MB of Parquet; far larger is not a history.
MAX_TABLE_BYTES = 4 << 30
#: Rows per Parquet row group: the writer holds one group's encoded columns, not a million rows'.
ROW_GROUP = 1 << 16


def _read_table(file: Path, schema: pa.Schema, required: bool) -> pa.Table:
    if not file.is_file():
        if required:
            raise SpecError(
                str(file), ["not found; a history folder has jobs.parquet (nodes, bill optional)"]
            )
        return schema.empty_table()
    table = read_parquet(file, "not found", max_bytes=MAX_TABLE_BYTES)
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            if not f.nullable:
                raise SpecError(str(file), [f"column {f.name!r} is missing; it is required ({f.type})"])
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        column = table.column(f.name)
        try:
            column = column.cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SpecError(str(file), [f"column {f.name!r}: cannot be read as {f.type}: {exc}"]) from None
        if not f.nullable and column.null_count:
            raise SpecError(str(file), [f"column {f.name!r} has {column.null_count} empty cell(s); required"])
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _number(meta: dict[str, Any], key: str, source: str) -> float:
    value = meta.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise SpecError(source, [f"{key}: expected a finite number, got {value!r}"])
    return float(value)


def read_history_folder(folder: Path) -> History:
    """Load a history folder, or raise SpecError naming the file and what is wrong."""
    if not folder.is_dir():
        raise SpecError(str(folder), ["not a folder; give a history folder (jobs.parquet, history.json)"])
    note_input(folder)
    meta_file = folder / "history.json"
    text = read_text_file(meta_file, "no history.json in this folder")
    if len(text) > MAX_META_BYTES:
        raise SpecError(str(meta_file), [f"is {len(text)} bytes; a history.json is at most {MAX_META_BYTES}"])
    meta = load_json(str(meta_file), text)
    if not isinstance(meta, dict):
        raise SpecError(str(meta_file), ["expected a JSON object with epoch, end_s, sources, skipped"])
    end_s = _number(meta, "end_s", str(meta_file))
    skipped = meta.get("skipped", {})
    if not isinstance(skipped, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in skipped.items()
    ):
        raise SpecError(str(meta_file), ["skipped: expected an object of reason -> count"])
    sources = meta.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise SpecError(str(meta_file), ["sources: expected a list of strings"])
    notes = meta.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(s, str) for s in notes):
        raise SpecError(str(meta_file), ["notes: expected a list of strings"])
    jobs = _read_table(folder / "jobs.parquet", JOB_SCHEMA, True)
    bad = sorted(set(jobs.column("state").to_pylist()) - set(JOB_STATES))
    if bad:
        raise SpecError(
            str(folder / "jobs.parquet"), [f"state {bad[0]!r}: must be one of {', '.join(JOB_STATES)}"]
        )
    history = History(
        jobs=jobs,
        nodes=_read_table(folder / "nodes.parquet", NODE_SCHEMA, False),
        bill=_read_table(folder / "bill.parquet", BILL_SCHEMA, False),
        epoch=str(meta.get("epoch", "1970-01-01T00:00:00Z")),
        end_s=end_s,
        sources=tuple(sources),
        skipped={str(k): int(v) for k, v in skipped.items()},
        node_down=_read_down(folder / "node_down.parquet"),
        node_usage=_read_table(folder / "node_usage.parquet", NODE_USAGE_SCHEMA, False),
        policy=_read_policy(folder / "policy.json"),
        notes=tuple(notes),
    )
    return check_history(history, str(folder))


def _read_down(file: Path) -> pa.Table:
    table = _read_table(file, NODE_DOWN_SCHEMA, False)
    bad = sorted(set(table.column("state").to_pylist()) - set(NODE_DOWN_STATES))
    if bad:
        raise SpecError(str(file), [f"state {bad[0]!r}: must be one of {', '.join(NODE_DOWN_STATES)}"])
    return table


def _read_policy(file: Path) -> HistoryPolicy:
    """policy.json (absent: no recorded policy), every field checked against HistoryPolicy."""
    if not file.is_file():
        return HistoryPolicy()
    text = read_text_file(file, "not found")
    if len(text) > MAX_POLICY_BYTES:
        raise SpecError(str(file), [f"is {len(text)} bytes; a policy.json is at most {MAX_POLICY_BYTES}"])
    try:
        return HistoryPolicy.model_validate(load_json(str(file), text))
    except ValidationError as exc:
        raise SpecError(str(file), problems_from_validation(exc)) from None


def write_history_folder(history: History, folder: Path) -> None:
    """Write the four files into ``folder`` (which the caller stages and renames into place)."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = (("jobs", history.jobs), ("nodes", history.nodes), ("bill", history.bill),
              ("node_down", history.node_down), ("node_usage", history.node_usage))  # fmt: skip
    for name, table in tables:  # plain encoding: a dictionary per row group of unique job ids cost more
        # memory (50 MB at a million jobs) and made a larger file than zstd alone
        if name == "node_usage" and not table.num_rows:
            continue
        pq.write_table(
            table,
            folder / f"{name}.parquet",
            compression="zstd",
            row_group_size=ROW_GROUP,
            use_dictionary=False,
        )
    meta = {
        "epoch": history.epoch,
        "end_s": history.end_s,
        "sources": list(history.sources),
        "skipped": dict(sorted(history.skipped.items())),
        "notes": list(history.notes),
    }
    (folder / "history.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    policy = history.policy.model_dump(mode="json")
    (folder / "policy.json").write_text(json.dumps(policy, indent=2, sort_keys=True) + "\n", encoding="utf-8")
