"""``plan reconcile``'s stated inputs and grant evidence as terminal tables: every rate with its source and
date, every attached charge with the price it was priced at, then bill vs estimate per project and support
period, and the jobs the bill's job label ties lines to."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleetlab.cost.attached import AttachedLine
from fleetlab.cost.evidence import Evidence
from fleetlab.cost.reconcile import Rate

MAX_JOB_ROWS = 20
TABLE_WIDTH = 100


def print_stated_inputs(console: Console, rates: Sequence[Rate], attached: Sequence[AttachedLine]) -> None:
    """Rates and attached charges the estimate used, each with where it comes from."""
    if not rates and not attached:
        return
    table = Table(title="Stated inputs (each with its source)", title_justify="left")
    for name in ("input", "value", "source", "date"):
        table.add_column(name, overflow="fold")
    for rate in rates:
        value = f"{rate.value:g} {rate.name} per USD" if rate.kind == "exchange" else f"{rate.value:.2%}"
        label = f"exchange rate {rate.name}" if rate.kind == "exchange" else "tax on the estimate"
        table.add_row(label, value, Text(rate.source), rate.date)
    totals: dict[str, tuple[float, float, AttachedLine]] = {}
    for line in attached:
        key = f"{line.price.kind} {line.price.name}"
        usd, quantity, _ = totals.get(key, (0.0, 0.0, line))
        totals[key] = (usd + line.usd, quantity + line.quantity, line)
    for key, (usd, quantity, line) in totals.items():
        table.add_row(
            key,
            f"${usd:,.2f} ({quantity:,.2f} {line.unit} at ${line.price.price_usd:g})",
            Text(line.price.source),
            "catalog",
        )
    console.print(table, width=min(console.width, TABLE_WIDTH))


def print_evidence(console: Console, evidence: Evidence) -> None:
    """Bill vs estimate per project and support period, then the jobs tied to bill lines."""
    table = Table(
        title=f"Evidence by project ({evidence.project_label}) and support period (USD)", title_justify="left"
    )
    for name in ("project", "period", "billed", "credits", "net", "lines", "GPU-h billed", "estimate",
                 "GPU-h est."):  # fmt: skip
        table.add_column(name, justify="left" if name in ("project", "period") else "right")
    for r in evidence.rows:
        table.add_row(
            Text(r.project),
            Text(r.period.name),
            f"{r.bill_usd:,.2f}",
            f"{r.credits_usd:,.2f}",
            f"{r.bill_usd + r.credits_usd:,.2f}",
            str(r.bill_lines),
            f"{r.gpu_hours_billed:,.1f}",
            f"{r.estimate_usd:,.2f}",
            f"{r.gpu_hours_estimated:,.1f}",
        )
    console.print(table)
    if evidence.outside_usd:
        console.print(
            f"billed outside every support period: ${evidence.outside_usd:,.2f}",
            highlight=False,
            markup=False,
        )
    if evidence.job_label is None:
        return
    jobs = Table(title=f"Bill lines tied to jobs by the label {evidence.job_label}", title_justify="left")
    for name in ("job", "project", "billed", "lines", "estimate"):
        jobs.add_column(name, justify="left" if name in ("job", "project") else "right")
    for link in evidence.jobs[:MAX_JOB_ROWS]:
        jobs.add_row(Text(link.job), Text(link.project), f"{link.bill_usd:,.2f}", str(link.bill_lines),
                     f"{link.estimate_usd:,.2f}")  # fmt: skip
    console.print(jobs)
    more = len(evidence.jobs) - MAX_JOB_ROWS
    tail = f"; {more} more job(s) in -o json" if more > 0 else ""
    console.print(
        f"{evidence.unlinked_lines} bill line(s) name no job of the run{tail}", highlight=False, markup=False
    )
