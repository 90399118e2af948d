"""The admission manager's shortcuts give the answers of the long way: nominations remembered per pod-set
shape while the quota state is unchanged, the early "nothing to take" answer of classic preemption, the
static potentialAvailable and heights, and ``available`` computed from the root down.

Random cohort forests (cohort quota, borrowing and lending limits), random preemption policies and random
submit / finish / evict sequences run through two managers: one as shipped, one with the shortcuts
switched off; every cycle must admit, request and report the same (the requested victims are evicted
in between, as the simulator does). ``available`` and ``borrowing_height`` are checked against their
recursive definitions (``shared/reference/queues.md`` §1.2) at every step, and so are the answers flavor
assignment reads off a node without walking: the root's unused quota where no limit applies below the
root, and the root's height for a ClusterQueue borrowing right below its root.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admission_sources import patches_admission
from fleetlab.admission import preemption
from fleetlab.admission.flavors import (
    _WORST,
    GranularMode,
    PreemptionMode,
    is_preferred,
    should_try_next_flavor,
)
from fleetlab.admission.manager import AdmissionManager, Workload
from fleetlab.admission.nomination_cache import NominationCache
from fleetlab.admission.preemption import ClassicPreemption
from fleetlab.admission.tree import FlavorResource, Node, ResourceTree
from fleetlab.model.queues import FlavorFungibility
from test_admission import config, cq, quota, wl, worlds

POLICY = st.fixed_dictionaries(
    {
        "withinClusterQueue": st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
        "reclaimWithinCohort": st.sampled_from(["Never", "LowerPriority", "Any"]),
    }
)


@st.composite
def preempting_worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """``test_admission.worlds`` with a preemption policy on every ClusterQueue."""
    objects, ops = draw(worlds())
    for obj in objects:
        if obj["kind"] == "ClusterQueue":
            policy: dict[str, Any] = draw(POLICY)
            if policy["reclaimWithinCohort"] != "Never" and draw(st.booleans()):
                policy["borrowWithinCohort"] = {"policy": "LowerPriority", "maxPriorityThreshold": 1}
            obj["spec"]["preemption"] = policy
    return objects, ops


def available_by_recursion(tree: ResourceTree, node: Node, fr: FlavorResource) -> int:
    """§1.2 ``available``: LocalAvailable plus the parent's available, capped by a borrowingLimit."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent = available_by_recursion(tree, node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        local = node.local_quota.get(fr, 0)
        stored = node.subtree_quota.get(fr, 0) - local
        used = max(0, node.usage.get(fr, 0) - local)
        parent = min(parent, stored - used + quota.borrowing_limit)
    return max(0, node.local_quota.get(fr, 0) - node.usage.get(fr, 0)) + parent


