"""``fleetlab plan reconcile``: the gap between a cloud bill (a FOCUS 1.0–1.2 file from AWS, Azure, OCI or
GCP, or GCP's billing export) and a run's cost ledger, by category and by project x period; estimates for
disks, OS images, egress and tax from stated inputs with their sources; grant evidence per project and
support period, with bill lines tied to the run's jobs where the bill carries a job label."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, fail, out_console, output_format

if TYPE_CHECKING:
    from fleetlab.cost.attached import AttachedRequest
    from fleetlab.cost.evidence import SupportPeriod
    from fleetlab.cost.reconcile import Rate
    from fleetlab.spec.billing_export import BillingExport


def _stated(option: str, value: float, source: str | None, date: str | None) -> tuple[str, str]:
    """A rate is only used with its source and its date (YYYY-MM-DD): evidence, not a guess."""
    from fleetlab.model.limits import MAX_CONVERSION_RATE, MIN_CONVERSION_RATE

    if option == "--tax-rate" and not 0 <= value < 1:
        raise fail(f"--tax-rate {value:g}: allowed 0 <= fraction < 1 (0.1 for 10 %)")
    if option == "--exchange-rate" and not MIN_CONVERSION_RATE <= value <= MAX_CONVERSION_RATE:
        raise fail(
            f"--exchange-rate {value:g}: allowed {MIN_CONVERSION_RATE:g} <= units per USD <= "
            f"{MAX_CONVERSION_RATE:g}, as for a bill's own conversion rate"
        )
    flag = "--rate" if option == "--exchange-rate" else "--tax"
    if not source or not source.strip():
        raise fail(
            f"{option} needs {flag}-source: where the rate comes from (e.g. a published reference rate)"
        )
    if not date:
        raise fail(f"{option} needs {flag}-date: the date the rate holds for, as YYYY-MM-DD")
    try:
        datetime.strptime(date, "%Y-%m-%d")
    except ValueError:
        raise fail(f"{flag}-date {date!r}: expected YYYY-MM-DD, e.g. 2026-11-30") from None
    return source.strip(), date


def _exchange_rates(items: list[str] | None, source: str | None, date: str | None) -> list[Rate]:
    from fleetlab.cost.reconcile import Rate

    out: list[Rate] = []
    for item in items or []:
        code, sep, text = item.partition("=")
        try:
            value = float(text) if sep else math.nan
        except ValueError:
            value = math.nan
        if not sep or len(code) != 3 or not code.isalpha() or not math.isfinite(value):
            raise fail(
                f"--exchange-rate {item!r}: give CUR=UNITS_PER_USD, e.g. EUR=0.92 (0.92 euro per dollar)"
            )
        cited, day = _stated("--exchange-rate", value, source, date)
        out.append(Rate("exchange", code.upper(), value, cited, day))
    return out


def _attached_request(
    disk: str | None, image: str | None, egress: str | None, cloud: str | None
) -> AttachedRequest | None:
    from fleetlab.cost.attached import AttachedRequest

    def named_amount(option: str, text: str | None, unit: str) -> tuple[str, float] | None:
        if text is None:
            return None
        name, sep, amount = text.partition("=")
        try:
            value = float(amount) if sep else math.nan
        except ValueError:
            value = math.nan
        if not name or not (0 <= value <= 1e12):
            example = "gp3=200" if option == "--disk" else "internet=500"
            raise fail(f"{option} {text!r}: give NAME={unit}, e.g. {example}")
        return name, value

    if disk is None and image is None and egress is None:
        return None
    return AttachedRequest(
        named_amount("--disk", disk, "GB"), image, named_amount("--egress", egress, "GB"), cloud
    )


def _support_periods(items: list[str] | None, bill: BillingExport) -> list[SupportPeriod]:
    """``[NAME=]START..END`` (dates or times, UTC; END exclusive), or the bill's whole window."""
    from fleetlab.cost.evidence import SupportPeriod
    from fleetlab.spec.billing_export import parse_time

    if not items:
        first = min(r.start for r in bill.rows)
        last = max(r.end for r in bill.rows)
        return [SupportPeriod("bill window", first, last)]
    out = []
    for item in items:
        name, _, span = item.rpartition("=")
        begin, dots, end = span.partition("..")
        try:
            start, stop = parse_time(begin), parse_time(end)
        except ValueError:
            start = stop = datetime(1970, 1, 1, tzinfo=UTC)
            dots = ""
        if not dots or stop <= start:
            raise fail(
                f"--support-period {item!r}: give [NAME=]START..END with END after START, "
                "e.g. 2026-H2=2026-07-01..2027-01-01 (UTC; END not included)"
            )
        out.append(SupportPeriod(name or span, start, stop))
    return out


def _read_bill(bill: Path, rates: list[Rate]) -> BillingExport:
    """A FOCUS file or GCP's export, told apart by the header (FOCUS has BilledCost; anything else is read
    as the export, whose reader names the columns it misses)."""
    from fleetlab.spec.billing_export import read_billing_export
    from fleetlab.spec.focus_bill import read_focus_bill
    from fleetlab.spec.history.common import head_bytes
    from fleetlab.spec.history.sources import refuse_empty

    if bill.is_file():
        refuse_empty(bill)
        header = (
            head_bytes(bill, 64 * 1024).decode("utf-8", errors="replace").lstrip("\ufeff").split("\n", 1)[0]
        )
        if "BilledCost" in header:
            return read_focus_bill(bill, {r.name: r.value for r in rates})[0]
    return read_billing_export(bill)


