"""``fleetlab fgd-experiment``: the FGD paper's unallocated-GPU experiment on the openb trace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fleetlab.cli.common import err_console, fail, finite_float, out_console, out_path
from fleetlab.cli.experiment import runs_progress

POLICY_HELP = "Policy to run (repeatable): random, dotprod, clustering, packing, bestfit, fgd, fgd-exact."


#: Seeds one FGD run may take (each is a full replay per policy and workload).
MAX_FGD_SEEDS = 1_000


def parse_seeds(text: str) -> list[int]:
    """``42-51`` (a range), ``42,44,45`` (a list) or a mix; raises ValueError naming the bad part."""
    from fleetlab.model.limits import MAX_SEED

    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            first, last = int(low), int(high) if sep else int(low)
        except ValueError:
            raise ValueError(f"--seeds {text!r}: {part!r} is not a seed or a range like 42-51") from None
        if last < first:
            raise ValueError(f"--seeds {text!r}: range {part!r} runs backwards")
        if first < 0 or last > MAX_SEED or last - first + 1 + len(seeds) > MAX_FGD_SEEDS:
            raise ValueError(
                f"--seeds {text!r}: seeds must lie in 0..{MAX_SEED} and number at most {MAX_FGD_SEEDS:,}"
            )
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    if not seeds:
        raise ValueError(f"--seeds {text!r}: give at least one seed, e.g. 42-51")
    return seeds


def fgd_experiment(
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="Folder for the table, curves and plot (atomic).")
    ],
    variant: Annotated[
        list[str] | None,
        typer.Option(
            "--variant",
            help="Pod list or family (repeatable): default, gpushare, multigpu, gpuspec, nongpu, paper, "
            "or one file's name such as gpushare40.",
        ),
    ] = None,
    policy: Annotated[list[str] | None, typer.Option("--policy", help=POLICY_HELP)] = None,
    seeds: Annotated[str, typer.Option("--seeds", help="Seeds: 42-51 (the paper's), or 42,43.")] = "42-51",
    trace_dir: Annotated[
        Path | None,
        typer.Option(
            "--trace-dir", help="Folder with the openb CSVs (default: shared/traces/alibaba-gpu-v2023)."
        ),
    ] = None,
    sample: Annotated[
        float,
        typer.Option(
            "--sample", callback=finite_float, help="Run on this fraction of nodes and pods (quick look)."
        ),
    ] = 1.0,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Worker processes.")] = 1,
    png: Annotated[bool, typer.Option("--png", help="Also write unallocated.png (needs kaleido).")] = False,
) -> None:
    """Replay openb pod lists, inflated to 130 % of GPU capacity, under each policy and seed; report the
    unallocated GPUs (% of cluster) against arrived workload, as in Fig. 9 of the FGD paper."""
    from fleetlab.experiment.fgd import run_grid
    from fleetlab.experiment.fgd_report import markdown_table, summary_cells, write_report
    from fleetlab.placement.share_policies import POLICIES, known_policies
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.openb_share import load_share_nodes, load_share_pods
    from fleetlab.spec.openb_variants import (
        NODE_FILE,
        pod_list_path,
        resolve_variants,
        subsample,
        trace_dir_or_error,
    )

    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: exists and is not a directory; give a folder path")
    policies = list(dict.fromkeys(policy or POLICIES))
    unknown = [p for p in policies if p not in known_policies()]
    if unknown:
        raise fail(f"--policy {', '.join(unknown)}: unknown; choose from {', '.join(known_policies())}")
    try:
        seed_list = parse_seeds(seeds)
        variants = resolve_variants(variant or ["default"])
        folder = trace_dir_or_error(trace_dir)
        nodes = load_share_nodes(folder / NODE_FILE)
        workloads = {}
        small = nodes
        for name in variants:
            pods = load_share_pods(pod_list_path(folder, name), nodes.models)
            small, workloads[name] = subsample(nodes, pods, sample)
    except (SpecError, ValueError) as exc:
        raise fail(str(exc)) from None
    progress = runs_progress(err_console)
    with progress:
        bar = progress.add_task("", total=len(variants) * len(policies) * len(seed_list))
        runs = run_grid(
            small,
            workloads,
            policies,
            seed_list,
            jobs=jobs,
            progress=lambda done, total, spec: progress.update(
                bar, completed=done, description=f"{spec.variant} {spec.policy} {spec.seed}"
            ),
        )
    try:
        warnings = write_report(runs, out, png=png)
    except SpecError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write results: {exc.strerror or exc}") from None
    out_console.print(markdown_table(summary_cells(runs)), highlight=False, markup=False)
    for name in policies:
        walls = [r.wall_s for r in runs if r.policy == name]
        out_console.print(f"{name}: {sum(walls) / len(walls):.2f} s per run", highlight=False)
    for warning in warnings:
        err_console.print(f"warning: {warning}", highlight=False, markup=False)
    err_console.print(f"results in {out}", highlight=False, markup=False)