def height_by_walk(tree: ResourceTree, node: Node, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """``FindHeightOfLowestSubtreeThatFits`` step by step."""
    if node.parent is None or node.usage.get(fr, 0) + value <= node.subtree_quota.get(fr, 0):
        return 0, node.parent is not None
    remaining = value - tree.local_available(node, fr)
    tracking: Node | None = node.parent
    while tracking is not None:
        if tracking.usage.get(fr, 0) + remaining <= tracking.subtree_quota.get(fr, 0):
            return tracking.height(), tracking.parent is not None
        remaining -= tree.local_available(tracking, fr)
        tracking = tracking.parent
    return node.root().height(), False


class Forgetful(NominationCache[Any]):
    """A nomination cache that never remembers."""

    def entries(self, tree: int, state: Hashable) -> dict[Hashable, Any]:
        return {}


def drawn_workload(wid: str, op: tuple[Any, ...], now: int) -> Workload:
    """The workload a ``worlds`` submit op draws."""
    _, q, gpus, priority, count = op
    return wl(wid, f"q{q}", gpus, priority=priority, t=now, count=count)


def apply_op(
    m: AdmissionManager,
    now: int,
    op: tuple[Any, ...],
    workload: Callable[[str, tuple[Any, ...], int], Workload] = drawn_workload,
) -> None:
    """One operation of a drawn world at ``now``: submit ``workload`` ``w{now}``, or finish / evict an
    admitted workload picked by the op's index (nothing when none is admitted)."""
    if op[0] == "submit":
        m.submit(workload(f"w{now}", op, now))
        return
    admitted = sorted(m.admitted_workloads())
    if admitted:
        victim = admitted[op[1] % len(admitted)]
        m.finish(victim) if op[0] == "finish" else m.evict(victim, now)


def replayed(
    ops: list[tuple[Any, ...]],
    managers: tuple[AdmissionManager, ...],
    workload: Callable[[str, tuple[Any, ...], int], Workload] = drawn_workload,
) -> Iterator[int]:
    """The ops of a drawn world applied to every manager at times 1, 2, ...; yields each time after its
    op is applied."""
    for now, op in enumerate(ops, start=1):
        for m in managers:
            apply_op(m, now, op, workload)
        yield now


def step(m: AdmissionManager, now: int) -> list[tuple[Any, ...]]:
    """One cycle, then the requested victims evicted; what happened, comparable between managers."""
    admitted = [(a.workload_id, a.cluster_queue, a.flavors, a.borrowing) for a in m.cycle(now)]
    requests = [(r.preemptor_id, r.victims) for r in m.take_preemptions()]
    for _, victims in requests:
        for victim in victims:
            m.evict(victim, now, keep_creation_timestamp=True)
    return [tuple(admitted), tuple(requests), tuple(m.pending())]


@patches_admission
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(preempting_worlds())
def test_shortcuts_give_the_answers_of_the_long_way(
    world: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    objects, ops = world
    fast = AdmissionManager(config(*objects), preemption=ClassicPreemption())
    slow = AdmissionManager(config(*objects), preemption=ClassicPreemption())
    slow._nominations = Forgetful()
    for now in replayed(ops, (fast, slow)):
        for _ in range(2):
            got = step(fast, now)
            with mock.patch.object(preemption, "_nothing_to_take", return_value=False):
                want = step(slow, now)
            assert got == want
        tree = fast.tree
        for node in [*tree.cluster_queues.values(), *tree.cohorts.values()]:
            for fr in node.subtree_quota:
                available = available_by_recursion(tree, node, fr)
                assert tree.available(node, fr) == available
                if not node.limited:  # what flavor assignment reads off the root (flavors._find_flavor)
                    assert available == node.top.subtree_quota.get(fr, 0) - node.top.usage.get(fr, 0)
                for value in (1, 4):
                    walked = height_by_walk(tree, node, fr, value)
                    assert tree.borrowing_height(node, fr, value) == walked
                    if node.flat_height is not None and walked[0]:  # borrowing right below the root
                        assert walked == (node.flat_height, False)


@patches_admission
def test_a_head_of_the_same_shape_reuses_the_nomination_until_the_state_moves() -> None:
    """Two 6-GPU heads in a BestEffortFIFO queue of 4 GPUs, nothing admitted between them: the second is
    nominated with the first one's assignment (the same object). Usage added to the tree by hand then
    counts as a change of state: the next head gets a fresh assignment."""
    m = AdmissionManager(config(cq("a", None, {"default": quota(4)}, queueingStrategy="BestEffortFIFO")))
    for i in range(3):
        m.submit(wl(f"w{i}", "a", 6, t=i))
    seen = []
    original = m._assign

    def spy(tracked: Any) -> Any:
        answer = original(tracked)
        seen.append(tracked.workload.id)
        return answer

    m._assign = spy  # type: ignore[method-assign]
    assert m.cycle(0) == [] and m.cycle(1) == []
    assert seen == ["w0"]  # w1 reused w0's answer
    m.tree.add_cq_usage("a", {FlavorResource("default", "nvidia.com/gpu"): 1})
    assert m.cycle(2) == []
    assert seen == ["w0", "w2"]


def test_the_flavor_loop_shortcuts_give_the_answers_of_the_calls() -> None:
    """``_find_flavor`` compares the first flavor it keeps with ``_WORST`` (nothing chosen) without calling
    ``is_preferred``: the answer is "the mode is not NoFit", for every mode, borrowing level and
    preference (upstream ``isPreferred``: a NoFit ``a`` loses, else a NoFit ``b`` loses). And it goes on
    to the next flavor after NoFit or NoCandidates without calling ``should_try_next_flavor``, whatever
    the fungibility (upstream ``shouldTryNextFlavor`` returns true for both first)."""
    both = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    specs: list[dict[str, str]] = [
        {},
        {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
        both,
        {**both, "preference": "BorrowingOverPreemption"},
        {**both, "preference": "PreemptionOverBorrowing"},
    ]
    for spec in specs:
        fungibility = FlavorFungibility.model_validate(spec)
        for mode in PreemptionMode:
            for borrow in (0, 1, 2, 1 << 62):
                candidate = GranularMode(mode, borrow)
                assert is_preferred(candidate, _WORST, fungibility) == (mode != PreemptionMode.NO_FIT)
                if mode <= PreemptionMode.NO_CANDIDATES:
                    assert should_try_next_flavor(candidate, fungibility)
