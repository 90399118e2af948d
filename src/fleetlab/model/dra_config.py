"""A scenario's ``dra:`` section: resource.k8s.io/v1 objects as applied, and pools whose nodes run
NVIDIA's GPU DRA driver (their ResourceSlices are what the driver would publish).

Read and checked, exported (``dra.yaml``) and carried from a snapshot; ``simulate`` allocates the devices
of jobs' ``resourceClaims`` as kube-scheduler's DynamicResources plugin does (sim/dra_claims.py), and
``diagnose`` allocates them on real snapshots.
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
        """What the run leaves out of the section (one warning per topic)."""
        consumable = sorted(
            {
                o.metadata.name
                for o in self.objects
                if isinstance(o, ResourceClaim | ResourceClaimTemplate) and _asks_capacity(o)
            }
        )
        if not consumable:
            return []
        return [
            f"dra: {', '.join(consumable)} ask for consumable capacity (DRAConsumableCapacity, alpha), which "
            "is not modelled: the simulator allocates each device whole"
        ]


def _asks_capacity(obj: ResourceClaim | ResourceClaimTemplate) -> bool:
    spec = obj.spec if isinstance(obj, ResourceClaim) else obj.spec.spec
    for request in spec.devices.requests:
        if request.exactly is not None and request.exactly.capacity is not None:
            return True
        if any(sub.capacity is not None for sub in request.first_available):
            return True
    return False
