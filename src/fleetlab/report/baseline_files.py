"""Write a measured baseline into ``--out``: baseline.parquet (one row per group), baseline.json (the same
rows plus the cluster-wide figures and notes) and baseline.html, staged and renamed into place."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.metrics.baseline import Baseline, BaselineRow
from fleetlab.report.baseline_report import baseline_html, calibration_html
from fleetlab.spec.out_folder import staged_output

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
    """Call ``fill(folder)`` on a marked temporary sibling of ``out`` and rename it into place (the one
    output writer, spec.out_folder: a rerun replaces it, a folder fleetlab did not write is refused)."""
    with staged_output(out) as staging:
        fill(staging)


def write_baseline_files(baseline: Baseline, folder: Path, title: str) -> None:
    """The three baseline files into an existing folder."""
    payload = baseline_payload(baseline)
    table = pa.Table.from_pylist(payload["rows"], schema=ROW_SCHEMA)
    pq.write_table(table, folder / "baseline.parquet", compression="zstd")
    (folder / "baseline.json").write_text(dumps(payload), encoding="utf-8")
    (folder / "baseline.html").write_text(baseline_html(payload, title), encoding="utf-8")


def calibration_payload(calibration: Any) -> dict[str, Any]:
    """What calibration.json holds: why jobs waited, verdict, fitted knobs and the search, the policy, the
    fit rows, the validation (later part) with its own verdict, flags, disagreements, notes."""
    from fleetlab.experiment.calibration_seeds import seed_summary
    from fleetlab.report.calibration_text import cause_lines, policy_lines, seed_lines

    replays = calibration.seed_replays
    summary = seed_summary(replays, "fit") + seed_summary(replays, "validation") if replays else []

    causes = calibration.wait_causes.as_dict() if calibration.wait_causes is not None else None
    policy = calibration.policy.describe() if calibration.policy is not None else {"source": "none"}
    validation = calibration.validation
    return {
        "verdict": calibration.verdict,
        "why": (cause_lines(causes, policy) if causes else []) + policy_lines(policy),
        "wait_causes": causes,
        "fitted": {k: getattr(calibration.knobs, k) for k in calibration.fitted},
        "not_fitted": _not_fitted(calibration),
        "search": calibration.fit,
        "fit_scoring": None if calibration.fit_scoring is None else calibration.fit_scoring.as_dict(),
        "policy": policy,
        "fit_until_s": calibration.fit_until_s,
        "rows": [row.as_dict() for row in calibration.rows],
        "validation": None
        if validation is None
        else {
            "verdict": validation.verdict,
            "jobs": validation.jobs,
            "rows": [r.as_dict() for r in validation.rows],
        },
        "seed_verdict": seed_lines(summary),
        "seed_summary": summary,
        "seeds": [r.as_dict() for r in calibration.seed_replays],
        "flags": list(calibration.flags),
        "disagreements": calibration.disagreements,
        "notes": list(calibration.notes),
    }


def _not_fitted(calibration: Any) -> dict[str, str]:
    out = {
        "image_pull_bandwidth": "histories carry no image names or sizes; the first-pull time is fitted "
        "instead (image_pull_s) when pulls were measured",
    }
    if "image_pull_s" not in calibration.fitted:
        out["image_pull_s"] = (
            "--no-fit: pulls not modelled"
            if "scheduling_latency_s" not in calibration.fitted
            else "the history measured no image pull longer than 0"
        ) + "; each job's measured preparation is replayed whole"
    if "scheduling_latency_s" not in calibration.fitted:
        out["scheduling_latency_s"] = "--no-fit: kept at 0"
    if "node_boot_time_s" not in calibration.fitted:
        out["node_boot_time_s"] = "no node joined during the history, so no replayed node boots"
    return out


def write_calibration_files(calibration: Any, folder: Path, title: str) -> None:
    """calibration.json, calibration.parquet (the rows), calibration.html, scenario.yaml (the calibrated
    scenario) and the replay's own result files under ``replay/``."""
    from fleetlab.experiment.history_scenario import scenario_yaml
    from fleetlab.experiment.output import write_run_files

    payload = calibration_payload(calibration)
    later = (payload["validation"] or {}).get("rows", [])
    rows = [{**r, "part": "fit"} for r in payload["rows"]] + [{**r, "part": "validation"} for r in later]
    pq.write_table(pa.Table.from_pylist(rows, schema=CALIBRATION_SCHEMA), folder / "calibration.parquet")
    (folder / "calibration.json").write_text(dumps(payload), encoding="utf-8")
    (folder / "calibration.html").write_text(calibration_html(payload, title), encoding="utf-8")
    with (folder / "scenario.yaml").open("w", encoding="utf-8") as out:
        out.write(
            "# Calibrated replay of a measured history, written by `fleetlab calibrate`; use it as the base\n"
            "# of `fleetlab experiment` (see docs/calibration.md).\n"
        )
        for piece in scenario_yaml(calibration.scenario):
            out.write(piece)
    write_run_files(calibration.run, folder / "replay")


CALIBRATION_SCHEMA = pa.schema(
    [
        pa.field("job_class", pa.string()),
        pa.field("metric", pa.string()),
        pa.field("measured", pa.float64()),
        pa.field("simulated", pa.float64()),
        pa.field("error", pa.float64()),
        pa.field("error_kind", pa.string()),
        pa.field("tolerance", pa.float64()),
        pa.field("within", pa.bool_()),
        pa.field("measured_lower_bound", pa.bool_()),
        pa.field("simulated_lower_bound", pa.bool_()),
        pa.field("part", pa.string()),  # fit | validation
    ]
)
