"""Upstream InterPodAffinity score tables, ported case by case.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go``,
``TestPreferredAffinity`` and ``TestPreferredAffinityWithHardPodAffinitySymmetricWeight``, at commit
030880a5dc5449403c6d1f0aa146a7dc21d6c6dc. Each case keeps upstream's name, nodes (their ``region`` / ``az``
labels), existing pods (labels and affinity) and the normalised score list; upstream's Skip status (no term
on either side) is fleetlab's ``None``. The plugin runs with upstream's defaults: hardPodAffinityWeight 1,
preferred terms of existing pods not ignored.

Upstream's four Namespaces carry ``team`` labels; here they are the state's namespace labels. Not ported
(not expressible): the 2 cases with invalid label values (upstream fails PreScore; fleetlab's selectors
never match such a value), and those setting the plugin arguments ``ignorePreferredTermsOfExistingPods:
true`` or ``hardPodAffinityWeight: 0`` (fleetlab runs with the defaults).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fleetlab.kube.cluster import build_live_cluster, pod_spec
from fleetlab.model.pod_constraints import LabelSelector, PodAffinityTerm, PodAntiAffinityTerm
from fleetlab.placement.plugins.inter_pod_affinity import InterPodAffinityFilter, InterPodAffinityScore
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import container, write_list
from kube_builders import node as knode
from kube_builders import pod as kpod
from spread_builders import make_cluster, make_node, place_existing, pod

UPSTREAM = "kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go @030880a5"
HOST = "kubernetes.io/hostname"
Affinity = tuple[tuple[PodAffinityTerm, ...], tuple[PodAntiAffinityTerm, ...]]
NONE: Affinity = ((), ())


def sel(*expressions: tuple[str, str, list[str]]) -> LabelSelector:
    return LabelSelector.model_validate(
        {"matchExpressions": [{"key": k, "operator": op, "values": v} for k, op, v in expressions]}
    )


def aff(key: str, selector: LabelSelector, weight: int = 0, **extra: Any) -> PodAffinityTerm:
    """A pod affinity term: preferred with ``weight``, required when ``weight`` is 0."""
    kind = {"required": True} if weight == 0 else {"required": False, "weight": weight}
    return PodAffinityTerm(topology_key=key, label_selector=selector, **kind, **extra)


def anti(key: str, selector: LabelSelector, weight: int) -> PodAntiAffinityTerm:
    return PodAntiAffinityTerm(topology_key=key, label_selector=selector, required=False, weight=weight)


S1, S2 = {"security": "S1"}, {"security": "S2"}
IN_S1 = sel(("security", "In", ["S1"]))
IN_S2 = sel(("security", "In", ["S2"]))
STAY_WITH_S1_IN_REGION: Affinity = ((aff("region", IN_S1, 5),), ())
STAY_WITH_S2_IN_REGION: Affinity = ((aff("region", IN_S2, 6),), ())
AFFINITY3: Affinity = (
    (
        aff("region", sel(("security", "NotIn", ["S1"]), ("security", "In", ["S2"])), 8),
        aff("region", sel(("security", "Exists", []), ("wrongkey", "DoesNotExist", [])), 2),
    ),
    (),
)
HARD_AFFINITY: Affinity = (
    (
        aff("region", sel(("security", "In", ["S1", "value2"]))),
        aff("region", sel(("security", "Exists", []), ("wrongkey", "DoesNotExist", []))),
    ),
    (),
)
AWAY_FROM_S1_IN_AZ: Affinity = ((), (anti("az", IN_S1, 5),))
AWAY_FROM_S2_IN_AZ: Affinity = ((), (anti("az", IN_S2, 5),))
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ: Affinity = ((aff("region", IN_S1, 8),), (anti("az", IN_S2, 5),))

TEAM1 = sel(("team", "In", ["team1"]))
AFFINITY_NAMESPACE_SELECTOR: Affinity = (
    (aff("region", IN_S1, 5, namespaces=("subteam2.team2",), namespace_selector=TEAM1),),
    (),
)
ANTI_AFFINITY_NAMESPACE_SELECTOR: Affinity = (
    (),
    (
        anti("region", IN_S1, 5).model_copy(
            update={"namespaces": ("subteam2.team2",), "namespace_selector": TEAM1}
        ),
    ),
)
NAMESPACE_LABELS = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}

CHINA, INDIA = {"region": "China"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}

#: (incoming labels, incoming affinity, existing pods as (node index, labels, affinity), node labels, scores)
Case = tuple[
    dict[str, str],
    Affinity,
    list[tuple[int, dict[str, str], Affinity]],
    list[dict[str, str]],
    list[int] | None,
]
MAX = 100
CASES: dict[str, Case] = {
    "all nodes are same priority as Affinity is nil": (S1, NONE, [], [CHINA, INDIA, AZ1], None),
    "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
    "which doesn't match either pods in nodes or in topology key": (
        S1,
        STAY_WITH_S1_IN_REGION,
        [(0, S1, NONE), (1, S2, NONE), (2, S1, NONE)],
        [CHINA, INDIA, AZ1],
        [MAX, 0, 0],
    ),
    "All the nodes that have the same topology key & label value with one of them has an existing pod that "
    "match the affinity rules, have the same score": (
        {},
        STAY_WITH_S1_IN_REGION,
        [(0, S1, NONE)],
        [CHINA, CHINA_AZ1, INDIA],
        [MAX, MAX, 0],
    ),
    "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
    "more matches will get high score": (
        S1,
        STAY_WITH_S2_IN_REGION,
        [(0, S2, NONE), (0, S2, NONE), (1, S2, NONE), (2, S2, NONE), (3, S2, NONE), (4, S2, NONE)],
        [CHINA, INDIA, CHINA, CHINA, INDIA],
        [MAX, 0, MAX, MAX, 0],
    ),
    "Affinity: different Label operators and values for pod affinity scheduling preference, including some "
    "match failures ": (
        S1,
        AFFINITY3,
        [(0, S1, NONE), (1, S2, NONE), (2, S1, NONE)],
        [CHINA, INDIA, AZ1],
        [20, MAX, 0],  # China: 2 (Exists), India: 8 + 2; (2 - 0) / (10 - 0) x 100
    ),
    "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
    "symmetry": (
        S2,
        NONE,
        [(0, S1, STAY_WITH_S1_IN_REGION), (1, S2, STAY_WITH_S2_IN_REGION)],
        [CHINA, INDIA, AZ1],
        [0, MAX, 0],  # only the India pod's term (weight 6) selects an S2 pod
    ),
    "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry": (
        S1,
        NONE,
        [(0, S1, HARD_AFFINITY), (1, S2, HARD_AFFINITY)],
        [CHINA, INDIA, AZ1],
        [MAX, MAX, 0],  # each pod's two required terms select S1: 2 x hardPodAffinityWeight 1 per region
    ),
    "Anti Affinity: pod that does not match existing pods in node will get high score ": (
        S1,
        AWAY_FROM_S1_IN_AZ,
        [(0, S1, NONE), (1, S2, NONE)],
        [AZ1, CHINA],
        [0, MAX],
    ),
    "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
    "comparing to others ": (
        S1,
        AWAY_FROM_S1_IN_AZ,
        [(0, S1, NONE), (1, S1, NONE)],
        [AZ1, CHINA],
        [0, MAX],
    ),
    "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
    "unmatches will get high score": (
        S1,
        AWAY_FROM_S1_IN_AZ,
        [(0, S1, NONE), (0, S1, NONE), (1, S2, NONE)],
        [AZ1, INDIA],
        [0, MAX],
    ),
    "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score": (
        S2,
        NONE,
        [(0, S1, AWAY_FROM_S2_IN_AZ), (1, S2, AWAY_FROM_S1_IN_AZ)],
        [AZ1, AZ2],
        [0, MAX],  # az1: -5 from the pod avoiding S2; az2: 0
    ),
    "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
    "affinity & anti affinity": (
        S1,
        STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ,
        [(0, S1, NONE), (1, S1, NONE)],
        [CHINA, AZ1],
        [MAX, 0],
    ),
    "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
    "pods have the same labels": (
        S1,
        STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ,
        [
            (0, S1, NONE),
            (0, S1, NONE),
            (1, S1, NONE),
            (2, S1, NONE),
            (2, S1, NONE),
            (3, S1, NONE),
            (4, S1, NONE),
        ],
        [CHINA_AZ1, INDIA, CHINA, CHINA, INDIA],
        [MAX, 0, MAX, MAX, 0],
    ),
    "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution "
    "in both pod affinity & anti affinity & symmetry": (
        S1,
        STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ,
        [
            (0, S1, NONE),
            (1, S2, NONE),
            (2, {}, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            (3, {}, AWAY_FROM_S1_IN_AZ),
        ],
        [CHINA, AZ1, INDIA, AZ2],
        [MAX, 0, MAX, 0],  # 8, 0, 8 (the India pod's affinity selects S1), -5 (the az2 pod avoids S1)
    ),
    "Avoid panic when partial nodes in a topology don't have pods with affinity": (
        S1,
        NONE,
        [(0, S1, NONE), (1, {}, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        [CHINA, CHINA],
        [0, 0],
    ),
    "Do not ignore preferred terms of existing pods": (
        S2,
        NONE,
        [(0, S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), (1, S2, STAY_WITH_S2_IN_REGION)],
        [CHINA, INDIA],
        [0, MAX],  # China has no az label, so the pod avoiding S2 in its az takes nothing off
    ),
}


def run(
    labels: dict[str, str],
    affinity: Affinity,
    existing: list[tuple[int, dict[str, str], Affinity]],
    node_labels: list[dict[str, str]],
    namespace: str = "default",
    existing_namespace: str = "default",
    namespaces: dict[str, str] | None = None,
) -> list[int] | None:
    """Score every node; ``namespaces`` gives existing pod i (by position) a namespace of its own."""
    state, sched = make_cluster([make_node(f"node{i + 1}", None, **lb) for i, lb in enumerate(node_labels)])
    state.pod_labels.namespace_labels.update(NAMESPACE_LABELS)
    for i, (node, pod_labels, (affinity_terms, anti_terms)) in enumerate(existing):
        ns = (namespaces or {}).get(str(i), existing_namespace)
        place_existing(state, {f"node{node + 1}": 1}, pod_labels, ns, anti_terms, affinity_terms)
    incoming = pod(
        sched, labels=labels, namespace=namespace, pod_affinity=affinity[0], anti_affinity=affinity[1]
    )
    scores = InterPodAffinityScore().score(state, incoming, np.arange(state.n))
    return None if scores is None else [int(s) for s in scores]


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_preferred_affinity(case: str) -> None:
    labels, affinity, existing, nodes, want = CASES[case]
    assert run(labels, affinity, existing, nodes) == want, UPSTREAM


T1, T2 = "subteam1.team1", "subteam2.team2"
#: Namespace-selector cases: incoming namespace subteam1.team1; (incoming affinity, existing pods, their
#: namespaces by position, node labels, scores).
NS_CASES: dict[str, tuple[Any, ...]] = {
    "Affinity symmetry with namespace selector": (
        NONE,
        [(0, S1, AFFINITY_NAMESPACE_SELECTOR), (1, S2, STAY_WITH_S2_IN_REGION)],
        {},
        [CHINA, INDIA, AZ1],
        [MAX, 0, 0],  # the China pod's term selects team1 namespaces: +5 there
    ),
    "AntiAffinity symmetry with namespace selector": (
        NONE,
        [(0, S1, ANTI_AFFINITY_NAMESPACE_SELECTOR), (1, S2, STAY_WITH_S2_IN_REGION)],
        {},
        [CHINA, INDIA, AZ1],
        [0, MAX, MAX],  # -5 in China
    ),
    "Affinity with pods matching NamespaceSelector": (
        AFFINITY_NAMESPACE_SELECTOR,
        [(0, S1, NONE), (0, S1, NONE), (0, S1, NONE), (1, S1, NONE)],
        {"0": T1, "1": T1, "2": "subteam1.team2", "3": "subteam2.team1"},
        [CHINA, INDIA],
        [MAX, 0],  # China: 2 team1 pods x 5 (the team2 pod is not selected), India: 1 x 5
    ),
    "Affinity with pods matching both NamespaceSelector and Namespaces fields": (
        AFFINITY_NAMESPACE_SELECTOR,
        [(0, S1, NONE), (0, S1, NONE), (0, S1, NONE), (1, S1, NONE)],
        {"0": T1, "1": T1, "2": T2, "3": "subteam2.team1"},
        [CHINA, INDIA],
        [MAX, 0],  # China: 2 by selector + 1 by name, x 5; India: 5
    ),
    "Affinity with pods matching NamespaceSelector (anti-affinity)": (
        ANTI_AFFINITY_NAMESPACE_SELECTOR,
        [(0, S1, NONE), (0, S1, NONE), (0, S1, NONE), (1, S1, NONE)],
        {"0": T1, "1": T1, "2": "subteam1.team2", "3": "subteam2.team1"},
        [CHINA, INDIA],
        [0, MAX],
    ),
    "Affinity with pods matching both NamespaceSelector and Namespaces fields (anti-affinity)": (
        ANTI_AFFINITY_NAMESPACE_SELECTOR,
        [(0, S1, NONE), (0, S1, NONE), (0, S1, NONE), (1, S1, NONE)],
        {"0": T1, "1": T1, "2": T2, "3": "subteam2.team1"},
        [CHINA, INDIA],
        [0, MAX],
    ),
}


@pytest.mark.parametrize("case", list(NS_CASES), ids=list(NS_CASES))
def test_preferred_affinity_namespace_selector(case: str) -> None:
    """Upstream repeats the last two names for the anti-affinity variants; they are suffixed here."""
    affinity, existing, namespaces, nodes, want = NS_CASES[case]
    got = run(S1, affinity, existing, nodes, namespace=T1, existing_namespace="", namespaces=namespaces)
    assert got == want, UPSTREAM


def test_preferred_affinity_no_nodes_to_score() -> None:
    """ "No nodes to score": nothing to score, no error."""
    state, sched = make_cluster([make_node("node1", None)])
    scores = InterPodAffinityScore().score(state, pod(sched, labels=S2), np.arange(0))
    assert scores is None or len(scores) == 0, UPSTREAM


SERVICE_S1 = {"service": "S1"}
#: hardPodAffinity of TestPreferredAffinityWithHardPodAffinitySymmetricWeight.
HARD_POD_AFFINITY: Affinity = (
    (
        aff(
            "region",
            sel(("service", "In", ["S1"])),
            namespaces=("", "subteam2.team2"),
            namespace_selector=TEAM1,
        ),
    ),
    (),
)


@pytest.mark.parametrize(
    ("namespace", "want"),
    [
        pytest.param("", [MAX, MAX, 0], id="with default weight"),
        pytest.param("subteam1.team2", None, id="with no matching namespace"),
        pytest.param("subteam1.team1", [MAX, MAX, 0], id="with matching NamespaceSelector"),
        pytest.param("subteam2.team2", [MAX, MAX, 0], id="with matching Namespaces"),
    ],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    namespace: str, want: list[int] | None
) -> None:
    """Existing pods (no labels) on node1 and node2 require affinity to ``service: S1`` pods in the listed
    namespaces: an incoming S1 pod in one of them scores hardPodAffinityWeight (1) in both regions."""
    existing = [(0, {}, HARD_POD_AFFINITY), (1, {}, HARD_POD_AFFINITY)]
    got = run(SERVICE_S1, NONE, existing, [CHINA, INDIA, AZ1], namespace=namespace, existing_namespace="")
    assert got == want, UPSTREAM


def test_snapshot_namespace_objects_feed_namespace_selector(tmp_path: Path) -> None:
    """A kubectl snapshot with Namespace objects: a pending pod in ``ml`` requires anti-affinity (hostname)
    to ``app: web`` pods in namespaces labelled ``team: a``. The web pod on n1 runs in ``web-a`` (team a),
    the one on n2 in ``web-b`` (team b): only n1 is blocked. ``{}`` would select every namespace (both)."""
    selector = {"matchLabels": {"app": "web"}}

    def term(ns_selector: dict[str, Any]) -> dict[str, Any]:
        required = [{"labelSelector": selector, "topologyKey": HOST, "namespaceSelector": ns_selector}]
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}

    def web(name: str, ns: str, on: str) -> dict[str, Any]:
        obj = kpod(name, [container("c", {"cpu": "1"})], node=on, phase="Running")
        obj["metadata"].update(namespace=ns, labels={"app": "web"})
        return obj

    namespaces = [
        {"kind": "Namespace", "metadata": {"name": n, "labels": {"team": t}}}
        for n, t in (("web-a", "a"), ("web-b", "b"))
    ]
    base = [
        knode("n1", gpus=None),
        knode("n2", gpus=None),
        *namespaces,
        web("w1", "web-a", "n1"),
        web("w2", "web-b", "n2"),
    ]
    for ns_selector, want in (({"matchLabels": {"team": "a"}}, [False, True]), ({}, [False, False])):
        pending = kpod("p", [container("c", {"cpu": "1"})], affinity=term(ns_selector))
        pending["metadata"]["namespace"] = "ml"
        snap = load_snapshot([write_list(tmp_path / "snap.json", [*base, pending])])
        assert snap.namespace_labels == {"web-a": {"team": "a"}, "web-b": {"team": "b"}}
        live = build_live_cluster(snap)
        compiled = live.scheduler.compile(pod_spec(snap.pods[-1]))
        assert [bool(v) for v in InterPodAffinityFilter().passes(live.state, compiled)] == want
