"""The admission manager's per-ClusterQueue index of admitted workloads, and candidate search reading only
the ClusterQueues its preemption policies allow taking from (upstream ``preemption.go`` ``findCandidates``
looks at the preemptor's own ClusterQueue only when ``withinClusterQueue != Never``, and at the cohort only
when ``reclaimWithinCohort != Never``)."""

from __future__ import annotations

import pytest

from admission_sources import patches_admission
from fleetlab.admission.classic_candidates import build_candidates
from fleetlab.admission.manager import AdmissionManager
from fleetlab.admission.preemption import ClassicPreemption
from test_admission import G, config, cq, quota, wl


def test_admitted_in_follows_admission_finish_and_eviction() -> None:
    """Two ClusterQueues of 8 GPUs in a cohort: admitted workloads are listed per queue, by id, and leave
    the list on finish and on eviction (a requeued workload is pending, not admitted)."""
    m = AdmissionManager(config(cq("a", "c"), cq("b", "c")))
    for wid, queue, gpus in [("a2", "a", 2), ("a1", "a", 3), ("b1", "b", 4)]:
        m.submit(wl(wid, queue, gpus))
    # One head per queue per cycle, in submission order: a2 (submitted first) and b1, then a1.
    assert sorted(a.workload_id for a in m.cycle(0)) == ["a2", "b1"]
    assert [a.workload_id for a in m.cycle(1)] == ["a1"]
    assert [aw.workload.id for aw in m.admitted_in("a")] == ["a1", "a2"]  # by id, not admission order
    assert [(aw.workload.id, dict(aw.usage)) for aw in m.admitted_in("b")] == [("b1", {G: 4})]
    everything = m.admitted_workloads()
    for name in ("a", "b"):
        listed = {aw.workload.id: (aw.cluster_queue, dict(aw.usage)) for aw in m.admitted_in(name)}
        expected = {wid: (aw.cluster_queue, dict(aw.usage)) for wid, aw in everything.items()}
        assert listed == {wid: v for wid, v in expected.items() if v[0] == name}
    m.finish("a2")
    m.evict("b1", 5)
    assert [aw.workload.id for aw in m.admitted_in("a")] == ["a1"]
    assert m.admitted_in("b") == []
    assert [a.workload_id for a in m.cycle(6)] == ["b1"]  # requeued and admitted again
    assert [aw.workload.id for aw in m.admitted_in("b")] == ["b1"]


@patches_admission
def test_no_candidates_without_a_policy_reads_no_admitted_workload(monkeypatch: pytest.MonkeyPatch) -> None:
    """withinClusterQueue Never and no cohort: nothing can be a candidate, so the search returns at once
    (a StrictFIFO head that does not fit is nominated again after every change of usage)."""
    m = AdmissionManager(config(cq("a", flavors={"default": quota(4)})), preemption=ClassicPreemption())
    m.submit(wl("running", "a", 4))
    m.submit(wl("waiting", "a", 2))
    assert [a.workload_id for a in m.cycle(0)] == ["running"]

    def forbidden(*args: object) -> None:
        raise AssertionError(f"read admitted workloads {args}")

    monkeypatch.setattr(m, "admitted_in", forbidden)
    monkeypatch.setattr(m, "admitted_workloads", forbidden)
    candidates = build_candidates(m, wl("waiting", "a", 2), "a", {G}, {G: 2}, 0)
    assert candidates.ordered == []
    assert m.cycle(1) == []
    assert dict(m.pending())["waiting"].endswith(
        "insufficient unused quota for nvidia.com/gpu in flavor default, 2 more needed"
    )


def test_candidates_of_the_own_queue_come_from_its_index() -> None:
    """withinClusterQueue LowerPriority: a priority-5 head of 4 GPUs finds the two priority-0 workloads of
    its own queue (2 + 2 GPUs on a 4-GPU quota) and preempts both; the other queue's workload is not one."""
    preempting = cq("a", "c", {"default": quota(4)}, preemption={"withinClusterQueue": "LowerPriority"})
    m = AdmissionManager(
        config(preempting, cq("b", "c", {"default": quota(0)})), preemption=ClassicPreemption()
    )
    m.submit(wl("low1", "a", 2))
    m.submit(wl("other", "b", 0))
    assert sorted(a.workload_id for a in m.cycle(0)) == ["low1", "other"]
    m.submit(wl("low2", "a", 2, t=1))
    assert [a.workload_id for a in m.cycle(1)] == ["low2"]
    cands = build_candidates(m, wl("high", "a", 4, priority=5), "a", {G}, {G: 4}, 2)
    assert sorted(c.id for c in cands.ordered) == ["low1", "low2"]
    m.submit(wl("high", "a", 4, priority=5, t=2))
    assert m.cycle(2) == []
    [request] = m.take_preemptions()
    assert (request.preemptor_id, sorted(request.victims)) == ("high", ["low1", "low2"])
