"""The FGD paper's policies on small hand-worked clusters (upstream ``pkg/simulator/plugin/*_score.go``),
and properties of the GPU-sharing state: no GPU above 1000 milli allocated, no node over-allocated."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetlab.placement.fragmentation import TargetWorkload, target_workload
from fleetlab.placement.share_policies import POLICIES, fgd_deltas, known_policies, place
from fleetlab.placement.sharing import FULL, PodRequest, ShareState

RNG = np.random.default_rng(0)


def _target(specs: list[tuple[int, int, int, int]]) -> TargetWorkload:
    """(cpu, num_gpu, gpu_milli, count) rows, every spec kept."""
    rows = [(c, g, m, 0) for c, g, m, n in specs for _ in range(n)]
    cpu, gpus, milli, mask = (np.asarray(col, dtype=np.int64) for col in zip(*rows, strict=True))
    return target_workload(cpu, gpus, milli, mask, popularity=1.0)


def _state(
    gpus: list[int], target: TargetWorkload, cpu: list[int] | None = None, models: list[int] | None = None
) -> ShareState:
    n = len(gpus)
    return ShareState(
        np.asarray(cpu or [64000] * n, dtype=np.int64),
        np.full(n, 10**6, dtype=np.int64),
        np.asarray(gpus, dtype=np.int64),
        np.asarray(models or [0] * n, dtype=np.int64),
        target,
    )


def _use(state: ShareState, node: int, free: list[int]) -> None:
    """Set a node's GPUs to the given free milli-GPU by binding sharing pods, as earlier pods would have."""
    for g, f in enumerate(free):
        for used in ([FULL - f] if f > 0 else [500, 500]) if f < FULL else []:
            state.bind(PodRequest(0, 0, 1, used, 0), node, g)


def test_fgd_takes_the_gpu_whose_remnant_is_no_fragment() -> None:
    # M = one task of 700m. Node 0 [1000, 1000], node 1 [1000, 500]. A 500m pod on node 1's GPU 1 leaves
    # [1000, 0]: F goes 500 -> 0 (Δ -500); anywhere else a 500 remnant appears (Δ +500).
    state = _state([2, 2], _target([(1000, 1, 700, 1)]))
    _use(state, 1, [1000, 500])
    pod = PodRequest(1000, 0, 1, 500, 0)
    delta, rows, gpus = fgd_deltas(state, pod, state.feasible(pod))
    assert sorted(zip(rows.tolist(), gpus.tolist(), np.round(delta).tolist(), strict=True)) == [
        (0, 0, 500.0),
        (0, 1, 500.0),
        (1, 0, 500.0),
        (1, 1, -500.0),
    ]
    choice = place(state, pod, "fgd", RNG)
    assert choice is not None and (choice.node, choice.gpu) == (1, 1)


def test_fgd_keeps_cpu_only_pods_off_nodes_whose_gpus_they_would_strand() -> None:
    # M = 1 GPU with 8 CPUs. Node 0 has an idle GPU, node 1 none. A 12-CPU pod on node 0 would leave
    # 4 CPUs: its GPU becomes a fragment (Δ +1000). On node 1 nothing idle can be stranded (Δ 0).
    state = _state([1, 1], _target([(8000, 1, 1000, 1)]), cpu=[16000, 16000])
    _use(state, 1, [0])
    choice = place(state, PodRequest(12000, 0, 0, 0, 0), "fgd", RNG)
    assert choice is not None and choice.node == 1


def test_fgd_whole_gpu_pod_prefers_the_node_where_idle_gpus_are_already_fragments() -> None:
    # M = 4-GPU task (p .5) and 1-GPU task (p .5). Node 0 has 8 free GPUs, node 1 has 2 free (the 4-GPU
    # task cannot use them). A 1-GPU pod on node 1: Δ = -0.5·1000 (its freed share was a fragment for the
    # 4-GPU task); on node 0 both tasks still fit: Δ = 0.
    state = _state([8, 2], _target([(1000, 4, 1000, 1), (1000, 1, 1000, 1)]))
    delta, _, _ = fgd_deltas(state, PodRequest(1000, 0, 1, 1000, 0), np.asarray([0, 1]))
    assert delta.tolist() == pytest.approx([0.0, -500.0])
    choice = place(state, PodRequest(1000, 0, 1, 1000, 0), "fgd", RNG)
    assert choice is not None and choice.node == 1


def test_fgd_ties_go_to_the_lowest_node_like_upstreams_smallest_name() -> None:
    state = _state([4, 4, 4], _target([(1000, 1, 1000, 1)]))
    for policy in ("fgd", "fgd-exact", "bestfit", "dotprod", "packing", "clustering"):
        choice = place(state, PodRequest(1000, 0, 1, 1000, 0), policy, RNG)
        assert choice is not None and choice.node == 0, policy


def test_fgd_score_is_the_rounded_sigmoid_so_close_deltas_tie() -> None:
    # M = one task of 100m. A 950m pod leaves a 30m remnant on node 0 (980 free, Δ +30) or 10m on node 1
    # (960 free, Δ +10). Both score ⌊sigmoid(-Δ/1000)·100⌋ = 49: upstream cannot tell them apart, so the
    # lower node wins; fgd-exact takes the smaller Δ.
    state = _state([1, 1], _target([(1000, 1, 100, 1)]))
    _use(state, 0, [980])
    _use(state, 1, [960])
    pod = PodRequest(1000, 0, 1, 950, 0)
    delta, _, _ = fgd_deltas(state, pod, np.asarray([0, 1]))
    assert delta.tolist() == pytest.approx([30.0, 10.0])
    assert np.floor(100 / (1 + np.exp(delta / 1000))).tolist() == [49.0, 49.0]
    assert place(state, pod, "fgd", RNG).node == 0  # type: ignore[union-attr]
    assert place(state, pod, "fgd-exact", RNG).node == 1  # type: ignore[union-attr]


