"""GPU models fleetlab knows, with the facts placement and reports need.

Memory figures follow NVIDIA datasheets (see README "Sources"); ``product`` is the label GPU Feature
Discovery puts in ``nvidia.com/gpu.product``. The Alibaba 2023 trace's own model codes (P100, V100M16,
V100M32, A10, G2, G3) are included so its node lists load unchanged; G2/G3 are undisclosed internal GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    """One GPU model: name as written in scenarios, memory per GPU (None where undisclosed), GFD label."""

    name: str
    memory_gib: float | None
    product: str


_MODELS: tuple[GpuModel, ...] = (
    # K80: GFD sees each of the board's two GK210 GPUs (datasheet: 24 GB per board, 12 GB per GPU)
    GpuModel("K80", 12, "Tesla-K80"),
    GpuModel("P40", 24, "Tesla-P40"),  # NVIDIA Tesla P40 datasheet: 24 GB GDDR5
    GpuModel("P100", 16, "Tesla-P100-PCIE-16GB"),
    GpuModel("V100", 16, "Tesla-V100-SXM2-16GB"),
    GpuModel("V100-32GB", 32, "Tesla-V100-SXM2-32GB"),
    GpuModel("V100M16", 16, "Tesla-V100-SXM2-16GB"),
    GpuModel("V100M32", 32, "Tesla-V100-SXM2-32GB"),
    GpuModel("T4", 16, "Tesla-T4"),
    GpuModel("A10", 24, "NVIDIA-A10"),
    GpuModel("A10G", 24, "NVIDIA-A10G"),  # AWS EC2 G5 instance page: 24 GB per A10G
    GpuModel("L4", 24, "NVIDIA-L4"),
    GpuModel("L40S", 48, "NVIDIA-L40S"),
    GpuModel("A100-40GB", 40, "NVIDIA-A100-SXM4-40GB"),
    GpuModel("A100-80GB", 80, "NVIDIA-A100-SXM4-80GB"),
    GpuModel("H100", 80, "NVIDIA-H100-80GB-HBM3"),
    GpuModel("H100-PCIe", 80, "NVIDIA-H100-PCIe"),
    GpuModel("H100-NVL", 94, "NVIDIA-H100-NVL"),
    GpuModel("H20", 96, "NVIDIA-H20"),  # NVIDIA H20 product brief: 96 GB HBM3
    GpuModel("GH200", 96, "NVIDIA-GH200-480GB"),  # GH200 Grace Hopper datasheet: 96 GB HBM3 (480 GB LPDDR5X)
    GpuModel("GH200-144GB", 144, "NVIDIA-GH200-144G-HBM3e"),  # same datasheet, HBM3e variant
    GpuModel("H200", 141, "NVIDIA-H200"),
    GpuModel("B200", 180, "NVIDIA-B200"),
    GpuModel("G2", None, "G2"),
    GpuModel("G3", None, "G3"),
)

GPU_MODELS: dict[str, GpuModel] = {m.name: m for m in _MODELS}


def known_gpu_models() -> list[str]:
    """Names accepted for ``gpu_model``, for error messages."""
    return sorted(GPU_MODELS)


def check_gpu_model(name: str) -> str:
    """``name`` if it is a known GPU model; otherwise the ValueError every spec field gives for it."""
    if name not in GPU_MODELS:
        raise ValueError(f"unknown GPU model {name!r}; known models: {', '.join(known_gpu_models())}")
    return name
