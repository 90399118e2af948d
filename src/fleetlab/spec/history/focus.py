"""Cloud bills in FOCUS (FinOps Open Cost and Usage Specification, 1.0 to 1.2) as CSV, and GCP's standard
usage cost export, into BILL_SCHEMA rows.

Required FOCUS columns: BilledCost, EffectiveCost, ChargePeriodStart, ChargePeriodEnd, BillingCurrency.
Used when present: ResourceId, SkuId, PricingCategory (a blank one with a CommitmentDiscountId reads as
``Commitment-Based``), RegionId (or RegionName, or the pre-1.0 ``Region``), Tags (a JSON object). Every
other FOCUS column is ignored here; columns FOCUS does not define are ignored and counted by name. The file
is read line by line, so a month of bills streams.

:func:`focus_lines` is the one reader of the format: it checks every line and yields it with its raw cells,
so ``import`` (:func:`read_focus`, BILL_SCHEMA rows) and ``plan reconcile`` (``spec.focus_bill``, bill lines
with charge categories, services and usage) read the same file the same way.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from fleetlab.model.history import BILL_SCHEMA
from fleetlab.model.limits import MAX_BILL_AMOUNT
from fleetlab.spec.billing_export import read_billing_export
from fleetlab.spec.bounded import csv_dict_reader, json_cell
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import SourceData, bounded_number, open_text, parse_naive_utc, short

REQUIRED = ("BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd", "BillingCurrency")
#: Columns defined by FOCUS 1.0, 1.1 and 1.2 (focus_spec, specification/columns), plus pre-1.0 "Region".
FOCUS_COLUMNS = frozenset(
    """
    AvailabilityZone BilledCost BillingAccountId BillingAccountName BillingAccountType BillingCurrency
    BillingPeriodEnd BillingPeriodStart CapacityReservationId CapacityReservationStatus ChargeCategory
    ChargeClass ChargeDescription ChargeFrequency ChargePeriodEnd ChargePeriodStart
    CommitmentDiscountCategory CommitmentDiscountId CommitmentDiscountName CommitmentDiscountQuantity
    CommitmentDiscountStatus CommitmentDiscountType CommitmentDiscountUnit ConsumedQuantity ConsumedUnit
    ContractedCost ContractedUnitPrice EffectiveCost InvoiceId InvoiceIssuerName ListCost ListUnitPrice
    PricingCategory PricingCurrency PricingCurrencyContractedUnitPrice PricingCurrencyEffectiveCost
    PricingCurrencyListUnitPrice PricingQuantity PricingUnit ProviderName PublisherName Region RegionId
    RegionName ResourceId ResourceName ResourceType ServiceCategory ServiceName ServiceSubcategory SkuId
    SkuMeter SkuPriceDetails SkuPriceId SubAccountId SubAccountName SubAccountType Tags
    """.split()  # noqa: SIM905
)
#: ISO 4217 active currency codes (FOCUS BillingCurrency must be one).
ISO_4217 = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD
    CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD
    GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT
    LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR
    NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP
    STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XCG
    XOF XPF YER ZAR ZMW ZWG
    """.split()  # noqa: SIM905
)
#: FOCUS 1.0-1.2 PricingCategory values (specification/columns/pricingcategory.md), then the 1.0-preview
#: spellings earlier exports still write; values are kept as the file has them.
PRICING_CATEGORIES = ("Standard", "Dynamic", "Committed", "Other", "On-Demand", "Commitment-Based")
#: FOCUS ChargeCategory values whose costs may be negative (refunds, credits, corrections).
NEGATIVE_CATEGORIES = frozenset({"Credit", "Adjustment"})
TIME_HINT = "an ISO 8601 UTC time such as 2024-05-01T00:00:00Z"


