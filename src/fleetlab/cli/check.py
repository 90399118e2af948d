"""``fleetlab check RUN_DIR``: recompute a run's headline figures from its output files and compare.

Exit codes: 0 every figure agrees with summary.json, 1 at least one mismatch, 2 a folder or file that
cannot be read as a ``fleetlab simulate --out`` run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, output_format
from fleetlab.spec.errors import SpecError


def check_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `fleetlab simulate --out`.")],
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Recompute bills, the cost split, waits, counts by state and makespan from the Parquet files alone and
    compare them with summary.json (docs/metrics.md)."""
    from fleetlab.metrics.check import check_run

    out, err = Console(), Console(stderr=True)
    fmt = output_format(json_out, output)
    try:
        report = check_run(run_dir)
    except SpecError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    payload = {"folder": report.folder, "checked": report.checked, "mismatches": report.mismatches}
    if not emit(fmt, payload, lambda: out.print_json(json.dumps(payload)), console=out):
        for line in report.mismatches:
            out.print(f"[red]mismatch[/red] {escape(line)}", highlight=False, soft_wrap=True)
        verdict = "all agree" if report.ok else f"{len(report.mismatches)} mismatch(es)"
        out.print(
            f"{escape(report.folder)}: {report.checked} figure(s) recomputed, {verdict}", highlight=False
        )
    raise typer.Exit(0 if report.ok else 1)
