"""``fleetlab report [SOURCE] --out DIR``: one decision report from a scenario, an experiment file or a
finished sweep: DIR/report holds index.html and the artefacts; a sweep it has to run goes to DIR/sweep."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fleetlab.cli.common import MinEffectOpt, PriceOpt, ResampleOpt, err_console, fail, out_console, out_path
from fleetlab.cli.experiment import runs_progress

if TYPE_CHECKING:
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
        str | None,
        typer.Option("--seeds", help="For a scenario: a seed count or list, or auto[:N] (default: 5)."),
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
    min_effect: MinEffectOpt = None,
    price: PriceOpt = None,
    resample: ResampleOpt = "auto",
    date: Annotated[
        str | None,
        typer.Option(
            "--date",
            help="The page's date, YYYY-MM-DD (default: SOURCE_DATE_EPOCH, else the newest input file's).",
        ),
    ] = None,
) -> None:
    """Write the decision report: verdict, measurements with intervals, charts, job classes, the chosen
    variant's placement conditions and its cost sheet (HTML page plus CSV/JSON/YAML files)."""
    from fleetlab.experiment.comparison import run_report_sweep
    from fleetlab.experiment.engines import EngineError
    from fleetlab.experiment.results import MANIFEST
    from fleetlab.experiment.seeded import SeedsError
    from fleetlab.experiment.sweep import RunFailed
    from fleetlab.report.decision import decision_data, read_baseline, report_date
    from fleetlab.report.decision_files import write_decision_report
    from fleetlab.report.verdict_text import print_verdicts
    from fleetlab.spec.errors import SpecError

    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: exists and is not a directory; give a folder path")
    try:
        given = read_baseline(baseline) if baseline is not None else None
        if source is not None and (Path(source) / MANIFEST).is_file():
            sweep = Path(source)
            file, cap = _experiment_file_of_sweep(sweep), None
            experiment, results, context = run_report_sweep(file, sweep, lambda _: None, min_effect)
        else:
            sweep = out / "sweep"
            file, cap = _experiment_of(source, policy, seeds, sweep, price, resample)
            experiment, results, context = run_report_sweep(
                file, sweep, lambda e: _run(e, sweep, jobs), min_effect, cap
            )
        inputs = [sweep / MANIFEST, Path(experiment.source)]
        inputs += [baseline / "baseline.json"] if baseline is not None else []
        data = decision_data(sweep, results, experiment, choose, given, context, report_date(date, inputs))
        written = write_decision_report(sweep, out / "report", data)
    except (SpecError, SeedsError, RunFailed, EngineError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    print_verdicts(out_console, results.samples, results.baseline, data.context)
    rec = data.recommendation
    out_console.print(f"Recommended: {rec.variant} — {rec.reason}.", highlight=False, markup=False)
    out_console.print(
        f"decision report: {out / 'report' / 'index.html'} (chosen: {rec.variant}); "
        f"{len(written)} files in {out / 'report'}",
        highlight=False,
        markup=False,
    )


def _experiment_file_of_sweep(sweep: Path) -> Path:
    """The experiment file a sweep folder was run from (it must still be where the manifest says)."""
    import json

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
    return Path(source)


def _experiment_of(
    source: str | None,
    policies: list[str] | None,
    seeds: str | None,
    sweep: Path,
    prices: list[str] | None = None,
    resample: str = "auto",
) -> tuple[Path, int | None]:
    """An experiment file as written, or a scenario turned into one variant per policy on paired seeds
    (written as ``sweep/experiment.json``, so the sweep can be reported on again later); with the
    ``--seeds auto`` cap (None otherwise)."""
    from fleetlab.experiment.pricing import parse_prices
    from fleetlab.experiment.replicates import Resampling
    from fleetlab.experiment.seeded import parse_seed_plan
    from fleetlab.experiment.sweep import keep_experiment
    from fleetlab.model.policy_names import DEFAULT_COMPARE, SCENARIO_POLICY
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.loader import load_scenario, parse_yaml

    if source is not None and Path(source).is_dir():
        raise SpecError(source, [_folder_hint(Path(source))])
    if source is not None and Path(source).is_file():
        raw = parse_yaml(source, Path(source).read_text(encoding="utf-8"))
        if isinstance(raw, dict) and "variants" in raw:
            if seeds is not None or prices or resample != "auto":
                raise SpecError(
                    source, ["--seeds, --price and --resample apply to a scenario; an experiment file states "
                             "its seeds, prices and replicates itself"],
                )  # fmt: skip
            return Path(source), None
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
    plan = parse_seed_plan(seeds, scenario.seed)
    Resampling(resample)  # a bad --resample is refused before anything is written
    raw = {
        "name": f"Placement policies on {scenario.name}",
        "base": base,
        "variants": variants,
        "seeds": list(plan.seeds),
        "replicates": {"resample": resample},
        "prices": parse_prices(prices),
    }
    keep_experiment(raw, sweep, Path(label), option="--out DIR/sweep")
    return sweep / "experiment.json", plan.cap


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


def _folder_hint(folder: Path) -> str:
    """What ``report`` takes, said for a folder that is not a sweep (most often a baseline or history)."""
    takes = (
        "`report` takes a scenario file or built-in name, an experiment file, or the output folder of "
        "`fleetlab experiment run` (it holds manifest.json)"
    )
    if (folder / "baseline.json").is_file():
        return (
            f"is a measured baseline folder (baseline.json); {takes}. A baseline goes beside the runs with "
            f"--baseline: e.g. `fleetlab report calibration/scenario.yaml --out decision --baseline {folder}`"
        )
    if (folder / "history.json").is_file():
        return (
            f"is a history folder (history.json); {takes}. Measure it with `fleetlab baseline {folder} --out "
            f"baseline/`, replay it with `fleetlab calibrate {folder} --out calibration/`, then report on "
            "calibration/scenario.yaml with --baseline baseline/"
        )
    return f"is a folder without manifest.json; {takes}"
