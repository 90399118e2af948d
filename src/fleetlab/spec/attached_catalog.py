"""Prices of what a node is billed for beside its instance: disks, OS images, network egress.

The built-in file is ``fleetlab/data/catalogs/attached.csv`` (its sources in SOURCE.md there); a user's file
in the same columns replaces it. Columns: ``cloud`` (aws, gcp, azure), ``kind`` (disk, image, egress),
``name`` (gp3, pd-balanced, rhel, internet, ...), ``unit`` (GB-month for disks; instance-hour or vcpu-hour
for images; GB for egress), ``price_usd``, ``region`` (where the price was read, or ``any``) and ``source``
(the page it comes from). Every price is kept with its source, so an estimate can say where it came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from fleetlab.spec.bounded import csv_table, read_text_file
from fleetlab.spec.errors import SpecError

COLUMNS = ("cloud", "kind", "name", "unit", "price_usd", "region", "source")
UNITS = {"disk": ("GB-month",), "image": ("instance-hour", "vcpu-hour"), "egress": ("GB",)}
MAX_PRICE = 1e6


@dataclass(frozen=True)
class AttachedPrice:
    """One priced item and where its price comes from."""

    cloud: str
    kind: str
    name: str
    unit: str
    price_usd: float
    region: str
    source: str
    file: str
    line: int

    @property
    def cites(self) -> str:
        """The price with its source, for an estimate's assumptions."""
        where = f"{self.region}; {self.source}"
        return f"{self.cloud} {self.kind} {self.name}: ${self.price_usd:g} per {self.unit} ({where})"


def parse_attached_catalog(source: str, text: str) -> dict[tuple[str, str, str], AttachedPrice]:
    """Prices by (cloud, kind, name); problems name the line and column."""
    header, rows = csv_table(source, text)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise SpecError(
            source, [f"line 1: missing column(s) {', '.join(missing)}; needed: {', '.join(COLUMNS)}"]
        )
    out: dict[tuple[str, str, str], AttachedPrice] = {}
    for number, row in enumerate(rows, start=2):
        kind, unit = row["kind"].strip(), row["unit"].strip()
        if kind not in UNITS:
            raise SpecError(source, [f"line {number}, column kind: {kind!r}; allowed: {', '.join(UNITS)}"])
        if unit not in UNITS[kind]:
            raise SpecError(
                source,
                [f"line {number}, column unit: {unit!r} for a {kind}; allowed: {', '.join(UNITS[kind])}"],
            )
        try:
            price = float(row["price_usd"])
        except ValueError:
            price = math.nan
        if not 0 <= price <= MAX_PRICE:
            raise SpecError(
                source,
                [f"line {number}, column price_usd: {row['price_usd'][:40]!r}: a price 0..{MAX_PRICE:g}"],
            )
        if not row["source"].strip():
            raise SpecError(source, [f"line {number}, column source: empty; every price needs its source"])
        key = (row["cloud"].strip(), kind, row["name"].strip())
        out[key] = AttachedPrice(
            *key, unit, price, row["region"].strip(), row["source"].strip(), source, number
        )
    return out


def builtin_attached_catalog() -> dict[tuple[str, str, str], AttachedPrice]:
    """The shipped disk, image and egress prices."""
    text = (resources.files("fleetlab") / "data" / "catalogs" / "attached.csv").read_text(encoding="utf-8")
    return parse_attached_catalog("<built-in attached.csv>", text)


def read_attached_catalog(path: Path) -> dict[tuple[str, str, str], AttachedPrice]:
    """A user's price file in the same columns."""
    return parse_attached_catalog(str(path), read_text_file(path, "attached-price catalog not found"))
