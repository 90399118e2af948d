"""Performance figures per GPU model (dense tensor TFLOPS, memory bandwidth, NVLink) for runtime models.

The figures live in ``fleetlab/data/plan/gpu_specs.json`` with a source per model (see SOURCE.md there);
they drive the roofline-style runtime estimates in ``fleetlab.model.perf``, never placement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model's throughput-relevant facts (dense FP16/BF16; bandwidths in GB/s or TB/s as named)."""

    name: str
    dense_tflops: float
    memory_gb: float
    memory_bandwidth_tbps: float
    nvlink_gbps: float
    interconnect_gbps: float
    tdp_w: float
    source: str


@cache
def gpu_specs() -> dict[str, GpuSpec]:
    """Every GPU model with a performance profile, by fleetlab model name."""
    text = resources.files("fleetlab.data").joinpath("plan/gpu_specs.json").read_text(encoding="utf-8")
    table = json.loads(text)["gpus"]
    return {name: GpuSpec(name=name, **fields) for name, fields in table.items()}


@cache
def _network() -> tuple[float, dict[str, float]]:
    text = resources.files("fleetlab.data").joinpath("plan/instance_network.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return float(data["default_gbps"]), {k: float(v) for k, v in data["gbps"].items()}


def instance_network_gbps(instance_type: str) -> float | None:
    """All-NIC bandwidth of an instance type in Gbit/s, or None where fleetlab has no figure."""
    return _network()[1].get(instance_type)


def default_network_gbps() -> float:
    """Network bandwidth assumed for instance types without a figure (Gbit/s)."""
    return _network()[0]


def faster_models(name: str) -> list[str]:
    """Models with more dense TFLOPS than ``name`` (then more bandwidth), slowest first."""
    specs = gpu_specs()
    base = specs[name]
    key = (base.dense_tflops, base.memory_bandwidth_tbps)
    up = [s for s in specs.values() if (s.dense_tflops, s.memory_bandwidth_tbps) > key]
    return [s.name for s in sorted(up, key=lambda s: (s.dense_tflops, s.memory_bandwidth_tbps))]
