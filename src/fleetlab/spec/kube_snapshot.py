"""A cluster snapshot from ``kubectl get nodes -o json`` and ``kubectl get pods -A -o json``.

Unknown fields are ignored and missing optional fields take Kubernetes defaults. Nodes offer
``status.allocatable`` (never capacity); pod requests are computed as kube-scheduler's PodRequests does:
max(sum of app containers, each init container plus the sidecars before it) + sidecars + overhead, after
the API's defaulting of a limit-only container (requests = limits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleetlab.model.dra import DraObjects, PodClaims
from fleetlab.model.kube import Affinity, Taint, Toleration
from fleetlab.model.pod_constraints import PodAffinityTerm, PodAntiAffinityTerm, TopologySpreadConstraint
from fleetlab.model.resources import ResourceList
from fleetlab.model.tas_request import TopologyRequest, TopologyRequestError, topology_request
from fleetlab.model.workload_api import PodGroup
from fleetlab.spec.bounded import parse_timestamp
from fleetlab.spec.dra_objects import DRA_KINDS, pod_claims, read_dra_objects
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.kube_objects import (
    KubeObject,
    ShapeError,
    global_default,
    mapping_list,
    namespace_labels,
    object_name,
    read_objects,
)
from fleetlab.spec.kube_requests import pod_requests, resource_list, scoring_requests
from fleetlab.spec.namespace_policies import NAMESPACE_POLICY_KINDS, NamespacePolicy, read_namespace_policies
from fleetlab.spec.workload_api import WORKLOAD_API_KINDS, pod_group_name, read_workload_api

TERMINATED_PHASES = frozenset({"Succeeded", "Failed"})
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Labels and annotations naming a pod's gang (Kueue pod groups, coscheduling PodGroup, Volcano).
GROUP_KEYS = (
    "kueue.x-k8s.io/pod-group-name",
    "scheduling.x-k8s.io/pod-group",
    "pod-group.scheduling.sigs.k8s.io",
    "scheduling.k8s.io/group-name",
    "volcano.sh/job-name",
)
#: Annotation giving the gang's size (Kueue plain pod groups).
GROUP_SIZE_KEY = "kueue.x-k8s.io/pod-group-total-count"


@dataclass(frozen=True)
class KubeNode:
    """One node as the scheduler sees it, plus the facts an operator checks first."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: ResourceList
    capacity: ResourceList
    ready: str  # "True", "False" or "Unknown" (the Ready condition's status)
    unschedulable: bool
    created: datetime | None = None
    #: spec.providerID (``gce://…``, ``aws:///…``, ``azure://…``): which cloud the node runs in.
    provider_id: str = ""


@dataclass(frozen=True)
class ContainerState:
    """One container's current state: running, waiting (with reason) or terminated."""

    name: str
    init: bool
    state: str
    reason: str
    since: datetime | None


