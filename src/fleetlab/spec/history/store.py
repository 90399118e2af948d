"""The folder ``fleetlab import`` writes and ``baseline``/``calibrate`` read: ``jobs.parquet``,
``nodes.parquet``, ``bill.parquet`` (the model.history schemas) and ``history.json`` (epoch, end, sources,
skipped counts by reason, row counts by state). Written atomically through :mod:`.folder`, which also reads
it back with every column and the record checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.model.history import JOB_STATES, History
from fleetlab.spec.atomic_dir import atomic_dir
from fleetlab.spec.bounded import load_json, read_text_file
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.folder import read_history_folder, write_history_folder
from fleetlab.spec.history.job_columns import returned_memory

FORMAT = "fleetlab-history/1"
IMPORT_HINT = "write one with `fleetlab import SOURCE... --out DIR`"


def jobs_by_state(history: History) -> dict[str, int]:
    """Job counts for every state in JOB_STATES (zeros included), in that order."""
    counted = pc.value_counts(history.jobs.column("state")).to_pylist()
    counts = {item["values"]: item["counts"] for item in counted}
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
        "jobs_wait_unmeasured": wait_unmeasured(history),
        "node_down_windows": history.node_down.num_rows,
        "policy": history.policy.counts(),
        "notes": list(history.notes),
    }


def wait_unmeasured(history: History) -> int:
    """Jobs that ran (not pending, not cancelled before starting) with no recorded start instant: their
    wait is not measured (SWF logs without wait times, summaries that give only a duration). The
    baseline's ``wait_unmeasured`` counts the same jobs."""
    jobs = history.jobs
    if not jobs.num_rows:
        return 0
    ran = pc.invert(pc.is_in(jobs.column("state"), value_set=pa.array(["pending", "cancelled"])))
    unmeasured = pc.and_(pc.is_null(jobs.column("scheduled_s")), ran)  # in Arrow: no Python object per job
    return int(pc.sum(unmeasured.cast("int64")).as_py() or 0)


def write_history(history: History, out: Path) -> None:
    """Write the history folder at ``out`` atomically (the old folder stays whole until the new one is),
    with the richer history.json of :func:`history_meta`."""
    with atomic_dir(out) as staging, returned_memory():
        write_history_folder(history, staging)
        text = json.dumps(history_meta(history), indent=2, sort_keys=True, allow_nan=False)
        (staging / "history.json").write_text(text + "\n", encoding="utf-8")


def load_history(folder: Path) -> History:
    """The History in a history folder (see :mod:`.folder`: every column type-checked, the record checked
    by :func:`.checks.check_history`), refusing a history.json that names another format."""
    history = read_history_folder(folder)
    meta_file = folder / "history.json"
    meta = load_json(str(meta_file), read_text_file(meta_file, "no history.json in this folder"))
    if meta.get("format", FORMAT) != FORMAT:
        raise SpecError(str(meta_file), [f"'format' is not {FORMAT!r}; {IMPORT_HINT}"])
    return history