def test_bestfit_takes_the_node_with_least_cpu_and_gpu_left() -> None:
    state = _state([8, 2], _target([(1000, 1, 1000, 1)]), cpu=[96000, 16000])
    choice = place(state, PodRequest(4000, 0, 1, 1000, 0), "bestfit", RNG)
    assert choice is not None and choice.node == 1


def test_bestfit_and_packing_put_a_sharing_pod_on_the_tightest_gpu() -> None:
    state = _state([4], _target([(1000, 1, 1000, 1)]))
    _use(state, 0, [1000, 600, 300, 1000])
    for policy in ("bestfit", "packing", "clustering", "dotprod"):
        choice = place(state, PodRequest(1000, 0, 1, 250, 0), policy, RNG)
        assert choice is not None and choice.gpu == 2, policy


def test_dotprod_prefers_the_node_whose_free_vector_aligns_least() -> None:
    # Upstream's sign: score = (1 - <free, request>/2)·100, so the fuller node (smaller dot product) wins.
    state = _state([8, 8], _target([(1000, 1, 1000, 1)]))
    _use(state, 1, [0, 0, 0, 0, 1000, 1000, 1000, 1000])
    choice = place(state, PodRequest(1000, 0, 1, 1000, 0), "dotprod", RNG)
    assert choice is not None and choice.node == 1


def test_packing_tiers_partial_gpu_then_used_node_then_empty_node() -> None:
    state = _state([2, 2, 2], _target([(1000, 1, 1000, 1)]))
    _use(state, 1, [1000, 0])  # node 1 in use, one whole GPU free
    _use(state, 2, [1000, 500])  # node 2 has a partial GPU
    share = place(state, PodRequest(1000, 0, 1, 400, 0), "packing", RNG)
    assert share is not None and (share.node, share.gpu) == (2, 1)
    whole = place(state, PodRequest(1000, 0, 1, 1000, 0), "packing", RNG)
    assert whole is not None and whole.node == 1  # 50 - 1 beats the empty node's 33 - 2


def test_clustering_groups_pods_with_the_same_tag() -> None:
    state = _state([4, 4, 4], _target([(1000, 1, 1000, 1)]))
    state.bind(PodRequest(1000, 0, 1, 300, 0), 0, 0)  # node 0: share-gpu tag
    state.bind(PodRequest(1000, 0, 2, 1000, 0), 1, None)  # node 1: 2-gpu tag
    whole = place(state, PodRequest(1000, 0, 2, 1000, 0), "clustering", RNG)
    shared = place(state, PodRequest(1000, 0, 1, 200, 0), "clustering", RNG)
    assert whole is not None and whole.node == 1
    assert shared is not None and shared.node == 0


def test_random_is_seeded() -> None:
    picks = []
    for _ in range(2):
        state = _state([1] * 20, _target([(1000, 1, 1000, 1)]))
        rng = np.random.default_rng(7)
        picks.append([place(state, PodRequest(1000, 0, 1, 500, 0), "random", rng).node for _ in range(5)])  # type: ignore[union-attr]
    assert picks[0] == picks[1]


def test_gpu_type_constraint_and_cpu_only_nodes_are_respected() -> None:
    state = _state([0, 2, 2], _target([(1000, 1, 1000, 1)]), models=[-1, 0, 1])
    for policy in known_policies():
        choice = place(state, PodRequest(1000, 0, 1, 1000, 1 << 1), policy, RNG)
        assert choice is not None and choice.node == 2, policy
    assert place(state, PodRequest(1000, 0, 1, 1000, 1 << 3), "fgd", RNG) is None


@settings(max_examples=30, deadline=None)
@given(
    policy=st.sampled_from(known_policies()),
    pods=st.lists(
        st.tuples(
            st.sampled_from([0, 1000, 4000, 16000]),
            st.sampled_from([0, 16, 64]),
            st.sampled_from([(0, 0), (1, 50), (1, 330), (1, 500), (1, 810), (1, 1000), (2, 1000), (8, 1000)]),
        ),
        min_size=1,
        max_size=60,
    ),
)
def test_no_gpu_above_1000_milli_and_no_node_over_allocated(
    policy: str, pods: list[tuple[int, int, tuple[int, int]]]
) -> None:
    target = _target([(1000, 1, 500, 2), (4000, 1, 1000, 1), (2000, 0, 0, 1)])
    gpus = np.asarray([8, 4, 2, 1, 0], dtype=np.int64)
    state = ShareState(
        np.full(5, 32000, dtype=np.int64),
        np.full(5, 128, dtype=np.int64),
        gpus,
        np.asarray([0, 0, 1, 1, -1]),
        target,
    )
    rng = np.random.default_rng(1)
    placed = 0
    for cpu, mem, (count, milli) in pods:
        pod = PodRequest(cpu, mem, count, milli, 0)
        choice = place(state, pod, policy, rng)
        if choice is not None:
            state.bind(pod, choice.node, choice.gpu)
            placed += pod.total_milli
    present = state.free >= 0
    assert ((state.free[present] >= 0) & (state.free[present] <= FULL)).all()
    assert (state.cpu_free >= 0).all() and (state.mem_free >= 0).all()
    assert state.allocated_milli == placed == int((FULL - state.free[present]).sum())


def test_policies_list_matches_the_paper() -> None:
    assert set(POLICIES) == {"random", "dotprod", "clustering", "packing", "bestfit", "fgd"}
