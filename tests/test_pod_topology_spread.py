"""PodTopologySpread filter and score, hand-worked from upstream's own test cases.

Cases follow pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go (TestPreFilterState,
TestSingleConstraint, TestMultipleConstraints) and scoring_test.go (TestPodTopologySpreadScore) at
kubernetes/kubernetes @01c2588b: nodes node-a, node-b in zone1 and node-x, node-y in zone2, pods labelled
``foo`` matched by ``Exists(foo)``. Expected verdicts are worked by hand from the skew rule
``matchNum + selfMatch - globalMin <= maxSkew`` and the scoring formula.
"""

from __future__ import annotations

import math

import numpy as np

from fleetlab.model.kube import Affinity, Taint, Toleration
from fleetlab.model.pod_constraints import LabelSelector
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.plugins.pod_topology_spread import (
    REASON_LABEL,
    REASON_SKEW,
    PodTopologySpreadFilter,
    PodTopologySpreadScore,
)
from spread_builders import FOO as FOO_SELECTOR
from spread_builders import make_cluster, make_node, place_existing, pod, spread

FOUR = ["node-a", "node-b", "node-x", "node-y"]


def four_nodes(*extra):  # type: ignore[no-untyped-def]
    nodes = [make_node(n, "zone1" if n in ("node-a", "node-b") else "zone2") for n in FOUR]
    return make_cluster(nodes + list(extra))


def verdict(state, compiled):  # type: ignore[no-untyped-def]
    return [bool(v) for v in PodTopologySpreadFilter().passes(state, compiled)]


def test_normal_case_with_one_spread_constraint() -> None:
    """TestPreFilterState "normal case with one spreadConstraint": zone1 3, zone2 2 -> min 2; zone1 nodes
    would reach skew 2 > 1."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 2, "node-b": 1, "node-y": 2})
    p = pod(sched, topology_spread=(spread(1, "zone"),))
    assert verdict(state, p) == [False, False, True, True]


def test_one_constraint_on_a_three_zone_cluster() -> None:
    """ "normal case with one spreadConstraint, on a 3-zone cluster": the empty zone3 is the minimum."""
    state, sched = make_cluster(
        [make_node(n, z) for n, z in [("a", "zone1"), ("b", "zone1"), ("x", "zone2"), ("y", "zone2")]]
        + [make_node("o", "zone3"), make_node("p", "zone3")]
    )
    place_existing(state, {"a": 2, "b": 1, "y": 2})
    p = pod(sched, topology_spread=(spread(1, "zone"),))
    assert verdict(state, p) == [False, False, False, False, True, True]


def test_namespace_mismatch_does_not_count() -> None:
    """ "namespace mismatch doesn't count": pods of ns1 / ns2 leave zone1 2, zone2 1."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 1, "node-b": 1, "node-y": 1})
    place_existing(state, {"node-a": 1}, namespace="ns1")
    place_existing(state, {"node-y": 1}, namespace="ns2")
    p = pod(sched, topology_spread=(spread(1, "zone"),))
    assert verdict(state, p) == [False, False, True, True]


def test_two_constraints_reject_every_node_with_counted_reasons() -> None:
    """ "normal case with two spreadConstraints": zone 3/4 (min 3) and node a2 b1 x0 y4 (min 0): zone2
    fails the zone rule, node-a and node-b the node rule — no node is left, all resolvable skew failures."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 2, "node-b": 1, "node-y": 4})
    p = pod(sched, topology_spread=(spread(1, "zone"), spread(1, "node")))
    assert verdict(state, p) == [False, False, False, False]
    assert len(sched.feasible_nodes(p)) == 0
    error = sched.explain(p)
    assert error.histogram == {REASON_SKEW: 4}
    assert error.message == "0/4 nodes are available: 4 node(s) didn't match pod topology spread constraints."
    assert not next(f for f in error.failures if f.plugin == "PodTopologySpread").unresolvable


def test_null_label_selector_matches_nothing() -> None:
    """ "normal case with null label selector": labels.Nothing() counts no pod and no self match."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 5})
    p = pod(sched, topology_spread=(spread(1, "zone", labelSelector=None),))
    assert verdict(state, p) == [True, True, True, True]


