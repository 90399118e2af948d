"""Run every variant x seed of an experiment, resumably.

Each finished run is its own folder, renamed into place when complete; ``manifest.json`` lists them and
is rewritten atomically after every run. A rerun of a killed sweep deletes stray temporary folders, keeps
every finished run whose inputs are unchanged, and runs exactly the missing (or stale) ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetlab import __version__
from fleetlab.experiment.engines import Engine, LocalEngine
from fleetlab.experiment.plan import Experiment, Variant
from fleetlab.experiment.results import MANIFEST
from fleetlab.experiment.run import run_one
from fleetlab.experiment.store import (
    build_database,
    read_record,
    remove_strays,
    run_folder,
    write_json_atomic,
    write_run,
)
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import resolve
from fleetlab.spec.out_folder import check_replaceable, folder_lock, is_marked, mark

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

    @property
    def key(self) -> str:
        """``variant/seed-N``."""
        return f"{self.variant}/seed-{self.seed}"


def resolve_variant(variant: Variant, seed: int, label: str) -> ResolvedScenario:
    """The variant's scenario with ``seed``, its workload materialised."""
    scenario = Scenario.model_validate({**variant.scenario_data, "seed": seed})
    base = Path(variant.base_dir) if variant.base_dir is not None else None
    return resolve(scenario, f"{label} (variant {variant.name!r})", base)


def execute_run(task: RunTask) -> dict[str, Any]:
    """Simulate one run and write its folder atomically; returns its record (runs in a worker)."""
    started = time.perf_counter()
    variant = Variant(task.variant, task.change, "", task.scenario_data, task.base_dir)
    try:
        run = run_one(resolve_variant(variant, task.seed, task.base_label))
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
    }
    return write_run(Path(task.folder), run.result, record, run.pools)


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
        )
        for v in experiment.variants
        for seed in experiment.seeds
    ]


def _manifest(experiment: Experiment, records: dict[str, dict[str, Any]], tasks: list[RunTask]) -> Any:
    return {
        "experiment": experiment.name,
        "source": experiment.source,
        "baseline": experiment.baseline,
        "variants": [{"name": v.name, "change": v.change} for v in experiment.variants],
        "seeds": list(experiment.seeds),
        "metrics": list(experiment.metrics),
        "confidence": experiment.confidence,
        "planned": len(tasks),
        "finished": len(records),
        "runs": [
            {"key": t.key, "folder": str(Path(t.folder).relative_to(Path(t.folder).parents[2]))}
            | {k: records[t.key][k] for k in ("variant", "seed", "fingerprint", "summary")}
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
) -> SweepOutcome:
    """Run the missing runs (at most ``limit`` of them), keep the rest; rebuild the database when done.

    ``on_run(key, executed)`` is called for every run kept (``False``) and every run finished (``True``).
    The folder must be new, empty or a sweep's own; it is locked so a second sweep on it stops at once.
    """
    out.mkdir(parents=True, exist_ok=True)
    if not is_marked(out) and not (out / MANIFEST).is_file():
        check_replaceable(out)  # refuses a non-empty folder that is not a sweep's output
    with folder_lock(out / SWEEP_LOCK, out):
        mark(out)
        return _run_sweep_locked(experiment, out, engine, on_run, limit)


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
    write_json_atomic(out / MANIFEST, _manifest(experiment, records, tasks))
    for record in (engine or LocalEngine()).map_unordered(execute_run, todo):
        key = f"{record['variant']}/seed-{record['seed']}"
        records[key] = record
        outcome.executed.append(key)
        write_json_atomic(out / MANIFEST, _manifest(experiment, records, tasks))
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
