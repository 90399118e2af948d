"""InterPodAffinity's affinity half, worked from upstream's filtering_test.go / scoring_test.go
(pkg/scheduler/framework/plugins/interpodaffinity): required terms need a matching pod in the node's domain
of each term's key (and the key itself), the first pod of a self-affine group may go anywhere with the keys,
preferred terms attract by weight; affinity is checked before anti-affinity."""

from __future__ import annotations

import numpy as np

from fleetlab.model.pod_constraints import LabelSelector, PodAffinityTerm
from fleetlab.placement.plugins.inter_pod_affinity import (
    REASON_AFFINITY,
    InterPodAffinityFilter,
    InterPodAffinityScore,
)
from spread_builders import FOO, anti, make_cluster, make_node, place_existing, pod

HOST = "kubernetes.io/hostname"
SERVICE = LabelSelector(match_labels={"service": "securityscan"})


def affinity(
    key: str, required: bool = True, weight: int = 100, selector: LabelSelector = FOO
) -> PodAffinityTerm:
    return PodAffinityTerm(topology_key=key, required=required, weight=weight, label_selector=selector)


def cluster():  # type: ignore[no-untyped-def]
    nodes = [make_node(n, z) for n, z in [("a", "z1"), ("b", "z1"), ("x", "z2"), ("y", "z2")]]
    nodes.append(make_node("nozone", None))
    return make_cluster(nodes)


def passes(state, compiled):  # type: ignore[no-untyped-def]
    return [bool(v) for v in InterPodAffinityFilter().passes(state, compiled)]


def test_required_zone_affinity_admits_only_the_zone_holding_a_matching_pod() -> None:
    """ "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator
    that matches the existing pod": a matching pod on b opens zone z1; the node without a zone key fails."""
    state, sched = cluster()
    place_existing(state, {"b": 1}, labels={"service": "securityscan"})
    p = pod(sched, labels={"app": "web"}, pod_affinity=(affinity("zone", selector=SERVICE),))
    assert passes(state, p) == [True, True, False, False, False]
    assert sched.select(p) in (0, 1)


def test_no_matching_pod_and_not_self_matching_fails_everywhere_with_the_affinity_reason() -> None:
    """ "Does not satisfy the PodAffinity with labelSelector because of diff Namespace" / no match: every
    node fails with ErrReasonAffinityRulesNotMatch."""
    state, sched = cluster()
    place_existing(state, {"b": 1}, labels={"service": "securityscan"}, namespace="other")
    p = pod(sched, labels={"app": "web"}, pod_affinity=(affinity("zone", selector=SERVICE),))
    assert passes(state, p) == [False] * 5
    assert sched.select(p) < 0
    error = sched.explain(p)
    assert error.histogram == {REASON_AFFINITY: 5}
    # filtering.go returns UnschedulableAndUnresolvable for ErrReasonAffinityRulesNotMatch
    assert next(f for f in error.failures if f.plugin == "InterPodAffinity").unresolvable


def test_first_pod_of_a_self_affine_group_goes_anywhere_with_the_topology_key() -> None:
    """ "pod matches its own Label in PodAffinity and that matches the existing pod Labels" — with no pod
    matching yet, a pod whose own labels match its terms passes every node that carries the key."""
    state, sched = cluster()
    p = pod(sched, labels={"foo": ""}, pod_affinity=(affinity("zone"),))
    assert passes(state, p) == [True, True, True, True, False]
    place_existing(state, {"x": 1})  # once one runs, the group follows it
    assert passes(state, p) == [False, False, True, True, False]


def test_all_required_terms_must_match_one_pod() -> None:
    """updateWithAffinityTerms counts only pods matching ALL the required terms: a pod with foo on a and a
    pod with service on x satisfy neither term alone."""
    state, sched = cluster()
    place_existing(state, {"a": 1}, labels={"foo": ""})
    place_existing(state, {"x": 1}, labels={"service": "securityscan"})
    terms = (affinity("zone"), affinity("zone", selector=SERVICE))
    p = pod(sched, labels={"app": "web"}, pod_affinity=terms)
    assert passes(state, p) == [False] * 5
    place_existing(state, {"y": 1}, labels={"foo": "", "service": "securityscan"})
    assert passes(state, p) == [False, False, True, True, False]


def test_affinity_is_checked_before_anti_affinity() -> None:
    """Filter order: a node failing both is reported under the affinity reason."""
    state, sched = cluster()
    place_existing(state, {"a": 1}, labels={"service": "securityscan"})
    p = pod(
        sched,
        labels={"app": "web"},
        pod_affinity=(affinity("zone", selector=SERVICE),),
        anti_affinity=(anti(HOST, selector=SERVICE),),
    )
    assert passes(state, p) == [False, True, False, False, False]
    error = sched.explain(p)
    histogram = error.histogram
    assert histogram[REASON_AFFINITY] == 3 and sum(histogram.values()) == 4
    # node a fails anti-affinity (Unschedulable: evicting the pod there would help), so not all unresolvable
    assert not next(f for f in error.failures if f.plugin == "InterPodAffinity").unresolvable


def test_preferred_affinity_attracts_by_weight_and_anti_affinity_repels() -> None:
    """scoring.go: +weight per matching pod for preferred affinity, -weight for anti-affinity; min-max
    normalised to 0..100."""
    state, sched = cluster()
    place_existing(state, {"a": 2, "x": 1})
    p = pod(sched, labels={"app": "web"}, pod_affinity=(affinity("zone", required=False, weight=10),))
    nodes = np.arange(state.n)
    scores = InterPodAffinityScore().score(state, p, nodes)
    assert scores is not None and scores.tolist() == [100, 100, 50, 50, 0]  # z1: 2 pods x 10, z2: 1 x 10
    both = pod(
        sched,
        labels={"app": "web"},
        pod_affinity=(affinity("zone", required=False, weight=10),),
        anti_affinity=(anti(HOST, required=False, weight=10),),
    )
    scores = InterPodAffinityScore().score(state, both, nodes)
    assert scores is not None and scores.tolist() == [
        0,
        100,
        0,
        50,
        0,
    ]  # a: 20 - 20, b: 20, x: 10 - 10, y: 10