def test_soft_constraints_are_bypassed_by_the_filter() -> None:
    """ "soft spreadConstraints should be bypassed": ScheduleAnyway never filters."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 9})
    p = pod(sched, topology_spread=(spread(1, "zone", "ScheduleAnyway"),))
    assert verdict(state, p) == [True, True, True, True]


def test_pod_not_matching_its_own_selector_has_no_self_match() -> None:
    """selfMatchNum is 0 when the incoming pod's labels miss the selector: zone1 3 vs zone2 2 is skew 1."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 2, "node-b": 1, "node-y": 2})
    p = pod(sched, labels={"bar": ""}, topology_spread=(spread(1, "zone"),))
    assert verdict(state, p) == [True, True, True, True]


def test_node_missing_the_topology_key_is_unresolvable() -> None:
    """Filter: a node without the key fails with "(missing required label)", UnschedulableAndUnresolvable."""
    state, sched = four_nodes(make_node("node-z", None))
    p = pod(sched, topology_spread=(spread(1, "zone"),))
    assert verdict(state, p) == [True, True, True, True, False]
    failure = PodTopologySpreadFilter().failure(state, p, np.asarray([False] * 4 + [True]))
    assert failure.reasons == {REASON_LABEL: 1}
    assert failure.unresolvable


def test_min_domains_greater_than_domains_treats_global_min_as_zero() -> None:
    """minDomains 3 with two zones (TestSingleConstraint minDomains cases): global minimum is 0, so a zone
    with one pod already reaches skew 2 > maxSkew 1; with minDomains 2 the real minimum (1) applies."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 1, "node-x": 1})
    strict = pod(sched, topology_spread=(spread(1, "zone", minDomains=3),))
    assert verdict(state, strict) == [False, False, False, False]
    relaxed = pod(sched, labels={"foo": "", "v": "2"}, topology_spread=(spread(1, "zone", minDomains=2),))
    assert verdict(state, relaxed) == [True, True, True, True]


def test_node_affinity_policy_honor_and_ignore() -> None:
    """nodeAffinityPolicy: with Honor the zone3 node the pod may not use is no domain (min 1 over zone1/2);
    with Ignore the empty zone3 counts, the minimum is 0 and both used zones are too full."""
    state, sched = four_nodes(make_node("node-o", "zone3", pool="other"))
    place_existing(state, {"node-a": 1, "node-x": 1})
    affinity = Affinity.model_validate(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]}]
                }
            }
        }
    )
    honor = pod(sched, affinity=affinity, topology_spread=(spread(1, "zone"),))
    assert verdict(state, honor)[:4] == [True, True, True, True]
    ignore = pod(sched, affinity=affinity, topology_spread=(spread(1, "zone", nodeAffinityPolicy="Ignore"),))
    assert verdict(state, ignore)[:4] == [False, False, False, False]


def test_node_taints_policy_honor_excludes_untolerated_nodes() -> None:
    """nodeTaintsPolicy Honor: a tainted empty zone3 node is no domain; Ignore (default) counts it."""
    taint = Taint(key="dedicated", value="x", effect="NoSchedule")
    state, sched = four_nodes(make_node("node-o", "zone3", taints=(taint,)))
    place_existing(state, {"node-a": 1, "node-x": 1})
    default = pod(sched, topology_spread=(spread(1, "zone"),))
    assert verdict(state, default)[:4] == [False, False, False, False]
    honor = pod(sched, topology_spread=(spread(1, "zone", nodeTaintsPolicy="Honor"),))
    assert verdict(state, honor)[:4] == [True, True, True, True]
    tolerating = pod(
        sched,
        tolerations=(Toleration(key="dedicated", operator="Exists"),),
        topology_spread=(spread(1, "zone", nodeTaintsPolicy="Honor"),),
    )
    assert verdict(state, tolerating)[:4] == [False, False, False, False]


def test_match_label_keys_narrow_the_selector() -> None:
    """matchLabelKeys: the pod's own value of ``rev`` is ANDed in, so pods of another revision don't count."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 3}, labels={"foo": "", "rev": "1"})
    p = pod(
        sched, labels={"foo": "", "rev": "2"}, topology_spread=(spread(1, "zone", matchLabelKeys=["rev"]),)
    )
    assert verdict(state, p) == [True, True, True, True]
    same = pod(
        sched, labels={"foo": "", "rev": "1"}, topology_spread=(spread(1, "zone", matchLabelKeys=["rev"]),)
    )
    assert verdict(state, same) == [False, False, True, True]


