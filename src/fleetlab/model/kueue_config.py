"""Kueue's own Configuration (config.kueue.x-k8s.io/v1beta2): the cluster-wide switches a scenario sets.

Only the parts fleetlab models: ``waitForPodsReady`` (evict workloads whose pods are not all ready in
time, requeue with exponential backoff), ``fairSharing`` (dominant-resource-share ordering and
preemption) and ``resources.deviceClassMappings`` (DRA device requests charged to quota as a named
resource, :mod:`fleetlab.admission.dra_quota`). Field names follow the Configuration API.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from fleetlab.model.kube import KubeModel
from fleetlab.model.limits import Int
from fleetlab.model.units import Seconds

PreemptionStrategyName = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


class RequeuingStrategy(KubeModel):
    """How a workload evicted by waitForPodsReady is requeued: delays 60 s, 120 s, … capped at 3600 s."""

    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoff_limit_count: Int | None = Field(default=None, alias="backoffLimitCount", ge=0)
    backoff_base_seconds: Int = Field(default=60, alias="backoffBaseSeconds", ge=1)
    backoff_max_seconds: Int = Field(default=3600, alias="backoffMaxSeconds", ge=1)


class WaitForPodsReady(KubeModel):
    """Admitted workloads must have every pod ready within ``timeout`` or they are evicted and requeued."""

    enable: bool = True
    timeout: Seconds = 600.0
    block_admission: bool = Field(default=False, alias="blockAdmission")
    requeuing_strategy: RequeuingStrategy = Field(
        default_factory=RequeuingStrategy, alias="requeuingStrategy"
    )


class FairSharingConfig(KubeModel):
    """Fair sharing on: admission by lowest dominant resource share, and fair-sharing preemption."""

    enable: bool = True
    preemption_strategies: tuple[PreemptionStrategyName, ...] = Field(
        default=("LessThanOrEqualToFinalShare", "LessThanInitialShare"), alias="preemptionStrategies"
    )

    @model_validator(mode="after")
    def _allowed(self) -> FairSharingConfig:
        allowed = {
            ("LessThanOrEqualToFinalShare",),
            ("LessThanInitialShare",),
            ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
        }
        if self.preemption_strategies not in allowed:
            raise ValueError(
                "preemptionStrategies must be [LessThanOrEqualToFinalShare], [LessThanInitialShare] or "
                "[LessThanOrEqualToFinalShare, LessThanInitialShare]"
            )
        return self


class DeviceClassMapping(KubeModel):
    """A quota resource (``name``) that the devices of the listed DeviceClasses are counted as."""

    name: str = Field(min_length=1, max_length=253, pattern=r"^([a-z0-9.-]+/)?[A-Za-z0-9][-A-Za-z0-9_.]*$")
    device_class_names: tuple[str, ...] = Field(alias="deviceClassNames", min_length=1, max_length=8)


class KueueResources(KubeModel):
    """``resources``: only ``deviceClassMappings`` is modelled (other keys are kept and ignored)."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    device_class_mappings: tuple[DeviceClassMapping, ...] = Field(
        default=(), alias="deviceClassMappings", max_length=16
    )

    @model_validator(mode="after")
    def _one_mapping_per_class(self) -> KueueResources:
        seen: dict[str, str] = {}
        for mapping in self.device_class_mappings:
            for cls in mapping.device_class_names:
                if cls in seen:
                    raise ValueError(
                        f'DeviceClass "{cls}" is mapped to both "{seen[cls]}" and "{mapping.name}"; a '
                        "class may be counted as one resource only"
                    )
                seen[cls] = mapping.name
        return self

    def resource_of(self) -> dict[str, str]:
        """DeviceClass name → the quota resource its devices count as."""
        return {c: m.name for m in self.device_class_mappings for c in m.device_class_names}


class KueueConfiguration(KubeModel):
    """The Configuration a scenario may give (``kueue_configuration:``): a whole Kueue ``Configuration`` is
    accepted; sections other than ``waitForPodsReady``, ``fairSharing`` and ``resources`` are ignored with
    one warning (:attr:`notes`), while those are validated as Kueue does."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: Literal["Configuration"] | None = None
    wait_for_pods_ready: WaitForPodsReady | None = Field(default=None, alias="waitForPodsReady")
    fair_sharing: FairSharingConfig | None = Field(default=None, alias="fairSharing")
    resources: KueueResources | None = None

    @property
    def notes(self) -> list[str]:
        """One warning naming the sections accepted but not modelled."""
        extra = sorted(self.model_extra or {})
        if not extra:
            return []
        return [f"kueue_configuration: {', '.join(extra)} accepted but not modelled (ignored)"]
