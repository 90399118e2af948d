"""Run every variant x seed of an experiment, resumably.

Each finished run is its own folder, renamed into place when complete; ``manifest.json`` lists them and
is rewritten atomically after every run. A rerun of a killed sweep deletes stray temporary folders, keeps
every finished run whose inputs are unchanged, and runs exactly the missing (or stale) ones.

Workers compute a run's tables and hand them back; this process alone writes run folders, the manifest
and the database, so workers need no access to ``--out``. For engines whose workers may not see this
machine's files (Ray), every distinct trace or inline workload is materialised here once and shipped to
the workers through the engine (Ray's object store); generated workloads are drawn by the workers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fleetlab import __version__
from fleetlab.experiment.accounting import accounting_of
from fleetlab.experiment.decision_context import experiment_notes
from fleetlab.experiment.engines import Engine, LocalEngine
from fleetlab.experiment.plan import Experiment, Variant, experiment_from_data, load_experiment
from fleetlab.experiment.replicates import Resampling, replicate
from fleetlab.experiment.results import MANIFEST
from fleetlab.experiment.run import run_one
from fleetlab.experiment.store import (
    RESULTS_SCHEMA_VERSION,
    RunFiles,
    build_database,
    read_record,
    remove_strays,
    run_files,
    run_folder,
    write_json_atomic,
    write_run_files,
)
from fleetlab.model.job_table import JobTable
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import refuse_overlap
from fleetlab.spec.loader import resolve
from fleetlab.spec.out_folder import (
    check_replaceable,
    empty_folder,
    folder_lock,
    is_marked,
    mark,
    refuse_links,
    written_by_fleetlab,
)

#: Lock file inside a sweep's folder while a sweep writes it (DuckDB allows one writer).
SWEEP_LOCK = ".fleetlab.lock"


class RunFailed(Exception):
    """A run that could not be simulated (the message names the variant and seed)."""


@dataclass(frozen=True)
class RunTask:
    """Everything a worker needs for one run (picklable)."""

    variant: str
    seed: int
    fingerprint: str
    change: str
    scenario_data: dict[str, Any]
    base_label: str
    base_dir: str | None
    folder: str
    #: Where the driver materialised the workload (engines that ship it): its source and warnings.
    source: str | None = None
    warnings: tuple[str, ...] = ()
    #: How the seed varies a recorded workload (experiment/replicates.py).
    resampling: Resampling = field(default_factory=Resampling)

    @property
    def key(self) -> str:
        """``variant/seed-N``."""
        return f"{self.variant}/seed-{self.seed}"


def resolve_variant(variant: Variant, seed: int, label: str) -> ResolvedScenario:
    """The variant's scenario with ``seed``, its workload materialised."""
    scenario = Scenario.model_validate({**variant.scenario_data, "seed": seed})
    base = Path(variant.base_dir) if variant.base_dir is not None else None
    return resolve(scenario, f"{label} (variant {variant.name!r})", base)


def execute_run(task: RunTask, jobs: JobTable | None = None) -> RunFiles:
    """Simulate one run and return its record and tables (runs in a worker; the driver writes them).

    ``jobs``: the workload materialised by the driver (with ``task.source`` and ``task.warnings``), so the
    worker reads no trace file; None: the worker materialises it."""
    started = time.perf_counter()
    variant = Variant(task.variant, task.change, "", task.scenario_data, task.base_dir)
    try:
        if jobs is None:
            resolved = resolve_variant(variant, task.seed, task.base_label)
        else:
            scenario = Scenario.model_validate({**task.scenario_data, "seed": task.seed})
            source = task.source if task.source is not None else task.base_label
            resolved = ResolvedScenario(scenario=scenario, jobs=jobs, source=source, warnings=task.warnings)
        run = run_one(replicate(resolved, task.seed, task.resampling))
    except SpecError as exc:
        raise RunFailed(f"variant {task.variant!r}, seed {task.seed}: {exc}") from None
    record = {
        "variant": task.variant,
        "seed": task.seed,
        "fingerprint": task.fingerprint,
        "change": task.change,
        "fleetlab_version": __version__,
        "policy": run.profile.name,
        "wall_s": round(time.perf_counter() - started, 3),
        "accounting": accounting_of(run.result).as_dict(),
    }
    return run_files(run.result, record, run.pools)