@dataclass(frozen=True)
class KubePod:
    """One pod: its effective requests and constraints, where it is bound and how far it got."""

    namespace: str
    name: str
    uid: str
    phase: str
    node_name: str | None
    requests: ResourceList
    containers: int
    explicit_keys: frozenset[str]
    tolerations: tuple[Toleration, ...]
    node_selector: tuple[tuple[str, str], ...]
    affinity: Affinity | None
    owner_kind: str | None
    labels: dict[str, str]
    conditions: dict[str, tuple[str, str, datetime | None]] = field(default_factory=dict)
    container_states: tuple[ContainerState, ...] = ()
    created: datetime | None = None
    scheduler_name: str = "default-scheduler"
    #: The gang this pod belongs to (from GROUP_KEYS) and its declared size, when known.
    group: str | None = None
    group_size: int | None = None
    #: PersistentVolumeClaims the pod mounts (a bound pod waits for them before its sandbox starts).
    claims: tuple[str, ...] = ()
    priority: int = 0
    #: spec.schedulingGates names: while any is set the scheduler does not try the pod (SchedulingGated).
    gates: tuple[str, ...] = ()
    #: uid of the controlling owner (a Job, JobSet...), which Kueue's Workload also names.
    owner_uid: str | None = None
    #: The PodScheduled condition's message (kube-scheduler's full FailedScheduling text), if any.
    scheduling_message: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    started: datetime | None = None
    #: status.nominatedNodeName: preemption chose this node; the pod waits for its victims to go.
    nominated_node: str | None = None
    priority_class: str | None = None
    #: Whether spec.priority was in the object (the Priority admission plugin sets it on real pods).
    priority_given: bool = False
    #: spec.topologySpreadConstraints and the podAntiAffinity / podAffinity terms (required and preferred).
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    anti_affinity: tuple[PodAntiAffinityTerm, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    #: metadata.deletionTimestamp is set: the pod is terminating (it keeps its node's resources until it
    #: is gone, but PodTopologySpread no longer counts it).
    deleting: bool = False
    #: (milli-cpu, memory) the resource scorers count: per-container non-zero defaults included.
    scoring_requests: tuple[int, int] | None = None
    #: spec.resourceClaims (DRA) with the claims generated for template entries.
    resource_claims: PodClaims | None = None
    #: Kueue TAS annotations of the pod's template, or its PodGroup's topology constraint.
    topology: TopologyRequest | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def terminated(self) -> bool:
        """Succeeded or Failed pods hold no resources (the scheduler skips them)."""
        return self.phase in TERMINATED_PHASES


@dataclass
class Snapshot:
    """Nodes and pods of one cluster at one moment, and the newest timestamp seen in it."""

    nodes: list[KubeNode]
    pods: list[KubePod]
    newest: datetime | None
    sources: list[str]
    #: Kueue objects (ClusterQueue, LocalQueue, Workload, ResourceFlavor, Cohort) as read.
    queue_objects: list[KubeObject] = field(default_factory=list)
    #: core/v1 or events.k8s.io/v1 Events as read.
    events: list[KubeObject] = field(default_factory=list)
    #: PersistentVolumes, PersistentVolumeClaims and StorageClasses as read (for the storage verdict).
    storage_objects: list[KubeObject] = field(default_factory=list)
    #: Namespace name -> its labels, from Namespace objects (podAffinity namespaceSelector reads them).
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    #: DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices (resource.k8s.io/v1).
    dra: DraObjects = field(default_factory=DraObjects)
    #: Workload API PodGroups (scheduling.k8s.io/v1alpha2) by (namespace, name).
    pod_groups: dict[tuple[str, str], PodGroup] = field(default_factory=dict)
    #: ResourceQuota and LimitRange objects (core/v1).
    namespace_policies: tuple[NamespacePolicy, ...] = ()


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as kubectl prints it (``2026-11-30T10:00:00Z``), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None  # malformed or outside 1970..2262: unknown, as a missing one


def _model(cls: type[Any], data: Any, where: str, source: str) -> Any:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise SpecError(source, problems_from_validation(exc, where)) from None


def parse_node(obj: KubeObject, source: str) -> KubeNode:
    """A Node object; a node without a Ready condition counts as Unknown (as the node controller does)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise SpecError(source, ["a Node has no metadata.name"])
    where = f"Node {name}"
    taints = tuple(
        _model(
            Taint,
            {k: t[k] for k in ("key", "value", "effect") if k in t},
            f"{where}.spec.taints[{i}]",
            source,
        )
        for i, t in enumerate(mapping_list(obj, "spec.taints", spec.get("taints")))
    )
    ready = "Unknown"
    for cond in mapping_list(obj, "status.conditions", status.get("conditions")):
        if cond.get("type") == "Ready":
            ready = str(cond.get("status", "Unknown"))
    return KubeNode(
        name=name,
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        taints=taints,
        allocatable=resource_list(status.get("allocatable"), f"{where}.status.allocatable", source, True),
        capacity=resource_list(status.get("capacity"), f"{where}.status.capacity", source, True),
        ready=ready,
        unschedulable=bool(spec.get("unschedulable", False)),
        created=parse_time(meta.get("creationTimestamp")),
        provider_id=str(spec.get("providerID") or ""),
    )


def _container_states(status: Mapping[str, Any]) -> tuple[ContainerState, ...]:
    out: list[ContainerState] = []
    for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for cs in status.get(key) or []:
            state = cs.get("state") or {}
            kind = next(iter(state), "waiting")
            detail = state.get(kind) or {}
            since = parse_time(detail.get("startedAt") or detail.get("finishedAt"))
            reason = str(detail.get("reason") or ("Running" if kind == "running" else ""))
            out.append(ContainerState(str(cs.get("name", "")), init, kind, reason, since))
    return tuple(out)


def _group(meta: Mapping[str, Any]) -> tuple[str | None, int | None]:
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    name = next((str(m[k]) for k in GROUP_KEYS for m in (labels, annotations) if m.get(k)), None)
    size_text = str(annotations.get(GROUP_SIZE_KEY) or labels.get(GROUP_SIZE_KEY) or "")
    return name, int(size_text) if size_text.isdigit() else None


def parse_pod(obj: KubeObject, source: str) -> KubePod:
    """A Pod object with its effective requests and scheduling constraints."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    where = f"Pod {object_name(obj)}"
    requests, explicit = pod_requests(spec, f"{where}.spec", source)
    scoring = scoring_requests(spec, f"{where}.spec", source)
    tolerations = tuple(
        _model(Toleration, t, f"{where}.spec.tolerations[{i}]", source)
        for i, t in enumerate(spec.get("tolerations") or [])
    )
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity")
    affinity = (
        _model(Affinity, {"nodeAffinity": node_affinity}, f"{where}.spec.affinity", source)
        if node_affinity
        else None
    )
    owners = meta.get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    group, group_size = _group(meta)
    group = pod_group_name(spec) or group
    try:
        topology = topology_request(meta.get("annotations") or {})
    except TopologyRequestError:
        topology = None  # Kueue's webhook refuses such a PodSet; the pod itself is read as unconstrained
    conditions = {
        str(c.get("type")): (
            str(c.get("status", "")),
            str(c.get("reason", "")),
            parse_time(c.get("lastTransitionTime")),
        )
        for c in status.get("conditions") or []
    }
    return KubePod(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or "<unnamed>"),
        uid=str(meta.get("uid") or ""),
        phase=str(status.get("phase") or "Pending"),
        node_name=_node_name(obj, spec.get("nodeName")),
        requests=requests,
        containers=len(spec.get("containers") or []),
        explicit_keys=explicit,
        scoring_requests=scoring,
        resource_claims=pod_claims(meta, spec, status),
        tolerations=tolerations,
        node_selector=tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())),
        affinity=affinity,
        owner_kind=str(controller.get("kind")) if controller else None,
        owner_uid=str(controller.get("uid")) if controller and controller.get("uid") else None,
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        started=parse_time(status.get("startTime")),
        nominated_node=str(status.get("nominatedNodeName")) if status.get("nominatedNodeName") else None,
        scheduling_message=next(
            (
                str(c.get("message") or "")
                for c in status.get("conditions") or []
                if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
            ),
            "",
        ),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        conditions=conditions,
        container_states=_container_states(status),
        created=parse_time(meta.get("creationTimestamp")),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        group=group,
        group_size=group_size,
        topology=topology,
        claims=tuple(
            str(v["persistentVolumeClaim"].get("claimName", ""))
            for v in spec.get("volumes") or []
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
        ),
        priority=int(spec.get("priority") or 0)
        if str(spec.get("priority") or 0).lstrip("-").isdigit()
        else 0,
        gates=tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or [] if isinstance(g, dict)),
        priority_class=str(spec["priorityClassName"]) if spec.get("priorityClassName") else None,
        priority_given=spec.get("priority") is not None,
        deleting=meta.get("deletionTimestamp") is not None,
        topology_spread=tuple(
            _model(TopologySpreadConstraint, c, f"{where}.spec.topologySpreadConstraints[{i}]", source)
            for i, c in enumerate(spec.get("topologySpreadConstraints") or [])
        ),
        anti_affinity=anti_affinity_terms(spec, where, source),
        pod_affinity=tuple(
            PodAffinityTerm.model_validate(t.model_dump(by_alias=True))
            for t in anti_affinity_terms(spec, where, source, "podAffinity")
        ),
    )


