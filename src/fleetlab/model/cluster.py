"""The cluster: node pools of identical nodes, and the labels each node gets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fleetlab.model.billing_rules import PoolBilling
from fleetlab.model.gpu_share import MpsSharing, TimeSlicing
from fleetlab.model.gpus import GPU_MODELS, check_gpu_model
from fleetlab.model.interruptions import SpotInterruptions
from fleetlab.model.kube import Taint
from fleetlab.model.lifecycle import ClusterAutoscalerConfig, NodeFailures, PoolAutoscaling
from fleetlab.model.limits import (
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_QUANTITY,
    Count,
    Int,
    NodeCount,
    PricePerHour,
)
from fleetlab.model.mig import MigConfig, MigLayoutError
from fleetlab.model.resources import is_extended
from fleetlab.model.units import Bytes, MilliCpu, Seconds

CapacityType = Literal["on-demand", "spot"]
Cloud = Literal["aws", "gcp", "azure"]

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
RACK_LABEL = "fleetlab.io/rack"
POOL_LABEL = "fleetlab.io/pool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


class SpecModel(BaseModel):
    """Base for fleetlab's own scenario objects: frozen, unknown fields rejected."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid", populate_by_name=True)


class NodePool(SpecModel):
    """A group of identical nodes: shape, labels, taints, price and lifecycle timings."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    count: NodeCount
    gpu_model: str | None = None
    gpus_per_node: Int = Field(default=0, ge=0, le=MAX_GPUS_PER_NODE)
    gpu_memory: Bytes | None = None
    cpu: MilliCpu
    memory: Bytes
    ephemeral_storage: Bytes = 500 * 1024**3
    max_pods: Int = Field(default=110, ge=1, le=MAX_QUANTITY)
    extended_resources: dict[str, Count] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    zones: tuple[str, ...] = ("zone-a",)
    racks_per_zone: Int = Field(default=1, ge=1, le=MAX_NODES)
    capacity_type: CapacityType = "on-demand"
    instance_type: str | None = None
    price_per_hour: PricePerHour = 0.0
    #: With instance_type and region, the price (and any shape not given) comes from a price catalog:
    #: ``catalog`` (a SkyPilot-format CSV) or the built-in snapshot of the cloud.
    cloud: Cloud | None = None
    region: str | None = None
    catalog: str | None = None
    boot_time_s: Seconds = 0.0
    initially_ready: bool = True
    image_pull_bandwidth: Bytes = 200 * 1024**2
    data_bandwidth: Bytes = 500 * 1024**2
    unschedulable: bool = False
    mig: MigConfig | None = None
    #: Spot pools only: when the provider reclaims nodes (see fleetlab.model.interruptions).
    interruptions: SpotInterruptions | None = None
    #: Minimum billed time, committed nodes, data charges (see fleetlab.model.billing_rules).
    billing: PoolBilling | None = None
    autoscaling: PoolAutoscaling | None = None
    failures: NodeFailures | None = None
    time_slicing: TimeSlicing | None = None
    #: The device plugin's ``sharing.mps``: each GPU as ``replicas`` devices, each client confined to
    #: 1/replicas of its compute and memory.
    mps: MpsSharing | None = None

    @field_validator("gpu_model")
    @classmethod
    def _known_model(cls, value: str | None) -> str | None:
        return None if value is None else check_gpu_model(value)

    @field_validator("extended_resources")
    @classmethod
    def _extended_names(cls, value: dict[str, int]) -> dict[str, int]:
        for name, amount in value.items():
            if not is_extended(name):
                raise ValueError(
                    f"{name!r} is not an extended resource name (it needs a domain, e.g. example.com/x)"
                )
            if amount < 0:
                raise ValueError(f"{name}: {amount} must be greater than or equal to 0")
        return value

    @model_validator(mode="after")
    def _gpu_consistency(self) -> NodePool:
        if self.gpus_per_node > 0 and self.gpu_model is None:
            raise ValueError("gpus_per_node > 0 needs gpu_model")
        if self.gpu_model is not None and self.gpus_per_node == 0:
            raise ValueError(f"gpu_model {self.gpu_model!r} given but gpus_per_node is 0")
        if self.image_pull_bandwidth <= 0 or self.data_bandwidth <= 0:
            raise ValueError("image_pull_bandwidth and data_bandwidth must be > 0 bytes per second")
        if not self.zones:
            raise ValueError("zones must name at least one zone")
        if self.interruptions is not None and self.capacity_type != "spot":
            raise ValueError("interruptions apply to spot pools: set capacity_type: spot")
        if self.billing is not None and self.billing.committed_nodes and self.capacity_type == "spot":
            raise ValueError("billing.committed_nodes: commitments apply to on-demand pools, not spot")
        if self.autoscaling is not None and not self.autoscaling.min <= self.count <= self.autoscaling.max:
            a = self.autoscaling
            raise ValueError(
                f"count {self.count} (the initial size) must lie in autoscaling min..max ({a.min}..{a.max})"
            )
        if self.failures is not None:
            names = {self.node_name(i) for i in range(self.node_slots)}
            for event in self.failures.trace:
                if event.node not in names:
                    raise ValueError(
                        f"failures.trace names node {event.node!r}, which is not in this pool "
                        f"(nodes are {self.name}-0 .. {self.name}-{self.node_slots - 1})"
                    )
        if self.time_slicing is not None and (self.gpu_model is None or self.mig is not None):
            raise ValueError("time_slicing needs gpu_model and gpus_per_node, and is not modelled with mig")
        if self.mps is not None and (self.gpu_model is None or self.mig is not None):
            raise ValueError("mps needs gpu_model and gpus_per_node, and is not modelled with mig")
        if self.mps is not None and self.time_slicing is not None:
            raise ValueError("give time_slicing or mps, not both (the device plugin uses one strategy)")
        if self.mig is not None:
            if self.gpu_model is None:
                raise ValueError("mig needs gpu_model and gpus_per_node")
            try:
                advertised = self.mig.advertised(self.gpu_model, self.gpus_per_node)
            except MigLayoutError as exc:
                raise ValueError(f"mig: {exc}") from None
            clash = set(self.extended_resources) & set(advertised)
            if clash:
                raise ValueError(
                    f"extended_resources repeats {', '.join(sorted(clash))}, which mig advertises"
                )
        return self

    @property
    def replicated(self) -> TimeSlicing | MpsSharing | None:
        """The device plugin's replicated sharing of this pool's GPUs (time-slicing or MPS), if any."""
        return self.time_slicing if self.time_slicing is not None else self.mps

    def device_resources(self) -> dict[str, int]:
        """GPU resources a node advertises: whole GPUs, or MIG instances as the device plugin names them."""
        replicated = self.replicated
        if replicated is not None:  # each GPU advertised as `replicas` devices
            shared = {replicated.resource: self.gpus_per_node * replicated.replicas}
            return {"nvidia.com/gpu": 0, **shared}
        if self.mig is None or self.gpu_model is None:
            return {"nvidia.com/gpu": self.gpus_per_node}
        return self.mig.advertised(self.gpu_model, self.gpus_per_node)

    @property
    def gpu_memory_bytes(self) -> int | None:
        """Memory per GPU: the declared value, else the model's datasheet figure."""
        if self.gpu_memory is not None:
            return self.gpu_memory
        if self.gpu_model is None:
            return None
        gib = GPU_MODELS[self.gpu_model].memory_gib
        return None if gib is None else int(gib * 1024**3)

    @property
    def node_slots(self) -> int:
        """Nodes the pool can ever have at once: its count, or its autoscaling maximum."""
        return self.count if self.autoscaling is None else max(self.count, self.autoscaling.max)

    def node_name(self, index: int) -> str:
        """Stable node names: ``<pool>-<index>``."""
        return f"{self.name}-{index}"

    def node_labels(self, index: int) -> dict[str, str]:
        """Labels a node gets: the pool's own plus well-known topology, GPU and capacity-type labels."""
        zone = self.zones[index % len(self.zones)]
        rack = (index // len(self.zones)) % self.racks_per_zone
        labels = {
            HOSTNAME_LABEL: self.node_name(index),
            ZONE_LABEL: zone,
            RACK_LABEL: f"{zone}-rack-{rack}",
            POOL_LABEL: self.name,
            CAPACITY_TYPE_LABEL: self.capacity_type,
        }
        if self.instance_type:
            labels[INSTANCE_TYPE_LABEL] = self.instance_type
        if self.region:
            labels[REGION_LABEL] = self.region
        if self.gpu_model is not None:
            labels[GPU_PRESENT_LABEL] = "true"
            labels[GPU_PRODUCT_LABEL] = GPU_MODELS[self.gpu_model].product
            labels[GPU_COUNT_LABEL] = str(self.gpus_per_node)
            replicated = self.replicated
            if replicated is not None:  # GFD with a sharing strategy
                labels["nvidia.com/gpu.replicas"] = str(replicated.replicas)
                labels["nvidia.com/gpu.sharing-strategy"] = "mps" if self.mps is not None else "time-slicing"
                if not replicated.rename_by_default:
                    labels[GPU_PRODUCT_LABEL] += "-SHARED"
            mem = self.gpu_memory_bytes
            if mem is not None:
                labels[GPU_MEMORY_LABEL] = str(mem // 1024**2)
            if self.mig is not None:  # as GPU Feature Discovery labels MIG nodes
                labels["nvidia.com/mig.strategy"] = self.mig.strategy
                for resource, count in self.device_resources().items():
                    if resource.startswith("nvidia.com/mig-"):
                        labels[f"{resource}.count"] = str(count)
        labels.update(self.labels)
        return labels


class Cluster(SpecModel):
    """All node pools; ``extended_resource_toleration`` mirrors the admission plugin GKE enables."""

    pools: tuple[NodePool, ...] = Field(min_length=1)
    extended_resource_toleration: bool = False
    #: Topology levels from the widest to the narrowest (a Kueue Topology's levels), for gang placement.
    topology_levels: tuple[str, ...] = (ZONE_LABEL, RACK_LABEL, HOSTNAME_LABEL)
    #: Cluster Autoscaler flags and the account GPU quota (used when a pool has ``autoscaling``).
    autoscaler: ClusterAutoscalerConfig = ClusterAutoscalerConfig()

    @model_validator(mode="after")
    def _unique_pools(self) -> Cluster:
        seen: set[str] = set()
        for pool in self.pools:
            if pool.name in seen:
                raise ValueError(f"duplicate node pool name {pool.name!r}")
            seen.add(pool.name)
        slots = sum(pool.node_slots for pool in self.pools)
        if slots > MAX_NODES:
            raise ValueError(
                f"the pools hold up to {slots:,} nodes (counts and autoscaling maxima); at most "
                f"{MAX_NODES:,} "
                "(GKE's largest cluster) fit in one simulation"
            )
        return self

    @property
    def node_count(self) -> int:
        """Nodes across all pools."""
        return sum(p.count for p in self.pools)
