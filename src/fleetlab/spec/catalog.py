"""Read SkyPilot-format price catalogs (CSV) into offers: one instance type in one region or zone.

The format is the one SkyPilot reads at run time (skypilot-org/skypilot-catalog ``catalogs/<v>/<cloud>/
vms.csv``). Columns are read by header name because their order differs by cloud. GCP prices a GPU machine
in two rows — the host machine (vCPU + memory) and an accelerator row with an empty InstanceType pricing
that many GPUs in the same zone — and SkyPilot adds the two; so does this reader. A blank Price or
SpotPrice means "no such offer". Suspicious data is kept but warned about (file and line); data that cannot
be read as prices is a SpecError naming file, line and column.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fleetlab.model.limits import MAX_GPUS_PER_NODE, MAX_PRICE_PER_HOUR, MAX_QUANTITY
from fleetlab.spec.bounded import csv_table, read_text_file
from fleetlab.spec.errors import SpecError

CLOUDS = ("aws", "gcp", "azure")
REQUIRED_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "SpotPrice",
    "Region",
)
NUMERIC_COLUMNS = ("AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice")
BUILTIN_FILES = {"aws": "aws.csv", "gcp": "gcp.csv", "azure": "azure.csv"}

#: Catalog accelerator names -> fleetlab GPU models (model/gpus.py). H100-MEGA is an H100 on an A3 Mega host.
GPU_NAMES = {
    "A100": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100",
    "H100-MEGA": "H100",
    "H200": "H200",
    "B200": "B200",
    "L4": "L4",
    "T4": "T4",
    "V100": "V100",
    "V100-32GB": "V100-32GB",
    "P100": "P100",
    "A10": "A10",
    "A10G": "A10G",
    "L40S": "L40S",
}

# GCP accelerator-optimized machine families and the accelerator they carry (SkyPilot's
# gcp_catalog._ACC_INSTANCE_TYPE_DICTS); the GPU count is the "-<N>g" suffix.
_GCP_FAMILIES = {
    "a2-highgpu": "A100",
    "a2-megagpu": "A100",
    "a2-ultragpu": "A100-80GB",
    "a3-highgpu": "H100",
    "a3-edgegpu": "H100",
    "a3-megagpu": "H100-MEGA",
    "a3-ultragpu": "H200",
    "a4-highgpu": "B200",
}
_GCP_G2_L4 = {"g2-standard-4": 1, "g2-standard-8": 1, "g2-standard-12": 1, "g2-standard-16": 1}
_GCP_G2_L4.update({"g2-standard-24": 2, "g2-standard-32": 1, "g2-standard-48": 4, "g2-standard-96": 8})

#: GPUs per instance from the providers' instance-type pages, for types whose catalog count is known to be off
#: or must be checked (Azure v6 lists ND96isr_H100_v5 with 12; the ND H100 v5 series has 8 H100 per VM).
KNOWN_GPU_COUNTS = {
    "p3.2xlarge": 1,
    "p3.8xlarge": 4,
    "p3.16xlarge": 8,
    "p3dn.24xlarge": 8,
    "p4d.24xlarge": 8,
    "p4de.24xlarge": 8,
    "p5.4xlarge": 1,
    "p5.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p6-b200.48xlarge": 8,
    "g4dn.xlarge": 1,
    "g5.4xlarge": 1,
    "g5.12xlarge": 4,
    "g6.2xlarge": 1,
    "g6.24xlarge": 4,
    "g6e.xlarge": 1,
    "g6e.24xlarge": 4,
    "Standard_ND96asr_v4": 8,
    "Standard_ND96amsr_A100_v4": 8,
    "Standard_ND96isr_H100_v5": 8,
    "Standard_NC24ads_A100_v4": 1,
    "Standard_NC48ads_A100_v4": 2,
    "Standard_NC96ads_A100_v4": 4,
    "Standard_NC40ads_H100_v5": 1,
    "Standard_NC80adis_H100_v5": 2,
    "Standard_NV36ads_A10_v5": 1,
    "Standard_NV36adms_A10_v5": 1,
    "Standard_NV72ads_A10_v5": 2,
}


def gcp_machine_gpus(instance_type: str) -> tuple[str, int] | None:
    """(catalog accelerator name, count) a GCP accelerator-optimized machine type carries, else None."""
    if instance_type in _GCP_G2_L4:
        return "L4", _GCP_G2_L4[instance_type]
    match = re.fullmatch(r"([a-z0-9]+-[a-z]+)-(\d+)g(-nolssd)?", instance_type)
    if match and match.group(1) in _GCP_FAMILIES:
        return _GCP_FAMILIES[match.group(1)], int(match.group(2))
    return None


@dataclass(frozen=True)
class Offer:
    """One instance type in one region (and zone): shape and hourly prices (None: not offered)."""

    instance_type: str
    region: str
    zone: str
    accelerator: str | None
    gpus: int
    vcpus: float | None
    memory_gib: float | None
    gpu_memory_mib: int | None
    price: float | None
    spot_price: float | None
    source: str
    line: int
    #: Every line the offer was built from (a GCP machine: its host row and its accelerator row).
    lines: tuple[int, ...] = ()

    def price_for(self, capacity_type: str) -> float | None:
        """The hourly price of this offer for on-demand or spot capacity."""
        return self.spot_price if capacity_type == "spot" else self.price


@dataclass
class Catalog:
    """All offers of one catalog file, with the warnings found while reading it (by line)."""

    source: str
    offers: list[Offer]
    warnings: dict[int, list[str]] = field(default_factory=dict)

    def all_warnings(self) -> list[str]:
        """Every warning, in file order."""
        return [w for line in sorted(self.warnings) for w in self.warnings[line]]

    def warn(self, line: int, text: str) -> None:
        """Record a warning about one line of the file."""
        self.warnings.setdefault(line, []).append(f"{self.source}, line {line}: {text}")

    def instance_types(self) -> list[str]:
        """Distinct instance types, sorted."""
        return sorted({o.instance_type for o in self.offers})


#: The largest value each numeric column may hold (model.limits): a larger one is a corrupt row.
COLUMN_LIMITS = {
    "AcceleratorCount": float(MAX_GPUS_PER_NODE),
    "vCPUs": MAX_QUANTITY / 1000,  # milli-CPU must fit 2**53
    "MemoryGiB": MAX_QUANTITY / 2**30,  # bytes must fit 2**53
    "Price": MAX_PRICE_PER_HOUR,
    "SpotPrice": MAX_PRICE_PER_HOUR,
}


def _number(source: str, line: int, column: str, text: str) -> float | None:
    text = text.strip()
    if text == "":
        return None
    hi = COLUMN_LIMITS[column]
    try:
        value = float(text)
    except ValueError:
        raise SpecError(source, [f"line {line}, column {column}: {text[:40]!r} is not a number"]) from None
    if not (math.isfinite(value) and 0 <= value <= hi):
        raise SpecError(
            source, [f"line {line}, column {column}: {text[:40]!r} is outside the allowed 0..{hi:g}"]
        )
    return value


def _gpu_memory_mib(info: str) -> int | None:
    """Per-GPU memory from a GpuInfo string (a Python-dict literal), if present."""
    if not info.startswith("{"):
        return None
    try:
        data = ast.literal_eval(info)
        size = data["Gpus"][0]["MemoryInfo"]["SizeInMiB"]
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None
    return int(size) if isinstance(size, int | float) else None


@dataclass(frozen=True)
class _Row:
    line: int
    instance_type: str
    accelerator: str | None
    count: int
    vcpus: float | None
    memory_gib: float | None
    gpu_memory_mib: int | None
    price: float | None
    spot: float | None
    region: str
    zone: str


def _read_rows(source: str, text: str) -> tuple[list[_Row], Catalog]:
    header, reader = csv_table(source, text)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise SpecError(
            source,
            [
                f"line 1: missing column(s) {', '.join(missing)} "
                f"(a SkyPilot catalog needs {', '.join(REQUIRED_COLUMNS)}; "
                "AvailabilityZone and GpuInfo are optional)"
            ],
        )
    catalog = Catalog(source, [])
    rows: list[_Row] = []
    for index, raw in enumerate(reader):
        line = index + 2
        values = {c: _number(source, line, c, raw.get(c) or "") for c in NUMERIC_COLUMNS}
        region = (raw.get("Region") or "").strip()
        if not region:
            catalog.warn(line, "no Region; row skipped")
            continue
        price, spot = values["Price"], values["SpotPrice"]
        if price is not None and spot is not None and spot > price:
            what = (raw.get("InstanceType") or "").strip() or f"{raw.get('AcceleratorName')} accelerator row"
            where = (raw.get("AvailabilityZone") or "").strip() or region
            catalog.warn(
                line, f"{what} in {where}: spot price {spot:g} is above the on-demand price {price:g}"
            )
        count = values["AcceleratorCount"]
        if count is not None and count != int(count):
            catalog.warn(line, f"fractional AcceleratorCount {count}; treated as {int(count)} whole GPU(s)")
        rows.append(
            _Row(
                line=line,
                instance_type=(raw.get("InstanceType") or "").strip(),
                accelerator=(raw.get("AcceleratorName") or "").strip() or None,
                count=int(count or 0),
                vcpus=values["vCPUs"],
                memory_gib=values["MemoryGiB"],
                gpu_memory_mib=_gpu_memory_mib((raw.get("GpuInfo") or "").strip()),
                price=values["Price"],
                spot=values["SpotPrice"],
                region=region,
                zone=(raw.get("AvailabilityZone") or "").strip(),
            )
        )
    return rows, catalog


def _add(a: float | None, b: float | None) -> float | None:
    """Host + accelerator price, to the micro-dollar the catalog is written in."""
    return None if a is None or b is None else round(a + b, 6)


def parse_catalog(source: str, text: str) -> Catalog:
    """Offers of one catalog file; GCP host rows are joined with their accelerator rows."""
    rows, catalog = _read_rows(source, text)
    accel = {(r.region, r.zone, r.accelerator, r.count): r for r in rows if not r.instance_type}
    for r in rows:
        if not r.instance_type:
            continue
        accelerator, count, price, spot, gpu_mem = r.accelerator, r.count, r.price, r.spot, r.gpu_memory_mib
        lines: tuple[int, ...] = (r.line,)
        gcp = gcp_machine_gpus(r.instance_type) if accel and r.accelerator is None else None
        if gcp is not None:
            part = accel.get((r.region, r.zone, gcp[0], gcp[1]))
            if part is None:
                catalog.warn(
                    r.line,
                    f"{r.instance_type} in {r.zone or r.region} has no {gcp[1]}x {gcp[0]} accelerator row "
                    "to add to its host price; row skipped",
                )
                continue
            accelerator, count, gpu_mem = gcp[0], gcp[1], part.gpu_memory_mib
            price, spot = _add(r.price, part.price), _add(r.spot, part.spot)
            lines = (r.line, part.line)
        known = KNOWN_GPU_COUNTS.get(r.instance_type)
        if known is not None and known != count:
            catalog.warn(
                r.line,
                f"AcceleratorCount {count} disagrees with {r.instance_type}, which has {known} GPU(s); "
                f"using {known}",
            )
            count = known
        if (price == 0 or spot == 0) and count:
            catalog.warn(
                r.line,
                f"{r.instance_type} in {r.zone or r.region}: a price of 0 for a GPU machine is not a price; "
                "that capacity type is treated as not offered (leave the cell blank for that)",
            )
            price, spot = price or None, spot or None
        if price is not None and spot is not None and spot > price and len(lines) > 1:
            catalog.warn(
                r.line,
                f"{r.instance_type} in {r.zone or r.region}: spot price {spot:g} is above the "
                f"on-demand price {price:g}",
            )
        catalog.offers.append(
            Offer(
                instance_type=r.instance_type,
                region=r.region,
                zone=r.zone,
                accelerator=accelerator,
                gpus=count if accelerator else 0,
                vcpus=r.vcpus,
                memory_gib=r.memory_gib,
                gpu_memory_mib=gpu_mem,
                price=price,
                spot_price=spot,
                source=source,
                line=r.line,
                lines=lines,
            )
        )
    return catalog


def read_catalog(path: str | Path) -> Catalog:
    """A user's catalog file."""
    file = Path(path)
    return parse_catalog(str(file), read_text_file(file, "catalog file not found"))