def anti_affinity_terms(
    spec: Mapping[str, Any], where: str, source: str, field: str = "podAntiAffinity"
) -> tuple[PodAntiAffinityTerm, ...]:
    """spec.affinity.podAntiAffinity (or ``field`` podAffinity) as terms: required ones, then preferred ones
    with their weights (labelSelector, topologyKey, namespaces and namespaceSelector are read)."""
    kind = PodAffinityTerm if field == "podAffinity" else PodAntiAffinityTerm
    anti = (spec.get("affinity") or {}).get(field) or {}
    base = f"{where}.spec.affinity.{field}"
    out: list[PodAntiAffinityTerm] = []
    for i, term in enumerate(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
        out.append(
            _term(
                term, True, 100, f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", source, kind
            )
        )
    for i, weighted in enumerate(anti.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        place = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        term = (weighted or {}).get("podAffinityTerm") or {}
        weight = (weighted or {}).get("weight", 1)
        out.append(_term(term, False, weight, f"{place}.podAffinityTerm", source, kind))
    return tuple(out)


def _term(
    term: Any, required: bool, weight: Any, where: str, source: str, kind: type[PodAntiAffinityTerm]
) -> PodAntiAffinityTerm:
    known = {
        k: term[k]
        for k in ("labelSelector", "topologyKey", "namespaces", "namespaceSelector")
        if isinstance(term, dict) and k in term
    }
    result: PodAntiAffinityTerm = _model(
        kind, {**known, "required": required, "weight": weight}, where, source
    )
    return result


def _timestamps(obj: Any) -> list[datetime]:
    """Every RFC 3339 timestamp under known time fields, for a deterministic default ``--now``."""
    out: list[datetime] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in (
                "creationTimestamp",
                "lastTransitionTime",
                "startTime",
                "startedAt",
                "finishedAt",
                "time",
                "lastHeartbeatTime",
                "lastProbeTime",
                "firstTimestamp",
                "lastTimestamp",
                "eventTime",
                "lastObservedTime",
            ):
                t = parse_time(value)
                if t is not None:
                    out.append(t)
            elif isinstance(value, (dict, list)):
                out.extend(_timestamps(value))
    elif isinstance(obj, list):
        for item in obj:
            out.extend(_timestamps(item))
    return out


SUPPORTED_KINDS = ("Node", "Pod")
#: Kueue kinds kept as plain objects for the queue diagnosis (a ``fleetlab snapshot`` file holds them).
KUEUE_KINDS = frozenset(
    {"ClusterQueue", "LocalQueue", "Workload", "ResourceFlavor", "Cohort"}
    | {"AdmissionCheck", "ProvisioningRequestConfig", "Topology"}
)


EVENT_KINDS = frozenset({"Event"})
#: Storage kinds kept as plain objects: where a pod's volumes can be (``kubectl get pv,pvc,sc -A -o json``).
STORAGE_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "StorageClass"})
PRIORITY_KINDS = frozenset({"PriorityClass"})