def test_counts_follow_binds_and_releases() -> None:
    """Per-domain counts are kept on bind/unbind: after a release the verdict matches a fresh recount."""
    state, sched = four_nodes()
    set_id = place_existing(state, {"node-a": 2, "node-y": 1})
    p = pod(sched, topology_spread=(spread(1, "zone"),))
    assert verdict(state, p) == [False, False, True, True]
    request = state.allocatable[0] * 0
    request[state.pods_col] = 1
    request[state.cpu_col] = 100
    state.release(0, request, request[[state.cpu_col, state.mem_col]], set_id)
    assert verdict(state, p) == [True, True, True, True]
    sid = p.cache["spread_DoNotSchedule"][0].selector_id
    assert list(state.pod_labels.domain_counts(sid, "zone")) == [1, 1]


# -- score ---------------------------------------------------------------------------------------------------
def soft_scores(state, sched, compiled, nodes=None):  # type: ignore[no-untyped-def]
    idx = np.arange(state.n) if nodes is None else np.asarray(nodes)
    plugin = next(p for p, _ in sched.scorers if p.name == "PodTopologySpread")
    return [int(s) for s in plugin.score(state, compiled, idx)]


def test_score_no_existing_pods_every_node_scores_max() -> None:
    """TestPodTopologySpreadScore "one constraint on node, no existing pods": all 100 (max score 0)."""
    state, sched = four_nodes()
    p = pod(sched, topology_spread=(spread(1, "node", "ScheduleAnyway"),))
    assert soft_scores(state, sched, p) == [100, 100, 100, 100]


def test_score_one_constraint_on_hostname() -> None:
    """Counts a2 b1 x0 y3 on kubernetes.io/hostname, weight ln(4+2): raw round(2w)=4, 2, 0, round(3w)=5;
    normalised 100*(5+0-s)/5 -> 20, 60, 100, 0."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 2, "node-b": 1, "node-y": 3})
    p = pod(sched, topology_spread=(spread(1, "kubernetes.io/hostname", "ScheduleAnyway"),))
    w = math.log(6)
    assert [round(2 * w), round(w), 0, round(3 * w)] == [4, 2, 0, 5]
    assert soft_scores(state, sched, p) == [20, 60, 100, 0]


def test_score_one_constraint_on_zone() -> None:
    """Zone counts 3 / 2 over two domains, weight ln(4): raw 4 and 3 (round 4.16, 2.77); normalised
    100*(4+3-4)/4 = 75 for zone1 and 100 for zone2."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 2, "node-b": 1, "node-y": 2})
    p = pod(sched, topology_spread=(spread(1, "zone", "ScheduleAnyway"),))
    assert soft_scores(state, sched, p) == [75, 75, 100, 100]


