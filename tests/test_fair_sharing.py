"""Kueue fair sharing (queues.md §1.3 ordering with fair sharing, §1.6 DRS): worked example W7 of queues.md §8
number by number, weights, weight 0, and the tournament down a two-level cohort tree. Upstream:
kubernetes-sigs/kueue ``pkg/cache/scheduler/fair_sharing.go`` (``dominantResourceShare``,
``calculateLendable``) and ``pkg/scheduler/fair_sharing_iterator.go`` (``runTournament``, ``computeDRS``).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from fleetlab.admission.fair_sharing import MAX_SHARE, dominant_resource_share, pop_fair
from fleetlab.admission.manager import NO_LONGER_FITS, AdmissionManager, PodSetRequest, Workload
from fleetlab.admission.preemption import FairSharingPreemption
from fleetlab.admission.tree import FlavorResource
from fleetlab.model.kueue_config import FairSharingConfig
from fleetlab.model.queues import QueueConfig, queue_config_from_objects

GPU = "nvidia.com/gpu"
G = FlavorResource("default", GPU)
FPGA = "example.com/fpga"
ON = FairSharingConfig()


def cq(name: str, cohort: str | None, nominal: int, weight: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": [GPU],
                "flavors": [{"name": "default", "resources": [{"name": GPU, "nominalQuota": nominal}]}],
            }
        ]
    }
    if cohort:
        body["cohortName"] = cohort
    if weight is not None:
        body["fairSharing"] = {"weight": weight}
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def cohort(name: str, parent: str | None = None, weight: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentName": parent} if parent else {}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def config(*objects: dict[str, Any]) -> QueueConfig:
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    lqs = [{"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in names]
    return queue_config_from_objects(
        [{"kind": "ResourceFlavor", "metadata": {"name": "default"}}, *objects, *lqs]
    )


def wl(wid: str, queue: str, gpus: int, t: int = 0, priority: int = 0) -> Workload:
    return Workload(wid, "default", queue, priority, t, (PodSetRequest("main", 1, {GPU: gpus}),))


def fill(m: AdmissionManager, **usage: int) -> None:
    """Admit one workload of ``usage[cq]`` GPUs per ClusterQueue, each alone in its own cycle."""
    for name, gpus in usage.items():
        m.submit(wl(f"{name}0", name, gpus, t=-1))
        assert [a.workload_id for a in m.cycle(0)] == [f"{name}0"]


def w7(a_weight: Any = None, fair_sharing: FairSharingConfig | None = ON) -> AdmissionManager:
    """W7: root cohort c; a, b, d nominal 4; U(a) = 5, U(b) = 4, U(d) = 0; heads a1 (2), b1 (2), d1 (1) with
    timestamps b1 < a1 < d1."""
    m = AdmissionManager(
        config(cq("a", "c", 4, a_weight), cq("b", "c", 4), cq("d", "c", 4)), fair_sharing=fair_sharing
    )
    fill(m, a=5, b=4)
    m.submit(wl("a1", "a", 2, t=20))
    m.submit(wl("b1", "b", 2, t=10))
    m.submit(wl("d1", "d", 1, t=30))
    return m


def test_w7_drs_values() -> None:
    """W7 (§1.6): lendable = pot(c) = 12; DRS after admitting each head: a 250 [250.0], b 166 [166.67],
    d 0; the current DRS of a (borrowing 1) is 83 and of b (at nominal) 0."""
    m = w7()
    a = m.dominant_resource_share("a", request={G: 2})
    b = m.dominant_resource_share("b", request={G: 2})
    d = m.dominant_resource_share("d", request={G: 1})
    assert (a.value, a.precise, a.resource, a.borrowing) == (250, 250.0, GPU, True)
    assert b.value == 166 and b.precise == pytest.approx(166.667, abs=1e-3) and b.weighted_share == 167
    assert (d.value, d.precise, d.borrowing) == (0, 0.0, False)
    assert m.dominant_resource_share("a").value == 83
    assert not m.dominant_resource_share("b").borrowing
    assert m.dominant_resource_share("c", cohort=True).value == 0  # a root has no parent: DRS 0


def test_w7_admission_order() -> None:
    """W7: the tournament pops d1 (0), then b1 (166, a and b unchanged), which takes the last 2 GPUs; a1
    (250) no longer fits."""
    m = w7()
    assert [x.workload_id for x in m.cycle(100)] == ["d1", "b1"]
    assert dict(m.pending()) == {"a1": NO_LONGER_FITS}
    assert m.queue_status()["b"]["default/nvidia.com/gpu"]["usage"] == 6


def test_w7_weight_2_changes_the_order() -> None:
    """W7 variant: a has weight 2 → DRS(a) = 250 × 1000 / 2000 = 125 [125.0] < 166 → d1, a1; b1 waits."""
    m = w7(a_weight=2)
    share = m.dominant_resource_share("a", request={G: 2})
    assert (share.value, share.precise) == (125, 125.0)
    assert [x.workload_id for x in m.cycle(100)] == ["d1", "a1"]
    assert dict(m.pending()) == {"b1": NO_LONGER_FITS}


def test_fractional_weight() -> None:
    """Weights are quantities: a at weight 500m doubles its share, 250 × 1000 / 500 = 500; b still goes
    first, as with weight 1."""
    m = w7(a_weight="500m")
    assert m.dominant_resource_share("a", request={G: 2}).value == 500
    assert [x.workload_id for x in m.cycle(100)] == ["d1", "b1"]


@pytest.mark.parametrize("fair_sharing", [None, FairSharingConfig(enable=False)])
def test_classic_order_when_fair_sharing_is_off(fair_sharing: FairSharingConfig | None) -> None:
    """Without fair sharing the weight is ignored: classic order (not borrowing first, then FIFO) gives d1,
    b1 even with a's weight 2."""
    m = w7(a_weight=2, fair_sharing=fair_sharing)
    assert [x.workload_id for x in m.cycle(100)] == ["d1", "b1"]