def apply_priority_classes(pods: list[KubePod], classes: list[KubeObject], source: str) -> list[KubePod]:
    """Fill the priority of pods that carry no spec.priority from their PriorityClass (or the
    globalDefault one), as the Priority admission plugin does; pods with spec.priority keep it."""
    by_name: dict[str, KubeObject] = {object_name(c): c for c in classes}
    default = global_default(classes)
    out: list[KubePod] = []
    for pod in pods:
        cls = by_name.get(pod.priority_class) if pod.priority_class else default
        if pod.priority_class and cls is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise SpecError(
                source, [f"Pod {pod.key}: priorityClassName {pod.priority_class} not found (known: {known})"]
            )
        if cls is None or pod.priority_given:
            out.append(pod)
            continue
        value = cls.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise SpecError(source, [f"PriorityClass {object_name(cls)}: value must be an integer"])
        policy = str(cls.get("preemptionPolicy") or "PreemptLowerPriority")
        out.append(replace(pod, priority=value, preemption_policy=policy))
    return out


def _node_name(obj: KubeObject, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ShapeError(f"Pod {object_name(obj)}: `spec.nodeName` must be a string (a node's name)")
    return value or None


def _parse(kind: str, obj: KubeObject, source: str) -> Any:
    """A Node or Pod; a field of the wrong shape (a list where kubectl writes a mapping...) is reported by
    object name only, never by value."""
    try:
        return parse_node(obj, source) if kind == "Node" else parse_pod(obj, source)
    except ShapeError as exc:
        raise SpecError(source, [str(exc)]) from None
    except (AttributeError, TypeError, ValueError) as exc:
        raise SpecError(
            source,
            [
                f"{kind} {object_name(obj)}: a field has an unexpected shape ({type(exc).__name__}); "
                "expected `kubectl get ... -o json` output"
            ],
        ) from None


def _read_into(
    path: Path, allowed: frozenset[str], what: str, out: dict[str, list[Any]], stamps: list[datetime]
) -> None:
    source = str(path)
    others: dict[str, int] = {}
    for obj in read_objects(path):
        kind = str(obj.get("kind"))
        if kind not in allowed:
            others[kind] = others.get(kind, 0) + 1
            continue
        if kind == "PodGroup" or (
            kind == "Workload" and str(obj.get("apiVersion", "")).startswith("scheduling.")
        ):
            out["workload_api"].append(obj)  # not Kueue's Workload (kueue.x-k8s.io), same kind name
        elif kind in NAMESPACE_POLICY_KINDS:
            out["workload_api"].append(obj)
        elif kind in KUEUE_KINDS:
            out["queue"].append(obj)
        elif kind in EVENT_KINDS:
            out["events"].append(obj)
        elif kind in PRIORITY_KINDS:
            out["classes"].append(obj)
        elif kind in STORAGE_KINDS:
            out["storage"].append(obj)
        elif kind in DRA_KINDS:
            out["dra"].append(obj)
        elif kind == "Namespace":
            out["namespaces"].append(namespace_labels(obj, source))
        else:
            out["nodes" if kind == "Node" else "pods"].append(_parse(kind, obj, source))
        stamps.extend(_timestamps(obj))
    if others:
        found = ", ".join(f"{n} {k}" for k, n in sorted(others.items()))
        raise SpecError(source, [f"holds {found}; {what}"])


def load_snapshot(
    paths: Sequence[Path],
    kueue_paths: Sequence[Path] = (),
    event_paths: Sequence[Path] = (),
    priority_paths: Sequence[Path] = (),
    storage_paths: Sequence[Path] = (),
) -> Snapshot:
    """Nodes and pods (plus Kueue objects, Events, PriorityClasses) from kubectl files; other kinds are an
    error."""
    out: dict[str, list[Any]] = {
        "nodes": [],
        "pods": [],
        "queue": [],
        "events": [],
        "classes": [],
        "storage": [],
        "namespaces": [],
        "dra": [],
        "workload_api": [],
    }
    stamps: list[datetime] = []
    main = frozenset({"Node", "Pod", "Namespace"}) | KUEUE_KINDS | EVENT_KINDS | PRIORITY_KINDS
    main |= STORAGE_KINDS | frozenset(DRA_KINDS) | WORKLOAD_API_KINDS | NAMESPACE_POLICY_KINDS
    what = (
        "only Node and Pod objects are read (`kubectl get nodes,pods -A -o json`), "
        "plus Namespaces, Kueue objects, Events, PriorityClasses, PersistentVolumes, PersistentVolumeClaims, "
        "StorageClasses, DRA objects (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice) and "
        "Workload API objects (Workload, PodGroup), ResourceQuotas and LimitRanges"
    )
    for path in paths:
        _read_into(path, main, what, out, stamps)
    for path in kueue_paths:
        _read_into(
            path, KUEUE_KINDS, f"a --kueue file holds only {', '.join(sorted(KUEUE_KINDS))}", out, stamps
        )
    for path in event_paths:
        _read_into(
            path, EVENT_KINDS, "an --events file holds `kubectl get events -A -o json` output", out, stamps
        )
    for path in priority_paths:
        _read_into(path, PRIORITY_KINDS, "a --priorityclasses file holds PriorityClass objects", out, stamps)
    for path in storage_paths:
        _read_into(
            path,
            STORAGE_KINDS,
            "a --storage file holds `kubectl get pv,pvc,sc -A -o json` output",
            out,
            stamps,
        )
    nodes: list[KubeNode] = out["nodes"]
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise SpecError(", ".join(map(str, paths)), [f"Node {node.name} appears twice"])
        seen.add(node.name)
    if not nodes:
        raise SpecError(
            ", ".join(map(str, paths)), ["no Node objects found; pass `kubectl get nodes -o json`"]
        )
    sources = [str(p) for p in [*paths, *kueue_paths, *event_paths, *priority_paths, *storage_paths]]
    pods = (
        apply_priority_classes(out["pods"], out["classes"], ", ".join(sources))
        if out["classes"]
        else out["pods"]
    )
    extras: list[KubeObject] = out["workload_api"]
    policy_objs = [o for o in extras if o.get("kind") in NAMESPACE_POLICY_KINDS]
    api_objs = [o for o in extras if o.get("kind") not in NAMESPACE_POLICY_KINDS]
    groups = read_workload_api(api_objs, ", ".join(sources)).pod_groups
    pods = [_with_group(p, groups) for p in pods] if groups else pods
    return Snapshot(
        nodes,
        pods,
        max(stamps) if stamps else None,
        sources,
        out["queue"],
        out["events"],
        out["storage"],
        dict(out["namespaces"]),
        read_dra_objects(out["dra"], ", ".join(sources), lenient=True),
        dict(groups),
        read_namespace_policies(policy_objs, ", ".join(sources)),
    )


def _with_group(pod: KubePod, groups: Mapping[tuple[str, str], PodGroup]) -> KubePod:
    """A pod in a Workload API PodGroup gets the gang's minCount as its group size and the group's
    topology constraint as its topology request."""
    group = groups.get((pod.namespace, pod.group)) if pod.group else None
    if group is None:
        return pod
    key = group.topology_key
    return replace(
        pod,
        group_size=group.min_count or pod.group_size,
        topology=TopologyRequest(required=key) if key is not None else pod.topology,
    )
