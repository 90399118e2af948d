"""Read a GCP Cloud Billing standard usage cost export saved as CSV (BigQuery ``gcp_billing_export_v1_*``).

Columns are read by name, with the export's dotted field names (``service.description``, ``usage.amount``)
or the underscored names a flattening query gives (``service_description``). Repeated fields (``labels``,
``credits``) are JSON as BigQuery's TO_JSON_STRING writes them (``[{"key": "team", "value": "a"}]``,
``[{"name": ..., "amount": -1.2, "type": ...}]``); labels may also be a JSON object or ``k=v;k=v``. Costs in
another currency are converted to USD with ``currency_conversion_rate`` (currency units per USD).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from fleetlab.model.limits import (
    MAX_BILL_AMOUNT,
    MAX_CONVERSION_RATE,
    MIN_CONVERSION_RATE,
    NEGATIVE_COST_TYPES,
)
from fleetlab.spec.bounded import csv_table, json_cell, parse_timestamp, read_text_file
from fleetlab.spec.errors import SpecError

REQUIRED = (
    "service.description",
    "sku.description",
    "usage_start_time",
    "usage_end_time",
    "cost",
    "currency",
)
OPTIONAL = (
    "project.id", "labels", "credits", "cost_type", "usage.amount", "usage.unit", "location.region",
    "currency_conversion_rate", "invoice.month",
)  # fmt: skip


@dataclass(frozen=True)
class BillRow:
    """One line of a bill (this export, or a FOCUS file through ``spec.focus_bill``), cost in USD (credits
    kept apart, negative), with the currency it was billed in and the rate that converted it."""

    line: int
    service: str
    sku: str
    start: datetime
    end: datetime
    project_id: str
    labels: dict[str, str]
    cost_usd: float
    credits_usd: float
    cost_type: str
    usage_amount: float | None
    usage_unit: str
    region: str
    #: FOCUS only: ServiceCategory (Compute, Storage, Networking, ...) and the instance type the line names.
    service_category: str = ""
    instance_type: str = ""
    #: The line's own currency and the rate used to convert it (currency units per USD; 1 for USD).
    currency: str = "USD"
    rate: float = 1.0


@dataclass
class BillingExport:
    """All rows of one export file."""

    source: str
    rows: list[BillRow] = field(default_factory=list)


def _header_map(source: str, header: list[str]) -> dict[str, str]:
    present = {h.strip(): h for h in header}
    mapping: dict[str, str] = {}
    for name in (*REQUIRED, *OPTIONAL):
        for spelling in (name, name.replace(".", "_")):
            if spelling in present:
                mapping[name] = present[spelling]
                break
    missing = [n for n in REQUIRED if n not in mapping]
    if missing:
        raise SpecError(
            source,
            [
                f"line 1: missing column(s) {', '.join(missing)}; a standard usage cost export needs "
                f"{', '.join(REQUIRED)} (dotted or underscored names); optional: {', '.join(OPTIONAL)}"
            ],
        )
    return mapping


def parse_time(text: str) -> datetime:
    """An export timestamp: ISO 8601 (``2026-11-02T00:00:00Z``) or BigQuery's ``2026-11-02 00:00:00 UTC``."""
    return parse_timestamp(text)


def _labels(text: str) -> dict[str, str]:
    text = text.strip()
    if not text:
        return {}
    if text[0] in "[{":
        data = json_cell(text)
        if isinstance(data, dict):
            return {str(k): str(v) for k, v in data.items()}
        if isinstance(data, list) and all(isinstance(x, dict) and "key" in x for x in data):
            return {str(x["key"]): str(x.get("value", "")) for x in data}
        raise ValueError('expected [{"key": ..., "value": ...}, ...] or {"key": "value"}')
    pairs = [p for p in text.replace("|", ";").split(";") if p.strip()]
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"{pair!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def _credits(text: str) -> float:
    text = text.strip()
    if not text:
        return 0.0
    data = json_cell(text)
    if not isinstance(data, list) or not all(isinstance(x, dict) and "amount" in x for x in data):
        raise ValueError('expected [{"name": ..., "amount": -1.0, ...}, ...]')
    total = float(sum(float(x["amount"]) for x in data))
    if not (math.isfinite(total) and abs(total) <= MAX_BILL_AMOUNT):
        raise ValueError(
            f"the credits add up to {total:g}, outside -{MAX_BILL_AMOUNT:g}..{MAX_BILL_AMOUNT:g}"
        )
    return total


