"""Read a sweep's output folder back: the manifest's runs as per-variant, per-seed metric samples."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetlab.experiment.accounting import Accounting, accounting_from, put_on_window
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
    #: What each variant's replicates varied (experiment/replicates.py), as recorded by the sweep.
    replicates: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Variant -> its changes, for variants marked ``bundle`` in the experiment file.
    bundles: dict[str, str] = field(default_factory=dict)
    #: Variant -> what it changes against the base scenario, in words (scenario_diff).
    differences: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: The calibration behind the base scenario (experiment/calibration_context.py), as recorded.
    calibration: dict[str, Any] | None = None
    #: ``horizon`` or ``latest end``: what the common accounting window is ("" for runs without one).
    window_source: str = ""
    #: The baseline's price assumptions per pool (experiment/pricing.py ``PoolPrice.as_dict``).
    prices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> int:
        """Runs finished so far."""
        return sum(len(by_seed) for by_seed in self.samples.values())

    def comparisons(self, metrics: tuple[str, ...] | None = None) -> list[MetricComparison]:
        """Interval and paired difference of every variant x metric (by default the experiment's metrics,
        with the common-window cost per job after the run's own when the runs have one)."""
        if metrics is None:
            window = "cost_per_completed_job_window"
            has = any(window in f for runs in self.samples.values() for f in runs.values())
            metrics = self.metrics + ((window,) if has and window not in self.metrics else ())
        return compare_variants(self.samples, self.baseline, metrics, self.confidence)


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
        accountings: dict[int, dict[str, Accounting]] = {}
        for run in manifest["runs"]:
            summary = run["summary"]
            seed = int(run["seed"])
            samples[run["variant"]][seed] = {k: _number(v) for k, v in summary.items() if k != "policy"}
            accounting = accounting_from(run.get("accounting"))
            if accounting is not None:
                accountings.setdefault(seed, {})[run["variant"]] = accounting
        window_source = _common_windows(samples, accountings)
        return ExperimentResults(
            name=str(manifest["experiment"]),
            baseline=str(manifest["baseline"]),
            changes={v["name"]: v["change"] for v in manifest["variants"]},
            metrics=tuple(manifest["metrics"]),
            confidence=float(manifest["confidence"]),
            planned=int(manifest["planned"]),
            samples=samples,
            replicates={
                str(k): v for k, v in (manifest.get("replicates") or {}).items() if isinstance(v, dict)
            },
            bundles={v["name"]: v["change"] for v in manifest["variants"] if v.get("bundle")},
            differences={
                v["name"]: tuple(map(str, v.get("differences") or [])) for v in manifest["variants"]
            },
            calibration=manifest.get("calibration")
            if isinstance(manifest.get("calibration"), dict)
            else None,
            window_source=window_source,
            prices=[p for p in manifest.get("prices") or [] if isinstance(p, dict)],
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise SpecError(
            str(path), [f"unreadable manifest ({type(exc).__name__}: {exc}); rerun the sweep"]
        ) from None


def _common_windows(
    samples: dict[str, dict[int, dict[str, float]]], accountings: dict[int, dict[str, Accounting]]
) -> str:
    """Put each seed's runs on that seed's common window (only seeds whose every variant finished and
    recorded an accounting: a window over some of them would move when the rest finish)."""
    sources = set()
    for seed, by_variant in accountings.items():
        if set(by_variant) != set(samples):
            continue
        figures = {variant: samples[variant][seed] for variant in by_variant}
        sources.add(put_on_window(figures, by_variant))
    return " / ".join(sorted(sources))
