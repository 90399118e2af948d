"""GPU sharing as plain data: fractional requests and NVIDIA device-plugin time-slicing.

A *shared* pod takes part of one GPU instead of whole ``nvidia.com/gpu`` units. It says so as the Alibaba
2023 trace does (``gpu_milli`` 1..999: thousandths of one GPU) or with KAI scheduler's pod annotations
(``gpu-fraction: "0.5"``, ``gpu-memory: "2000"`` in MiB). In fleetlab's canonical form a shared job has
``gpu_milli`` (1..999) and/or ``gpu_memory`` and no ``nvidia.com/gpu`` request; ``gpu_milli: 1000`` is a
whole GPU and becomes ``nvidia.com/gpu: 1``.

Time-slicing (device plugin ``sharing.timeSlicing``) is node configuration: each GPU is advertised as
``replicas`` devices, with no memory or fault isolation between the pods that get replicas of one GPU.
MPS (device plugin ``sharing.mps``) advertises GPUs the same way, but each client is confined to
1/``replicas`` of the GPU's compute (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``) and memory
(``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``), whatever the other clients do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fleetlab.model.limits import MAX_TIME_SLICING_REPLICAS, Float, Int
from fleetlab.model.quantity import QuantityError, to_int, to_whole
from fleetlab.model.resources import GPU

MILLI_PER_GPU = 1000
#: KAI scheduler's pod annotations for GPU sharing (KAI-Scheduler docs, "GPU sharing").
KAI_FRACTION = "gpu-fraction"
KAI_MEMORY = "gpu-memory"
SHARED_GPU = "nvidia.com/gpu.shared"
_MIB = 1024**2


class TimeSlicing(BaseModel):
    """A pool's ``sharing.timeSlicing`` for ``nvidia.com/gpu`` as the NVIDIA device plugin reads it, plus
    fleetlab's interference parameter (the device plugin has none: it is how co-located pods slow down)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid", populate_by_name=True)

    replicas: Int = Field(ge=1, le=MAX_TIME_SLICING_REPLICAS)
    rename_by_default: bool = Field(default=False, alias="renameByDefault")
    fail_requests_greater_than_one: bool = Field(default=False, alias="failRequestsGreaterThanOne")
    #: α in runtime × (1 + α·(k−1)) for k pods sharing a GPU; 1.0 = each of k compute-bound pods gets 1/k.
    slowdown_per_extra_pod: Float = Field(default=1.0, ge=0, le=1_000)

    @property
    def resource(self) -> str:
        """The advertised resource name: ``nvidia.com/gpu``, or ``nvidia.com/gpu.shared`` when renamed."""
        return SHARED_GPU if self.rename_by_default else GPU

    def slowdown(self, pods_on_gpu: int) -> float:
        """Wall time per unit of work for a pod on a GPU shared by ``pods_on_gpu`` running pods."""
        return 1.0 + self.slowdown_per_extra_pod * max(0, pods_on_gpu - 1)