def test_weight_zero_borrowing_is_max_int() -> None:
    """§1.6 / upstream ``ZeroWeightBorrows``: with weight 0 a borrowing node's share is MaxInt (+inf), so
    its head goes last even though it is the oldest and b's DRS is 333."""
    m = AdmissionManager(config(cq("a", "c", 4, 0), cq("b", "c", 4), cq("d", "c", 4)), fair_sharing=ON)
    fill(m, a=4, b=7)  # free 1
    m.submit(wl("a1", "a", 1, t=1))
    m.submit(wl("b1", "b", 1, t=2))
    a = m.dominant_resource_share("a", request={G: 1})
    assert (a.value, a.precise, a.weighted_share) == (MAX_SHARE, math.inf, MAX_SHARE)
    assert m.dominant_resource_share("b", request={G: 1}).value == 333
    assert [x.workload_id for x in m.cycle(100)] == ["b1"]
    assert dict(m.pending()) == {"a1": NO_LONGER_FITS}


def test_weight_zero_not_borrowing_is_zero() -> None:
    """Newest upstream: weight 0 gives MaxInt only when borrowing; within nominal the share is 0, so a1
    (oldest) ties with d1 at 0 and wins on timestamp."""
    m = AdmissionManager(config(cq("a", "c", 4, 0), cq("b", "c", 4), cq("d", "c", 4)), fair_sharing=ON)
    fill(m, b=8)  # free 4
    m.submit(wl("d1", "d", 2, t=2))
    m.submit(wl("a1", "a", 2, t=1))
    a = m.dominant_resource_share("a", request={G: 2})
    assert (a.value, a.borrowing) == (0, False)
    assert [x.workload_id for x in m.cycle(100)] == ["a1", "d1"]


