"""A gang's trial binds kept as its real binds leave the cluster state, its change log and its release
generation exactly as rolling them back and binding the same pods again does; each member's GPUs-before
count (for the GPU counters) is worked out by hand."""

from __future__ import annotations

import numpy as np

from fleetlab.placement.gang import GangPlacer, TopologyRequest
from fleetlab.placement.state import ClusterState
from fleetlab.sim.gang_binds import gpus_before_each, trial_binds_stay
from test_placement import make, node, spec


def _snapshot(state: ClusterState) -> tuple[list[list[int]], list[list[int]], list[int], int]:
    return state.requested.tolist(), state.free.tolist(), list(state.changes), state.release_generation


def test_kept_trial_binds_equal_rollback_then_bind() -> None:
    # Three nodes of 2 GPUs; a gang of three 1-GPU pods; one GPU already taken on node 1.
    placed: list[tuple[list[list[int]], list[list[int]], list[int], int]] = []
    plans: list[list[int]] = []
    for keep in (False, True):
        s = make([node(f"n{i}", gpus=2) for i in range(3)])
        pod = s.compile(spec(cpu=1000, gpus=1))
        s.state.bind(1, pod.request, pod.nonzero)
        placer = GangPlacer(s, ["kubernetes.io/hostname"])
        plan, kept = placer.plan(pod, 3, TopologyRequest(), None, keep)
        assert plan is not None and kept is keep
        if not kept:
            for n in plan:
                s.state.bind(n, pod.request, pod.nonzero)
        placed.append(_snapshot(s.state))
        plans.append(plan)
    assert plans[0] == plans[1]
    assert placed[0] == placed[1]
    # The first bind, then 3 trial binds, 3 releases and 3 binds: 10 log entries; the generation is 3 from
    # the nodes becoming ready plus 3 from the releases.
    assert len(placed[1][2]) == 10 and placed[1][3] == 6


def test_kept_gang_that_does_not_fit_leaves_nothing_bound() -> None:
    s = make([node("n0", gpus=2), node("n1", gpus=1)])
    pod = s.compile(spec(cpu=1000, gpus=1))
    before = s.state.requested.copy()
    plan, kept = GangPlacer(s, []).plan(pod, 4, TopologyRequest(), None, True)
    assert plan is None and not kept
    assert np.array_equal(s.state.requested, before)


def test_gpus_before_each_member() -> None:
    # Node 0 holds 3 GPUs before the gang; the kept plan [0, 2, 0] of 2-GPU pods leaves node 0 at 3+2+2 = 7
    # and node 2 at 0+2 = 2. Before member 0: 7-4 = 3; member 1: 2-2 = 0; member 2: 7-2 = 5.
    s = make([node(f"n{i}", gpus=8) for i in range(3)])
    pod = s.compile(spec(cpu=1000, gpus=1))
    for _ in range(3):
        s.state.bind(0, pod.request, pod.nonzero)
    two = s.compile(spec(cpu=1000, gpus=2))
    for n in (0, 2, 0):
        s.state.bind(n, two.request, two.nonzero)
    assert gpus_before_each(s.state, [0, 2, 0], 2) == [3, 0, 5]
    assert gpus_before_each(s.state, [0, 2, 0], 0) == [0, 0, 0]


def test_trial_binds_stay_only_when_every_bind_hook_is_blind() -> None:
    s = make([node("n0")])
    pod = s.compile(spec())
    yes, no = (lambda c: True), (lambda c: False)
    assert trial_binds_stay([], 0, pod, -1)
    assert trial_binds_stay([yes], 1, pod, -1)
    assert not trial_binds_stay([], 1, pod, -1)  # a bind hook that did not say
    assert not trial_binds_stay([no], 1, pod, -1)
    assert not trial_binds_stay([yes], 1, pod, 0)  # a pod label set
