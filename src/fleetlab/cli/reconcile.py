"""``fleetlab plan reconcile``: the gap between a cloud bill and a run's cost ledger, by category and by
project x period."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, fail, out_console, output_format


def reconcile_cmd(
    bill: Annotated[
        Path, typer.Option("--bill", "--billing", help="GCP billing export (standard usage cost) as CSV.")
    ],
    run: Annotated[
        Path, typer.Option("--run", help="Run folder with ledger.parquet (`simulate --out`, `plan ledger`).")
    ],
    start: Annotated[
        str | None,
        typer.Option("--start", help="UTC time of the run's t=0 (default: the bill's first hour)."),
    ] = None,
    period: Annotated[str, typer.Option("--period", help="hour, day or month.")] = "day",
    group_label: Annotated[
        str, typer.Option("--group-label", help="Bill label naming the project/team.")
    ] = "k8s-label/team",
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """The gap between a cloud bill and the run's cost ledger, by category and by project x period."""
    from fleetlab.cost.reconcile import PERIODS, period_start, reconcile
    from fleetlab.report.plan_report import print_reconciliation
    from fleetlab.spec.billing_export import parse_time, read_billing_export
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.run_dir import read_ledger

    fmt = output_format(json_out, output)
    if period not in PERIODS:
        raise fail(f"--period {period}: allowed: {', '.join(PERIODS)}")
    try:
        export = read_billing_export(bill)
        ledger = read_ledger(run)
    except SpecError as exc:
        raise fail(str(exc)) from None
    if not export.rows:
        raise fail(f"{bill}: no rows after the header")
    if start is not None:
        try:
            origin = parse_time(start)
        except ValueError:
            raise fail(f"--start {start!r}: not a timestamp; e.g. 2026-11-02T00:00:00Z") from None
    else:
        origin = period_start(min(r.start for r in export.rows), "hour")
    result = reconcile(export.rows, ledger, origin, period, group_label)
    if not emit(fmt, result.as_dict()):
        print_reconciliation(out_console, result)
