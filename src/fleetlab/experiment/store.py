"""The results store of an experiment: Parquet files per run and one DuckDB database over all of them.

Each run folder (``runs/<variant>/seed-<n>/``) holds ``jobs``, ``costs`` (one row per node with its
bill split), ``timeline``, ``queues`` and ``services`` Parquet files and ``run.json`` (written last). A
folder appears only by an atomic rename of a finished temporary folder, so it is complete or absent.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_type_hints

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.cost.ledger_io import LEDGER_FILE, ledger_table, run_id_of
from fleetlab.metrics.queues import QueueRow, queue_rows
from fleetlab.metrics.services import service_columns
from fleetlab.metrics.summary import Summary, summarize
from fleetlab.metrics.tables import job_columns, node_columns, timeline_columns
from fleetlab.model.cluster import NodePool
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.out_folder import safe_name, swap_into_place

#: Version of the layout of run folders, run.json, manifest.json and the database; raised whenever a
#: column or key changes meaning or disappears (docs/data-dictionary.md). Stored in run.json,
#: manifest.json and every Parquet file's key-value metadata (``fleetlab.schema_version``).
RESULTS_SCHEMA_VERSION = 1
SCHEMA_METADATA_KEY = "fleetlab.schema_version"

TMP_PREFIX = ".tmp-"
RUN_RECORD = "run.json"
TABLES = ("jobs", "costs", "timeline", "queues", "services")
#: Fields every run record must carry to be kept on resume (a record missing one is run again).
RECORD_KEYS = ("variant", "seed", "fingerprint", "policy", "summary")
DATABASE = "experiment.duckdb"
_QUEUE_TYPES = {str: pa.string(), int: pa.int64(), float: pa.float64()}


def run_folder(out: Path, variant: str, seed: int) -> Path:
    """Where one run's files live."""
    return out / "runs" / safe_name(variant) / f"seed-{seed}"


def _with_keys(columns: dict[str, Any], variant: str, seed: int) -> pa.Table:
    table = pa.table(columns)
    n = table.num_rows
    table = table.add_column(0, "seed", pa.array([seed] * n, pa.int64()))
    return table.add_column(0, "variant", pa.array([variant] * n, pa.string()))


def _queue_table(rows: list[QueueRow]) -> dict[str, Any]:
    hints = get_type_hints(QueueRow)
    schema = {f.name: _QUEUE_TYPES[hints[f.name]] for f in fields(QueueRow)}
    return {name: pa.array([getattr(r, name) for r in rows], kind) for name, kind in schema.items()}


#: services.parquet's types, fixed so that runs with and without services concatenate.
_SERVICE_TYPES = {
    "time_s": pa.float64(),
    "service": pa.string(),
    "ready_replicas": pa.int64(),
    "desired_replicas": pa.int64(),
    "servers": pa.int64(),
    "rps": pa.float64(),
    "p50_ms": pa.float64(),
    "p99_ms": pa.float64(),
    "slo_met": pa.bool_(),
    "late_requests": pa.float64(),
}


def _service_table(result: SimulationResult) -> dict[str, Any]:
    columns = service_columns(result)
    return {name: pa.array(columns[name], kind) for name, kind in _SERVICE_TYPES.items()}


def run_tables(result: SimulationResult, variant: str, seed: int) -> dict[str, pa.Table]:
    """The per-run tables, each with ``variant`` and ``seed`` columns in front."""
    return {
        "jobs": _with_keys(job_columns(result), variant, seed),
        "costs": _with_keys(node_columns(result), variant, seed),
        "timeline": _with_keys(timeline_columns(result), variant, seed),
        "queues": _with_keys(_queue_table(queue_rows(result)), variant, seed),
        "services": _with_keys(_service_table(result), variant, seed),
    }


@dataclass(frozen=True)
class RunFiles:
    """One run's record and tables, computed where the run executed (a worker process or a Ray task) and
    written by the driver alone: workers need no access to ``--out``."""

    record: dict[str, Any]
    #: File stem -> table, in writing order (the ledger last, when the pools are known).
    tables: dict[str, pa.Table]


def with_schema_version(table: pa.Table) -> pa.Table:
    """The table with ``fleetlab.schema_version`` added to its schema's key-value metadata."""
    metadata = dict(table.schema.metadata or {})
    metadata[SCHEMA_METADATA_KEY.encode()] = str(RESULTS_SCHEMA_VERSION).encode()
    return table.replace_schema_metadata(metadata)


def run_files(result: SimulationResult, record: dict[str, Any], pools: Sequence[NodePool] = ()) -> RunFiles:
    """The record (with summary and warnings) and every table of one run, ready to write."""
    summary = summarize(result).as_dict()
    record = {
        **record,
        "schema_version": RESULTS_SCHEMA_VERSION,
        "summary": summary,
        "warnings": list(dict.fromkeys(result.warnings)),
    }
    tables = run_tables(result, record["variant"], record["seed"])
    if pools:
        run_id = run_id_of(result, f"{record['variant']}/{record['policy']}")
        tables[LEDGER_FILE.removesuffix(".parquet")] = ledger_table(
            pools, result, run_id, variant=record["variant"]
        )
    return RunFiles(record, tables)


