"""Filters, the FailedScheduling message and end-to-end scoring through the Scheduler.

Reason strings and the aggregate format follow kube-scheduler v1.35 (framework/types.go FitError.Error,
semantics notes §3); cases cite the upstream behaviour they reproduce.
"""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.model.kube import Affinity, Taint, Toleration
from fleetlab.model.scheduler import ResourceWeight, SchedulerConfig, ScoringStrategy
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.profiles import resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo

GI = 1024**3


def node(name: str, cpu: int = 32_000, mem: int = 256 * GI, gpus: int = 8, pods: int = 110, **kw) -> NodeInfo:  # type: ignore[no-untyped-def]
    labels = {"kubernetes.io/hostname": name, **kw.pop("labels", {})}
    return NodeInfo(
        name=name,
        pool=0,
        labels=labels,
        taints=tuple(kw.pop("taints", ())),
        allocatable={
            "cpu": cpu,
            "memory": mem,
            "pods": pods,
            "nvidia.com/gpu": gpus,
            "ephemeral-storage": 100 * GI,
        },
        gpu_model="H100" if gpus else None,
        unschedulable=kw.pop("unschedulable", False),
    )


def make(nodes: list[NodeInfo], policy: str = "default", version: str = "1.35", **cfg) -> Scheduler:  # type: ignore[no-untyped-def]
    state = ClusterState(nodes)
    for i in range(state.n):
        state.set_ready(i)
    profile = resolve_profile(SchedulerConfig(policy=policy, kubernetes_version=version, **cfg))
    return Scheduler(state, profile, seed=0)


def spec(cpu: int = 4000, mem: int = 32 * GI, gpus: int = 0, **kw) -> PodSpec:  # type: ignore[no-untyped-def]
    requests = {"cpu": cpu, "memory": mem}
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    return PodSpec(requests=tuple(sorted(requests.items())), **kw)


def bind(s: Scheduler, node_index: int, pod: PodSpec) -> None:
    c = s.compile(pod)
    s.state.bind(node_index, c.request, c.nonzero)


DEDICATED = Taint(key="dedicated", value="inference", effect="NoSchedule")


def test_semantics_template_message_taints_and_insufficient_gpu() -> None:
    """`0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s).`

    The v1.35 template of semantics §3.3 (without DRA's clause): first failing filter per node.
    """
    nodes = [node("gpu-0"), node("gpu-1")] + [node(f"inf-{i}", taints=[DEDICATED]) for i in range(3)]
    s = make(nodes)
    bind(s, 0, spec(gpus=8))
    bind(s, 1, spec(gpus=6))
    pod = s.compile(spec(gpus=4))
    assert s.select(pod) == -1
    assert s.explain(pod).message == (
        "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s)."
    )


def test_taint_message_names_taint_before_v135() -> None:
    """Before PR #134740 the taint reason names the first untolerated taint: `{dedicated: inference}`."""
    s = make([node("inf-0", taints=[DEDICATED])], version="1.34")
    assert s.explain(s.compile(spec(gpus=1))).message == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: inference}."
    )


def test_first_failing_filter_only_tainted_full_node_reports_taint() -> None:
    """RunFilterPlugins stops at the first failure: a tainted node that is also full reports only the taint."""
    s = make([node("inf-0", gpus=0, taints=[DEDICATED])])
    assert s.explain(s.compile(spec(gpus=1))).histogram == {"node(s) had untolerated taint(s)": 1}


def test_multiple_fit_reasons_counted_and_sorted_as_strings() -> None:
    """Several Fit reasons per node are all counted; parts sort as strings ("10 ..." before "4 ...").

    Mirrors kubernetes/kubernetes#123301: `0/11 nodes are available: 10 Insufficient memory, 4 Insufficient cpu.`
    """
    nodes = [node(f"n{i}", cpu=2000, mem=8 * GI) for i in range(4)]
    nodes += [node(f"m{i}", cpu=64_000, mem=8 * GI) for i in range(6)]
    nodes += [node("big", cpu=64_000, mem=512 * GI, gpus=0)]
    s = make(nodes)
    pod = s.compile(spec(cpu=4000, mem=16 * GI, gpus=1))
    bind(s, 10, spec(cpu=62_000, mem=500 * GI))
    hist = s.explain(pod).histogram
    assert hist["Insufficient memory"] == 11
    assert hist["Insufficient cpu"] == 5
    assert hist["Insufficient nvidia.com/gpu"] == 1
    msg = s.explain(pod).message
    assert msg == (
        "0/11 nodes are available: 1 Insufficient nvidia.com/gpu, 11 Insufficient memory, 5 Insufficient cpu."
    )