class MpsSharing(BaseModel):
    """A pool's ``sharing.mps`` for ``nvidia.com/gpu`` as the NVIDIA device plugin (v0.15+) reads it: each
    GPU is ``replicas`` devices, each client limited to 1/replicas of its compute and memory; a request for
    more than one replica is refused (the plugin sets ``failRequestsGreaterThanOne`` for MPS)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid", populate_by_name=True)

    replicas: int = Field(ge=2, le=MAX_TIME_SLICING_REPLICAS)
    rename_by_default: bool = Field(default=False, alias="renameByDefault")

    @property
    def resource(self) -> str:
        """The advertised resource name: ``nvidia.com/gpu``, or ``nvidia.com/gpu.shared`` when renamed."""
        return SHARED_GPU if self.rename_by_default else GPU

    def slowdown(self, pods_on_gpu: int) -> float:
        """Wall time per unit of work: a client computes at 1/replicas of the GPU whoever else runs."""
        return float(self.replicas)


def kai_share(annotations: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(milli, bytes) from KAI's ``gpu-fraction`` / ``gpu-memory`` pod annotations (None where absent);
    a ValueError naming the annotation for a bad value or for both at once."""
    fraction, memory = annotations.get(KAI_FRACTION), annotations.get(KAI_MEMORY)
    if fraction is not None and memory is not None:
        raise ValueError(f"annotations: give {KAI_FRACTION} or {KAI_MEMORY}, not both (KAI accepts one)")
    milli = None
    if fraction is not None:
        try:
            value = float(str(fraction))
        except ValueError:
            value = math.nan
        if not (0 < value <= 1):
            raise ValueError(
                f"annotations.{KAI_FRACTION}: {fraction!r} must be a fraction of one GPU, 0 < f <= 1"
            )
        milli = max(1, round(value * MILLI_PER_GPU))
    mem = None
    if memory is not None:
        text = str(memory).strip()
        mib = int(text) if text.isdigit() else -1  # plain MiB: KAI reads the value as an integer
        if mib <= 0:
            raise ValueError(f"annotations.{KAI_MEMORY}: {memory!r} must be a whole number of MiB > 0")
        mem = mib * _MIB
    return milli, mem


def normalize_share(data: Any) -> Any:
    """Bring a raw job mapping to the canonical form above; clear errors for shares that do not exist."""
    if not isinstance(data, dict):
        return data
    annotations = data.get("annotations") or {}
    milli = data.get("gpu_milli")
    memory = data.get("gpu_memory")
    if not isinstance(annotations, dict):
        return data
    kai_milli, kai_memory = kai_share(annotations)
    if (kai_milli is not None or kai_memory is not None) and (milli is not None or memory is not None):
        raise ValueError("give the share as gpu_milli/gpu_memory or as KAI annotations, not both")
    if kai_milli is not None or kai_memory is not None:
        milli, memory = kai_milli, kai_memory
    if milli is not None and (
        isinstance(milli, bool) or not isinstance(milli, int) or not 1 <= milli <= MILLI_PER_GPU
    ):
        raise ValueError(
            f"gpu_milli: {milli!r} must be a whole number 1..1000 (thousandths of one GPU; "
            "1000 = a whole GPU)"
        )
    if memory is not None:
        memory = to_int(memory) if not isinstance(memory, int) else memory
        if memory <= 0:
            raise ValueError(f"gpu_memory: {memory!r} must be > 0 bytes")
    requests = data.get("requests")
    gpus = 0
    devices = isinstance(requests, dict) and any(
        str(k).startswith("nvidia.com/") and k != GPU for k in requests
    )
    if isinstance(requests, dict) and GPU in requests:
        try:
            gpus = to_whole(requests[GPU], GPU)
        except QuantityError:
            return data  # the requests validator reports it
    out = dict(data)
    out.pop("gpu_milli", None)
    out.pop("gpu_memory", None)
    if milli == MILLI_PER_GPU:
        milli = None
        if gpus == 0 and isinstance(requests, dict):
            out["requests"] = {**requests, GPU: 1}
            gpus = 1
    shared = milli is not None or (memory is not None and gpus == 0 and not devices)
    if shared and devices:
        raise ValueError(
            "a GPU share (gpu_milli) is a part of a plain GPU; it cannot be combined with requests for "
            "MIG or time-sliced devices (nvidia.com/mig-*, nvidia.com/gpu.shared)"
        )
    if shared:
        if gpus > 1:
            raise ValueError(
                f"a GPU share (gpu_milli below 1000 or gpu-memory) is one part of one GPU; this job also "
                f"requests {GPU}: {gpus} (a share of several GPUs is not defined)"
            )
        if gpus == 1 and isinstance(requests, dict):
            out["requests"] = {k: v for k, v in requests.items() if k != GPU}
        if data.get("gang") and int(data.get("pods", 1)) > 1:
            raise ValueError("gang jobs of shared-GPU pods are not modelled; use whole GPUs or gang: false")
    if milli is not None:
        out["gpu_milli"] = milli
    if memory is not None:
        out["gpu_memory"] = memory
    return out