def _cost(text: str, source: str, where: str, category: str) -> float:
    """A cost cell within ±MAX_BILL_AMOUNT; negative only on a Credit or Adjustment line (FOCUS
    ChargeCategory), since usage and purchases never cost less than nothing."""
    value = bounded_number(text.strip(), source, where, -MAX_BILL_AMOUNT, MAX_BILL_AMOUNT)
    if value < 0 and category not in NEGATIVE_CATEGORIES:
        raise SpecError(
            source,
            [f"{where}: {short(text)} on a ChargeCategory {category or '(blank)'!r} line; only "
             f"{' and '.join(sorted(NEGATIVE_CATEGORIES))} lines may be negative"],
        )  # fmt: skip
    return value


def _tags(text: str, source: str, where: str) -> dict[str, str]:
    if not text.strip():
        return {}
    try:
        tags = json_cell(text)
    except ValueError as exc:
        raise SpecError(
            source, [f'{where}: Tags must be a JSON object such as {{"team": "a"}} ({short(str(exc))})']
        ) from None
    if not isinstance(tags, dict):
        raise SpecError(source, [f"{where}: Tags must be a JSON object, got {type(tags).__name__}"])
    return {str(k): str(v) for k, v in tags.items()}


@dataclass(frozen=True)
class FocusLine:
    """One bill line that passed the checks: its checked values and its raw cells (by column name)."""

    line: int
    start: float  # ChargePeriodStart, Unix seconds
    end: float
    pricing_category: str | None
    region: str | None
    billed_cost: float
    effective_cost: float
    currency: str
    tags: dict[str, str]
    cells: dict[str, str]

    def cell(self, name: str) -> str:
        """A column's text, stripped ('' when the file has no such column)."""
        return (self.cells.get(name) or "").strip()

    @property
    def tags_json(self) -> str | None:
        """The tags as a JSON object with sorted keys (None when there are none)."""
        return json.dumps(self.tags, sort_keys=True, separators=(",", ":")) if self.tags else None


def read_focus(path: Path, progress: Callable[[int], None] | None = None) -> SourceData:
    """BILL_SCHEMA rows (absolute Unix seconds) from one FOCUS CSV file."""
    data = SourceData(label=str(path), kind="focus")
    columns: dict[str, list[Any]] = {name: [] for name in BILL_SCHEMA.names}
    for line in focus_lines(path, data, progress):
        columns["charge_start_s"].append(line.start)
        columns["charge_end_s"].append(line.end)
        columns["resource_id"].append(line.cell("ResourceId") or None)
        columns["sku"].append(line.cell("SkuId") or None)
        columns["pricing_category"].append(line.pricing_category)
        columns["region"].append(line.region)
        columns["billed_cost"].append(line.billed_cost)
        columns["effective_cost"].append(line.effective_cost)
        columns["currency"].append(line.currency)
        columns["tags_json"].append(line.tags_json)
    data.bill = pa.Table.from_pydict(columns, schema=BILL_SCHEMA)
    return data


def focus_lines(
    path: Path, data: SourceData, progress: Callable[[int], None] | None = None
) -> Iterator[FocusLine]:
    """Every line of a FOCUS CSV file that passes the checks; lines left out are counted in ``data``."""
    source = str(path)
    fh = open_text(path, "utf-8-sig")
    with fh:
        reader = csv_dict_reader(fh)
        try:
            header = [h.strip() for h in reader.fieldnames or []]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise SpecError(source, [f"line 1: not a CSV header: {exc}"]) from None
        reader.fieldnames = header  # the rows are keyed by the names as read, blanks around them dropped
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise SpecError(
                source,
                [f"line 1: missing FOCUS column(s) {', '.join(missing)}; a FOCUS 1.0+ cost and usage file "
                 f"needs {', '.join(REQUIRED)}"],
            )  # fmt: skip
        for name in header:
            if name not in FOCUS_COLUMNS:
                data.skip(f"column {name[:60]!r} is not a FOCUS column (ignored)")
        region_col = next((c for c in ("RegionId", "Region", "RegionName") if c in header), None)
        try:
            for number, row in enumerate(reader, start=2):
                line = _line(row, number, source, region_col, data)
                if line is not None:
                    yield line
                if number % 65536 == 0:
                    data.count_rows(number)
                    if progress is not None:  # the file's position (tell() is off while it is iterated)
                        progress(fh.buffer.raw.tell() if hasattr(fh.buffer, "raw") else 0)
        except csv.Error as exc:
            raise SpecError(source, [f"line {reader.reader.line_num}: not valid CSV: {exc}"]) from None
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None


