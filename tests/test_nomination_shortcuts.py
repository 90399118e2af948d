"""Two shortcuts of a nomination give the answers of the long way, with several resources and podsets:

* the targets of a head whose every pair needing preemption got the early "no victims" answer during its
  flavor assignment are empty without running the search (``admission/no_victims.py`` proves it; here
  it is checked);
* the static part of each quota check (totals, maximum capacity, the nominal test) is kept per podset
  shape on the tree node (``admission/flavor_rows.py``).

Random cohort forests covering CPU and GPUs on two flavors, random preemption policies and random
submit / finish / evict sequences of workloads with one or two podsets run through two managers: one as
shipped, one without the nomination cache, the notes and the kept rows; every cycle must admit, request
and report the same (requested victims are evicted in between, as the simulator does).
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admission_sources import patches_admission
from fleetlab.admission import flavor_rows
from fleetlab.admission.flavors import PodSetRequest
from fleetlab.admission.manager import AdmissionManager, Workload
from fleetlab.admission.no_victims import NoVictimNotes
from fleetlab.admission.preemption import ClassicPreemption
from fleetlab.admission.tree import FlavorResource
from test_admission import GPU, config, cq, quota
from test_admission_shortcuts import Forgetful, preempting_worlds, replayed, step

CPU = "cpu"


@st.composite
def two_resource_worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """``preempting_worlds`` whose groups cover CPU too (a quota per flavor), and workloads drawn with a
    CPU request and sometimes a second, CPU-only podset."""
    objects, ops = draw(preempting_worlds())
    for obj in objects:
        for group in obj["spec"].get("resourceGroups", []):
            group["coveredResources"] = [CPU, GPU]
            for flavor in group["flavors"]:
                flavor["resources"].insert(0, quota(draw(st.integers(0, 12)), resource=CPU))
    submits = []
    for op in ops:
        if op[0] == "submit":
            cpu = draw(st.integers(0, 6))
            aux = draw(st.none() | st.tuples(st.integers(1, 2), st.integers(1, 4)))
            submits.append((*op, cpu, aux))
        else:
            submits.append(op)
    return objects, submits


def workload(wid: str, op: tuple[Any, ...], now: int) -> Workload:
    _, q, gpus, priority, count, cpu, aux = op
    podsets = [PodSetRequest("main", count, {GPU: gpus, CPU: cpu})]
    if aux is not None:
        podsets.append(PodSetRequest("aux", aux[0], {CPU: aux[1]}))
    return Workload(wid, "default", f"q{q}", priority, now, tuple(podsets))


class Fresh(ClassicPreemption):
    """Classic preemption that never reads its notes, on a tree whose kept rows are dropped per cycle."""

    def targets(self, manager: AdmissionManager, nominee: Any) -> Any:
        with mock.patch.object(NoVictimNotes, "covers", return_value=False):
            return super().targets(manager, nominee)


@patches_admission
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(two_resource_worlds())
def test_notes_and_kept_rows_give_the_answers_of_the_long_way(
    world: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    objects, ops = world
    fast = AdmissionManager(config(*objects), preemption=ClassicPreemption())
    slow = AdmissionManager(config(*objects), preemption=Fresh())
    slow._nominations = Forgetful()
    for now in replayed(ops, (fast, slow), workload):
        for _ in range(2):
            for node in slow.tree.cluster_queues.values():
                node.prepared.clear()
            assert step(fast, now) == step(slow, now)


@patches_admission
def test_a_head_without_victims_gets_no_search_for_its_targets() -> None:
    """A queue of 8 GPUs without a cohort holds a 4-GPU workload of priority 1; a 6-GPU head of priority
    0 does not fit (8 − 4 = 4 available) and the queue holds nothing of lower priority: the early test
    answers "no victims" for the GPUs, so the targets are empty without a candidate search, and the head
    waits with upstream's message."""
    m = AdmissionManager(
        config(cq("a", None, {"default": quota(8)}, preemption={"withinClusterQueue": "LowerPriority"})),
        preemption=ClassicPreemption(),
    )
    m.submit(Workload("big", "default", "a", 1, 0, (PodSetRequest("main", 1, {GPU: 4}),)))
    assert [a.workload_id for a in m.cycle(0)] == ["big"]
    m.submit(Workload("w", "default", "a", 0, 1, (PodSetRequest("main", 1, {GPU: 6}),)))
    with mock.patch("fleetlab.admission.preemption.build_candidates") as search:
        assert m.cycle(1) == []
    search.assert_not_called()
    # 6 requested, 8 − 4 = 4 available: 2 more needed.
    assert dict(m.pending())["w"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "default, 2 more needed"
    )


def test_rows_are_kept_per_shape_and_built_on_top_of_earlier_podsets() -> None:
    """The first podset's rows are kept on the node (the same object for the same podset); a second podset
    of the same workload adds to what the first put on the flavor, so its rows are built each time:
    totals 2 × 3 = 6 CPU after 1 × 2 = 2 → value 8."""
    m = AdmissionManager(config(cq("a", None, {"default": quota(8)})))
    node = m.tree.cluster_queue("a")
    rules = m.rules["a"]
    first = PodSetRequest("main", 1, {GPU: 2})
    totals, order = flavor_rows.podset_totals(node, rules, first, first.requests, first.count, None)
    assert (totals, order) == ({GPU: 2}, [GPU])
    again = flavor_rows.podset_totals(node, rules, first, first.requests, first.count, None)
    assert again[0] is totals
    wanted = [(GPU, 2)]
    kept = flavor_rows.rows(m.tree, node, rules, 0, ("default",), wanted, totals, {}, rules.nominal)
    assert flavor_rows.rows(m.tree, node, rules, 0, ("default",), wanted, totals, {}, rules.nominal) is kept
    (row,) = kept[0]
    assert (row.value, row.maximum, row.within_nominal) == (2, 8, True)
    on_top = {FlavorResource("default", GPU): 2}
    (row,) = flavor_rows.rows(
        m.tree, node, rules, 0, ("default",), [(GPU, 6)], totals, on_top, rules.nominal
    )[0]
    assert (row.assumed, row.value, row.within_nominal) == (2, 8, True)