def _workload_key(variant: Variant) -> str | None:
    """What a variant's jobs depend on besides the seed (None: generated, so the seed matters)."""
    data = variant.scenario_data
    workload = data.get("workload")
    if not isinstance(workload, dict) or workload.get("generator") is not None:
        return None
    parts = {k: data.get(k) for k in ("workload", "priorityClasses", "priority_classes", "kueue")}
    return json.dumps([parts, variant.base_dir], sort_keys=True, default=str)


def ship_workloads(experiment: Experiment, tasks: list[RunTask]) -> tuple[list[RunTask], list[Any]]:
    """Materialise each distinct non-generated workload once; the tasks get its source and warnings and
    a shared JobTable each (None for generated workloads), which pickles as its columns and templates."""
    by_key: dict[str, JobTable] = {}
    per_variant: dict[str, tuple[JobTable, str, tuple[str, ...]] | None] = {}
    for variant in experiment.variants:
        key = _workload_key(variant)
        if key is None:
            per_variant[variant.name] = None
            continue
        resolved = resolve_variant(variant, experiment.seeds[0], experiment.base_label)
        jobs = by_key.setdefault(key, resolved.jobs)
        per_variant[variant.name] = (jobs, resolved.source, resolved.warnings)
    shipped: list[RunTask] = []
    shared: list[Any] = []
    for task in tasks:
        entry = per_variant.get(task.variant)
        if entry is None:
            shipped.append(task)
            shared.append(None)
        else:
            shipped.append(replace(task, source=entry[1], warnings=entry[2]))
            shared.append(entry[0])
    return shipped, shared


@dataclass
class SweepOutcome:
    """What a sweep did: runs executed now, runs kept from before, strays removed."""

    executed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    removed_strays: int = 0
    database: Path | None = None


def plan_tasks(experiment: Experiment, out: Path) -> list[RunTask]:
    """Every variant x seed, baseline first."""
    return [
        RunTask(
            variant=v.name,
            seed=seed,
            fingerprint=v.fingerprint(seed),
            change=v.change,
            scenario_data=v.scenario_data,
            base_label=experiment.base_label,
            base_dir=v.base_dir,
            folder=str(run_folder(out, v.name, seed)),
            resampling=v.resampling,
        )
        for v in experiment.variants
        for seed in experiment.seeds
    ]


def _manifest(
    experiment: Experiment, records: dict[str, dict[str, Any]], tasks: list[RunTask], notes: dict[str, Any]
) -> Any:
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "experiment": experiment.name,
        "source": experiment.source,
        "baseline": experiment.baseline,
        "variants": [
            {"name": v.name, "change": v.change, "bundle": v.bundle, "differences": list(v.differences)}
            for v in experiment.variants
        ],
        **notes,
        "seeds": list(experiment.seeds),
        "metrics": list(experiment.metrics),
        "confidence": experiment.confidence,
        "planned": len(tasks),
        "finished": len(records),
        "runs": [
            {"key": t.key, "folder": str(Path(t.folder).relative_to(Path(t.folder).parents[2]))}
            | {
                k: records[t.key][k]
                for k in ("variant", "seed", "fingerprint", "summary", "accounting")
                if k in records[t.key]
            }
            for t in tasks
            if t.key in records
        ],
    }


def check_workloads(experiment: Experiment) -> None:
    """Materialise each variant's workload once so trace and generator errors surface before any run."""
    for variant in experiment.variants:
        resolve_variant(variant, experiment.seeds[0], experiment.source)


