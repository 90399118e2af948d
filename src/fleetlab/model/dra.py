"""Dynamic Resource Allocation objects (``resource.k8s.io/v1``, GA since Kubernetes v1.34) as plain data.

DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice with the fields kube-scheduler's
DynamicResources plugin and the structured allocator read (Kubernetes v1.35): exact / firstAvailable
requests, CEL selectors, allocation modes, admin access, constraints, device taints and tolerations,
partitionable devices (shared counters and their consumption), allocation results and reservations.
Field names are the API's (camelCase aliases); unknown fields are refused, as the API server refuses them.
CEL expressions are kept as text here: ``spec.dra_objects`` compiles them, ``placement.dra`` evaluates them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from fleetlab.model.kube import KubeModel, NodeSelector
from fleetlab.model.limits import Int

__all__ = [
    "API_VERSION",
    "AllocationResult",
    "Device",
    "DeviceClaim",
    "DeviceClass",
    "DeviceRequest",
    "DraObjects",
    "ExactDeviceRequest",
    "PodClaimRef",
    "PodClaims",
    "PodResourceClaim",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
]

API_VERSION: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
#: Limits from the v1 API's validation (types.go): results per claim, devices per slice, reservations.
ALLOCATION_RESULTS_MAX = 32
SLICE_MAX_DEVICES = 128
RESERVED_FOR_MAX = 256
MAX_EXPRESSION_LENGTH = 10 * 1024


class Meta(KubeModel):
    """The object metadata fleetlab reads; the rest of ``metadata`` is kept but not interpreted."""

    model_config = KubeModel.model_config | {"extra": "allow"}

    name: str = Field(min_length=1, max_length=253)
    namespace: str | None = None
    uid: str | None = None
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    owner_references: tuple[dict[str, Any], ...] = Field(default=(), alias="ownerReferences")


class CelSelector(KubeModel):
    """``cel.expression``: a CEL expression over ``device`` that must be true for a device to match."""

    expression: str = Field(min_length=1, max_length=MAX_EXPRESSION_LENGTH)


class DeviceSelector(KubeModel):
    """One selector; CEL is the only kind the v1 API has."""

    cel: CelSelector


class OpaqueConfig(KubeModel):
    """Driver parameters, passed through unread."""

    driver: str = Field(min_length=1)
    parameters: Any = None


class DeviceConfiguration(KubeModel):
    """A class's or claim's configuration entry (opaque driver parameters)."""

    opaque: OpaqueConfig | None = None
    requests: tuple[str, ...] = ()


class DeviceClassSpec(KubeModel):
    """Selectors every device of the class must satisfy; config handed to the driver; and (alpha
    DRAExtendedResource) the extended resource name the class can satisfy."""

    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()
    extended_resource_name: str | None = Field(default=None, alias="extendedResourceName")


class DeviceClass(KubeModel):
    """A cluster-scoped DeviceClass."""

    api_version: Literal["resource.k8s.io/v1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["DeviceClass"] = "DeviceClass"
    metadata: Meta
    spec: DeviceClassSpec = DeviceClassSpec()

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name


class DeviceToleration(KubeModel):
    """A request's toleration of device taints (effects NoSchedule and NoExecute)."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "NoExecute"] = ""
    toleration_seconds: Int | None = Field(default=None, alias="tolerationSeconds")


class CapacityRequirements(KubeModel):
    """Consumable capacity a request asks of a shared device (alpha DRAConsumableCapacity)."""

    requests: dict[str, str | int] = Field(default_factory=dict)


class ExactDeviceRequest(KubeModel):
    """One request that must be met exactly: a class, selectors, a count or all matching devices."""

    device_class_name: str = Field(alias="deviceClassName", min_length=1)
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: Literal["ExactCount", "All"] = Field(default="ExactCount", alias="allocationMode")
    count: Int = Field(default=1, ge=1)
    admin_access: bool | None = Field(default=None, alias="adminAccess")
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(KubeModel):
    """One alternative of a ``firstAvailable`` request (tried in order)."""

    name: str = Field(min_length=1, max_length=63)
    device_class_name: str = Field(alias="deviceClassName", min_length=1)
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: Literal["ExactCount", "All"] = Field(default="ExactCount", alias="allocationMode")
    count: Int = Field(default=1, ge=1)
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None