def test_score_max_skew_waters_down_differences() -> None:
    """maxSkew-1 is added to every raw score: with maxSkew 5 zone1 4+4=8, zone2 3+4=7 -> 87 and 100."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 2, "node-b": 1, "node-y": 2})
    p = pod(sched, topology_spread=(spread(5, "zone", "ScheduleAnyway"),))
    assert soft_scores(state, sched, p) == [87, 87, 100, 100]


def test_score_nodes_missing_a_key_get_zero() -> None:
    """A filtered node without the zone label is ignored: score 0, not part of min/max."""
    state, sched = four_nodes(make_node("node-z", None))
    place_existing(state, {"node-a": 1})
    p = pod(sched, topology_spread=(spread(1, "zone", "ScheduleAnyway"),))
    scores = soft_scores(state, sched, p)
    assert scores[4] == 0
    assert scores[:4] == [100 * (1 + 0 - 1) // 1, 0, 100, 100]


def test_score_only_feasible_nodes_define_domain_count() -> None:
    """The normalising weight counts domains among the filtered nodes only (initPreScoreState)."""
    state, sched = four_nodes()
    place_existing(state, {"node-a": 3, "node-x": 1})
    p = pod(sched, topology_spread=(spread(1, "node", "ScheduleAnyway"),))
    # node-a and node-x filtered: 2 domains, w = ln 4; raw round(3*1.386)=4 and round(1.386)=1.
    assert soft_scores(state, sched, p, [0, 2]) == [100 * (4 + 1 - 4) // 4, 100]


def test_system_default_constraints_apply_to_service_pods() -> None:
    """Defaulting System: pods a Service selects get hostname maxSkew 3 + zone maxSkew 5 (ScheduleAnyway)
    with the service's selector; pods without an owner get none (the plugin skips)."""
    nodes = [
        make_node(
            n, None, **{"topology.kubernetes.io/zone": "zone1" if n in ("node-a", "node-b") else "zone2"}
        )
        for n in FOUR
    ]
    state, sched = make_cluster(nodes)
    service = LabelSelector(match_labels={"app": "web"})
    place_existing(state, {"node-a": 2}, labels={"app": "web"})
    owned = pod(sched, labels={"app": "web"}, default_spread_selector=service)
    # hostname: w = ln 6, a: 2w+2 = 5.58; zone: w = ln 4, zone1: 2*1.386+4 = 6.77; sum rounds to 12 for
    # node-a; node-b 2+6.77 = 8.77 -> 9; zone2 nodes 2 + 4 = 6.
    assert soft_scores(state, sched, owned) == [100 * (12 + 6 - 12) // 12, 100 * (12 + 6 - 9) // 12, 100, 100]
    plugin = next(p for p, _ in sched.scorers if p.name == "PodTopologySpread")
    assert isinstance(plugin, PodTopologySpreadScore)
    assert plugin.score(state, pod(sched, labels={"app": "web"}), np.arange(4)) is None
    listed = SchedulerConfig.model_validate({"podTopologySpread": {"defaultingType": "List"}})
    _, no_defaults = make_cluster(nodes, listed)
    assert no_defaults.profile.spread_defaults == ()


def test_incremental_counts_match_a_recount_after_random_binds_and_releases() -> None:
    """Counts kept on bind/unbind equal a from-scratch count, for zone, node and a selector registered
    after pods were already bound."""
    rng = np.random.default_rng(7)
    state, _sched = four_nodes(make_node("node-o", "zone3"))
    label_choices = [{"foo": ""}, {"foo": "", "v": "1"}, {"bar": ""}]
    sets = [state.pod_labels.intern(labels, "default") for labels in label_choices]
    early = state.pod_labels.selector(FOO_SELECTOR, frozenset({"default"}), count_empty=False)
    state.pod_labels.domain_counts(early, "zone")
    request = state.allocatable[0] * 0
    request[state.pods_col] = 1
    nonzero = request[[state.cpu_col, state.mem_col]]
    live: list[tuple[int, int]] = []
    for _ in range(300):
        if live and rng.random() < 0.4:
            node, set_id = live.pop(int(rng.integers(len(live))))
            state.release(node, request, nonzero, set_id)
        else:
            node, set_id = int(rng.integers(state.n)), sets[int(rng.integers(len(sets)))]
            state.bind(node, request, nonzero, set_id)
            live.append((node, set_id))
    late = state.pod_labels.selector(FOO_SELECTOR, frozenset({"default", "x"}), count_empty=False)
    zone_codes = state.labels.codes("zone")
    for sel in (early, late):
        expected = np.zeros(3, dtype=np.int64)
        per_node: dict[int, int] = {}
        for node, set_id in live:
            if set_id != sets[2]:
                expected[zone_codes[node]] += 1
                per_node[node] = per_node.get(node, 0) + 1
        assert list(state.pod_labels.domain_counts(sel, "zone")) == list(expected)
        assert state.pod_labels.node_counts(sel) == per_node
