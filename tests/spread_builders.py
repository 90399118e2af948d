"""Small clusters and pods for the PodTopologySpread / InterPodAffinity tests (upstream test shapes)."""

from __future__ import annotations

from typing import Any

from fleetlab.model.kube import Taint
from fleetlab.model.pod_constraints import (
    LabelSelector,
    PodAffinityTerm,
    PodAntiAffinityTerm,
    TopologySpreadConstraint,
)
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.profiles import resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo

GI = 1024**3
#: st.MakeLabelSelector().Exists("foo") of upstream's tests.
FOO = LabelSelector.model_validate({"matchExpressions": [{"key": "foo", "operator": "Exists"}]})


def make_node(name: str, zone: str | None, taints: tuple[Taint, ...] = (), **labels: str) -> NodeInfo:
    """A node with upstream's test labels: ``zone`` and ``node`` (its name) plus the hostname label."""
    all_labels = {"node": name, "kubernetes.io/hostname": name, **labels}
    if zone is not None:
        all_labels["zone"] = zone
    return NodeInfo(
        name=name,
        pool=0,
        labels=all_labels,
        taints=taints,
        allocatable={"cpu": 64_000, "memory": 256 * GI, "pods": 110, "ephemeral-storage": 100 * GI},
    )


def make_cluster(
    nodes: list[NodeInfo], config: SchedulerConfig | None = None
) -> tuple[ClusterState, Scheduler]:
    """Every node ready; the default profile (or ``config``), first-node tie break."""
    state = ClusterState(nodes)
    for i in range(state.n):
        state.set_ready(i)
    cfg = config or SchedulerConfig(tie_break="first")
    return state, Scheduler(state, resolve_profile(cfg), seed=0)


def spread(max_skew: int, key: str, action: str = "DoNotSchedule", **extra: Any) -> TopologySpreadConstraint:
    """A constraint like upstream's st.SpreadConstraint(maxSkew, key, action, fooSelector, ...)."""
    data: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action}
    data.setdefault("labelSelector", FOO.model_dump(by_alias=True))
    data.update(extra)
    return TopologySpreadConstraint.model_validate(data)


def anti(
    key: str, required: bool = True, weight: int = 100, selector: LabelSelector = FOO
) -> PodAntiAffinityTerm:
    """An anti-affinity term against pods labelled ``foo``."""
    return PodAntiAffinityTerm(topology_key=key, required=required, weight=weight, label_selector=selector)


def pod(
    scheduler: Scheduler,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **fields: Any,
) -> CompiledPod:
    """A small pod (1 CPU, 1Gi) compiled by the scheduler; labels default to ``foo: ""``."""
    spec = PodSpec(
        requests=(("cpu", 1000), ("memory", GI)),
        labels=tuple(sorted((labels if labels is not None else {"foo": ""}).items())),
        namespace=namespace,
        **fields,
    )
    return scheduler.compile(spec)


def place_existing(
    state: ClusterState,
    placement: dict[str, int],
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    anti_terms: tuple[PodAntiAffinityTerm, ...] = (),
    affinity_terms: tuple[PodAffinityTerm, ...] = (),
    terminating: bool = False,
) -> int:
    """Bind ``count`` existing pods per node name (as upstream's existingPods); returns their label set."""
    set_id = state.pod_labels.intern(
        labels if labels is not None else {"foo": ""}, namespace, anti_terms, affinity_terms, terminating
    )
    index = {name: i for i, name in enumerate(state.node_names)}
    request = state.allocatable[0] * 0
    request[state.pods_col] = 1
    request[state.cpu_col] = 100
    nonzero = request[[state.cpu_col, state.mem_col]]
    for name, count in placement.items():
        for _ in range(count):
            state.bind(index[name], request, nonzero, set_id)
    return set_id