def _number(
    source: str, line: int, column: str, text: str, required: bool, lo: float, hi: float
) -> float | None:
    """A number within lo..hi from one cell (None for an empty optional one), or a SpecError naming the
    line, column, value and range."""
    if not text.strip():
        if required:
            raise SpecError(source, [f"line {line}, column {column}: empty; a number is required"])
        return None
    try:
        value = float(text)
    except ValueError:
        raise SpecError(source, [f"line {line}, column {column}: {text[:40]!r} is not a number"]) from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise SpecError(
            source, [f"line {line}, column {column}: {text[:40]!r} is outside the allowed {lo:g}..{hi:g}"]
        )
    return value


def parse_billing_export(source: str, text: str) -> BillingExport:
    """Every row of an export's CSV text; problems name the line and column."""
    header, reader = csv_table(source, text)
    columns = _header_map(source, header)
    export = BillingExport(source)

    def get(raw: dict[str, str], name: str) -> str:
        return (raw.get(columns[name]) or "") if name in columns else ""

    for index, raw in enumerate(reader):
        line = index + 2
        try:
            start, end = parse_time(get(raw, "usage_start_time")), parse_time(get(raw, "usage_end_time"))
        except ValueError:
            where = f"line {line}, column usage_start_time/usage_end_time"
            got = f"{get(raw, 'usage_start_time')!r} / {get(raw, 'usage_end_time')!r}"
            raise SpecError(
                source, [f"{where}: {got} is not a timestamp (e.g. 2026-11-02T00:00:00Z)"]
            ) from None
        if end < start:
            raise SpecError(source, [f"line {line}: usage_end_time is before usage_start_time"])
        cost = _number(source, line, "cost", get(raw, "cost"), True, -MAX_BILL_AMOUNT, MAX_BILL_AMOUNT)
        cost = cost or 0.0
        cost_type = get(raw, "cost_type").strip() or "regular"
        if cost < 0 and cost_type not in NEGATIVE_COST_TYPES:
            raise SpecError(
                source,
                [f"line {line}, column cost: {cost:g} on a {cost_type!r} line; usage never costs less than "
                 f"0 (credits go in the credits column; only {', '.join(sorted(NEGATIVE_COST_TYPES))} lines "
                 "may be negative)"],
            )  # fmt: skip
        for name, parse in (("labels", _labels), ("credits", _credits)):
            try:
                parse(get(raw, name))
            except (ValueError, TypeError) as exc:
                raise SpecError(source, [f"line {line}, column {name}: cannot be read: {exc}"]) from None
        credits = _credits(get(raw, "credits"))
        currency = get(raw, "currency").strip()
        rate = 1.0
        if currency != "USD":
            given = _number(
                source, line, "currency_conversion_rate", get(raw, "currency_conversion_rate"), False,
                0.0, MAX_CONVERSION_RATE,
            )  # fmt: skip
            if given is None or given < MIN_CONVERSION_RATE:
                raise SpecError(
                    source,
                    [
                        f"line {line}, column currency: {currency!r} needs a currency_conversion_rate of "
                        f"{MIN_CONVERSION_RATE:g}..{MAX_CONVERSION_RATE:g} (units per USD) to compare with "
                        "the USD estimate"
                    ],
                )
            rate = given
        export.rows.append(
            BillRow(
                line=line,
                service=get(raw, "service.description").strip(),
                sku=get(raw, "sku.description").strip(),
                start=start,
                end=end,
                project_id=get(raw, "project.id").strip(),
                labels=_labels(get(raw, "labels")),
                cost_usd=cost / rate,
                credits_usd=credits / rate,
                cost_type=cost_type,
                usage_amount=_number(
                    source, line, "usage.amount", get(raw, "usage.amount"), False, 0, MAX_BILL_AMOUNT**1.5
                ),
                usage_unit=get(raw, "usage.unit").strip(),
                region=get(raw, "location.region").strip(),
                currency=currency,
                rate=rate,
            )
        )
    return export


def read_billing_export(path: Path) -> BillingExport:
    """A billing export CSV file."""
    return parse_billing_export(str(path), read_text_file(path, "billing export CSV not found"))