class DeviceRequest(KubeModel):
    """A named request: ``exactly`` one set of devices, or the ``firstAvailable`` subrequest that fits."""

    name: str = Field(min_length=1, max_length=63)
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = Field(default=(), alias="firstAvailable", max_length=8)

    @model_validator(mode="after")
    def _one_kind(self) -> DeviceRequest:
        if (self.exactly is None) == (not self.first_available):
            raise ValueError(f"request {self.name}: exactly one of exactly and firstAvailable must be set")
        return self


class DeviceConstraint(KubeModel):
    """All devices of the listed requests (all requests when empty) share / differ in one attribute."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = Field(default=None, alias="matchAttribute")
    distinct_attribute: str | None = Field(default=None, alias="distinctAttribute")

    @model_validator(mode="after")
    def _one_kind(self) -> DeviceConstraint:
        if (self.match_attribute is None) == (self.distinct_attribute is None):
            raise ValueError("a constraint needs exactly one of matchAttribute and distinctAttribute")
        return self


class DeviceClaim(KubeModel):
    """``spec.devices``: requests, constraints across them, configuration."""

    requests: tuple[DeviceRequest, ...] = Field(default=(), max_length=ALLOCATION_RESULTS_MAX)
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()

    @model_validator(mode="after")
    def _unique_names(self) -> DeviceClaim:
        names = [r.name for r in self.requests]
        if len(set(names)) != len(names):
            raise ValueError(f"request names must be unique, got {', '.join(names)}")
        known = set(names) | {f"{r.name}/{s.name}" for r in self.requests for s in r.first_available}
        for c in self.constraints:
            unknown = [n for n in c.requests if n not in known]
            if unknown:
                raise ValueError(f"constraint names unknown request(s) {', '.join(unknown)}")
        return self


class ResourceClaimSpec(KubeModel):
    """What a claim asks for."""

    devices: DeviceClaim = DeviceClaim()


class DeviceRequestAllocationResult(KubeModel):
    """One allocated device: which request, and ``driver/pool/device``."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = Field(default=None, alias="adminAccess")
    tolerations: tuple[DeviceToleration, ...] = ()
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: dict[str, str | int] | None = Field(default=None, alias="consumedCapacity")
    binding_conditions: tuple[str, ...] = Field(default=(), alias="bindingConditions")
    binding_failure_conditions: tuple[str, ...] = Field(default=(), alias="bindingFailureConditions")


class DeviceAllocationResult(KubeModel):
    """The devices allocated to a claim and the configuration that goes with them."""

    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[dict[str, Any], ...] = ()


class AllocationResult(KubeModel):
    """``status.allocation``: the devices, and where they are reachable (None: every node)."""

    devices: DeviceAllocationResult = DeviceAllocationResult()
    node_selector: NodeSelector | None = Field(default=None, alias="nodeSelector")
    allocation_timestamp: str | None = Field(default=None, alias="allocationTimestamp")


class ConsumerReference(KubeModel):
    """One entry of ``status.reservedFor`` (a pod, usually)."""

    resource: str
    name: str
    uid: str
    api_group: str = Field(default="", alias="apiGroup")


class ResourceClaimStatus(KubeModel):
    """Allocation and reservations (``devices`` status is driver data, kept unread)."""

    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerReference, ...] = Field(
        default=(), alias="reservedFor", max_length=RESERVED_FOR_MAX
    )
    devices: tuple[dict[str, Any], ...] = ()


