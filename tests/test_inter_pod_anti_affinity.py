"""InterPodAffinity's anti-affinity half, worked from upstream's filtering_test.go / scoring_test.go
(pkg/scheduler/framework/plugins/interpodaffinity): required terms per hostname and zone, the symmetric
"existing pods anti-affinity" check, and preferred terms as a min-max normalised score."""

from __future__ import annotations

import numpy as np

from fleetlab.placement.plugins.inter_pod_affinity import (
    REASON_ANTI,
    REASON_EXISTING,
    InterPodAffinityFilter,
    InterPodAffinityScore,
    normalize_min_max,
)
from spread_builders import anti, make_cluster, make_node, place_existing, pod

HOST = "kubernetes.io/hostname"


def cluster():  # type: ignore[no-untyped-def]
    return make_cluster([make_node(n, z) for n, z in [("a", "z1"), ("b", "z1"), ("x", "z2"), ("y", "z2")]])


def passes(state, compiled):  # type: ignore[no-untyped-def]
    return [bool(v) for v in InterPodAffinityFilter().passes(state, compiled)]


def test_required_hostname_anti_affinity_keeps_replicas_apart() -> None:
    """ "Pod with anti affinity ... should not be scheduled on node with matching pod": one replica on a."""
    state, sched = cluster()
    place_existing(state, {"a": 1})
    p = pod(sched, anti_affinity=(anti(HOST),))
    assert passes(state, p) == [False, True, True, True]
    error = sched.explain(p)
    assert error.histogram == {REASON_ANTI: 1}


def test_required_zone_anti_affinity_blocks_the_whole_zone() -> None:
    """topologyKey zone: a matching pod on node a rejects every node of zone z1."""
    state, sched = cluster()
    place_existing(state, {"a": 1})
    p = pod(sched, anti_affinity=(anti("zone"),))
    assert passes(state, p) == [False, False, True, True]


def test_non_matching_pods_and_other_namespaces_do_not_count() -> None:
    """The term selects ``foo`` pods in the pod's namespace (term namespaces empty)."""
    state, sched = cluster()
    place_existing(state, {"a": 1}, labels={"bar": ""})
    place_existing(state, {"b": 1}, namespace="other")
    p = pod(sched, anti_affinity=(anti(HOST),))
    assert passes(state, p) == [True, True, True, True]
    wide = pod(
        sched,
        labels={"foo": "", "w": "1"},
        anti_affinity=(anti(HOST).model_copy(update={"namespaces": ("other",)}),),
    )
    assert passes(state, wide) == [True, False, True, True]


def test_node_without_the_topology_key_cannot_violate() -> None:
    """A node lacking the term's key is no domain: the term cannot be broken there."""
    state, sched = make_cluster([make_node("a", "z1"), make_node("n", None)])
    place_existing(state, {"a": 1, "n": 1})
    p = pod(sched, anti_affinity=(anti("zone"),))
    assert passes(state, p) == [False, True]


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    """ "satisfyExistingPodsAntiAffinity": a bound pod whose required term matches the incoming pod keeps
    it out of its domain, though the incoming pod has no terms of its own."""
    state, sched = cluster()
    place_existing(state, {"x": 1}, labels={"role": "db"}, anti_terms=(anti(HOST),))
    p = pod(sched, labels={"foo": ""})
    assert p.spec.pod_dependent
    assert passes(state, p) == [True, True, False, True]
    error = sched.explain(p)
    assert error.histogram == {REASON_EXISTING: 1}
    assert sched.select(p) == 0
    other = pod(sched, labels={"bar": ""})
    assert passes(state, other) == [True, True, True, True]


def test_preferred_anti_affinity_scores_min_max() -> None:
    """Preferred term weight 10 on zone: z1 holds 2 matching pods (-20), z2 one (-10), z3 none (0);
    min-max normalised: z1 0, z2 50, z3 100."""
    state, sched = make_cluster(
        [make_node("a", "z1"), make_node("b", "z1"), make_node("x", "z2"), make_node("o", "z3")]
    )
    place_existing(state, {"a": 1, "b": 1, "x": 1})
    p = pod(sched, anti_affinity=(anti("zone", required=False, weight=10),))
    scores = InterPodAffinityScore().score(state, p, np.arange(4))
    assert scores is not None
    assert [int(s) for s in scores] == [0, 0, 50, 100]
    assert passes(state, p) == [True, True, True, True]


def test_min_max_normalisation_truncates_like_go_floats() -> None:
    """int64(float64(100) * (float64(s-min)/float64(max-min))): 29/100 -> 28, not 29."""
    assert list(normalize_min_max(np.asarray([0, 29, 100], dtype=np.int64))) == [0, 28, 100]
    assert list(normalize_min_max(np.asarray([-5, -5], dtype=np.int64))) == [0, 0]


def test_counts_without_kept_domain_arrays_and_memory_freed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Keys with many values are summed from the sparse per-node counts (same verdicts as kept arrays),
    and a selector's per-domain arrays are dropped once no matching pod is bound."""
    import fleetlab.placement.pod_labels as pod_labels

    state, sched = cluster()
    set_id = place_existing(state, {"a": 1})
    kept = pod(sched, anti_affinity=(anti("zone"),))
    assert passes(state, kept) == [False, False, True, True]
    sid = state.pod_labels.selector(anti("zone").label_selector, frozenset({"default"}), True)
    assert "zone" in state.pod_labels._counts[sid].domains
    request = state.allocatable[0] * 0
    request[state.pods_col] = 1
    state.release(0, request, request[[state.cpu_col, state.mem_col]], set_id)
    assert state.pod_labels._counts[sid].domains == {}
    assert passes(state, kept) == [True, True, True, True]
    monkeypatch.setattr(pod_labels, "MAX_KEPT_DOMAINS", 0)
    place_existing(state, {"x": 2})
    fresh = pod(sched, labels={"foo": "", "n": "1"}, anti_affinity=(anti("zone"),))
    assert passes(state, fresh) == [True, True, False, False]
    assert state.pod_labels._counts[sid].domains == {}
