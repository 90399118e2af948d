"""The objects NVIDIA's GPU DRA driver publishes (``NVIDIA/k8s-dra-driver-gpu``), for scenarios and tests.

* DeviceClasses ``gpu.nvidia.com`` (``device.attributes['gpu.nvidia.com'].type == 'gpu'``) and
  ``mig.nvidia.com`` (``... .type == 'mig'``), as the driver's Helm chart installs them.
* One ResourceSlice per node (pool = node name), a device ``gpu-<minor>`` per GPU with the attributes of
  ``cmd/gpu-kubelet-plugin/deviceinfo.go`` (``GetDevice``): type, uuid, productName (the NVML name), brand,
  architecture, cudaComputeCapability, driverVersion, cudaDriverVersion (versions), pcieBusID; capacity
  ``memory``.
* With ``partitionable=True`` (KEP-4815 partitionable devices, ``cmd/gpu-kubelet-plugin/partitions.go``): a
  counter set ``gpu-<minor>-counter-set`` per GPU in a second slice, holding ``memory`` and one counter per
  memory slice (``memory-slice-0`` .. ``-7``); the full GPU consumes all of them, each MIG placement (from
  NVIDIA's MIG geometry, ``data/mig_profiles.json``) consumes its memory slices and its share of memory, as
  a device ``gpu-<minor>-mig-<profileId>-<start>-<size>`` of type ``mig`` with its ``profile``. The driver
  also counts streaming multiprocessors and engines from NVML; fleetlab's MIG table has compute slices, not
  SM counts, so the compute dimension is a ``compute-slices`` counter (7 per GPU) instead.
* uuid and pcieBusID are synthetic but stable (derived from node name and minor).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from fleetlab.model.dra import DeviceClass, ResourceSlice
from fleetlab.model.gpus import GPU_MODELS
from fleetlab.model.mig import COMPUTE_SLICES, MEMORY_SLICES, MigLayoutError, profiles

__all__ = ["DRIVER", "NvidiaGpu", "device_classes", "node_slices"]

DRIVER = "gpu.nvidia.com"
_UUID_NAMESPACE = uuid.UUID("6d0d9c1a-6c4b-4e67-9a6e-0f1e2d3c4b5a")


@dataclass(frozen=True)
class NvidiaGpu:
    """What the driver reads from NVML for one GPU model."""

    product_name: str
    architecture: str
    compute_capability: str


#: NVML device names, architectures and compute capabilities (NVIDIA CUDA GPUs page, datasheets).
NVML: dict[str, NvidiaGpu] = {
    "T4": NvidiaGpu("Tesla T4", "Turing", "7.5.0"),
    "V100": NvidiaGpu("Tesla V100-SXM2-16GB", "Volta", "7.0.0"),
    "A10": NvidiaGpu("NVIDIA A10", "Ampere", "8.6.0"),
    "A10G": NvidiaGpu("NVIDIA A10G", "Ampere", "8.6.0"),
    "L4": NvidiaGpu("NVIDIA L4", "Ada Lovelace", "8.9.0"),
    "L40S": NvidiaGpu("NVIDIA L40S", "Ada Lovelace", "8.9.0"),
    "A100-40GB": NvidiaGpu("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0"),
    "A100-80GB": NvidiaGpu("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0"),
    "H100": NvidiaGpu("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0"),
    "H100-NVL": NvidiaGpu("NVIDIA H100 NVL", "Hopper", "9.0.0"),
    "H200": NvidiaGpu("NVIDIA H200", "Hopper", "9.0.0"),
    "B200": NvidiaGpu("NVIDIA B200", "Blackwell", "10.0.0"),
}


def device_classes() -> list[DeviceClass]:
    """The two DeviceClasses the driver's chart installs."""
    out = []
    for kind in ("gpu", "mig"):
        expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
        spec = {"selectors": [{"cel": {"expression": expression}}]}
        out.append(DeviceClass.model_validate({"metadata": {"name": f"{kind}.nvidia.com"}, "spec": spec}))
    return out