def test_too_many_pods() -> None:
    """The Fit filter counts the pod itself against allocatable pods: `Too many pods`."""
    s = make([node("n0", pods=1)])
    bind(s, 0, spec(cpu=100, mem=GI))
    assert s.explain(s.compile(spec(cpu=100, mem=GI))).message == "0/1 nodes are available: 1 Too many pods."


def test_unschedulable_and_toleration_of_it() -> None:
    """Cordoned nodes: `node(s) were unschedulable`, unless the pod tolerates node.kubernetes.io/unschedulable."""
    s = make([node("n0", unschedulable=True), node("n1")])
    bind(s, 1, spec(gpus=8))
    pod = s.compile(spec(gpus=1))
    assert s.explain(pod).message == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable."
    )
    tolerant = s.compile(
        spec(gpus=1, tolerations=(Toleration(key="node.kubernetes.io/unschedulable", operator="Exists"),))
    )
    assert s.select(tolerant) == 0


@pytest.mark.parametrize(
    ("toleration", "ok"),
    [
        (Toleration(key="dedicated", value="inference", effect="NoSchedule"), True),
        (Toleration(key="dedicated", operator="Exists"), True),
        (Toleration(operator="Exists"), True),
        (Toleration(key="dedicated", value="training"), False),
        (Toleration(key="dedicated", value="inference", effect="NoExecute"), False),
    ],
)
def test_toleration_matching(toleration: Toleration, ok: bool) -> None:
    """core/v1 ToleratesTaint: effect empty or equal, empty key with Exists matches all, Equal compares values."""
    s = make([node("inf-0", taints=[DEDICATED])])
    assert (s.select(s.compile(spec(gpus=1, tolerations=(toleration,)))) == 0) is ok


def _affinity(expr: dict) -> Affinity:  # type: ignore[type-arg]
    return Affinity.model_validate(
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [expr]}}}
    )


