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

from fleetlab.metrics.check import check_run
from fleetlab.spec.errors import SpecError


def check_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `fleetlab simulate --out`.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Recompute bills, the cost split, waits, counts by state and makespan from the Parquet files alone and
    compare them with summary.json (docs/metrics.md)."""
    out, err = Console(), Console(stderr=True)
    try:
        report = check_run(run_dir)
    except SpecError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    if json_out:
        payload = {"folder": report.folder, "checked": report.checked, "mismatches": report.mismatches}
        out.print_json(json.dumps(payload))
    else:
        for line in report.mismatches:
            out.print(f"[red]mismatch[/red] {escape(line)}", highlight=False, soft_wrap=True)
        verdict = "all agree" if report.ok else f"{len(report.mismatches)} mismatch(es)"
        out.print(
            f"{escape(report.folder)}: {report.checked} figure(s) recomputed, {verdict}", highlight=False
        )
    raise typer.Exit(0 if report.ok else 1)
