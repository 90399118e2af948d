"""``fleetlab report [SOURCE] --out DIR``: one decision report from a scenario, an experiment file or a
finished sweep: DIR/report holds index.html and the artefacts; a sweep it has to run goes to DIR/sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fleetlab.cli.common import err_console, fail, out_console, out_path
from fleetlab.cli.experiment import runs_progress
from fleetlab.experiment.plan import Experiment

SourceArg = Annotated[
    str | None,
    typer.Argument(
        help="A scenario (file or built-in name; default: the built-in 'default'), an experiment YAML file "
        "(with variants:), or the output folder of `fleetlab experiment run`."
    ),
]


def report_cmd(
    source: SourceArg = None,
    out: Annotated[
        Path,
        typer.Option("--out", parser=out_path, help="Folder for report/ (and sweep/ when runs are needed)."),
    ] = Path("fleetlab-report"),
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", help="For a scenario: one variant per policy (default: compare's four)."),
    ] = None,
    seeds: Annotated[
        str | None, typer.Option("--seeds", help="For a scenario: a seed count or list (default: 5).")
    ] = None,
    choose: Annotated[
        str | None,
        typer.Option(
            "--choose", help="The variant whose placement and costs to export (default: the verdict's)."
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline", help="A measured baseline folder (baseline.json) to show beside the runs."
        ),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", min=1, help="Worker processes (default: all cores).")
    ] = None,
) -> None:
    """Write the decision report: verdict, measurements with intervals, charts, job classes, the chosen
    variant's placement conditions and its cost sheet (HTML page plus CSV/JSON/YAML files)."""
    from fleetlab.experiment.engines import EngineError
    from fleetlab.experiment.results import MANIFEST, load_results
    from fleetlab.experiment.seeded import SeedsError
    from fleetlab.experiment.sweep import RunFailed
    from fleetlab.report.decision import decision_data, read_baseline
    from fleetlab.report.decision_files import write_decision_report
    from fleetlab.spec.errors import SpecError

    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: exists and is not a directory; give a folder path")
    try:
        given = read_baseline(baseline) if baseline is not None else None
        if source is not None and (Path(source) / MANIFEST).is_file():
            sweep = Path(source)
            experiment = _experiment_of_sweep(sweep)
        else:
            sweep = out / "sweep"
            experiment = _experiment_of(source, policy, seeds, sweep)
            _run(experiment, sweep, jobs)
        results = load_results(sweep)
        data = decision_data(sweep, results, experiment, choose, given)
        written = write_decision_report(sweep, out / "report", data)
    except (SpecError, SeedsError, RunFailed, EngineError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    out_console.print(
        f"decision report: {out / 'report' / 'index.html'} (chosen: {data.recommendation.variant}); "
        f"{len(written)} files in {out / 'report'}",
        highlight=False,
        markup=False,
    )


def _experiment_of_sweep(sweep: Path) -> Experiment:
    """The experiment a sweep folder was run from (its file must still be where the manifest says)."""
    import json

    from fleetlab.experiment.plan import load_experiment
    from fleetlab.experiment.results import MANIFEST
    from fleetlab.spec.errors import SpecError

    try:
        source = json.loads((sweep / MANIFEST).read_text(encoding="utf-8"))["source"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError(
            str(sweep / MANIFEST), [f"unreadable manifest ({type(exc).__name__}); rerun"]
        ) from None
    if not isinstance(source, str) or not Path(source).is_file():
        raise SpecError(
            str(sweep),
            [f"the experiment file {source!r} it was run from is gone; give that file instead of the folder"],
        )
    return load_experiment(source)


def _experiment_of(
    source: str | None, policies: list[str] | None, seeds: str | None, sweep: Path
) -> Experiment:
    """An experiment file as written, or a scenario turned into one variant per policy on paired seeds
    (written as ``sweep/experiment.json``, so the sweep can be reported on again later)."""
    from fleetlab.experiment.plan import experiment_from_data, load_experiment
    from fleetlab.experiment.run import DEFAULT_COMPARE, SCENARIO_POLICY
    from fleetlab.experiment.seeded import parse_seeds
    from fleetlab.experiment.store import write_json_atomic
    from fleetlab.spec.loader import load_scenario, parse_yaml
    from fleetlab.spec.out_folder import check_replaceable, mark

    if source is not None and Path(source).is_file():
        raw = parse_yaml(source, Path(source).read_text(encoding="utf-8"))
        if isinstance(raw, dict) and "variants" in raw:
            return load_experiment(source)
    scenario, label, _ = load_scenario(source)
    base = (
        str(Path(source).resolve())
        if source is not None and Path(source).is_file()
        else (source or "default")
    )
    variants: list[dict[str, Any]] = [
        {"name": p} if p == SCENARIO_POLICY else {"name": p, "policy": p}
        for p in dict.fromkeys(policies or DEFAULT_COMPARE)
    ]
    raw = {
        "name": f"{scenario.name}: placement policies",
        "base": base,
        "variants": variants,
        "seeds": list(parse_seeds(seeds, scenario.seed)),
    }
    experiment_from_data(raw, Path(label))  # check before writing anything
    check_replaceable(sweep.absolute(), option="--out DIR/sweep", in_place=True)
    sweep.mkdir(parents=True, exist_ok=True)
    file = sweep / "experiment.json"
    write_json_atomic(file, raw)  # JSON is YAML: the file reads back with the experiment loader
    mark(sweep)  # fleetlab's own folder (experiment.json included): a rerun may replace it
    return load_experiment(file)


def _run(experiment: Experiment, sweep: Path, jobs: int | None) -> None:
    from fleetlab.experiment.engines import make_engine
    from fleetlab.experiment.sweep import check_workloads, plan_tasks, run_sweep

    if sweep.exists() and not sweep.is_dir():
        raise OSError(f"{sweep} exists and is not a directory")
    check_workloads(experiment)
    progress = runs_progress(err_console)
    with progress:
        bar = progress.add_task("", total=len(plan_tasks(experiment, sweep)))
        run_sweep(experiment, sweep, make_engine("local", jobs, None), lambda key, _: progress.advance(bar))
