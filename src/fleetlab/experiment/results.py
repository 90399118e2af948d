"""Read a sweep's output folder back: the manifest's runs as per-variant, per-seed metric samples."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetlab.experiment.stats import MetricComparison, compare_variants
from fleetlab.spec.bounded import load_json, read_text_file
from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import note_input

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ExperimentResults:
    """What ``experiment report`` needs."""

    name: str
    baseline: str
    changes: dict[str, str]
    metrics: tuple[str, ...]
    confidence: float
    planned: int
    samples: dict[str, dict[int, dict[str, float]]]

    @property
    def finished(self) -> int:
        """Runs finished so far."""
        return sum(len(by_seed) for by_seed in self.samples.values())

    def comparisons(self, metrics: tuple[str, ...] | None = None) -> list[MetricComparison]:
        """Interval and paired difference of every variant x metric."""
        return compare_variants(self.samples, self.baseline, metrics or self.metrics, self.confidence)


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def load_results(out: Path) -> ExperimentResults:
    """Parse ``manifest.json`` in ``out``; a SpecError when the folder is not a sweep's output."""
    path = out / MANIFEST
    note_input(out)
    if not path.exists():
        raise SpecError(str(out), [f"no {MANIFEST}: not the output folder of `fleetlab experiment run`"])
    manifest = load_json(str(path), read_text_file(path, f"no {MANIFEST}"))
    try:
        samples: dict[str, dict[int, dict[str, float]]] = {v["name"]: {} for v in manifest["variants"]}
        for run in manifest["runs"]:
            summary = run["summary"]
            samples[run["variant"]][int(run["seed"])] = {
                k: _number(v) for k, v in summary.items() if k != "policy"
            }
        return ExperimentResults(
            name=str(manifest["experiment"]),
            baseline=str(manifest["baseline"]),
            changes={v["name"]: v["change"] for v in manifest["variants"]},
            metrics=tuple(manifest["metrics"]),
            confidence=float(manifest["confidence"]),
            planned=int(manifest["planned"]),
            samples=samples,
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise SpecError(
            str(path), [f"unreadable manifest ({type(exc).__name__}: {exc}); rerun the sweep"]
        ) from None
