"""``fleetlab experiment run|report``: sweeps of variants x seeds, resumable, with paired statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from fleetlab.cli.common import (
    JsonOpt,
    MinEffectOpt,
    Output,
    OutputOpt,
    emit,
    err_console,
    fail,
    out_console,
    out_path,
    output_format,
)

experiment_app = typer.Typer(
    help="Experiments: variants that each make one change, run over several seeds, compared with "
    "confidence intervals.",
    no_args_is_help=True,
)


@experiment_app.command("run")
def run_cmd(
    file: Annotated[Path, typer.Argument(help="Experiment YAML file (see examples/experiments/).")],
    out: Annotated[
        Path,
        typer.Option("--out", parser=out_path, help="Output folder; rerun with the same folder to resume."),
    ],
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            min=1,
            help="Worker processes (default: all cores); with --engine ray, runs in flight at once "
            "(default: as many as the cluster schedules).",
        ),
    ] = None,
    engine: Annotated[str, typer.Option("--engine", help="local (processes) or ray.")] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Ray cluster address with --engine ray: ray://HOST:10001 (Ray Client) or HOST:6379 on a "
            "cluster node; default: the RAY_ADDRESS environment variable, else a Ray started here.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Empty --out first if it is a non-empty folder fleetlab did not write (a sweep's own "
            "folder is resumed, never emptied).",
        ),
    ] = False,
) -> None:
    """Run every variant x seed not yet finished in --out, then print the comparison."""

    from fleetlab.experiment.engines import EngineError, make_engine
    from fleetlab.experiment.plan import load_experiment
    from fleetlab.experiment.sweep import RunFailed, check_workloads, plan_tasks, run_sweep
    from fleetlab.spec.errors import SpecError

    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: exists and is not a directory; give a folder path")
    try:
        experiment = load_experiment(file)
        check_workloads(experiment)
        runner = make_engine(engine, jobs, address)
        total = len(plan_tasks(experiment, out))
        progress = runs_progress(err_console)
        with progress:
            bar = progress.add_task("", total=total)

            def advance(key: str, executed: bool) -> None:
                progress.update(bar, advance=1, description=key if executed else "")

            outcome = run_sweep(experiment, out, runner, advance, force=force)
    except (SpecError, EngineError, RunFailed) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write results: {exc.strerror or exc}") from None
    err_console.print(
        f"{len(outcome.executed)} run(s) executed, {len(outcome.kept)} already finished"
        + (
            f", {outcome.removed_strays} leftover temporary folder(s) removed"
            if outcome.removed_strays
            else ""
        )
        + f"; results in {out}",
        highlight=False,
    )
    _print_report(out)


@experiment_app.command("report")
def report_cmd(
    folder: Annotated[Path, typer.Argument(help="Output folder of `fleetlab experiment run`.")],
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report to this file.")
    ] = None,
    png: Annotated[
        Path | None,
        typer.Option("--png", help="Also write every chart as a PNG into this folder (needs fleetlab[png])."),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    min_effect: MinEffectOpt = None,
) -> None:
    """The verdict on each variant against the baseline, then each metric per variant: interval over
    seeds and paired difference to the baseline."""
    from fleetlab.spec.errors import SpecError

    _print_report(folder, output_format(json_out, output), min_effect)
    if png is not None:
        _write_pngs(folder, png)
    if html is not None:
        from fleetlab.report.experiment_html import write_html_report

        try:
            write_html_report(folder, html)
        except SpecError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(f"--html {html}: cannot write: {exc.strerror or exc}") from None
        out_console.print(f"HTML report written to {html}", highlight=False, markup=False)


def _write_pngs(folder: Path, target: Path) -> None:
    from fleetlab.experiment.png_export import PngUnavailable
    from fleetlab.report.experiment_png import write_png_report
    from fleetlab.spec.errors import SpecError

    if target.exists() and not target.is_dir():
        raise fail(f"--png {target}: exists and is not a directory; give a folder path")
    try:
        files, skipped = write_png_report(folder, target)
    except SpecError as exc:
        raise fail(str(exc)) from None
    except PngUnavailable as exc:
        raise fail(f"--png: {exc}") from None
    except OSError as exc:
        raise fail(f"--png {target}: cannot write: {exc.strerror or exc}") from None
    for note in skipped:
        err_console.print(f"no chart: {note}", highlight=False, markup=False)
    out_console.print(f"{len(files)} PNG chart(s) written to {target}", highlight=False, markup=False)


def _print_report(folder: Path, fmt: Output = Output.TABLE, min_effect: list[str] | None = None) -> None:
    import json

    from fleetlab.experiment.decision_context import results_context
    from fleetlab.experiment.effects import parse_min_effects
    from fleetlab.experiment.results import load_results
    from fleetlab.report.compare_seeds import comparison_payload
    from fleetlab.report.experiment_table import print_experiment
    from fleetlab.report.verdict_text import print_verdicts
    from fleetlab.spec.errors import SpecError

    try:
        results = load_results(folder)
        context = results_context(results, parse_min_effects(min_effect))
    except SpecError as exc:
        raise fail(str(exc)) from None
    title = f"{results.name}: {results.finished}/{results.planned} runs, baseline {results.baseline}"
    if results.finished < results.planned:
        err_console.print(
            f"warning: only {results.finished} of {results.planned} runs finished; "
            "rerun `fleetlab experiment run` with the same --out to complete the sweep",
            highlight=False,
        )
    if fmt in (Output.JSON, Output.YAML):
        payload = {
            "title": title,
            "experiment": results.name,
            "changes": results.changes,
            "runs_finished": results.finished,
            "runs_planned": results.planned,
            **comparison_payload(results.samples, results.baseline, context),
        }
        emit(fmt, payload, lambda: out_console.print_json(json.dumps(payload, allow_nan=False)))
        return
    print_verdicts(out_console, results.samples, results.baseline, context)
    print_experiment(out_console, results.comparisons(), results.changes, title, results.confidence)


def runs_progress(console: Console) -> Progress:
    """The progress bar over a sweep's runs: done of total, elapsed time; hidden when not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