def _attrs(model: str, node: str, minor: int, driver_version: str, cuda: str) -> dict[str, Any]:
    info = NVML[model]
    return {
        "type": {"string": "gpu"},
        "uuid": {"string": f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'{node}/{minor}')}"},
        "productName": {"string": info.product_name},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": info.architecture},
        "cudaComputeCapability": {"version": info.compute_capability},
        "driverVersion": {"version": driver_version},
        "cudaDriverVersion": {"version": cuda},
        "pcieBusID": {"string": f"0000:{0x18 + 0x10 * minor:02x}:00.0"},
    }


def _counters(memory_gib: float, slices: range) -> dict[str, dict[str, str]]:
    out = {"memory": {"value": f"{int(memory_gib)}Gi"}}
    out.update({f"memory-slice-{i}": {"value": "1"} for i in slices})
    return out


def node_slices(
    node: str,
    gpu_model: str,
    gpus: int,
    partitionable: bool = False,
    driver_version: str = "570.133.20",
    cuda_version: str = "12.8.0",
) -> list[ResourceSlice]:
    """The ResourceSlice(s) the driver's kubelet plugin publishes for one node."""
    if gpu_model not in NVML:
        raise ValueError(
            f"no NVIDIA DRA driver attributes for GPU model {gpu_model!r}; known: {', '.join(NVML)}"
        )
    memory = GPU_MODELS[gpu_model].memory_gib or 0
    mig = _mig_profiles(gpu_model) if partitionable else []
    per_gpu: list[list[dict[str, Any]]] = []
    counter_sets: list[dict[str, Any]] = []
    for minor in range(gpus):
        attrs = _attrs(gpu_model, node, minor, driver_version, cuda_version)
        full: dict[str, Any] = {"name": f"gpu-{minor}", "attributes": attrs}
        full["capacity"] = {"memory": {"value": f"{int(memory)}Gi"}}
        mine = [full]
        if mig:
            set_name = f"gpu-{minor}-counter-set"
            everything = {
                **_counters(memory, range(MEMORY_SLICES)),
                "compute-slices": {"value": str(COMPUTE_SLICES)},
            }
            counter_sets.append({"name": set_name, "counters": everything})
            full["consumesCounters"] = [{"counterSet": set_name, "counters": everything}]
            for profile_id, name, compute, width, gib, starts in mig:
                mig_attrs = {
                    **attrs,
                    "type": {"string": "mig"},
                    "profile": {"string": name},
                    "parentUUID": attrs["uuid"],
                }
                for start in starts:
                    use = {
                        **_counters(gib, range(start, start + width)),
                        "compute-slices": {"value": str(compute)},
                    }
                    mine.append({
                        "name": f"gpu-{minor}-mig-{profile_id}-{start}-{width}",
                        "attributes": mig_attrs,
                        "capacity": {"memory": {"value": f"{gib}Gi"}},
                        "consumesCounters": [{"counterSet": set_name, "counters": use}],
                    })  # fmt: skip
        per_gpu.append(mine)
    # A slice holds at most 64 devices that consume counters: with partitions, one slice per GPU.
    groups = per_gpu if mig else [[d for mine in per_gpu for d in mine]]
    pool = {"name": node, "generation": 1, "resourceSliceCount": len(groups) + (1 if mig else 0)}
    out = [
        ResourceSlice.model_validate({
            "metadata": {"name": f"{node}-{DRIVER}-{i}"},
            "spec": {"driver": DRIVER, "pool": pool, "nodeName": node, "devices": group},
        })
        for i, group in enumerate(groups)
    ]  # fmt: skip
    if mig:
        out.append(ResourceSlice.model_validate({
            "metadata": {"name": f"{node}-{DRIVER}-counters"},
            "spec": {"driver": DRIVER, "pool": pool, "nodeName": node, "sharedCounters": counter_sets},
        }))  # fmt: skip
    return out


def _mig_profiles(gpu_model: str) -> list[tuple[int, str, int, int, int, tuple[int, ...]]]:
    """(profile id, name, compute slices, memory slices, nominal GiB, placement starts) of the plain
    profiles (media-extension variants left out: they are the same placements)."""
    try:
        table = profiles(gpu_model)
    except MigLayoutError:
        return []
    return [
        (p.profile_id, p.name, p.compute_slices, p.memory_slices, p.memory_gb, p.starts)
        for p in table.values()
        if not p.media_extensions
    ]
