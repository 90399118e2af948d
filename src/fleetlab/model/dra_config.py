"""A scenario's ``dra:`` section: resource.k8s.io/v1 objects as applied, and pools whose nodes run
NVIDIA's GPU DRA driver (their ResourceSlices are what the driver would publish).

Read and checked, exported (``dra.yaml``) and carried from a snapshot; the simulator does not yet allocate
devices to jobs (one warning says so), ``diagnose`` allocates them on real snapshots.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from fleetlab.model.dra import DeviceClass, DraObjects, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from fleetlab.model.kube import KubeModel

DraObject = Annotated[
    DeviceClass | ResourceClaim | ResourceClaimTemplate | ResourceSlice, Field(discriminator="kind")
]


class NvidiaDriverPool(KubeModel):
    """A pool whose nodes publish their GPUs through ``gpu.nvidia.com`` (instead of, or next to, the device
    plugin); ``partitionable`` adds MIG partitions as KEP-4815 partitionable devices."""

    pool: str = Field(min_length=1)
    partitionable: bool = False
    driver_version: str = Field(default="570.133.20", alias="driverVersion")
    cuda_version: str = Field(default="12.8.0", alias="cudaVersion")


class DraConfig(KubeModel):
    """``dra:`` — objects as a team applies them, plus the NVIDIA driver's pools."""

    objects: tuple[DraObject, ...] = Field(default=(), max_length=10_000)
    nvidia_driver: tuple[NvidiaDriverPool, ...] = Field(default=(), alias="nvidiaDriver")

    def dra_objects(self) -> DraObjects:
        """The objects by kind (slices the driver would publish are not included: see spec.nvidia_dra)."""
        return DraObjects(
            classes=tuple(o for o in self.objects if isinstance(o, DeviceClass)),
            claims=tuple(o for o in self.objects if isinstance(o, ResourceClaim)),
            templates=tuple(o for o in self.objects if isinstance(o, ResourceClaimTemplate)),
            slices=tuple(o for o in self.objects if isinstance(o, ResourceSlice)),
        )

    @property
    def notes(self) -> list[str]:
        """What the run does with the section."""
        parts = [f"{len(self.objects)} object(s)"] if self.objects else []
        if self.nvidia_driver:
            parts.append(
                f"the NVIDIA GPU DRA driver on pool(s) {', '.join(p.pool for p in self.nvidia_driver)}"
            )
        if not parts:
            return []
        return [
            f"dra: {' and '.join(parts)} read; the simulator does not allocate devices to jobs yet (diagnose "
            "allocates them on snapshots, export writes them)"
        ]