def _line(
    row: dict[str, Any], number: int, source: str, region_col: str | None, data: SourceData
) -> FocusLine | None:
    where = f"line {number}"
    if None in row or any(v is None for v in row.values()):
        raise SpecError(source, [f"{where}: the number of fields differs from the header (truncated?)"])
    currency = row["BillingCurrency"].strip()
    if currency not in ISO_4217:
        raise SpecError(
            source,
            [f"{where}, column BillingCurrency: {short(currency)} is not an ISO 4217 currency code "
             "(such as USD, EUR, JPY, KRW)"],
        )  # fmt: skip
    start = parse_naive_utc(row["ChargePeriodStart"], source, f"{where}, column ChargePeriodStart", TIME_HINT)
    end = parse_naive_utc(row["ChargePeriodEnd"], source, f"{where}, column ChargePeriodEnd", TIME_HINT)
    if start is None or end is None:
        raise SpecError(source, [f"{where}: ChargePeriodStart and ChargePeriodEnd are required"])
    if end < start:
        data.skip("bill line whose charge period ends before it starts")
        return None
    category = (row.get("PricingCategory") or "").strip()
    if not category and (row.get("CommitmentDiscountId") or "").strip():
        category = "Commitment-Based"
    if category and category not in PRICING_CATEGORIES:
        raise SpecError(
            source,
            [
                f"{where}, column PricingCategory: {short(category)}; allowed: "
                + ", ".join(PRICING_CATEGORIES)
            ],
        )
    charge = (row.get("ChargeCategory") or "").strip()
    line = FocusLine(
        line=number,
        start=start,
        end=end,
        pricing_category=category or None,
        region=((row.get(region_col) or "").strip() or None) if region_col else None,
        billed_cost=_cost(row["BilledCost"], source, f"{where}, column BilledCost", charge),
        effective_cost=_cost(row["EffectiveCost"], source, f"{where}, column EffectiveCost", charge),
        currency=currency,
        tags=_tags(row.get("Tags") or "", source, f"{where}, column Tags"),
        cells=row,
    )
    data.saw(end)
    return line


def read_gcp_export(path: Path) -> SourceData:
    """GCP's standard usage cost export (see :mod:`fleetlab.spec.billing_export`) as bill lines in USD:
    billed = cost, effective = cost + credits; the SKU description stands for the SKU."""
    export = read_billing_export(path)
    data = SourceData(label=str(path), kind="gcp-billing")
    rows = export.rows
    data.bill = pa.Table.from_pydict(
        {
            "charge_start_s": [r.start.timestamp() for r in rows],
            "charge_end_s": [r.end.timestamp() for r in rows],
            "resource_id": [r.project_id or None for r in rows],
            "sku": [r.sku or None for r in rows],
            "pricing_category": [_gcp_category(r.cost_type) for r in rows],
            "region": [r.region or None for r in rows],
            "billed_cost": [r.cost_usd for r in rows],
            "effective_cost": [r.cost_usd + r.credits_usd for r in rows],
            "currency": ["USD"] * len(rows),
            "tags_json": [json.dumps(r.labels, sort_keys=True, separators=(",", ":")) if r.labels else None
                          for r in rows],
        },
        schema=BILL_SCHEMA,
    )  # fmt: skip
    data.saw(*(r.end.timestamp() for r in rows))
    return data


def _gcp_category(cost_type: str) -> str | None:
    return "Commitment-Based" if "commit" in cost_type.lower() else None