_BUILTIN: dict[str, Catalog] = {}


def snapshot_date() -> str:
    """The date the built-in catalogs were copied (the heading of data/catalogs/SOURCE.md)."""
    text = (resources.files("fleetlab") / "data" / "catalogs" / "SOURCE.md").read_text(encoding="utf-8")
    found = re.search(r"snapshot taken (\d{4}-\d{2}-\d{2})", text)
    return found.group(1) if found else "unknown"


def price_date(catalog: Catalog) -> str:
    """When a catalog's prices were taken: the snapshot date for the built-in ones; a user's file has none."""
    return snapshot_date() if catalog.source.startswith("<built-in ") else "as of the file"


def builtin_catalog(cloud: str) -> Catalog:
    """The snapshot shipped in the package (see data/catalogs/SOURCE.md), read once."""
    if cloud not in BUILTIN_FILES:
        raise SpecError("<built-in catalogs>", [f"unknown cloud {cloud!r}; known: {', '.join(CLOUDS)}"])
    if cloud not in _BUILTIN:
        name = BUILTIN_FILES[cloud]
        text = (resources.files("fleetlab") / "data" / "catalogs" / name).read_text(encoding="utf-8")
        _BUILTIN[cloud] = parse_catalog(f"<built-in {cloud} catalog {name}>", text)
    return _BUILTIN[cloud]
