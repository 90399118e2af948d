"""A FOCUS 1.0–1.2 cost and usage file (AWS CUR 2.0 FOCUS export, Azure, OCI, GCP) as the bill lines
``plan reconcile`` compares with a run's ledger, read by the one FOCUS reader (``spec.history.focus``).

Each line's amount is its EffectiveCost (FOCUS: the amortised cost after discounts, so an upfront commitment
purchase is spread over the usage lines it covers instead of counted twice); Credit lines are kept apart as
credits; Tax lines are tax. Costs in another currency than USD are converted with an explicit rate the user
gives (currency units per USD, with its source and date), never a guessed one. The line's usage is its
ConsumedQuantity in ConsumedUnit; the instance type it names, for GPU-hours, comes from SkuPriceDetails
(``InstanceType``), AWS's usage type (``USE1-BoxUsage:g5.12xlarge`` in ``x_UsageType``, FOCUS 1.0, or in
SkuMeter, FOCUS 1.2), an OCI shape (``BM.GPU.H100.8``) or an Azure meter (``NC24ads A100 v4`` for
``Standard_NC24ads_A100_v4``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from fleetlab.spec.billing_export import BillingExport, BillRow
from fleetlab.spec.bounded import json_cell
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import SourceData, short
from fleetlab.spec.history.focus import FocusLine, focus_lines

MAX_QUANTITY = 1e15
_OCI_SHAPE = re.compile(r"\b((?:BM|VM)\.GPU[\w.-]*\.\d+)\b")
_AZURE_METER = re.compile(r"^([A-Z]{1,3}\d+[a-z]*)\s+(.+)$")


def read_focus_bill(path: Path, rates: Mapping[str, float] | None = None) -> tuple[BillingExport, SourceData]:
    """Every usable line of a FOCUS file as bill lines in USD, and what the reader left out (by reason).

    ``rates`` maps a currency code to its units per USD; a line in another currency without a rate is an
    error naming the line, the currency and the option that gives the rate."""
    data = SourceData(label=str(path), kind="focus")
    export = BillingExport(str(path))
    for line in focus_lines(path, data):
        rate = 1.0 if line.currency == "USD" else (rates or {}).get(line.currency)
        if rate is None:
            raise SpecError(
                str(path),
                [
                    f"line {line.line}, column BillingCurrency: {line.currency} needs an exchange rate to "
                    f"compare with the USD estimate; give --exchange-rate {line.currency}=UNITS_PER_USD "
                    "with --rate-source and --rate-date"
                ],
            )
        export.rows.append(_bill_row(line, rate, str(path)))
    return export, data


def _bill_row(line: FocusLine, rate: float, source: str) -> BillRow:
    charge = line.cell("ChargeCategory")
    cost, credits = (0.0, line.effective_cost) if charge == "Credit" else (line.effective_cost, 0.0)
    return BillRow(
        line=line.line,
        service=line.cell("ServiceName"),
        sku=line.cell("ChargeDescription") or line.cell("SkuMeter") or line.cell("SkuId"),
        start=datetime.fromtimestamp(line.start, UTC),
        end=datetime.fromtimestamp(line.end, UTC),
        project_id=line.cell("SubAccountId"),
        labels=line.tags,
        cost_usd=cost / rate,
        credits_usd=credits / rate,
        cost_type="tax" if charge == "Tax" else (charge.lower() or "usage"),
        usage_amount=_quantity(line, source),
        usage_unit=line.cell("ConsumedUnit"),
        region=line.region or "",
        service_category=line.cell("ServiceCategory"),
        instance_type=instance_type_of(line),
        currency=line.currency,
        rate=rate,
    )


def _quantity(line: FocusLine, source: str) -> float | None:
    text = line.cell("ConsumedQuantity")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (abs(value) <= MAX_QUANTITY):
        raise SpecError(
            source,
            [f"line {line.line}, column ConsumedQuantity: {short(text)} is not a number within ±1e15"],
        )
    return value


def instance_type_of(line: FocusLine) -> str:
    """The instance type (or shape) a line bills, from the columns providers put it in; '' when none."""
    details = line.cell("SkuPriceDetails")
    if details.startswith("{"):
        try:
            parsed = json_cell(details)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            for key in ("InstanceType", "x_InstanceType", "instanceType"):
                if isinstance(parsed.get(key), str) and parsed[key].strip():
                    return str(parsed[key]).strip()
    for usage_type in (line.cell("x_UsageType"), line.cell("SkuMeter")):  # AWS FOCUS 1.0, then 1.2
        if ":" in usage_type and "Usage" in usage_type.split(":", 1)[0]:
            return usage_type.split(":", 1)[1].strip()  # BoxUsage:, SpotUsage:, DedicatedUsage:
    for text in (line.cell("SkuMeter"), line.cell("ChargeDescription"), line.cell("ResourceName")):
        shape = _OCI_SHAPE.search(text)
        if shape:
            return shape.group(1)
    meter = _AZURE_METER.match(line.cell("SkuMeter"))
    if meter and line.cell("ProviderName").lower().startswith("microsoft"):
        return "Standard_" + "_".join([meter.group(1), *meter.group(2).split()])
    return ""
