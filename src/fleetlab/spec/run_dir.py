"""Read what ``fleetlab simulate --out DIR`` wrote (summary.json, timeline.parquet, ledger.parquet) with
errors that name the file and what is expected there."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.spec.bounded import load_json, read_parquet, read_text_file
from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import note_input

SIMULATE_HINT = "write one with `fleetlab simulate SCENARIO --out DIR`"


def read_run_summary(folder: Path) -> dict[str, Any]:
    """The ``summary`` mapping of one run's summary.json."""
    file = folder / "summary.json"
    if not folder.is_dir():
        raise SpecError(str(folder), [f"not a folder; give a run folder ({SIMULATE_HINT})"])
    note_input(folder)
    text = read_text_file(file, f"no summary.json in this folder; {SIMULATE_HINT}")
    data = load_json(str(file), text)
    if isinstance(data, dict) and "runs" in data and "summary" not in data:
        raise SpecError(
            str(file), ["holds several runs (from `compare --out`); give one policy's sub-folder"]
        )
    summary = data.get("summary") if isinstance(data, dict) else None
    if not isinstance(summary, dict):
        raise SpecError(
            str(file), ["no 'summary' mapping; expected the file `fleetlab simulate --out` writes"]
        )
    return summary


def summary_number(summary: dict[str, Any], key: str, source: str) -> float:
    """A finite number from the summary, or a SpecError naming the field."""
    value = summary.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise SpecError(source, [f"summary.{key}: expected a number, got {value!r}"])
    return float(value)


def read_demand_curve(folder: Path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Step times (s) and allocated GPUs from timeline.parquet."""
    file = folder / "timeline.parquet"
    what = "the run's GPU timeline (t_s, allocated_gpus)"
    table = read_parquet(file, f"not found; {SIMULATE_HINT}", what, columns=["t_s", "allocated_gpus"])
    t = np.asarray(table.column("t_s").to_numpy(zero_copy_only=False), dtype=np.float64)
    gpus = np.asarray(table.column("allocated_gpus").to_numpy(zero_copy_only=False), dtype=np.float64)
    if len(t) == 0:
        raise SpecError(str(file), ["has no rows; the run allocated no GPUs"])
    if np.any(np.diff(t) < 0) or np.any(gpus < 0):
        raise SpecError(str(file), ["t_s must not decrease and allocated_gpus must be >= 0"])
    return t, gpus


LEDGER_NEEDS = (
    "period_start_s",
    "period_end_s",
    "project",
    "category",
    "cost_usd",
    "gpu_cost_usd",
    "host_cost_usd",
)


def read_ledger(folder: Path) -> dict[str, list[Any]]:
    """ledger.parquet of a run folder as columns."""
    file = folder / "ledger.parquet"
    if not folder.is_dir():
        raise SpecError(str(folder), [f"not a folder; give a run folder ({SIMULATE_HINT})"])
    note_input(folder)
    absent = f"not found; {SIMULATE_HINT} (or `fleetlab plan ledger SCENARIO --out DIR`)"
    table = read_parquet(file, absent, "a cost ledger")
    if "bucket" in table.column_names and "category" not in table.column_names:  # the earlier ledger layout
        table = table.rename_columns(["category" if c == "bucket" else c for c in table.column_names])
    missing = [c for c in LEDGER_NEEDS if c not in table.column_names]
    if missing:
        raise SpecError(
            str(file), [f"missing column(s) {', '.join(missing)}; needs {', '.join(LEDGER_NEEDS)}"]
        )
    data: dict[str, list[Any]] = table.to_pydict()
    currencies = set(data.get("currency", ["USD"]))
    if currencies - {"USD"}:
        raise SpecError(str(file), [f"currency {sorted(currencies)}: only USD ledgers are supported"])
    return data
