"""The ``fleetlab`` command: thin wrappers that parse arguments, call one function, render with rich."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from fleetlab import __version__, cli_snapshot
from fleetlab.cli_baseline import baseline_cmd, calibrate_cmd
from fleetlab.cli_check import check_cmd
from fleetlab.cli_cost import cost_app
from fleetlab.cli_cost_plan import plan_app, register_cost_aliases
from fleetlab.cli_diagnose import diagnose_cmd
from fleetlab.cli_experiment import experiment_app
from fleetlab.cli_export import export_cmd
from fleetlab.cli_fgd import fgd_experiment
from fleetlab.cli_history import import_cmd
from fleetlab.cli_lint import lint_cmd
from fleetlab.cli_options import MinEffectOpt, PriceOpt, ResampleOpt
from fleetlab.cli_profile import register_profile
from fleetlab.cli_report import report_cmd
from fleetlab.cli_schema import schema_cmd
from fleetlab.experiment.run import DEFAULT_COMPARE, SCENARIO_POLICY, Run, run_one
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.profiles import PRESETS, SHARE_POLICY_DESCRIPTIONS, UnknownPolicyError
from fleetlab.report.strict_json import strict_dumps
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import builtin_scenarios, load

app = typer.Typer(
    help="fleetlab: replay GPU workloads on a model of your Kubernetes cluster, one policy change at a time.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(experiment_app, name="experiment")
app.command(name="diagnose")(diagnose_cmd)
app.command(name="import")(import_cmd)
app.command(name="snapshot")(cli_snapshot.snapshot_cmd)
app.command(name="lint")(lint_cmd)
app.command(name="check")(check_cmd)
app.command(name="export")(export_cmd)
app.command("fgd-experiment")(fgd_experiment)
app.command(name="report")(report_cmd)
app.command(name="schema")(schema_cmd)
app.command(name="baseline")(baseline_cmd)
app.command(name="calibrate")(calibrate_cmd)
app.add_typer(cost_app, name="cost")
app.add_typer(plan_app, name="plan")
register_cost_aliases(cost_app)
register_profile(cost_app, plan_app)


def _console(stderr: bool = False) -> Console:
    """A console that does not wrap tables at 80 columns when output goes to a file or a pipe."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=200)


out_console = _console()
err_console = _console(stderr=True)

ScenarioArg = Annotated[
    str | None,
    typer.Argument(help="Scenario YAML file, or a built-in scenario name (default: the built-in 'default')."),
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Override the scenario's seed.")]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", help="Write jobs/nodes/timeline Parquet and summary.json here (atomically)."),
]


ForceOpt = Annotated[
    bool,
    typer.Option("--force", help="Replace --out even if it is a non-empty folder fleetlab did not write."),
]


def _check_out(out: Path | None, force: bool = False) -> None:
    """Refuse an --out that can never be written (or must not be replaced) before spending time on the run."""
    from fleetlab.spec.out_folder import check_replaceable

    if out is not None:
        try:
            check_replaceable(out.absolute(), force=force)
        except SpecError as exc:
            raise _fail(str(exc)) from None


def _write(
    runs: list[Run], out: Path, single: bool, extra: dict[str, Any] | None = None, force: bool = False
) -> None:
    from fleetlab.experiment.output import write_results

    try:
        write_results(runs, out, single=single, extra=extra, force=force)
    except SpecError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"--out {out}: cannot write results: {exc.strerror or exc}") from None


def _fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(
        f"[bold red]error:[/bold red] {escape(message)}", highlight=False, markup=True, soft_wrap=True
    )
    return typer.Exit(code)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log diagnostics (engines, trace cache) to stderr.")
    ] = False,
) -> None:
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    if version:
        out_console.print(f"fleetlab {__version__}")
        raise typer.Exit(0)


@app.command()
def simulate(
    scenario: ScenarioArg = None,
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help=f"'{SCENARIO_POLICY}' (the file's scheduler section) or a preset (see 'policies').",
        ),
    ] = SCENARIO_POLICY,
    seed: SeedOpt = None,
    out: OutOpt = None,
    force: ForceOpt = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON instead of a table.")
    ] = False,
    from_snapshot: cli_snapshot.FromSnapshotOpt = None,
    add_nodes: cli_snapshot.AddNodesOpt = None,
    snapshot_runtime: cli_snapshot.SnapshotRuntimeOpt = "1h",
) -> None:
    """Run one scenario under one policy and print where time and money went."""
    from fleetlab.metrics.summary import summarize
    from fleetlab.report.progress import DelayedProgress
    from fleetlab.report.table import print_notes, print_runs

    _check_out(out, force)
    try:
        resolved = cli_snapshot.load_or_snapshot(scenario, seed, from_snapshot, add_nodes, snapshot_runtime)
        with DelayedProgress(err_console) as progress:
            run = run_one(resolved, policy, None, lambda d, t: progress(policy, d, t))
    except (SpecError, UnknownPolicyError) as exc:
        raise _fail(str(exc)) from None
    if out is not None:
        _write([run], out, single=True, force=force)
    if json_out:
        out_console.print_json(strict_dumps(summarize(run.result).as_dict()))
        print_notes(err_console, [run])
    else:
        print_runs(out_console, [run], _title(resolved, run))
        if out is not None:
            out_console.print(f"results written to {out}", highlight=False, markup=False)


SeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--seeds",
        help="How many seeds (from --seed or the scenario's seed up), a list such as 7,8,9, or auto "
        "(auto:N): add seeds until every decision metric is decided or N (40). Every column runs on "
        "the same seeds (paired). Default: 5.",
    ),
]


@app.command(name="compare")
def compare_cmd(
    scenarios: Annotated[
        list[str] | None,
        typer.Argument(
            help="Scenario file(s) or built-in name(s); several files = one column per file (each a variant "
            "with one change), run with the file's own policy unless --policy is given.",
        ),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            help=f"Policy per column; repeat it. Presets: {', '.join(PRESETS)}; FGD-paper policies: "
            f"{', '.join(SHARE_POLICY_DESCRIPTIONS)}; '{SCENARIO_POLICY}' = the file's. "
            f"Default: {', '.join(DEFAULT_COMPARE)}.",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="First seed (default: the scenario's).")] = None,
    seeds: SeedsOpt = None,
    out: OutOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the verdict and every metric's intervals as JSON.")
    ] = False,
    force: ForceOpt = False,
    min_effect: MinEffectOpt = None,
    price: PriceOpt = None,
    resample: ResampleOpt = "auto",
) -> None:
    """Run the same workload under several policies (or scenario variants) on several seeds: a verdict
    on what each changes against the first column, then every metric with its interval."""
    from fleetlab.experiment.comparison import run_compare
    from fleetlab.experiment.seeded import SeedsError
    from fleetlab.report.compare_seeds import compare_payload, print_seeded
    from fleetlab.report.progress import DelayedProgress
    from fleetlab.report.table import print_notes

    files = list(scenarios or [None])  # type: ignore[list-item]
    _check_out(out, force)
    try:
        first = seed if seed is not None else load(files[0]).scenario.seed
        with DelayedProgress(err_console) as progress:
            result, context = run_compare(files, policy, seeds, first, min_effect, price, resample, progress)
    except SeedsError as exc:
        raise _fail(str(exc)) from None
    except (SpecError, UnknownPolicyError) as exc:
        raise _fail(str(exc)) from None
    runs = list(result.first_runs)
    payload = compare_payload(result, context)
    if json_out:
        out_console.print_json(strict_dumps(payload))
        print_notes(err_console, runs)
    else:
        print_seeded(out_console, result, context)
        print_notes(out_console, runs)
    if out is not None:
        _write(runs, out, single=False, extra={"comparison.json": payload}, force=force)
        (err_console if json_out else out_console).print(
            f"results written to {out}", highlight=False, markup=False
        )


def _title(resolved: ResolvedScenario, run: Run) -> str:
    nodes = resolved.scenario.cluster.node_count
    return f"{resolved.scenario.name}: {len(resolved.jobs)} jobs on {nodes} nodes, seed {run.result.seed}"


@app.command()
def validate(scenario: Annotated[str, typer.Argument(help="Scenario YAML file to check.")]) -> None:
    """Check a scenario file (and its trace or generator) without running it."""
    from fleetlab.experiment.run import preflight, profile_for

    try:
        resolved = load(scenario)
        profile = profile_for(resolved, None)
        warnings = preflight(resolved, profile)
    except (SpecError, UnknownPolicyError) as exc:
        raise _fail(str(exc)) from None
    s = resolved.scenario
    out_console.print(
        f"{scenario}: ok — {len(s.cluster.pools)} node pool(s), {s.cluster.node_count} nodes, "
        f"{len(resolved.jobs)} jobs, policy {profile.name}",
        highlight=False,
    )
    for warning in [*resolved.warnings, *warnings]:
        err_console.print(f"warning: {warning}", highlight=False, markup=False)


@app.command()
def policies() -> None:
    """List the placement policy presets."""
    for name, (_, _, _, description) in PRESETS.items():
        out_console.print(f"[bold]{name}[/bold]: {description}", highlight=False)
    for name, description in SHARE_POLICY_DESCRIPTIONS.items():
        out_console.print(f"[bold]{name}[/bold]: {description}", highlight=False)
    out_console.print(f"built-in scenarios: {', '.join(builtin_scenarios())}", highlight=False)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted; nothing was written")
        sys.exit(130)


if __name__ == "__main__":
    main()
