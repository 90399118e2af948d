"""A snapshot turned into the simulator's placement state: the same ClusterState, PodSpec and Scheduler.

Every node in the snapshot is in the scheduler's cache (kube-scheduler lists all nodes; NotReady ones are
kept out by the node lifecycle controller's ``not-ready``/``unreachable`` NoSchedule taints). A node whose
Ready condition is False/Unknown but that lacks the taint (captured before the controller reacted) gets it
implied, as the controller adds it within seconds. Pods bound to a node and not terminated (DaemonSet pods
included) are charged to that node.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.model.cluster import GPU_PRODUCT_LABEL
from fleetlab.model.kube import Taint
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.dra.pools import NodeView
from fleetlab.placement.dra.state import DraState
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.plugins.dynamic_resources import DynamicResources
from fleetlab.placement.profiles import Profile, resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo
from fleetlab.spec.kube_snapshot import KubeNode, KubePod, Snapshot

NOT_READY_TAINT = Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")
UNREACHABLE_TAINT = Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule")
NOT_READY_KEYS = frozenset({NOT_READY_TAINT.key, UNREACHABLE_TAINT.key})


def implied_taint(node: KubeNode) -> Taint | None:
    """The NoSchedule taint the node lifecycle controller puts on a NotReady node, if it is missing."""
    if node.ready == "True":
        return None
    if any(t.key in NOT_READY_KEYS and t.effect == "NoSchedule" for t in node.taints):
        return None
    return NOT_READY_TAINT if node.ready == "False" else UNREACHABLE_TAINT


def pod_spec(pod: KubePod) -> PodSpec:
    """The placement-facing view of a snapshot pod (what the simulator builds from a job); labels only
    for pods with spread or anti-affinity, so other pods keep sharing specs."""
    constrained = bool(pod.topology_spread or pod.anti_affinity or pod.pod_affinity)
    return PodSpec(
        requests=tuple(sorted(pod.requests.items())),
        tolerations=pod.tolerations,
        node_selector=pod.node_selector,
        affinity=pod.affinity,
        containers=max(1, pod.containers),
        explicit_keys=pod.explicit_keys,
        scoring_requests=pod.scoring_requests,
        claims=pod.resource_claims,
        labels=tuple(sorted(pod.labels.items())) if constrained else (),
        namespace=pod.namespace,
        topology_spread=pod.topology_spread,
        anti_affinity=pod.anti_affinity,
        pod_affinity=pod.pod_affinity,
    )


@dataclass
class LiveCluster:
    """The snapshot's placement state with bound pods charged, and a default-profile scheduler."""

    snapshot: Snapshot
    state: ClusterState
    scheduler: Scheduler
    index: dict[str, int]
    #: Pods whose nodeName names no node in the snapshot (cannot be charged anywhere).
    orphans: list[KubePod]
    #: Nodes that got a not-ready/unreachable taint implied from their Ready condition.
    implied: list[str]


def build_live_cluster(snapshot: Snapshot, profile: Profile | None = None) -> LiveCluster:
    """ClusterState of the snapshot's nodes with every bound, non-terminated pod's requests applied."""
    implied: list[str] = []
    taints: list[tuple[Taint, ...]] = []
    for node in snapshot.nodes:
        extra_taint = implied_taint(node)
        taints.append(node.taints if extra_taint is None else (*node.taints, extra_taint))
        if extra_taint is not None:
            implied.append(node.name)
    infos = [
        NodeInfo(
            name=node.name,
            pool=0,
            labels=node.labels,
            taints=node_taints,
            allocatable=node.allocatable,
            gpu_model=node.labels.get(GPU_PRODUCT_LABEL),
            unschedulable=node.unschedulable,
        )
        for node, node_taints in zip(snapshot.nodes, taints, strict=True)
    ]
    extra = sorted({name for pod in snapshot.pods for name in pod.requests})
    state = ClusterState(infos, extra_resources=extra)
    state.pod_labels.namespace_labels.update(snapshot.namespace_labels)
    for i in range(state.n):
        state.set_ready(i)
    scheduler = Scheduler(state, profile or resolve_profile(SchedulerConfig()))
    if snapshot.dra:
        views = [NodeView(n.name, n.labels) for n in snapshot.nodes]
        scheduler.attach_dynamic_resources(DynamicResources(DraState.from_objects(snapshot.dra), views))
    index = {name: i for i, name in enumerate(state.node_names)}
    orphans: list[KubePod] = []
    #: Bound pods count for spread / anti-affinity only when some pod in the snapshot declares those.
    counting = any(p.topology_spread or p.anti_affinity or p.pod_affinity for p in snapshot.pods)
    for pod in snapshot.pods:
        if pod.terminated or pod.node_name is None:
            continue
        row = index.get(pod.node_name)
        if row is None:
            orphans.append(pod)
            continue
        compiled = scheduler.compile(pod_spec(pod))
        label_set = (
            state.pod_labels.intern(
                pod.labels, pod.namespace, pod.anti_affinity, pod.pod_affinity, terminating=pod.deleting
            )
            if counting
            else -1
        )
        state.bind(row, compiled.request, compiled.nonzero, label_set)
    return LiveCluster(snapshot, state, scheduler, index, orphans, implied)
