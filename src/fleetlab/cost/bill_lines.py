"""What a bill line is, in the categories the estimate is compared in, and how many GPU-hours it bills.

Categories: gpu, compute (instance cores and memory, or a whole non-GPU instance), storage (disks, object
storage, snapshots), egress (internet and inter-zone/region transfer), license (OS images and software
licences billed apart from the instance), tax, other. A GCP export line is classed by its SKU description
(the GPU is its own SKU there); a FOCUS line by its charge category, service category, description and the
instance type it names: an AWS, Azure or OCI GPU instance is billed as one line, which is GPU in full (the
ledger counts such nodes the same way, ``price_split: bundled``).

GPU-hours of a line: its usage in hours (seconds / 3600) times the instance's GPUs when it bills a whole
instance; a GCP GPU SKU's usage is already per GPU. None when the unit or the GPU count is unknown.
"""

from __future__ import annotations

import re
from functools import cache

from fleetlab.model.gpu_products import model_for_instance_type
from fleetlab.spec.billing_export import BillRow
from fleetlab.spec.catalog import CLOUDS, KNOWN_GPU_COUNTS, builtin_catalog

_STORAGE = ("pd capacity", "storage pd", "hyperdisk", "snapshot", "standard storage", "nearline", "coldline",
            "local ssd", "filestore", "image storage", "archive storage", "ebs", "volume", "managed disk",
            "block storage", "gb-mo")  # fmt: skip
_EGRESS = ("egress", "inter zone", "inter-zone", "inter region", "inter-region", "data transfer", "download",
           "internet", "datatransfer", "interaz")  # fmt: skip
_LICENSE = ("licens", "red hat", "rhel", "windows server", "suse", "sles", "ubuntu pro")
#: Usage units in hours per unit (case-insensitive); anything else leaves GPU-hours unknown.
HOURS_PER_UNIT = {
    "seconds": 1 / 3600, "second": 1 / 3600, "s": 1 / 3600,
    "hour": 1.0, "hours": 1.0, "h": 1.0, "hr": 1.0, "hrs": 1.0, "1 hour": 1.0, "gpu hours": 1.0,
    "gpu hour": 1.0,
}  # fmt: skip
_OCI_GPUS = re.compile(r"^(?:BM|VM)\.GPU[\w.-]*\.(\d+)$")


@cache
def _catalog_gpus() -> dict[str, int]:
    out: dict[str, int] = {}
    for cloud in CLOUDS:
        for offer in builtin_catalog(cloud).offers:
            out[offer.instance_type] = max(out.get(offer.instance_type, 0), offer.gpus)
    return out


def instance_gpus(instance_type: str) -> int | None:
    """GPUs of an instance type or OCI shape: the instance pages' counts, the built-in catalogs, the shape's
    last number (``BM.GPU.H100.8``); 0 for a type the catalogs hold without GPUs; None when unknown."""
    if not instance_type:
        return None
    if instance_type in KNOWN_GPU_COUNTS:
        return KNOWN_GPU_COUNTS[instance_type]
    oci = _OCI_GPUS.match(instance_type)
    if oci:
        return int(oci.group(1))
    return _catalog_gpus().get(instance_type)


def _is_gpu_instance(instance_type: str) -> bool:
    gpus = instance_gpus(instance_type)
    if gpus is not None:
        return gpus > 0
    return bool(instance_type) and model_for_instance_type(instance_type) is not None


def category(row: BillRow) -> str:
    """The category of one bill line."""
    if row.cost_type == "tax":
        return "tax"
    sku = row.sku.lower()
    if " gpu" in sku or sku.startswith("gpu") or "nvidia" in sku:
        return "gpu"
    if any(word in sku for word in _LICENSE):
        return "license"
    if any(word in sku for word in _STORAGE) or row.service_category == "Storage":
        return "storage"
    if any(word in sku for word in _EGRESS):
        return "egress"
    if row.instance_type:
        return "gpu" if _is_gpu_instance(row.instance_type) else "compute"
    if row.service == "Compute Engine" and ("core" in sku or "ram" in sku or "instance" in sku):
        return "compute"
    return "other"


def gpu_hours(row: BillRow) -> float | None:
    """The GPU-hours a GPU line bills (see the module docstring), or None when they cannot be told."""
    scale = HOURS_PER_UNIT.get(row.usage_unit.strip().lower())
    if row.usage_amount is None or scale is None:
        return None
    hours = row.usage_amount * scale
    if not row.instance_type or "gpu" in row.usage_unit.lower():
        return hours  # a GPU SKU (GCP) or a unit already per GPU
    gpus = instance_gpus(row.instance_type)
    return None if gpus is None else hours * gpus