def test_priority_then_timestamp_break_drs_ties() -> None:
    """``entryComparer.less``: equal DRS → higher priority first, then the earlier timestamp."""
    m = AdmissionManager(config(cq("a", "c", 4), cq("b", "c", 4), cq("d", "c", 4)), fair_sharing=ON)
    m.submit(wl("a1", "a", 1, t=1))
    m.submit(wl("b1", "b", 1, t=2, priority=5))
    m.submit(wl("d1", "d", 1, t=0))
    assert [x.workload_id for x in m.cycle(100)] == ["b1", "d1", "a1"]


def two_level() -> AdmissionManager:
    """Root r holds cohort x {a, b} and CQs d, e; nominal 4, 4, 4 and 8, so SQ(r) = 20 = pot(r). U(b) = 10 (x
    borrows 2 of r), U(d) = 5 (d borrows 1); free 5."""
    m = AdmissionManager(
        config(
            cohort("r"),
            cohort("x", "r"),
            cq("a", "x", 4),
            cq("b", "x", 4),
            cq("d", "r", 4),
            cq("e", "r", 8),
        ),
        fair_sharing=ON,
    )
    fill(m, b=10, d=5)
    m.submit(wl("a1", "a", 2, t=1))
    m.submit(wl("b1", "b", 1, t=2))
    m.submit(wl("d1", "d", 1, t=3))
    return m


def test_tournament_two_level_scores() -> None:
    """``computeDRS``: a head's score at cohort P is the DRS of P's child on its path, with the head
    admitted. a1: 0 at x (a stays within 4), DRS(x with a1) = (12 − 8) × 1000 / 20 = 200 at r. b1: DRS(b)
    = (11 − 4) × 1000 / pot(x) = 350 at x, DRS(x with b1) = 150 at r. d1: (6 − 4) × 1000 / 20 = 100 at r."""
    m = two_level()
    heads = {"a": wl("a1", "a", 2, t=1), "b": wl("b1", "b", 1, t=2), "d": wl("d1", "d", 1, t=3)}
    usage = {"a": {G: 2}, "b": {G: 1}, "d": {G: 1}}
    remaining = dict(heads)

    def snapshot() -> dict[str, dict[FlavorResource, int]]:
        nodes = {**m.tree.cohorts, **m.tree.cluster_queues}
        return {n: {fr: v for fr, v in node.usage.items() if v} for n, node in nodes.items()}

    before = snapshot()
    first, scores = pop_fair(
        m.tree, m.fair_weights, remaining, lambda w: usage[w.local_queue], lambda w: (w.created_ms,)
    )
    assert snapshot() == before  # the simulated admissions are reverted
    values = {k: v.value for k, v in scores.items()}
    assert values == {("x", "a"): 0, ("r", "a"): 200, ("x", "b"): 350, ("r", "b"): 150, ("r", "d"): 100}
    assert first.id == "d1" and set(remaining) == {"a", "b"}
    x = dominant_resource_share(m.tree, m.tree.cohorts["x"], m.fair_weights, {G: 2})
    assert x.value == 200


def test_tournament_two_level_order() -> None:
    """The winner bubbles up: a1 wins x (0 < 350) but loses at r to d1 (200 > 100); then a1, then b1. The
    classic iterator would take a1 first (it does not borrow)."""
    m = two_level()
    assert [x.workload_id for x in m.cycle(100)] == ["d1", "a1", "b1"]


def test_cohort_weight_changes_the_order_at_the_root() -> None:
    """Cohort weights apply at their parent: x with weight 4 scores 200 × 1000 / 4000 = 50 < 100 at r, so
    a1 goes before d1."""
    m = AdmissionManager(
        config(
            cohort("r"),
            cohort("x", "r", weight=4),
            cq("a", "x", 4),
            cq("b", "x", 4),
            cq("d", "r", 4),
            cq("e", "r", 8),
        ),
        fair_sharing=ON,
    )
    fill(m, b=10, d=5)
    m.submit(wl("a1", "a", 2, t=1))
    m.submit(wl("d1", "d", 1, t=3))
    assert m.dominant_resource_share("x", cohort=True, request={G: 2}).value == 50
    assert [x.workload_id for x in m.cycle(100)] == ["a1", "d1"]


