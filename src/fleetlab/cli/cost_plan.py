"""``fleetlab plan …``: every cost and planning command in one group — price a job on every GPU offer,
the job mix, buy vs rent, checkpoint intervals, the cost ledger, bill reconciliation and measured profiles.
``fleetlab cost …`` is the same group under a hidden alias (the name earlier releases used).

Thin wrappers: each command parses its flags, calls one function of ``fleetlab.cost`` and renders.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from fleetlab.cli.buy_vs_rent import buy_vs_rent_cmd
from fleetlab.cli.common import (
    JsonOpt,
    OutputOpt,
    emit,
    err_console,
    fail,
    finite_float,
    out_console,
    out_path,
    output_format,
    write_runs,
)
from fleetlab.cli.cost import checkpoint_cmd
from fleetlab.cli.profile import profile_cmd
from fleetlab.cli.reconcile import reconcile_cmd

plan_app = typer.Typer(
    help="Cost and planning: cost per job across GPU models and clouds, the job mix, buy vs rent, "
    "checkpoint intervals under spot, the cost ledger, bill reconciliation, measured profiles.",
    no_args_is_help=True,
)


def _job_from_flags(values: dict[str, Any]) -> Any:
    from fleetlab.spec.plan_job import plan_job_from_data

    needed = ("reference_gpu", "throughput", "steps", "samples_per_step")
    missing = ["--" + k.replace("_", "-") for k in needed if values[k] is None]
    if missing:
        raise fail(f"give a JOB.yaml file, or the flags {', '.join(missing)} (missing)")
    data = {
        "name": "job",
        "kind": "training",
        "profile": {
            "reference_gpu": values["reference_gpu"],
            "reference_throughput": values["throughput"],
            "compute_fraction": values["compute_fraction"],
            "memory_fraction": values["memory_fraction"],
            "gradient_bytes": values["gradient_bytes"],
        },
        "training": {"steps": values["steps"], "samples_per_step": values["samples_per_step"], "gpus": 8},
    }
    return plan_job_from_data("<flags>", data)


def _catalogs(clouds: list[str] | None, catalog: Path | None) -> list[tuple[str, Any]]:
    from fleetlab.spec.catalog import CLOUDS, builtin_catalog, read_catalog

    if catalog is not None:
        return [(catalog.stem, read_catalog(catalog))]
    chosen = clouds or list(CLOUDS)
    bad = [c for c in chosen if c not in CLOUDS]
    if bad:
        raise fail(f"--cloud {bad[0]}: unknown cloud; allowed: {', '.join(CLOUDS)}")
    return [(c, builtin_catalog(c)) for c in chosen]


def _filter_offers(
    offers: list[Any], gpus: list[str] | None, regions: list[str] | None, instances: list[str] | None
) -> list[Any]:
    from fleetlab.model.gpu_specs import gpu_specs

    for gpu in gpus or []:
        if gpu not in gpu_specs():
            raise fail(
                f"--gpu {gpu}: unknown GPU model; models with a profile: {', '.join(sorted(gpu_specs()))}"
            )
    for name, values, have in (
        ("--region", regions, {o.region for o in offers}),
        ("--instance", instances, {o.instance_type for o in offers}),
    ):
        for value in values or []:
            if value not in have:
                raise fail(f"{name} {value}: not in the catalog; available: {', '.join(sorted(have))}")
    return [
        o
        for o in offers
        if (not gpus or o.gpu in gpus)
        and (not regions or o.region in regions)
        and (not instances or o.instance_type in instances)
    ]


@plan_app.command("gpus")
def gpus_cmd(
    job_file: Annotated[Path | None, typer.Argument(help="Planning job YAML (see examples/plan/).")] = None,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", help="Only this GPU model; repeat it.")] = None,
    cloud: Annotated[list[str] | None, typer.Option("--cloud", help="aws, gcp or azure; repeat it.")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", help="Only this region; repeat it.")] = None,
    instance: Annotated[list[str] | None, typer.Option("--instance", help="Only this instance type.")] = None,
    capacity: Annotated[
        list[str] | None, typer.Option("--capacity", help="on-demand and/or spot (default both).")
    ] = None,
    catalog: Annotated[Path | None, typer.Option("--catalog", help="A SkyPilot-format CSV instead.")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", min=1, help="GPUs for the training job.")] = None,
    network_gbps: Annotated[
        float | None,
        typer.Option(
            "--network-gbps", callback=finite_float, min=0.001, help="Node-to-node Gbit/s for all offers."
        ),
    ] = None,
    base_gpu: Annotated[
        str | None, typer.Option("--base-gpu", help="Model for 'more vs faster GPUs' (default: reference).")
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows shown in the table.")] = 25,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write a plotly scatter page here.")] = None,
    reference_gpu: Annotated[
        str | None, typer.Option("--reference-gpu", help="Without JOB: profile GPU.")
    ] = None,
    throughput: Annotated[
        float | None,
        typer.Option(
            "--throughput",
            callback=finite_float,
            min=0.0,
            help="Without JOB: samples/s on one reference GPU.",
        ),
    ] = None,
    compute_fraction: Annotated[
        float, typer.Option("--compute-fraction", callback=finite_float, min=0.0, max=1.0)
    ] = 0.7,
    memory_fraction: Annotated[
        float, typer.Option("--memory-fraction", callback=finite_float, min=0.0, max=1.0)
    ] = 0.2,
    gradient_bytes: Annotated[float, typer.Option("--gradient-bytes", callback=finite_float, min=0.0)] = 0.0,
    steps: Annotated[int | None, typer.Option("--steps", min=1, help="Without JOB: training steps.")] = None,
    samples_per_step: Annotated[
        float | None, typer.Option("--samples-per-step", callback=finite_float, min=0.0)
    ] = None,
) -> None:
    """The same job on every GPU model x cloud x region x capacity type: time, $ per job, $ per M samples."""
    from fleetlab.cost.gpu_plan import CAPACITY_TYPES, plan_job, priced_offers, scaling_options
    from fleetlab.report.plan_report import print_plan, print_scaling, write_plan_html
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.plan_job import load_plan_job

    fmt = output_format(json_out, output)
    for value in capacity or []:
        if value not in CAPACITY_TYPES:
            raise fail(f"--capacity {value}: allowed: {', '.join(CAPACITY_TYPES)}")
    try:
        job = load_plan_job(job_file) if job_file is not None else _job_from_flags(locals())
        if gpus is not None and job.training is not None:
            job = job.model_copy(update={"training": job.training.model_copy(update={"gpus": gpus})})
        offers = priced_offers(_catalogs(cloud, catalog), capacity or CAPACITY_TYPES)
    except SpecError as exc:
        raise fail(str(exc)) from None
    offers = _filter_offers(offers, gpu, region, instance)
    base = base_gpu or job.profile.reference_gpu
    if base_gpu is not None:
        _filter_offers([], [base_gpu], None, None)
    plan = plan_job(job, offers, network_gbps)
    if not plan.rows:
        raise fail(
            "no catalog offer can run this job: " + "; ".join(plan.excluded[:5] or ["no offers matched"])
        )
    scaling = scaling_options(job, offers, base, network_gbps=network_gbps, only_models=gpu or ())
    payload = {
        "job": job.name,
        "kind": job.kind,
        "rows": [r.as_dict() for r in plan.rows],
        "more_vs_faster": [
            {"option": s.label, **(s.row.as_dict() if s.row else {"offer": None, "missing": s.missing})}
            for s in scaling
        ],
        "excluded": plan.excluded,
        "warnings": plan.warnings,
    }
    if not emit(fmt, payload):
        print_plan(out_console, job, plan, top)
        print_scaling(out_console, scaling)
        for note in plan.warnings:
            err_console.print(f"warning: {note}", highlight=False, markup=False)
        if plan.excluded:
            err_console.print(
                f"{len(plan.excluded)} offer(s) left out, e.g. {plan.excluded[0]}",
                highlight=False,
                markup=False,
            )
    if html_out is not None:
        try:
            write_plan_html(job, plan.rows, html_out)
        except SpecError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(f"--html {html_out}: cannot write: {exc.strerror or exc}") from None


plan_app.command("buy-vs-rent")(buy_vs_rent_cmd)


@plan_app.command("ledger")
def ledger_cmd(
    scenario: Annotated[str | None, typer.Argument(help="Scenario YAML or built-in name.")] = None,
    out: Annotated[
        Path,
        typer.Option("--out", parser=out_path, help="Run folder to write (as simulate --out, + ledger)."),
    ] = Path("ledger-run"),
    policy: Annotated[str, typer.Option("--policy", help="'scenario' or a preset.")] = "scenario",
    seed: Annotated[int | None, typer.Option("--seed", help="Override the scenario's seed.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out even if fleetlab did not write it.")
    ] = False,
) -> None:
    """Simulate and write the run files (as simulate --out), with ledger.parquet: every cost record."""
    from fleetlab.experiment.run import run_one
    from fleetlab.placement.profiles import UnknownPolicyError
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.loader import load
    from fleetlab.spec.out_folder import check_replaceable
    from fleetlab.spec.run_dir import read_ledger

    try:
        check_replaceable(out.absolute(), force=force)
        resolved = load(scenario, seed)
        run = run_one(resolved, policy, None)
    except (SpecError, UnknownPolicyError) as exc:
        raise fail(str(exc)) from None
    write_runs([run], out, single=True, force=force)
    ledger = read_ledger(out)
    out_console.print(
        f"{len(ledger['cost_usd'])} ledger rows, ${math.fsum(ledger['cost_usd']):,.2f} in all, "
        f"written to {out}/ledger.parquet",
        highlight=False,
    )


@plan_app.command("mix")
def mix_cmd(
    scenario: Annotated[str | None, typer.Argument(help="Scenario YAML or built-in name.")] = None,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", help="GPU model to compare; repeat it.")] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Cost per completed job of the scenario's GPU job mix on each GPU model (work only, no queueing)."""
    from rich.table import Table

    from fleetlab.cost.gpu_plan import priced_offers
    from fleetlab.cost.job_mix import mix_cost
    from fleetlab.model.gpus import GPU_MODELS
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.loader import load

    fmt = output_format(json_out, output)
    models = gpu or ["A100-80GB", "H100"]
    for name in models:
        if name not in GPU_MODELS:
            raise fail(f"--gpu {name}: unknown GPU model; known: {', '.join(sorted(GPU_MODELS))}")
    try:
        resolved = load(scenario)
        offers = priced_offers(_catalogs(None, None), ("on-demand",))
        costs = [mix_cost(resolved, name, offers) for name in models]
    except SpecError as exc:
        raise fail(str(exc)) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    rows = [{**c.__dict__, "usd_per_job": c.usd_per_job} for c in costs]
    if emit(fmt, {"scenario": resolved.scenario.name, "rows": rows}):
        return
    table = Table(title=f"{resolved.scenario.name}: {costs[0].jobs} GPU jobs, each GPU model alone")
    for name in ("GPU", "$/GPU-h", "price from", "GPU-hours", "total $", "$ per job"):
        table.add_column(name, justify="left" if name in ("GPU", "price from") else "right")
    for c in costs:
        table.add_row(c.gpu, f"{c.usd_per_gpu_hour:.4f}", c.price_source, f"{c.gpu_hours:,.1f}",
                      f"{c.total_usd:,.2f}", f"{c.usd_per_job:,.2f}")  # fmt: skip
    out_console.print(table)


plan_app.command("reconcile")(reconcile_cmd)
plan_app.command("checkpoint")(checkpoint_cmd)
plan_app.command("profile")(profile_cmd)
plan_app.command("record-profile", hidden=True)(profile_cmd)  # the earlier name of `plan profile`
