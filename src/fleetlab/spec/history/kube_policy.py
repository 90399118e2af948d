"""A Kubernetes cluster's recorded policy and node outages, from the same kubectl dump as its pods.

* Kueue ``ClusterQueue``, ``LocalQueue``, ``Cohort``, ``ResourceFlavor`` and ``WorkloadPriorityClass``
  objects (``kubectl get clusterqueues,localqueues,cohorts,resourceflavors,workloadpriorityclasses -A
  -o json``) are kept as written, less ``status`` and the server's metadata (only name, namespace and
  labels stay): the calibrated scenario's ``kueue`` section;
* ``ResourceQuota`` ``spec.hard`` per namespace and ``PriorityClass`` objects;
* node down and drain windows: a ``NodeNotReady`` event opens a down window and ``NodeReady`` closes it;
  ``NodeNotSchedulable`` / ``NodeSchedulable`` do the same for drain (cordon) windows. Without such
  events, a Node whose ``Ready`` condition is not True is down since the condition's
  ``lastTransitionTime``, and a cordoned one (``spec.unschedulable``) drained since its
  ``node.kubernetes.io/unschedulable`` taint's ``timeAdded``; both to the end of the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetlab.model.history_policy import HistoryPolicy, NamespaceQuota, PriorityClassRecord
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import NodeDownRecord, SourceData, parse_rfc3339, short
from fleetlab.spec.kube_objects import object_name

KUEUE_POLICY_KINDS = frozenset(
    {"ClusterQueue", "LocalQueue", "Cohort", "ResourceFlavor", "WorkloadPriorityClass"}
)
POLICY_KINDS = KUEUE_POLICY_KINDS | {"ResourceQuota", "PriorityClass"}
#: Node event reason -> (window kind, opens).
NODE_EVENTS = {
    "NodeNotReady": ("down", True),
    "NodeReady": ("down", False),
    "NodeNotSchedulable": ("drain", True),
    "NodeSchedulable": ("drain", False),
}
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
MAX_INT32 = 2**31 - 1


@dataclass
class KubePolicy:
    """What a dump says about policy and node outages, collected while it is read."""

    kueue: list[dict[str, Any]] = field(default_factory=list)
    quotas: list[NamespaceQuota] = field(default_factory=list)
    priority_classes: list[PriorityClassRecord] = field(default_factory=list)
    node_events: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    node_states: list[NodeDownRecord] = field(default_factory=list)

    def take(self, obj: dict[str, Any], source: str) -> None:
        """Keep one policy object (its kind is in POLICY_KINDS)."""
        kind = obj["kind"]
        meta = obj.get("metadata") or {}
        where = f"{kind} {object_name(obj)}"
        if kind in KUEUE_POLICY_KINDS:
            kept = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
            kept["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels") if k in meta}
            self.kueue.append(kept)
        elif kind == "ResourceQuota":
            hard = (obj.get("spec") or {}).get("hard") or {}
            if not isinstance(hard, dict):
                raise SpecError(source, [f"{where}.spec.hard: expected a mapping, got {short(hard)}"])
            self.quotas.append(
                NamespaceQuota(namespace=str(meta.get("namespace") or "default"), name=str(meta.get("name")),
                               hard={str(k): str(v) for k, v in hard.items()})
            )  # fmt: skip
        else:
            value = obj.get("value")
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_INT32 + 1:
                raise SpecError(source, [f"{where}.value: {short(value)} is not a 32-bit whole number"])
            policy = str(obj.get("preemptionPolicy") or "PreemptLowerPriority")
            self.priority_classes.append(
                PriorityClassRecord(name=str(meta.get("name")), value=value,
                                    global_default=obj.get("globalDefault") is True, preemption_policy=policy)
            )  # fmt: skip

    def event(self, obj: dict[str, Any], source: str, data: SourceData) -> bool:
        """Keep a node readiness or cordon event (NODE_EVENTS) for the windows; False for any other event,
        which the job events' reader takes."""
        target = obj.get("involvedObject") or obj.get("regarding") or {}
        reason = str(obj.get("reason") or "")
        if target.get("kind") != "Node" or reason not in NODE_EVENTS:
            return False
        last = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("deprecatedLastTimestamp")
        at = parse_rfc3339(last, source, f"Event {object_name(obj)}.lastTimestamp")
        data.saw(at)
        if at is not None:
            self.node_events.setdefault(str(target.get("name")), []).append((at, reason))
        return True

    def node_status(self, obj: dict[str, Any], source: str) -> None:
        """A Node's current not-ready or cordoned state, as an open window from when it began."""
        name = str((obj.get("metadata") or {}).get("name"))
        where = f"Node {name}"
        status = obj.get("status") or {}
        for i, cond in enumerate(status.get("conditions") or []):
            if isinstance(cond, dict) and cond.get("type") == "Ready" and cond.get("status") != "True":
                at = parse_rfc3339(
                    cond.get("lastTransitionTime"),
                    source,
                    f"{where}.status.conditions[{i}].lastTransitionTime",
                )
                if at is not None:
                    reason = str(cond.get("reason") or "NotReady")
                    self.node_states.append(NodeDownRecord(name, at, None, "down", reason, "kubectl"))
        spec = obj.get("spec") or {}
        if spec.get("unschedulable") is True:
            for i, taint in enumerate(spec.get("taints") or []):
                if isinstance(taint, dict) and taint.get("key") == UNSCHEDULABLE_TAINT:
                    at = parse_rfc3339(taint.get("timeAdded"), source, f"{where}.spec.taints[{i}].timeAdded")
                    if at is not None:
                        self.node_states.append(
                            NodeDownRecord(name, at, None, "drain", "cordoned", "kubectl")
                        )

    def finish(self, data: SourceData) -> None:
        """Windows from the node events (else the nodes' states) and the policy, into ``data``."""
        for node in sorted(self.node_events):
            opened: dict[str, float] = {}
            for at, reason in sorted(self.node_events[node]):
                kind, opens = NODE_EVENTS[reason]
                if opens:
                    opened.setdefault(kind, at)
                elif kind in opened:
                    data.node_down.append(NodeDownRecord(node, opened.pop(kind), at, kind, reason, "kubectl"))
            for kind, at in sorted(opened.items()):
                data.node_down.append(NodeDownRecord(node, at, None, kind, "still so at the dump", "kubectl"))
        data.node_down += [w for w in self.node_states if w.node not in self.node_events]
        data.policy = HistoryPolicy(
            kueue=tuple(self.kueue),
            resource_quotas=tuple(self.quotas),
            priority_classes=tuple(self.priority_classes),
        )