def write_run_files(folder: Path, files: RunFiles) -> dict[str, Any]:
    """Write one run's tables and record into a temporary sibling and rename it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{folder.name}-", dir=folder.parent))
    try:
        for name, table in files.tables.items():
            pq.write_table(with_schema_version(table), staging / f"{name}.parquet", compression="zstd")
        text = json.dumps(files.record, indent=2, sort_keys=True, allow_nan=False)
        (staging / RUN_RECORD).write_text(text + "\n", encoding="utf-8")
        staging.chmod(0o755)
        swap_into_place(staging, folder, aside_prefix=TMP_PREFIX)  # leftovers are swept on resume
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return files.record


def write_run(
    folder: Path, result: SimulationResult, record: dict[str, Any], pools: Sequence[NodePool] = ()
) -> dict[str, Any]:
    """Compute and write one run's files in this process (``run_files`` then ``write_run_files``)."""
    return write_run_files(folder, run_files(result, record, pools))


def read_record(folder: Path) -> dict[str, Any] | None:
    """A finished run's record, or None when the folder holds no complete run."""
    try:
        record = json.loads((folder / RUN_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not all((folder / f"{name}.parquet").is_file() for name in TABLES):
        return None
    if not isinstance(record, dict) or not all(key in record for key in RECORD_KEYS):
        return None  # damaged or from an older layout: the run is done again
    if not isinstance(record["summary"], dict) or not isinstance(record["seed"], int):
        return None
    return record


def remove_strays(out: Path) -> list[Path]:
    """Delete temporary folders a killed sweep left behind; returns what was removed."""
    removed: list[Path] = []
    runs = out / "runs"
    if not runs.is_dir():
        return removed
    for variant_dir in runs.iterdir():
        if not variant_dir.is_dir():
            continue
        for entry in variant_dir.iterdir():
            if entry.name.startswith(TMP_PREFIX):
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
                removed.append(entry)
    return removed


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON through a temporary file and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


SUMMARY_FIELDS = tuple(f.name for f in fields(Summary) if f.name != "policy")
#: run_summary's column types come from Summary's declared fields, never from the values seen (a float
#: figure that happens to be whole in every run stays DOUBLE).
_SUMMARY_HINTS = get_type_hints(Summary)
_SUMMARY_TYPES: dict[Any, tuple[pa.DataType, Any]] = {
    int: (pa.int64(), int),
    float: (pa.float64(), float),
    float | None: (pa.float64(), float),  # a wait bucket only some runs have (null in the others)
}


def _summary_table(records: Sequence[dict[str, Any]], changes: dict[str, str], baseline: str) -> pa.Table:
    columns: dict[str, Any] = {
        "variant": pa.array([r["variant"] for r in records], pa.string()),
        "seed": pa.array([r["seed"] for r in records], pa.int64()),
        "change": pa.array([changes.get(r["variant"], "") for r in records], pa.string()),
        "is_baseline": pa.array([r["variant"] == baseline for r in records], pa.bool_()),
    }
    for name in SUMMARY_FIELDS:
        values = [r["summary"].get(name) for r in records]  # None: a null in JSON, or an older record
        kind, cast = _SUMMARY_TYPES[_SUMMARY_HINTS[name]]
        columns[name] = pa.array([None if v is None else cast(v) for v in values], kind)
    return pa.table(columns)


def _concat(paths: Iterable[Path]) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")


def build_database(
    out: Path,
    folders: Sequence[Path],
    records: Sequence[dict[str, Any]],
    changes: dict[str, str],
    baseline: str,
) -> Path:
    """(Re)build ``experiment.duckdb``: tables copied from the runs' Parquet files, and the views
    ``runs``, ``variants``, ``jobs``, ``costs``, ``timeline``, ``queues``, ``services`` and ``ledger``
    over them."""
    import duckdb

    target = out / DATABASE
    tmp = out / f"{TMP_PREFIX}{DATABASE}"
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        con.register("arrow_rows", _summary_table(records, changes, baseline))
        con.execute("CREATE TABLE run_summary AS SELECT * FROM arrow_rows ORDER BY variant, seed")
        con.unregister("arrow_rows")
        for name in TABLES:
            con.register("arrow_rows", _concat(folder / f"{name}.parquet" for folder in folders))
            con.execute(f"CREATE TABLE {name}_rows AS SELECT * FROM arrow_rows")
            con.unregister("arrow_rows")
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_rows")
        ledgers = [folder / LEDGER_FILE for folder in folders]
        if ledgers and all(path.is_file() for path in ledgers):  # every run of a scenario has one
            con.register("arrow_rows", _concat(ledgers))
            con.execute("CREATE TABLE ledger_rows AS SELECT * FROM arrow_rows")
            con.unregister("arrow_rows")
            con.execute("CREATE VIEW ledger AS SELECT * FROM ledger_rows")
        means = ", ".join(f"avg({m}) AS {m}" for m in SUMMARY_FIELDS)
        con.execute("CREATE VIEW runs AS SELECT * FROM run_summary")
        con.execute(
            "CREATE VIEW variants AS SELECT variant, any_value(change) AS change, "
            f"bool_or(is_baseline) AS is_baseline, count(*) AS seeds, {means} "
            "FROM run_summary GROUP BY variant ORDER BY NOT bool_or(is_baseline), variant"
        )
    finally:
        con.close()
    os.replace(tmp, target)
    Path(str(tmp) + ".wal").unlink(missing_ok=True)
    return target
