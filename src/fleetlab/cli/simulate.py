"""``fleetlab simulate``, ``compare``, ``validate`` and ``policies``: run scenarios under placement policies
and print where time and money went."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fleetlab.cli.common import (
    ForceOpt,
    JsonOpt,
    MinEffectOpt,
    OutOpt,
    OutputOpt,
    PriceOpt,
    ResampleOpt,
    ScenarioArg,
    SeedOpt,
    check_out,
    emit,
    err_console,
    fail,
    out_console,
    output_format,
    write_runs,
)
from fleetlab.cli.snapshot import AddNodesOpt, FromSnapshotOpt, SnapshotRuntimeOpt, load_or_snapshot
from fleetlab.model.policy_names import DEFAULT_COMPARE, PRESET_NAMES, SCENARIO_POLICY, SHARE_POLICY_NAMES
from fleetlab.spec.errors import SpecError

if TYPE_CHECKING:
    from fleetlab.experiment.run import Run
    from fleetlab.model.scenario import ResolvedScenario


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
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    from_snapshot: FromSnapshotOpt = None,
    add_nodes: AddNodesOpt = None,
    snapshot_runtime: SnapshotRuntimeOpt = "1h",
) -> None:
    """Run one scenario under one policy and print where time and money went."""
    from fleetlab.experiment.run import run_one
    from fleetlab.metrics.summary import summarize
    from fleetlab.placement.profiles import UnknownPolicyError
    from fleetlab.report.progress import DelayedProgress
    from fleetlab.report.table import print_notes, print_runs

    fmt = output_format(json_out, output)
    check_out(out, force)
    try:
        resolved = load_or_snapshot(scenario, seed, from_snapshot, add_nodes, snapshot_runtime)
        with DelayedProgress(err_console) as progress:
            run = run_one(resolved, policy, None, lambda d, t: progress(policy, d, t))
    except (SpecError, UnknownPolicyError) as exc:
        raise fail(str(exc)) from None
    if out is not None:
        write_runs([run], out, single=True, force=force)
    if emit(fmt, summarize(run.result).as_dict()):
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
            help=f"Policy per column; repeat it. Presets: {', '.join(PRESET_NAMES)}; FGD-paper policies: "
            f"{', '.join(SHARE_POLICY_NAMES)}; '{SCENARIO_POLICY}' = the file's. "
            f"Default: {', '.join(DEFAULT_COMPARE)}.",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="First seed (default: the scenario's).")] = None,
    seeds: SeedsOpt = None,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    force: ForceOpt = False,
    min_effect: MinEffectOpt = None,
    price: PriceOpt = None,
    resample: ResampleOpt = "auto",
) -> None:
    """Run the same workload under several policies (or scenario variants) on several seeds: a verdict
    on what each changes against the first column, then every metric with its interval."""
    from fleetlab.experiment.comparison import run_compare
    from fleetlab.experiment.seeded import SeedsError
    from fleetlab.placement.profiles import UnknownPolicyError
    from fleetlab.report.compare_seeds import compare_payload, print_seeded
    from fleetlab.report.progress import DelayedProgress
    from fleetlab.report.table import print_notes
    from fleetlab.spec.loader import load

    fmt = output_format(json_out, output)
    files = list(scenarios or [None])  # type: ignore[list-item]
    check_out(out, force)
    try:
        first = seed if seed is not None else load(files[0]).scenario.seed
        with DelayedProgress(err_console) as progress:
            result, context = run_compare(files, policy, seeds, first, min_effect, price, resample, progress)
    except SeedsError as exc:
        raise fail(str(exc)) from None
    except (SpecError, UnknownPolicyError) as exc:
        raise fail(str(exc)) from None
    runs = list(result.first_runs)
    payload = compare_payload(result, context)
    structured = emit(fmt, payload)
    if structured:
        print_notes(err_console, runs)
    else:
        print_seeded(out_console, result, context)
        print_notes(out_console, runs)
    if out is not None:
        write_runs(runs, out, single=False, extra={"comparison.json": payload}, force=force)
        (err_console if structured else out_console).print(
            f"results written to {out}", highlight=False, markup=False
        )


def _title(resolved: ResolvedScenario, run: Run) -> str:
    nodes = resolved.scenario.cluster.node_count
    return f"{resolved.scenario.name}: {len(resolved.jobs)} jobs on {nodes} nodes, seed {run.result.seed}"


def validate(scenario: Annotated[str, typer.Argument(help="Scenario YAML file to check.")]) -> None:
    """Check a scenario file (and its trace or generator) without running it."""
    from fleetlab.experiment.run import preflight, profile_for
    from fleetlab.placement.profiles import UnknownPolicyError
    from fleetlab.spec.loader import load

    try:
        resolved = load(scenario)
        profile = profile_for(resolved, None)
        warnings = preflight(resolved, profile)
    except (SpecError, UnknownPolicyError) as exc:
        raise fail(str(exc)) from None
    s = resolved.scenario
    out_console.print(
        f"{scenario}: ok — {len(s.cluster.pools)} node pool(s), {s.cluster.node_count} nodes, "
        f"{len(resolved.jobs)} jobs, policy {profile.name}",
        highlight=False,
    )
    for warning in [*resolved.warnings, *warnings]:
        err_console.print(f"warning: {warning}", highlight=False, markup=False)


def policies() -> None:
    """List the placement policy presets."""
    from fleetlab.placement.profiles import PRESETS, SHARE_POLICY_DESCRIPTIONS
    from fleetlab.spec.loader import builtin_scenarios

    for name, (_, _, _, description) in PRESETS.items():
        out_console.print(f"[bold]{name}[/bold]: {description}", highlight=False)
    for name, description in SHARE_POLICY_DESCRIPTIONS.items():
        out_console.print(f"[bold]{name}[/bold]: {description}", highlight=False)
    out_console.print(f"built-in scenarios: {', '.join(builtin_scenarios())}", highlight=False)