class ResourceClaim(KubeModel):
    """A namespaced ResourceClaim."""

    api_version: Literal["resource.k8s.io/v1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: Meta
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus = ResourceClaimStatus()

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"

    @property
    def kobj(self) -> str:
        """How upstream names the claim in messages: ``namespace/name``, or the name without a namespace."""
        ns = self.metadata.namespace
        return f"{ns}/{self.metadata.name}" if ns else self.metadata.name


class ClaimTemplateSpec(KubeModel):
    """The claim a template stamps out (labels/annotations in ``metadata`` are copied over)."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: ResourceClaimSpec


class ResourceClaimTemplate(KubeModel):
    """A namespaced ResourceClaimTemplate: one ResourceClaim per pod that names it."""

    api_version: Literal["resource.k8s.io/v1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ResourceClaimTemplate"] = "ResourceClaimTemplate"
    metadata: Meta
    spec: ClaimTemplateSpec


class DeviceAttribute(KubeModel):
    """Exactly one of int, bool, string (at most 64 characters) or version (semver 2.0.0)."""

    int_value: int | None = Field(default=None, alias="int", ge=-(2**63), le=2**63 - 1)
    bool_value: bool | None = Field(default=None, alias="bool")
    string_value: str | None = Field(default=None, alias="string", max_length=64)
    version_value: str | None = Field(default=None, alias="version", max_length=64)

    @model_validator(mode="after")
    def _one_value(self) -> DeviceAttribute:
        given = [
            v
            for v in (self.int_value, self.bool_value, self.string_value, self.version_value)
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError("a device attribute must have exactly one of int, bool, string and version")
        return self

    @property
    def value(self) -> int | bool | str:
        """The one value that is set (a version as its text)."""
        for v in (self.int_value, self.bool_value, self.string_value, self.version_value):
            if v is not None:
                return v
        raise AssertionError("validated to have one value")


class DeviceCapacity(KubeModel):
    """A capacity value (a quantity) and, for shareable devices, how requests consume it."""

    value: str | int
    request_policy: dict[str, Any] | None = Field(default=None, alias="requestPolicy")


class DeviceTaint(KubeModel):
    """A driver-set device taint; only NoSchedule and NoExecute prevent allocation (others act as None)."""

    key: str = Field(min_length=1)
    value: str = ""
    effect: str
    time_added: str | None = Field(default=None, alias="timeAdded")


class Counter(KubeModel):
    """How much of one shared counter there is (or a device consumes)."""

    value: str | int


class CounterSet(KubeModel):
    """A named set of counters that partitions of one physical device draw from."""

    name: str = Field(min_length=1, max_length=63)
    counters: dict[str, Counter] = Field(min_length=1, max_length=32)


class CounterConsumption(KubeModel):
    """What a device takes from one counter set when it is allocated."""

    counter_set: str = Field(alias="counterSet", min_length=1)
    counters: dict[str, Counter] = Field(min_length=1, max_length=32)


class Device(KubeModel):
    """One device a driver publishes: attributes and capacity for selectors, taints, counters."""

    name: str = Field(min_length=1, max_length=63)
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: tuple[CounterConsumption, ...] = Field(
        default=(), alias="consumesCounters", max_length=2
    )
    taints: tuple[DeviceTaint, ...] = Field(default=(), max_length=16)
    node_name: str | None = Field(default=None, alias="nodeName")
    node_selector: NodeSelector | None = Field(default=None, alias="nodeSelector")
    all_nodes: bool | None = Field(default=None, alias="allNodes")
    allow_multiple_allocations: bool | None = Field(default=None, alias="allowMultipleAllocations")
    binds_to_node: bool | None = Field(default=None, alias="bindsToNode")
    binding_conditions: tuple[str, ...] = Field(default=(), alias="bindingConditions")
    binding_failure_conditions: tuple[str, ...] = Field(default=(), alias="bindingFailureConditions")

    @model_validator(mode="after")
    def _few_attributes(self) -> Device:
        if len(self.attributes) + len(self.capacity) > 32:
            raise ValueError(f"device {self.name}: at most 32 attributes and capacities together")
        return self


class ResourcePool(KubeModel):
    """The pool a slice belongs to, its generation and how many slices make it complete."""

    name: str = Field(min_length=1, max_length=253)
    generation: int = Field(ge=0)
    resource_slice_count: int = Field(alias="resourceSliceCount", ge=1)


class ResourceSliceSpec(KubeModel):
    """A driver's slice of one pool: devices (or shared counter sets) and which nodes reach them."""

    driver: str = Field(min_length=1, max_length=63)
    pool: ResourcePool
    node_name: str | None = Field(default=None, alias="nodeName")
    node_selector: NodeSelector | None = Field(default=None, alias="nodeSelector")
    all_nodes: bool | None = Field(default=None, alias="allNodes")
    per_device_node_selection: bool | None = Field(default=None, alias="perDeviceNodeSelection")
    devices: tuple[Device, ...] = Field(default=(), max_length=SLICE_MAX_DEVICES)
    shared_counters: tuple[CounterSet, ...] = Field(default=(), alias="sharedCounters", max_length=8)

    @model_validator(mode="after")
    def _access(self) -> ResourceSliceSpec:
        chosen = [
            n
            for n, v in (
                ("nodeName", self.node_name),
                ("nodeSelector", self.node_selector),
                ("allNodes", self.all_nodes or None),
                ("perDeviceNodeSelection", self.per_device_node_selection or None),
            )
            if v is not None
        ]
        if self.shared_counters and self.devices:
            raise ValueError("only one of devices and sharedCounters may be set in a ResourceSlice")
        if len(chosen) > 1 or (not chosen and not self.shared_counters):
            raise ValueError(
                "exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection must be set"
                f" (got {', '.join(chosen) or 'none'})"
            )
        names = [d.name for d in self.devices]
        if len(set(names)) != len(names):
            raise ValueError("device names must be unique in a ResourceSlice")
        return self


class ResourceSlice(KubeModel):
    """A cluster-scoped ResourceSlice, as a DRA driver's kubelet plugin publishes it."""

    api_version: Literal["resource.k8s.io/v1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ResourceSlice"] = "ResourceSlice"
    metadata: Meta
    spec: ResourceSliceSpec

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name


class PodResourceClaim(KubeModel):
    """One entry of a pod's ``spec.resourceClaims`` as a scenario job declares it: a name the containers
    use, and exactly one of an existing ResourceClaim (shared by every pod naming it) or a
    ResourceClaimTemplate (one claim generated per pod)."""

    name: str = Field(min_length=1, max_length=63)
    resource_claim_name: str | None = Field(default=None, alias="resourceClaimName", min_length=1)
    resource_claim_template_name: str | None = Field(
        default=None, alias="resourceClaimTemplateName", min_length=1
    )

    @model_validator(mode="after")
    def _one_source(self) -> PodResourceClaim:
        if (self.resource_claim_name is None) == (self.resource_claim_template_name is None):
            raise ValueError(
                f"resourceClaims entry {self.name}: exactly one of resourceClaimName and "
                "resourceClaimTemplateName must be set"
            )
        return self


@dataclass(frozen=True)
class PodClaimRef:
    """One ``spec.resourceClaims`` entry of a pod: the claim it names, or the template it names and the
    claim generated for it (``status.resourceClaimStatuses``; None until the controller created it)."""

    name: str
    claim_name: str | None = None
    template_name: str | None = None


@dataclass(frozen=True)
class PodClaims:
    """A pod's claims and identity (claims are reserved for a pod by uid). A *shape* stands for every pod of
    a job before its template claims exist: placement filters on the templates' own specs, and each pod
    gets its own claims when it is bound (``DynamicResources.reserve``)."""

    namespace: str
    pod: str
    uid: str
    refs: tuple[PodClaimRef, ...]
    shape: bool = False


@dataclass(frozen=True)
class DraObjects:
    """The resource.k8s.io/v1 objects of one cluster or scenario."""

    classes: tuple[DeviceClass, ...] = ()
    claims: tuple[ResourceClaim, ...] = ()
    templates: tuple[ResourceClaimTemplate, ...] = ()
    slices: tuple[ResourceSlice, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.classes or self.claims or self.templates or self.slices)
