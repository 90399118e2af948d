"""Write a measured baseline into ``--out``: baseline.parquet (one row per group), baseline.json (the same
rows plus the cluster-wide figures and notes) and baseline.html, staged and renamed into place."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.experiment.output import swap_into_place
from fleetlab.metrics.baseline import Baseline, BaselineRow
from fleetlab.report.baseline_report import baseline_html

_ARROW = {
    "str": pa.string(),
    "int": pa.int64(),
    "bool": pa.bool_(),
    "float": pa.float64(),
    "float | None": pa.float64(),
}
#: The Parquet schema of baseline.parquet, from BaselineRow's fields.
ROW_SCHEMA = pa.schema([pa.field(f.name, _ARROW[str(f.type)]) for f in fields(BaselineRow)])


def baseline_payload(baseline: Baseline) -> dict[str, Any]:
    """What baseline.json holds (and ``--json`` prints)."""
    return {
        "cluster": baseline.cluster,
        "rows": [row.as_dict() for row in baseline.rows],
        "notes": list(baseline.notes),
    }


def dumps(payload: dict[str, Any]) -> str:
    """Stable JSON: sorted keys, no NaN (a NaN would be a bug upstream, so it raises)."""
    return json.dumps(payload, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def write_staged(out: Path, fill: Any) -> None:
    """Call ``fill(folder)`` on a temporary sibling of ``out`` and rename it into place."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        staging.chmod(0o755)
        fill(staging)
        swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_baseline_files(baseline: Baseline, folder: Path, title: str) -> None:
    """The three baseline files into an existing folder."""
    payload = baseline_payload(baseline)
    table = pa.Table.from_pylist(payload["rows"], schema=ROW_SCHEMA)
    pq.write_table(table, folder / "baseline.parquet", compression="zstd")
    (folder / "baseline.json").write_text(dumps(payload), encoding="utf-8")
    (folder / "baseline.html").write_text(baseline_html(payload, title), encoding="utf-8")
