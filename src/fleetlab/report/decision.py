"""The decision report's artefacts, as data: the job classification table, the chosen variant's placement
conditions, its cost sheet and the measurements with the verdict.

Each artefact is computed once here; decision_html renders them and cli_report writes them as files, so
the page and the folder always hold the same figures.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fleetlab.experiment.output import safe_name
from fleetlab.experiment.plan import Experiment
from fleetlab.experiment.results import ExperimentResults
from fleetlab.experiment.verdict import CandidateVerdict, verdicts
from fleetlab.model.cluster import NodePool
from fleetlab.model.job import Job
from fleetlab.model.resources import GPU
from fleetlab.spec.bounded import load_json, read_text_file
from fleetlab.spec.catalog import snapshot_date
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
    """The candidate significantly better on the most decision metrics and worse on none, else the
    baseline."""
    clean = [v for v in found if v.better and not v.worse]
    if not clean:
        return Recommendation(
            baseline,
            "no variant is significantly better on a decision metric without being significantly worse "
            "on another; keep the baseline",
        )
    best = max(clean, key=lambda v: len(v.better))  # max keeps the first of equals: column order
    names = ", ".join(f.metric for f in best.better)
    return Recommendation(best.candidate, f"significantly better on {names}, worse on none")


def choose(
    results: ExperimentResults, requested: str | None
) -> tuple[Recommendation, list[CandidateVerdict]]:
    """The verdicts and the chosen variant: ``requested`` when given (it must be a variant), else the
    recommendation."""
    found = verdicts(results.samples, results.baseline, results.confidence)
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
        key = (job.job_class.value, job.team, queue, job.priority, job.preemptible, job.gang, topology)
        groups.setdefault(key, []).append(job)
    rows: list[dict[str, Any]] = []
    for key in sorted(groups, key=lambda k: (-len(groups[k]), [str(x) for x in k])):
        members = groups[key]
        shapes = Counter(_shape(j) for j in members).most_common()
        shown = ", ".join(f"{s} ×{n}" for s, n in shapes[:MAX_SHAPES])
        if len(shapes) > MAX_SHAPES:
            shown += f", and {len(shapes) - MAX_SHAPES} more shape(s)"
        runtimes = np.array([j.runtime.default for j in members], dtype=np.float64)
        job_class, team, queue, priority, preemptible, gang, topology = key
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
            }
        )
    return rows


def price_source(pool: NodePool) -> tuple[str, str]:
    """(where a pool's price comes from, the date of that price)."""
    if pool.catalog:
        return f"catalog file {pool.catalog}", "as of the file"
    if pool.cloud is not None and pool.instance_type:
        return f"built-in {pool.cloud} catalog (SkyPilot)", snapshot_date()
    return "scenario file (price_per_hour)", "as written"


def cost_sheet(
    out: Path, variant: str, seeds: Sequence[int], pools: Sequence[NodePool]
) -> list[dict[str, Any]]:
    """The variant's ledger totals by team, job class and pool, mean per run over ``seeds``, with each
    pool's price source and date, billing mode and currency."""
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
    by_pool = {p.name: p for p in pools}
    rows: list[dict[str, Any]] = []
    for row in sorted(totals, key=lambda r: (-r["cost_usd_sum"], [str(r[k]) for k in keys])):
        pool = by_pool.get(row["pool"])
        source, date = (
            price_source(pool) if pool is not None else ("data charges (billing rules)", "as written")
        )
        rows.append(
            {
                "team": row["team"] or UNALLOCATED,
                "class": row["job_class"] or "(no job: idle, boot, down)",
                "pool": row["pool"],
                "instance_type": row["instance_type"],
                "billing_mode": row["billing_mode"],
                "currency": row["currency"],
                "cost_per_run": round(row["cost_usd_sum"] / len(tables), 6),
                "price_source": source,
                "price_date": date,
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


def decision_data(
    out: Path,
    results: ExperimentResults,
    experiment: Experiment,
    requested: str | None,
    baseline: dict[str, Any] | None,
) -> DecisionData:
    """Compute every artefact for the chosen variant (its first seed's workload for the job classes)."""
    from fleetlab.experiment.sweep import resolve_variant
    from fleetlab.export.write import render

    chosen, found = choose(results, requested)
    variant = experiment.variant(chosen.variant)
    resolved = resolve_variant(variant, experiment.seeds[0], experiment.source)
    seeds = sorted(results.samples.get(chosen.variant, {}))
    return DecisionData(
        results=results,
        experiment=experiment,
        recommendation=chosen,
        verdicts=found,
        classes=job_classes(resolved.jobs),
        placement=render(resolved.scenario),
        costs=cost_sheet(out, chosen.variant, seeds, resolved.scenario.cluster.pools),
        baseline=baseline,
    )
