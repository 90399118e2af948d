"""Everything a verdict says besides the samples: its rules, what the replicates varied, which columns are
bundles, the calibration behind the scenario, the price assumptions and the warnings a reader must see.

``compare``, ``experiment report`` and ``report`` each build one and hand it to the same renderers, so the
three say the same things in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetlab.experiment.calibration_context import (
    CalibrationContext,
    context_from_dict,
    knob_warnings,
    read_calibration,
)
from fleetlab.experiment.effects import MinEffect
from fleetlab.experiment.plan import Experiment
from fleetlab.experiment.pricing import PoolPrice, pool_prices, unpriced_warning
from fleetlab.experiment.replicates import Variation, variation
from fleetlab.experiment.results import ExperimentResults
from fleetlab.experiment.scenario_diff import differences, differences_text
from fleetlab.experiment.seeded import SeededComparison
from fleetlab.experiment.stats import Samples
from fleetlab.experiment.verdict import CandidateVerdict, DecisionRules, verdicts


@dataclass(frozen=True)
class DecisionContext:
    """The verdict's rules and what the reader must know to weigh it."""

    rules: DecisionRules = field(default_factory=DecisionRules)
    #: What the replicates vary, in words (experiment/replicates.py); empty when not known.
    varied: str = ""
    #: Column -> its changes, for a column that makes several (a bundle, named so wherever it appears).
    bundles: Mapping[str, str] = field(default_factory=dict)
    #: What the common accounting window is (``horizon`` or ``latest end``).
    window_source: str = ""
    #: Warnings shown with the verdict: several differences between files, unpriced pools, a measured
    #: baseline of another cluster, a variant that changes a fitted value.
    warnings: tuple[str, ...] = ()
    #: The calibration behind the scenario (its banner is shown first), if it came from one.
    calibration: CalibrationContext | None = None
    #: The price assumption of every pool of the first column.
    prices: tuple[PoolPrice, ...] = ()
    #: Column -> what it changes against the first column, in words.
    changes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: How the seeds were chosen when that is worth saying (``--seeds auto``).
    seeds_note: str = ""

    def verdicts(self, samples: Samples, baseline: str) -> list[CandidateVerdict]:
        """The verdict of every column against ``baseline`` under these rules."""
        return verdicts(samples, baseline, rules=self.rules)

    def column_name(self, label: str) -> str:
        """The column's name, with ``(bundle)`` when it makes several changes."""
        return f"{label} (bundle)" if label in self.bundles else label


def first_replicate(samples: Samples) -> Samples:
    """Every column's first replicate only (the first seed of the first column that each column has):
    what the table shows when one replicate is the answer."""
    first = next((s for by_seed in samples.values() for s in by_seed), None)
    return {label: {s: f for s, f in by_seed.items() if s == first} for label, by_seed in samples.items()}


def experiment_notes(experiment: Experiment) -> dict[str, Any]:
    """What a sweep's manifest records besides its runs: what each variant's replicates vary, the
    calibration behind the base scenario, and the price assumptions of the baseline."""
    from fleetlab.model.scenario import Scenario

    replicates = {}
    for v in experiment.variants:
        scenario = Scenario.model_validate({**v.scenario_data, "seed": experiment.seeds[0]})
        jobs = scenario.workload.jobs
        replicates[v.name] = variation(scenario, None if jobs is None else len(jobs), v.resampling).as_dict()
    base = experiment.variant(experiment.baseline)
    raw = _raw_base(experiment)
    calibration = read_calibration(Path(experiment.base_file), raw) if experiment.base_file else None
    baseline = Scenario.model_validate({**base.scenario_data, "seed": experiment.seeds[0]})
    changed = {v.name: list(v.differences) for v in experiment.variants}
    return {
        "replicates": replicates,
        "calibration": None if calibration is None else {
            **calibration.as_dict(), "knob_warnings": knob_warnings(changed, calibration)},
        "prices": [p.as_dict() for p in pool_prices(baseline, experiment.prices)],
    }  # fmt: skip


def _raw_base(experiment: Experiment) -> dict[str, Any] | None:
    """The base scenario file as written (for a ``calibration`` mapping it may carry)."""
    from fleetlab.spec.loader import parse_yaml, read_scenario_text

    if experiment.base_file is None:
        return None
    label, text, _ = read_scenario_text(experiment.base_file)
    return parse_yaml(label, text)


