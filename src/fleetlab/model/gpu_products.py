"""GPU product strings as real nodes carry them, mapped to fleetlab's GPU models.

GPU Feature Discovery writes ``nvidia.com/gpu.product`` from the NVML device name with spaces turned into
``-`` (``NVIDIA A100-SXM4-40GB`` -> ``NVIDIA-A100-SXM4-40GB``; drivers before R470 say ``A100-SXM4-40GB``
and ``Tesla-T4``). Under MIG with the ``single`` strategy it appends ``-MIG-<profile>``; under time-slicing
or MPS with ``renameByDefault: false`` it appends ``-SHARED``. The clouds label GPU machines themselves
(GKE ``cloud.google.com/gke-accelerator``, Karpenter ``karpenter.k8s.aws/instance-gpu-name``), which is
what recognises a GPU node whose device plugin never ran. The table is in docs/kube.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleetlab.model.gpus import GPU_MODELS

#: Product strings that differ from the model's own ``product`` (older drivers, PCIe boards, 80 GB forms).
PRODUCT_ALIASES: dict[str, str] = {
    "A100-SXM4-40GB": "A100-40GB",
    "A100-PCIE-40GB": "A100-40GB",
    "NVIDIA-A100-PCIE-40GB": "A100-40GB",
    "A100-SXM4-80GB": "A100-80GB",
    "A100-SXM-80GB": "A100-80GB",
    "NVIDIA-A100-80GB-PCIe": "A100-80GB",
    "NVIDIA-A100-SXM-80GB": "A100-80GB",
    "Tesla-V100-PCIE-16GB": "V100",
    "Tesla-V100-SXM2-16GB": "V100",
    "Tesla-V100-PCIE-32GB": "V100-32GB",
    "Tesla-V100-SXM2-32GB": "V100-32GB",
    "Tesla-P100-SXM2-16GB": "P100",
    "NVIDIA-T4": "T4",
    "NVIDIA-H100-PCIe": "H100-PCIe",
    "NVIDIA-H100-80GB-HBM3": "H100",
    "NVIDIA-H100-SXM5-80GB": "H100",
    "NVIDIA-H200-NVL": "H200",
    "NVIDIA-H200-141GB-HBM3e": "H200",
}

#: GKE ``cloud.google.com/gke-accelerator`` values (GKE "About GPUs" machine-type table).
GKE_ACCELERATORS: dict[str, str] = {
    "nvidia-tesla-k80": "K80",
    "nvidia-tesla-p100": "P100",
    "nvidia-tesla-v100": "V100",
    "nvidia-tesla-t4": "T4",
    "nvidia-l4": "L4",
    "nvidia-tesla-a100": "A100-40GB",
    "nvidia-a100-80gb": "A100-80GB",
    "nvidia-h100-80gb": "H100",
    "nvidia-h100-mega-80gb": "H100",
    "nvidia-h200-141gb": "H200",
    "nvidia-b200": "B200",
}

#: Karpenter ``karpenter.k8s.aws/instance-gpu-name`` values (lower-case EC2 GPU names).
KARPENTER_GPU_NAMES: dict[str, str] = {
    "k80": "K80",
    "v100": "V100",
    "t4": "T4",
    "a10g": "A10G",
    "l4": "L4",
    "l40s": "L40S",
    "a100": "A100-40GB",
    "h100": "H100",
    "h200": "H200",
    "b200": "B200",
}

#: Instance-type families that are GPU machines, with their GPU model (EC2, Compute Engine, Azure docs).
INSTANCE_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"p2\.", "K80"),
    (r"p3dn\.", "V100-32GB"),
    (r"p3\.", "V100"),
    (r"g4dn\.", "T4"),
    (r"g5\.", "A10G"),
    (r"g6\.", "L4"),
    (r"g6e\.", "L40S"),
    (r"p4d\.", "A100-40GB"),
    (r"p4de\.", "A100-80GB"),
    (r"p5\.", "H100"),
    (r"p5e\.|p5en\.", "H200"),
    (r"p6-b200\.", "B200"),
    (r"a2-(highgpu|megagpu)-", "A100-40GB"),
    (r"a2-ultragpu-", "A100-80GB"),
    (r"a3-(highgpu|megagpu|edgegpu)-", "H100"),
    (r"a3-ultragpu-", "H200"),
    (r"a4-highgpu-", "B200"),
    (r"g2-standard-", "L4"),
    (r"Standard_NC\d+as_T4_v3", "T4"),
    (r"Standard_NC\d+s_v3", "V100"),
    (r"Standard_NV\d+ads_A10_v5", "A10"),
    (r"Standard_NC\d+ads_A10_v4", "A10"),
    (r"Standard_ND96asr_v4", "A100-40GB"),
    (r"Standard_(NC\d+ads_A100_v4|ND96amsr_A100_v4)", "A100-80GB"),
    (r"Standard_(NC\d+ads_H100_v5|ND96isr_H100_v5)", "H100"),
    (r"Standard_ND96isr_H200_v5", "H200"),
)
_FAMILIES = tuple((re.compile(pattern), model) for pattern, model in INSTANCE_FAMILIES)

_BY_PRODUCT: dict[str, str] = {}
for _name, _model in GPU_MODELS.items():
    _BY_PRODUCT.setdefault(_model.product, _name)
_BY_PRODUCT.update(PRODUCT_ALIASES)
_BY_FOLDED = {product.upper(): name for product, name in _BY_PRODUCT.items()}


@dataclass(frozen=True)
class GpuProduct:
    """One ``nvidia.com/gpu.product`` value taken apart: the board, its model, MIG profile, sharing."""

    label: str
    base: str
    model: str | None
    mig_profile: str | None
    shared: bool


def parse_product(label: str) -> GpuProduct:
    """The product with GFD's ``-SHARED`` and ``-MIG-<profile>`` suffixes split off and the model found
    (exact string first, then case-insensitively, then with a ``NVIDIA-``/``Tesla-`` prefix swapped)."""
    shared = label.endswith("-SHARED")
    base = label.removesuffix("-SHARED")
    mig: str | None = None
    if "-MIG-" in base:
        base, mig = base.split("-MIG-", 1)
    return GpuProduct(label, base, model_for_product(base), mig, shared)


def model_for_product(base: str) -> str | None:
    """fleetlab's model for a product string without suffixes, or None when unknown."""
    if base in _BY_PRODUCT:
        return _BY_PRODUCT[base]
    folded = base.upper()
    for candidate in (
        folded,
        "NVIDIA-" + folded.removeprefix("TESLA-"),
        "TESLA-" + folded.removeprefix("NVIDIA-"),
    ):
        if candidate in _BY_FOLDED:
            return _BY_FOLDED[candidate]
    return None


def model_for_instance_type(instance_type: str) -> str | None:
    """The GPU model of a well-known GPU instance type (``g4dn.xlarge`` -> T4), or None."""
    for pattern, model in _FAMILIES:
        if pattern.match(instance_type):
            return model
    return None