def test_node_selector_and_required_affinity() -> None:
    """nodeSelector and required affinity are ANDed; Gt compares integers; message per upstream wording."""
    nodes = [
        node("a", labels={"nvidia.com/gpu.memory": "81559", "zone": "z1"}),
        node("b", labels={"nvidia.com/gpu.memory": "40960", "zone": "z1"}),
        node("c", labels={"nvidia.com/gpu.memory": "81559", "zone": "z2"}),
    ]
    s = make(nodes)
    aff = _affinity(
        {"matchExpressions": [{"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["50000"]}]}
    )
    pod = s.compile(spec(gpus=1, node_selector=(("zone", "z1"),), affinity=aff))
    assert s.select(pod) == 0
    bind(s, 0, spec(gpus=8))
    assert s.explain(pod).message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector."
    )


def test_empty_term_matches_nothing_and_notin_doesnotexist() -> None:
    """Upstream: an empty nodeSelectorTerm matches no node; NotIn and DoesNotExist match absent labels."""
    s = make([node("a", labels={"k": "v"}), node("b")])
    assert not s.static_mask(s.compile(spec(affinity=_affinity({})))).any()
    notin = s.compile(
        spec(affinity=_affinity({"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["v"]}]}))
    )
    assert s.static_mask(notin).tolist() == [False, True]
    absent = s.compile(
        spec(affinity=_affinity({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}))
    )
    assert s.static_mask(absent).tolist() == [False, True]
    by_name = s.compile(
        spec(
            affinity=_affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]})
        )
    )
    assert s.static_mask(by_name).tolist() == [True, False]


def test_least_vs_most_allocated_choose_opposite_nodes() -> None:
    """LeastAllocated spreads to the emptier node, MostAllocated packs onto the fuller one (GPU weighted)."""
    nodes = [node("a"), node("b")]
    least = make(nodes, policy="least-allocated")
    most = make(nodes, policy="most-allocated")
    for s in (least, most):
        bind(s, 0, spec(cpu=8000, mem=64 * GI, gpus=4))
    pod = spec(cpu=4000, mem=32 * GI, gpus=2)
    assert least.select(least.compile(pod)) == 1
    assert most.select(most.compile(pod)) == 0


def test_default_profile_worked_gpu_example_score() -> None:
    """semantics §2.5: default Fit score 62 (GPU not scored); with gpu weight 5 → (62+62+25·5)/7 = 35."""
    s = make([node("a", cpu=32_000, mem=256 * GI)], plugin_weights={"NodeResourcesFit": 1})
    bind(s, 0, spec(cpu=8000, mem=64 * GI, gpus=4))
    pod = s.compile(spec(cpu=4000, mem=32 * GI, gpus=2))
    nodes = np.asarray([0])
    assert s.plugin_scores(pod, nodes)["NodeResourcesFit"].tolist() == [62]  # type: ignore[union-attr]
    assert s.plugin_scores(pod, nodes)["NodeResourcesBalancedAllocation"].tolist() == [100]  # type: ignore[union-attr]
    weighted = make(
        [node("a", cpu=32_000, mem=256 * GI)],
        scoringStrategy=ScoringStrategy(
            type="LeastAllocated",
            resources=(
                ResourceWeight(name="cpu", weight=1),
                ResourceWeight(name="memory", weight=1),
                ResourceWeight(name="nvidia.com/gpu", weight=5),
            ),
        ),
    )
    bind(weighted, 0, spec(cpu=8000, mem=64 * GI, gpus=4))
    pod = weighted.compile(spec(cpu=4000, mem=32 * GI, gpus=2))
    assert weighted.plugin_scores(pod, nodes)["NodeResourcesFit"].tolist() == [35]  # type: ignore[union-attr]


def test_nonzero_defaults_in_scoring_not_in_filter() -> None:
    """A pod without cpu/memory requests scores as 100m/200Mi but the Fit filter sees 0 (pod_resources.go)."""
    s = make([node("a", cpu=250, mem=1000 * 1024**2, gpus=0)], policy="most-allocated")
    empty = PodSpec(requests=())
    pod = s.compile(empty)
    assert pod.nonzero.tolist() == [100, 200 * 1024**2]
    assert pod.request[s.state.cpu_col] == 0
    assert s.select(pod) == 0


def test_image_locality_prefers_node_with_image() -> None:
    """ImageLocality: nodes holding a large image score higher, scaled by spread (image_locality.go); the
    size is the one the node reports for the image."""
    s = make([node("a"), node("b"), node("c"), node("d")])
    s.state.add_image(2, "big", 4000 * 1024**2)
    pod = s.compile(spec(gpus=1, image="big", image_size=4000 * 1024**2))
    scores = s.plugin_scores(pod, np.arange(4))["ImageLocality"]
    assert scores is not None
    # size × spread = 4000Mi × 1/4 = 1000Mi -> clamp to 1000Mi -> 100.
    assert scores.tolist() == [0, 0, 100, 0]
    assert s.select(pod) == 2


def test_preferred_affinity_and_prefer_no_schedule() -> None:
    """Preferred node affinity pulls pods to matching nodes; PreferNoSchedule taints push them away."""
    soft = Taint(key="spot", value="true", effect="PreferNoSchedule")
    s = make([node("a", taints=[soft]), node("b"), node("c", labels={"tier": "fast"})])
    aff = Affinity.model_validate(
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "preference": {
                            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fast"]}]
                        },
                    }
                ]
            }
        }
    )
    pod = s.compile(spec(gpus=1, affinity=aff))
    scores = s.plugin_scores(pod, np.arange(3))
    assert scores["NodeAffinity"].tolist() == [0, 0, 100]  # type: ignore[union-attr]
    assert scores["TaintToleration"].tolist() == [0, 100, 100]  # type: ignore[union-attr]
    assert s.select(pod) == 2


def test_extended_resource_toleration_admission() -> None:
    """ExtendedResourceToleration adds {nvidia.com/gpu, Exists, NoSchedule} to GPU pods (GKE's GPU taint)."""
    gke_taint = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
    state = ClusterState([node("g", taints=[gke_taint])])
    state.set_ready(0)
    profile = resolve_profile(SchedulerConfig())
    plain = Scheduler(state, profile)
    admitted = Scheduler(state, profile, extended_resource_toleration=True)
    assert plain.select(plain.compile(spec(gpus=1))) == -1
    assert admitted.select(admitted.compile(spec(gpus=1))) == 0
