"""Experiments from Python: variants that each make one change, over paired seeds, resumable — ``fleetlab
experiment run`` — with the results as frames, the best variant on a metric and the verdict as objects
(in the spirit of Ray Tune's ``ResultGrid.get_dataframe()`` / ``get_best_result()``, with intervals)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetlab.api.compare import Samples
from fleetlab.api.core import Scenario
from fleetlab.api.frames import Frame, to_frame
from fleetlab.api.history import Calibration
from fleetlab.experiment.decision_context import results_context
from fleetlab.experiment.engines import make_engine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.results import ExperimentResults, load_results
from fleetlab.experiment.sweep import SweepOutcome, keep_experiment, run_sweep
from fleetlab.spec.errors import SpecError

__all__ = ["ExperimentResult", "load_experiment_result", "run_experiment"]

#: The experiment store's views (docs/commands.md, "Experiments").
VIEWS = ("runs", "variants", "jobs", "costs", "timeline", "queues", "services", "ledger")
BASELINE = "as-is"


@dataclass(frozen=True)
class ExperimentResult(Samples):
    """A sweep's results: its folder, the runs' figures, the verdict, the store's tables as frames."""

    folder: Path = Path()
    results: ExperimentResults | None = field(default=None, repr=False)
    #: What this call did: runs executed now and runs kept from before (None when only read back).
    outcome: SweepOutcome | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The experiment's name."""
        return self.results.name if self.results else ""

    @property
    def changes(self) -> dict[str, str]:
        """Each variant's one change, in words."""
        return dict(self.results.changes) if self.results else {}

    def dataframe(self, view: str = "runs", library: str = "pandas") -> Frame:
        """A view of ``experiment.duckdb`` as a frame: ``runs`` (variant x seed with every summary figure,
        the default), ``variants`` (means), ``jobs``, ``costs``, ``timeline``, ``queues``, ``services``,
        ``ledger``; pandas, polars or ``library="arrow"``. Timeline rows are change points: average them
        with :func:`fleetlab.api.time_weighted` per variant and seed, never with a plain mean."""
        import duckdb

        if view not in VIEWS:
            raise ValueError(f"view {view!r}: one of {', '.join(VIEWS)}")
        store = self.folder / "experiment.duckdb"
        if not store.is_file():
            raise SpecError(str(self.folder), ["no experiment.duckdb yet: no run of the sweep has finished"])
        con = duckdb.connect(str(store), read_only=True)
        try:
            relation: Any = con.sql(f"SELECT * FROM {view}")
            # duckdb 1.x names it arrow(), 2.x to_arrow_table()
            table = relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.arrow()
        finally:
            con.close()
        return to_frame(table, library)

    def __repr__(self) -> str:
        finished = self.results.finished if self.results else 0
        planned = self.results.planned if self.results else 0
        return (
            f"<fleetlab ExperimentResult {self.name!r}: {finished}/{planned} runs, "
            f"baseline {self.baseline!r}, in {self.folder}>"
        )


def load_experiment_result(folder: str | Path, outcome: SweepOutcome | None = None) -> ExperimentResult:
    """The results of a sweep folder (``experiment run --out``), read back from its manifest."""
    path = Path(folder)
    results = load_results(path)
    context = results_context(results)
    return ExperimentResult(
        results.samples, results.baseline, results.confidence, context, path, results, outcome
    )


def _base(base: Scenario | Calibration | str | Path) -> str:
    """The base scenario as an experiment file names it: a built-in name or an absolute file path."""
    if isinstance(base, Calibration):
        if base.scenario_file is None:
            raise ValueError(
                "write the calibration first (calibrate(..., out=FOLDER)): its scenario.yaml is the base"
            )
        return str(base.scenario_file.resolve())
    if isinstance(base, Scenario):
        if base.source is None:
            raise ValueError("this Scenario has no file to name as the experiment's base; write it first")
        base = base.source
    path = Path(base)
    return str(path.resolve()) if path.is_file() else str(base)


def run_experiment(
    experiment: Scenario | Calibration | str | Path,
    *,
    out: str | Path,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    seeds: int | Sequence[int] = 5,
    metrics: Sequence[str] | None = None,
    name: str | None = None,
    jobs: int | None = None,
    engine: str = "local",
    address: str | None = None,
    force: bool = False,
) -> ExperimentResult:
    """Run an experiment into ``out`` (rerun with the same folder to resume) and return its results.

    Either ``experiment`` is an experiment file (docs/commands.md, "Experiments"), or it is the base
    scenario — a file, a built-in name, a loaded :class:`Scenario` or a written :class:`Calibration` — and
    ``variants`` maps each variant's name to its one change as an experiment file writes it
    (``{"pack": {"policy": "most-allocated"}, "more-h100": {"set": {"pools[h100].count": 8}}}``); the
    base itself runs as the baseline ``as-is``. ``seeds`` is a count (from the scenario's seed up) or a
    list; ``engine`` is ``local`` (``jobs`` worker processes) or ``ray``."""
    folder = Path(out)
    if variants is None:
        plan = load_experiment(str(experiment))
    else:
        if not variants:
            raise ValueError("variants: give at least one {name: change}")
        base = _base(experiment)
        raw: dict[str, Any] = {
            "name": name or f"{Path(base).stem if Path(base).is_file() else base}: {', '.join(variants)}",
            "base": base,
            "baseline": BASELINE,
            "variants": [
                {"name": BASELINE},
                *({"name": key, **dict(change)} for key, change in variants.items()),
            ],
            "seeds": seeds_from(base, seeds) if isinstance(seeds, int) else list(seeds),
        }
        if metrics:
            raw["metrics"] = list(metrics)
        plan = keep_experiment(raw, folder, Path.cwd() / "experiment.yaml")
    outcome = run_sweep(plan, folder, make_engine(engine, jobs, address), force=force)
    return load_experiment_result(folder, outcome)


def seeds_from(base: str, count: int) -> dict[str, int]:
    """``count`` seeds from the base scenario's own seed up, as an experiment file's ``seeds`` section."""
    from fleetlab.spec.loader import load_scenario

    first = load_scenario(base)[0].seed
    return {"start": first, "count": count}