def varied_text(variations: Mapping[str, Variation]) -> tuple[str, bool]:
    """What the replicates of all columns vary, in words, and whether that is nothing but tie-breaks."""
    if not variations:
        return "", False
    texts = {v.text() for v in variations.values()}
    deterministic = all(v.deterministic for v in variations.values())
    if len(texts) == 1:
        return texts.pop(), deterministic
    return "; ".join(f"{label}: {v.text()}" for label, v in variations.items()), deterministic


def _variation(data: Mapping[str, Any]) -> Variation:
    return Variation(
        tuple(map(str, data.get("varies") or ())), tuple(map(str, data.get("fixed") or ())),
        str(data.get("tie_break", "random")),
    )  # fmt: skip


def _price(data: Mapping[str, Any]) -> PoolPrice | None:
    try:
        return PoolPrice(
            str(data["pool"]), data.get("instance_type"), str(data["nodes"]), float(data["per_hour"]),
            str(data["source"]), str(data["date"]), str(data["billing_mode"]),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return None


def results_context(
    results: ExperimentResults, min_effects: Mapping[str, MinEffect] | None = None
) -> DecisionContext:
    """The context of a finished sweep, from what its manifest recorded (older sweeps recorded less: what
    they lack is left unsaid, never guessed)."""
    variations = {name: _variation(data) for name, data in results.replicates.items()}
    varied, deterministic = varied_text(variations)
    calibration = context_from_dict(results.calibration)
    prices = tuple(p for p in (_price(d) for d in results.prices) if p is not None)
    warnings = list((results.calibration or {}).get("knob_warnings") or [])
    unpriced = unpriced_warning(prices)
    warnings += [unpriced] if unpriced else []
    rules = DecisionRules(
        confidence=results.confidence,
        min_effects=dict(min_effects) if min_effects is not None else DecisionRules().min_effects,
        model_errors=dict(calibration.model_errors) if calibration is not None else {},
        deterministic=deterministic,
    )
    return DecisionContext(
        rules, varied, results.bundles, results.window_source, tuple(map(str, warnings)), calibration, prices,
        results.differences,
    )  # fmt: skip


def _raw(file: str | None) -> dict[str, Any]:
    from fleetlab.spec.loader import parse_yaml, read_scenario_text

    label, text, _ = read_scenario_text(file)
    return parse_yaml(label, text)


def compare_context(
    cmp: SeededComparison,
    min_effects: Mapping[str, MinEffect] | None = None,
    prices: Mapping[str, float] | None = None,
) -> DecisionContext:
    """The context of ``compare``: what each column changes (policies, or what differs between the files,
    with a warning when a file differs in more than one thing: such a column is a bundle), what the
    replicates vary, the calibration beside the first file, and the price assumptions."""
    first = cmp.baseline
    varied, deterministic = varied_text(cmp.variations)
    changes: dict[str, tuple[str, ...]] = {}
    bundles: dict[str, str] = {}
    warnings: list[str] = []
    files = set(cmp.files.values())
    raws = {file: _raw(file) for file in files} if len(files) > 1 else {}
    for label in cmp.labels[1:]:
        found = differences(raws[cmp.files[first]], raws[cmp.files[label]]) if raws else []
        policy = cmp.first_runs[cmp.labels.index(label)].profile.name
        base_policy = cmp.first_runs[0].profile.name
        texts = [d.text() for d in found] + (
            [f"policy {base_policy} → {policy}"] if policy != base_policy and not raws else []
        )
        changes[label] = tuple(texts)
        if len(texts) > 1:
            bundles[label] = differences_text(found)
            warnings.append(
                f"{label} differs from {first} in {len(texts)} things ({differences_text(found)}): its "
                "verdict is that of a bundle, not of one change"
            )
    base_file = cmp.files.get(first)
    path = Path(base_file) if base_file is not None and Path(base_file).is_file() else None
    calibration = read_calibration(path, raws.get(base_file) or _raw(base_file)) if path is not None else None
    if calibration is not None:
        warnings += knob_warnings({k: list(v) for k, v in changes.items()}, calibration)
    priced = tuple(pool_prices(cmp.scenarios[first].scenario, prices))
    unpriced = unpriced_warning(priced)
    warnings += [unpriced] if unpriced else []
    rules = DecisionRules(
        min_effects=dict(min_effects) if min_effects is not None else DecisionRules().min_effects,
        model_errors=dict(calibration.model_errors) if calibration is not None else {},
        deterministic=deterministic,
    )
    return DecisionContext(
        rules, varied, bundles, cmp.window_source, tuple(warnings), calibration, priced, changes
    )
