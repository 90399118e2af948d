"""The decision report's artefacts, as data: the job classification table, the chosen variant's placement
conditions, its cost sheet and the measurements with the verdict.

Each artefact is computed once here; decision_html renders them and cli_report writes them as files, so
the page and the folder always hold the same figures.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fleetlab.experiment.decision_context import DecisionContext, results_context
from fleetlab.experiment.output import safe_name
from fleetlab.experiment.plan import Experiment
from fleetlab.experiment.pricing import PoolPrice
from fleetlab.experiment.results import ExperimentResults
from fleetlab.experiment.verdict import CandidateVerdict
from fleetlab.export.placement_rules import affinity_text, selector_text, tolerations_text
from fleetlab.model.job import Job
from fleetlab.model.resources import GPU
from fleetlab.report.measured_column import MeasuredColumn, measured_column
from fleetlab.report.metric_names import metric_label
from fleetlab.spec.bounded import load_json, read_text_file
from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import note_input

MAX_BASELINE_BYTES = 10 * 2**20
MAX_SHAPES = 3


@dataclass(frozen=True)
class Recommendation:
    """The variant the report recommends and why (the baseline when nothing is clearly better)."""

    variant: str
    reason: str


def recommend(found: Sequence[CandidateVerdict], baseline: str) -> Recommendation:
    """The candidate better (beyond its minimum effect, after Holm) on the most decision metrics and worse
    on none, else the baseline; the reason names the metrics as people do, and what is still open."""
    clean = [v for v in found if v.better and not v.worse]
    if not clean:
        return Recommendation(
            baseline,
            "no variant is better on a decision metric (beyond its minimum effect) without being worse on "
            "another; keep the baseline",
        )
    best = max(clean, key=lambda v: len(v.better))  # max keeps the first of equals: column order
    names = ", ".join(metric_label(f.metric) for f in best.better)
    reason = f"better on {names} by more than the minimum effect, worse on none"
    if best.inconclusive:
        reason += f"; still inconclusive on {', '.join(metric_label(f.metric) for f in best.inconclusive)}"
    return Recommendation(best.candidate, reason)


def choose(
    results: ExperimentResults, requested: str | None, context: DecisionContext | None = None
) -> tuple[Recommendation, list[CandidateVerdict]]:
    """The verdicts and the chosen variant: ``requested`` when given (it must be a variant), else the
    recommendation."""
    context = context or results_context(results)
    found = context.verdicts(results.samples, results.baseline)
    auto = recommend(found, results.baseline)
    if requested is None:
        return auto, found
    if requested not in results.samples:
        raise SpecError(
            "--choose", [f"{requested!r} is not a variant; variants: {', '.join(results.samples)}"]
        )
    return Recommendation(requested, f"chosen on the command line (recommended: {auto.variant})"), found


def _shape(job: Job) -> str:
    gpus = job.requests.get(GPU, 0)
    gpu = f"{job.gpu_milli} milli-GPU" if job.gpu_milli else f"{gpus} GPU"
    cpu = job.requests.get("cpu", 0) / 1000
    memory = job.requests.get("memory", 0) / 2**30
    return f"{job.pods}×({gpu}, {cpu:g} cpu, {memory:g}Gi)"


def _duration(seconds: float) -> str:
    from fleetlab.report.metric_names import duration_text

    return duration_text(seconds)


def job_classes(jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """Jobs grouped by class, team, queue, priority, preemptibility, gang and topology need: counts,
    the most common pod shapes (pods × per-pod GPU, CPU, memory) and the runtime median and p95."""
    groups: dict[tuple[Any, ...], list[Job]] = {}
    for job in jobs:
        topology = job.topology_required or (
            f"{job.topology_preferred} (preferred)" if job.topology_preferred else ""
        )
        queue = f"{job.namespace}/{job.queue}" if job.queue else ""
        rules = (tolerations_text(job), selector_text(job.node_selector), affinity_text(job.affinity))
        key = (
            job.job_class.value,
            job.team,
            queue,
            job.priority,
            job.preemptible,
            job.gang,
            topology,
            *rules,
        )
        groups.setdefault(key, []).append(job)
    rows: list[dict[str, Any]] = []
    for key in sorted(groups, key=lambda k: (-len(groups[k]), [str(x) for x in k])):
        members = groups[key]
        shapes = Counter(_shape(j) for j in members).most_common()
        shown = ", ".join(f"{s} ×{n}" for s, n in shapes[:MAX_SHAPES])
        if len(shapes) > MAX_SHAPES:
            shown += f", and {len(shapes) - MAX_SHAPES} more shape(s)"
        runtimes = np.array([j.runtime.default for j in members], dtype=np.float64)
        job_class, team, queue, priority, preemptible, gang, topology, tolerations, selector, affinity = key
        rows.append(
            {
                "class": job_class,
                "team": team,
                "queue": queue,
                "priority": priority,
                "jobs": len(members),
                "pods": int(sum(j.pods for j in members)),
                "gpus": int(sum(j.pods * j.requests.get(GPU, 0) for j in members)),
                "shapes": shown,
                "runtime_p50_s": round(float(np.percentile(runtimes, 50)), 3),
                "runtime_p95_s": round(float(np.percentile(runtimes, 95)), 3),
                "preemptible": preemptible,
                "gang": gang,
                "topology": topology,
                "tolerations": tolerations,
                "node_selector": selector,
                "node_affinity": affinity,
            }
        )
    return rows


def cost_sheet(
    out: Path, variant: str, seeds: Sequence[int], prices: Sequence[PoolPrice]
) -> list[dict[str, Any]]:
    """The variant's ledger totals by team, job class and pool, mean per run over ``seeds``, with each
    pool's price per node-hour, its source and date (experiment/pricing.py), billing mode and currency;
    rows of an unpriced pool say so."""
    import pyarrow as pa

    from fleetlab.cost.ledger import UNALLOCATED
    from fleetlab.spec.bounded import read_parquet

    keys = ["team", "job_class", "pool", "instance_type", "billing_mode", "currency"]
    tables = []
    for seed in seeds:
        path = out / "runs" / safe_name(variant) / f"seed-{seed}" / "ledger.parquet"
        if path.is_file():
            tables.append(read_parquet(path, "not found", "a run's cost ledger", columns=[*keys, "cost_usd"]))
    if not tables:
        return []
    totals = pa.concat_tables(tables).group_by(keys).aggregate([("cost_usd", "sum")]).to_pylist()
    by_pool = {p.pool: p for p in prices}
    rows: list[dict[str, Any]] = []
    for row in sorted(totals, key=lambda r: (-r["cost_usd_sum"], [str(r[k]) for k in keys])):
        price = by_pool.get(row["pool"])
        rows.append(
            {
                "team": row["team"] or UNALLOCATED,
                "class": row["job_class"] or "(no job: idle, boot, down)",
                "pool": row["pool"],
                "instance_type": row["instance_type"],
                "billing_mode": row["billing_mode"],
                "currency": row["currency"],
                "cost_per_run": round(row["cost_usd_sum"] / len(tables), 6),
                "price_per_node_hour": None if price is None else price.per_hour,
                "unpriced": price is not None and price.unpriced,
                "price_source": price.source if price is not None else "data charges (billing rules)",
                "price_date": price.date if price is not None else "not dated (billing rules)",
            }
        )
    return rows


def read_baseline(folder: Path) -> dict[str, Any]:
    """``baseline.json`` of a measured-baseline folder: a JSON object, at most 10 MiB, read strictly (no
    NaN or infinities, bounded depth and integers: ``spec.bounded.load_json``)."""
    path = folder / "baseline.json"
    if not folder.is_dir():
        raise SpecError(str(folder), ["not a folder; give the folder `fleetlab baseline` wrote"])
    note_input(folder)
    text = read_text_file(
        path, "no baseline.json: give the folder `fleetlab baseline` wrote", max_bytes=MAX_BASELINE_BYTES
    )
    data = load_json(str(path), text)
    if not isinstance(data, dict):
        raise SpecError(str(path), [f"top level is a {type(data).__name__}; expected a JSON object"])
    return data


def baseline_figures(baseline: dict[str, Any]) -> dict[str, float]:
    """The measured baseline's numeric figures: from ``fleetlab baseline``'s baseline.json the all-jobs
    row (counts by state beside its averages) and the cluster-wide figures; else a ``summary`` object, else
    the top level."""
    rows = baseline.get("rows")
    sources: list[Any]
    if isinstance(rows, list):
        overall = next((r for r in rows if isinstance(r, dict) and r.get("group_by") == "all"), {})
        sources = [overall, baseline.get("cluster")]
    elif isinstance(baseline.get("summary"), dict):
        sources = [baseline["summary"]]
    else:
        sources = [baseline]
    out: dict[str, float] = {}
    for source in sources:
        if not isinstance(source, dict):
            continue
        for key, value in source.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                out.setdefault(str(key)[:80], float(value))
    return out


@dataclass(frozen=True)
class DecisionData:
    """Everything the decision report shows."""

    results: ExperimentResults
    experiment: Experiment
    recommendation: Recommendation
    verdicts: list[CandidateVerdict]
    classes: list[dict[str, Any]]
    placement: dict[str, str]
    costs: list[dict[str, Any]]
    baseline: dict[str, Any] | None
    #: The rules, replicates, calibration, prices and warnings the verdict was made with.
    context: DecisionContext
    #: The measured baseline as a column beside the variants (None without one of baseline.json's shape).
    measured: MeasuredColumn | None = None
    #: The page's date (YYYY-MM-DD) and where it comes from (``report_date``).
    date: str = ""
    date_source: str = ""


def decision_data(
    out: Path,
    results: ExperimentResults,
    experiment: Experiment,
    requested: str | None,
    baseline: dict[str, Any] | None,
    context: DecisionContext | None = None,
    date: tuple[str, str] = ("", ""),
) -> DecisionData:
    """Compute every artefact for the chosen variant (its first seed's workload for the job classes)."""
    from fleetlab.experiment.pricing import pool_prices
    from fleetlab.experiment.sweep import resolve_variant
    from fleetlab.export.write import render

    context = context or results_context(results)
    chosen, found = choose(results, requested, context)
    variant = experiment.variant(chosen.variant)
    resolved = resolve_variant(variant, experiment.seeds[0], experiment.source)
    seeds = sorted(results.samples.get(chosen.variant, {}))
    prices = pool_prices(resolved.scenario, experiment.prices)
    measured = None
    if baseline is not None:
        base = resolve_variant(
            experiment.variant(experiment.baseline), experiment.seeds[0], experiment.source
        )
        pools = base.scenario.cluster.pools
        windows = [f.get("accounting_window_s", math.nan) for f in results.samples[results.baseline].values()]
        known = [w for w in windows if not math.isnan(w)]
        measured = measured_column(
            baseline,
            (base.scenario.cluster.node_count, sum(p.node_slots for p in pools)),
            len(base.jobs),
            math.fsum(known) / len(known) if known else None,
        )
        if measured is not None and measured.warnings:
            context = replace(context, warnings=(*context.warnings, *measured.warnings))
    return DecisionData(
        results=results,
        experiment=experiment,
        recommendation=chosen,
        verdicts=found,
        classes=job_classes(resolved.jobs),
        placement=render(resolved.scenario),
        costs=cost_sheet(out, chosen.variant, seeds, prices),
        baseline=baseline,
        context=context,
        measured=measured,
        date=date[0],
        date_source=date[1],
    )


def report_date(given: str | None, inputs: Sequence[Path]) -> tuple[str, str]:
    """The page's date and its source, so the same inputs give the same page: ``--date YYYY-MM-DD``,
    else ``SOURCE_DATE_EPOCH`` (reproducible builds), else the modification date (UTC) of the newest
    input file (the sweep's manifest, the experiment file, baseline.json)."""
    import datetime as dt
    import os

    if given is not None:
        try:
            return dt.date.fromisoformat(given).isoformat(), "--date"
        except ValueError:
            raise SpecError("--date", [f"{given[:40]!r} is not a date YYYY-MM-DD"]) from None
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        try:
            stamp = dt.datetime.fromtimestamp(int(epoch), dt.UTC)
        except (ValueError, OverflowError, OSError):
            raise SpecError("SOURCE_DATE_EPOCH", [f"{epoch[:40]!r} is not a Unix time in seconds"]) from None
        return stamp.date().isoformat(), "SOURCE_DATE_EPOCH"
    files = [f for f in inputs if f.is_file()]
    if not files:
        return "unknown", "no input file to date it by"
    newest = max(files, key=lambda f: (f.stat().st_mtime, str(f)))
    stamp = dt.datetime.fromtimestamp(newest.stat().st_mtime, dt.UTC)
    return stamp.date().isoformat(), f"modified date of {newest.name}, the newest input"