def test_dominant_resource_is_the_largest_ratio() -> None:
    """§1.6: the ratio is the maximum over resources of borrowed × 1000 / lendable, summing flavors; a CQ
    without a cohort has DRS 0."""
    objects: list[dict[str, Any]] = []
    for name in ("a", "b"):
        objects.append(
            {
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "cohortName": "c",
                    "resourceGroups": [
                        {
                            "coveredResources": [FPGA, GPU],
                            "flavors": [
                                {
                                    "name": "default",
                                    "resources": [
                                        {"name": FPGA, "nominalQuota": 10},
                                        {"name": GPU, "nominalQuota": 4},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            }
        )
    objects.append(cq("solo", None, 4))
    m = AdmissionManager(config(*objects), fair_sharing=ON)
    fpga = FlavorResource("default", FPGA)
    share = m.dominant_resource_share("a", request={fpga: 15, G: 5})
    # fpga: 5 × 1000 / 20 = 250; gpu: 1 × 1000 / 8 = 125
    assert (share.value, share.resource) == (250, FPGA)
    assert m.dominant_resource_share("solo", request={G: 8}).value == 0


# ---- W8: fair-sharing preemption ---------------------------------------------------------------------------


def w8(
    strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
) -> AdmissionManager:
    """W8: root cohort c; a, b, d nominal 4 (lendable 12); a reclaims Any. a0 (4) in a; b1…b4 (2 each, b4
    newest) in b → U(b) = 8, DRS(b) = 333; free 0."""
    a = cq("a", "c", 4)
    a["spec"]["preemption"] = {"reclaimWithinCohort": "Any"}
    m = AdmissionManager(
        config(a, cq("b", "c", 4), cq("d", "c", 4)),
        preemption=FairSharingPreemption(strategies),
        fair_sharing=FairSharingConfig.model_validate({"preemptionStrategies": list(strategies)}),
    )
    fill(m, a=4)
    for i in range(1, 5):
        m.submit(wl(f"b{i}", "b", 2, t=i))
        assert [x.workload_id for x in m.cycle(i)] == [f"b{i}"]
    assert m.dominant_resource_share("b").value == 333
    return m


def test_w8_case_1_preempts_b4() -> None:
    """W8 case 1: a1 (2) → DRS(a with a1) = 166; S1 on b4: DRS(b without b4) = 166, 166 ≤ 166 → preempt b4
    only; after the eviction a1 is admitted and DRS(a) = DRS(b) = 166."""
    m = w8()
    m.submit(wl("a1", "a", 2, t=10))
    assert m.cycle(10) == []
    requests = m.take_preemptions()
    assert [(r.preemptor_id, r.victims) for r in requests] == [("a1", ("b4",))]
    m.evict("b4", 11, keep_creation_timestamp=True)
    assert [x.workload_id for x in m.cycle(12)] == ["a1"]
    assert m.dominant_resource_share("a").value == m.dominant_resource_share("b").value == 166


def test_w8_case_2_no_preemption() -> None:
    """W8 case 2: a1 (4) → DRS(a with a1) = 333; S1 on b4: 333 ≤ 166 no; S2: 333 < 333 no → no victims; a1
    stays pending."""
    m = w8()
    m.submit(wl("a1", "a", 4, t=10))
    assert m.cycle(10) == []
    assert m.take_preemptions() == []
    assert [w for w, _ in m.pending()] == ["a1"]


def test_w8_strategy_s2_alone_case_1() -> None:
    """With ``[LessThanInitialShare]`` only, case 1 still preempts: 166 < DRS(b) = 333 before removal."""
    m = w8(("LessThanInitialShare",))
    m.submit(wl("a1", "a", 2, t=10))
    m.cycle(10)
    assert [r.victims for r in m.take_preemptions()] == [("b4",)]