def reconcile_cmd(
    bill: Annotated[
        Path,
        typer.Option(
            "--bill",
            "--billing",
            help="The bill: a FOCUS 1.0-1.2 CSV (AWS CUR 2.0 FOCUS export, Azure, OCI, GCP) or GCP's "
            "billing export (standard usage cost) CSV; told apart by the header.",
        ),
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
    exchange_rate: Annotated[
        list[str] | None,
        typer.Option(
            "--exchange-rate",
            help="CUR=UNITS_PER_USD for bill lines in another currency, e.g. EUR=0.92; repeat it. Needs "
            "--rate-source and --rate-date.",
        ),
    ] = None,
    rate_source: Annotated[
        str | None, typer.Option("--rate-source", help="Where the exchange rates come from.")
    ] = None,
    rate_date: Annotated[
        str | None, typer.Option("--rate-date", help="The date the exchange rates hold for (YYYY-MM-DD).")
    ] = None,
    tax_rate: Annotated[
        float | None,
        typer.Option(
            "--tax-rate",
            help="Tax as a fraction of the estimate (0.1 = 10 %); needs --tax-source and --tax-date.",
        ),
    ] = None,
    tax_source: Annotated[
        str | None, typer.Option("--tax-source", help="Where the tax rate comes from.")
    ] = None,
    tax_date: Annotated[
        str | None, typer.Option("--tax-date", help="The date the tax rate holds for (YYYY-MM-DD).")
    ] = None,
    disk: Annotated[
        str | None,
        typer.Option("--disk", help="Each node's disk as CATALOG_NAME=GB (e.g. gp3=200, pd-balanced=200)."),
    ] = None,
    image: Annotated[
        str | None, typer.Option("--image", help="Each node's OS image (e.g. ubuntu, rhel, windows-server).")
    ] = None,
    egress: Annotated[
        str | None, typer.Option("--egress", help="The run's egress as CATALOG_NAME=GB (e.g. internet=500).")
    ] = None,
    cloud: Annotated[
        str | None, typer.Option("--cloud", help="aws, gcp or azure, for pools that name no cloud.")
    ] = None,
    attached_catalog: Annotated[
        Path | None,
        typer.Option(
            "--attached-catalog", help="Disk, image and egress prices (CSV) instead of the built-in ones."
        ),
    ] = None,
    project_label: Annotated[
        str | None,
        typer.Option(
            "--project-label",
            help="Bill label naming the project for evidence (e.g. k8s-namespace); default: --group-label.",
        ),
    ] = None,
    support_period: Annotated[
        list[str] | None,
        typer.Option(
            "--support-period",
            help="[NAME=]START..END (UTC, END not included) for evidence; repeat it. Default: the bill's "
            "window.",
        ),
    ] = None,
    job_label: Annotated[
        str | None, typer.Option("--job-label", help="Bill label naming the job a line paid for.")
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """The gap between a cloud bill and the run's cost ledger, by category and by project x period, with
    price and quantity split for GPUs; stated estimates for disks, images, egress and tax; grant evidence."""
    from fleetlab.cost.attached import AttachedError, attached_lines
    from fleetlab.cost.evidence import grant_evidence
    from fleetlab.cost.reconcile import PERIODS, Rate, period_start, reconcile
    from fleetlab.report.evidence_report import print_evidence, print_stated_inputs
    from fleetlab.report.plan_report import print_reconciliation
    from fleetlab.spec.attached_catalog import builtin_attached_catalog, read_attached_catalog
    from fleetlab.spec.billing_export import parse_time
    from fleetlab.spec.catalog import CLOUDS
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.run_dir import read_ledger

    fmt = output_format(json_out, output)
    if period not in PERIODS:
        raise fail(f"--period {period}: allowed: {', '.join(PERIODS)}")
    if cloud is not None and cloud not in CLOUDS:
        raise fail(f"--cloud {cloud}: allowed: {', '.join(CLOUDS)}")
    rates = _exchange_rates(exchange_rate, rate_source, rate_date)
    tax = None
    if tax_rate is not None:
        tax = Rate("tax", "tax", tax_rate, *_stated("--tax-rate", tax_rate, tax_source, tax_date))
    request = _attached_request(disk, image, egress, cloud)
    try:
        export = _read_bill(bill, rates)
        ledger = read_ledger(run)
        prices = read_attached_catalog(attached_catalog) if attached_catalog else builtin_attached_catalog()
        attached = attached_lines(ledger, request, prices) if request is not None else []
    except SpecError as exc:
        raise fail(str(exc)) from None
    except AttachedError as exc:
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
    used = sorted({r.currency for r in export.rows if r.currency != "USD"})
    result = reconcile(
        export.rows, ledger, origin, period, group_label, attached=attached, tax=tax,
        rates=[r for r in rates if r.name in used],
    )  # fmt: skip
    evidence = None
    if support_period or project_label or job_label:
        periods = _support_periods(support_period, export)
        evidence = grant_evidence(
            export.rows, ledger, origin, periods, project_label or group_label, job_label
        )
    payload: dict[str, Any] = result.as_dict()
    if evidence is not None:
        payload["evidence"] = evidence.as_dict()
    if emit(fmt, payload):
        return
    print_reconciliation(out_console, result)
    print_stated_inputs(out_console, result.rates, result.attached)
    if evidence is not None:
        print_evidence(out_console, evidence)
