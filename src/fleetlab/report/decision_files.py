"""Write the decision report folder: index.html, job-classes.csv, placement/, cost-sheet.csv and
measurements.json, built in a temporary sibling and swapped into place as a whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleetlab.report.compare_seeds import comparison_payload
from fleetlab.report.decision import DecisionData, baseline_figures
from fleetlab.report.decision_html import render_decision_html
from fleetlab.report.verdict_text import verdict_json
from fleetlab.spec.atomic_dir import atomic_dir
from fleetlab.spec.csv_out import dict_rows_text

FILES = ("index.html", "job-classes.csv", "cost-sheet.csv", "measurements.json", "placement")


def measurements(data: DecisionData) -> dict[str, Any]:
    """The measurements artefact: every variant's intervals, censoring counts, the verdict, the choice
    and the measured baseline when one was given."""
    results = data.results
    payload = comparison_payload(results.samples, results.baseline, data.context)
    payload["verdict"] = [verdict_json(v, data.context) for v in data.verdicts]
    return {
        "experiment": results.name,
        "changes": results.changes,
        "runs_finished": results.finished,
        "runs_planned": results.planned,
        "chosen": {"variant": data.recommendation.variant, "reason": data.recommendation.reason},
        "measured_baseline": None if data.baseline is None else baseline_figures(data.baseline),
        **payload,
    }


def write_decision_report(sweep: Path, out: Path, data: DecisionData) -> list[str]:
    """Write every artefact into ``out`` atomically; returns the paths written, relative to ``out``."""
    files = {
        "index.html": render_decision_html(sweep, data),
        "job-classes.csv": dict_rows_text(data.classes),
        "cost-sheet.csv": dict_rows_text(data.costs),
        "measurements.json": json.dumps(measurements(data), indent=2, sort_keys=True, allow_nan=False) + "\n",
    }
    files.update({f"placement/{name}": text for name, text in data.placement.items()})
    with atomic_dir(out) as staging:
        for name, text in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return list(files)