def run_sweep(
    experiment: Experiment,
    out: Path,
    engine: Engine | None = None,
    on_run: Callable[[str, bool], None] | None = None,
    limit: int | None = None,
    force: bool = False,
) -> SweepOutcome:
    """Run the missing runs (at most ``limit`` of them), keep the rest; rebuild the database when done.

    ``on_run(key, executed)`` is called for every run kept (``False``) and every run finished (``True``).
    The folder must be new, empty or a sweep's own (``force`` empties any other folder first, as
    ``simulate --force`` replaces it); it is locked so a second sweep on it stops at once.
    """
    # The experiment file, its scenarios and traces stay apart from --out (a report's own experiment.json
    # inside its sweep folder aside).
    refuse_overlap(out, own=lambda path: written_by_fleetlab(out, path))
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out / SWEEP_LOCK, out):
        if not is_marked(out) and not (out / MANIFEST).is_file():
            if force:
                empty_folder(out, keep=frozenset({SWEEP_LOCK}))
            # refuses a non-empty folder that is not a sweep's output (our own lock file aside)
            check_replaceable(out, ignore=frozenset({SWEEP_LOCK}), in_place=True)
        refuse_links(out)  # a linked runs/ (or anything else linked) would be written through
        mark(out)
        try:
            return _run_sweep_locked(experiment, out, engine, on_run, limit)
        finally:
            mark(out)  # sealed: everything the sweep wrote is older than the marker


def _run_sweep_locked(
    experiment: Experiment,
    out: Path,
    engine: Engine | None,
    on_run: Callable[[str, bool], None] | None,
    limit: int | None,
) -> SweepOutcome:
    outcome = SweepOutcome(removed_strays=len(remove_strays(out)))
    tasks = plan_tasks(experiment, out)
    records: dict[str, dict[str, Any]] = {}
    todo: list[RunTask] = []
    for task in tasks:
        record = read_record(Path(task.folder))
        if record is not None and record.get("fingerprint") == task.fingerprint:
            records[task.key] = record
            outcome.kept.append(task.key)
            if on_run is not None:
                on_run(task.key, False)
        else:
            todo.append(task)
    if limit is not None:
        todo = todo[: max(0, limit)]
    notes = experiment_notes(experiment)
    write_json_atomic(out / MANIFEST, _manifest(experiment, records, tasks, notes))
    engine = engine or LocalEngine()
    shared: list[Any] | None = None
    if engine.ships_workloads and todo:
        todo, shared = ship_workloads(experiment, todo)
    folders = {t.key: Path(t.folder) for t in todo}
    for files in engine.map_unordered(execute_run, todo, shared):
        key = f"{files.record['variant']}/seed-{files.record['seed']}"
        record = write_run_files(folders[key], files)
        records[key] = record
        outcome.executed.append(key)
        write_json_atomic(out / MANIFEST, _manifest(experiment, records, tasks, notes))
        if on_run is not None:
            on_run(key, True)
    finished = [t for t in tasks if t.key in records]
    if not finished:
        return outcome
    outcome.database = build_database(
        out,
        [Path(t.folder) for t in finished],
        [records[t.key] for t in finished],
        {v.name: v.change for v in experiment.variants},
        experiment.baseline,
    )
    return outcome


def keep_experiment(raw: dict[str, Any], sweep: Path, label: Path, option: str = "--out") -> Experiment:
    """An experiment given as data (not a file): checked, then kept as ``sweep/experiment.json`` (JSON is
    YAML, so it reads back with the experiment loader) in a folder marked as fleetlab's own, so the sweep
    can be resumed and reported on later. ``label`` names it in errors and anchors relative base paths."""
    experiment_from_data(raw, label)  # check before writing anything
    check_replaceable(sweep.absolute(), option=option, in_place=True)  # resumed in place, never replaced
    sweep.mkdir(parents=True, exist_ok=True)
    file = sweep / "experiment.json"
    write_json_atomic(file, raw)
    mark(sweep)  # after experiment.json: the file is fleetlab's own, older than the seal
    return load_experiment(file)
