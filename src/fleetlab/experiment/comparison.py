"""``compare`` and ``report`` from their command-line values to results and a decision context: the seeds
(a count, a list or ``auto``), the minimum effects, the price assumptions and how replicates vary the
workload."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from fleetlab.experiment.decision_context import DecisionContext, compare_context, results_context
from fleetlab.experiment.effects import parse_min_effects
from fleetlab.experiment.plan import Experiment, load_experiment
from fleetlab.experiment.pricing import check_price_pools, parse_prices
from fleetlab.experiment.replicates import Resampling
from fleetlab.experiment.results import ExperimentResults, load_results
from fleetlab.experiment.seeded import (
    SeededComparison,
    auto_note,
    columns_for,
    compare_seeds,
    parse_seed_plan,
    seeds_to_add,
)
from fleetlab.experiment.store import write_json_atomic


def run_compare(
    files: Sequence[str | None],
    policies: Sequence[str] | None,
    seeds: str | None,
    first: int,
    min_effects: Sequence[str] | None = None,
    prices: Sequence[str] | None = None,
    resample: str = "auto",
    progress: Callable[[str, int, int], None] | None = None,
    workers: int | None = None,
) -> tuple[SeededComparison, DecisionContext]:
    """Run the comparison and build its context; raises SpecError / SeedsError / UnknownPolicyError."""
    plan = parse_seed_plan(seeds, first)
    effects = parse_min_effects(min_effects)
    given = parse_prices(prices)
    check_price_pools(files, given)
    spec = columns_for(files, policies, Resampling(resample), given)

    def more(cmp: SeededComparison) -> int:
        assert plan.cap is not None
        context = compare_context(cmp, effects, given)
        return seeds_to_add(context.verdicts(cmp.samples, cmp.baseline), len(cmp.seeds), plan.cap)

    result = compare_seeds(
        files, policies, plan.seeds, progress, workers, spec, more if plan.cap is not None else None
    )
    context = compare_context(result, effects, given)
    if plan.cap is not None:
        found = context.verdicts(result.samples, result.baseline)
        context = replace(context, seeds_note=auto_note(found, len(result.seeds), plan.cap))
    return result, context


def run_report_sweep(
    file: Path,
    sweep: Path,
    run: Callable[[Experiment], None],
    min_effects: Sequence[str] | None = None,
    cap: int | None = None,
) -> tuple[Experiment, ExperimentResults, DecisionContext]:
    """Run the experiment ``file`` into ``sweep`` and read it back with its decision context; with a
    ``cap`` (``--seeds auto``), add paired seeds to the file (fleetlab's own ``sweep/experiment.json``) and
    run again until every decision metric is decided or the cap is reached."""
    effects = parse_min_effects(min_effects)
    experiment = load_experiment(file)
    run(experiment)
    while True:
        results = load_results(sweep)
        context = results_context(results, effects)
        if cap is None:
            return experiment, results, context
        found = context.verdicts(results.samples, results.baseline)
        add = seeds_to_add(found, len(experiment.seeds), cap)
        if add <= 0:
            return (
                experiment,
                results,
                replace(context, seeds_note=auto_note(found, len(experiment.seeds), cap)),
            )
        raw = json.loads(file.read_text(encoding="utf-8"))
        last = max(experiment.seeds)
        raw["seeds"] = [*experiment.seeds, *range(last + 1, last + 1 + add)]
        write_json_atomic(file, raw)
        experiment = load_experiment(file)
        run(experiment)
