"""GPU fragmentation as FGD defines it (Weng et al., ATC 2023; upstream ``pkg/utils/frag.go``), worked by hand.

For a node n and task m: if m cannot run on n (CPU-only task, wrong GPU model, too little CPU, fewer than d
GPUs with at least u free) every idle GPU share of n is a fragment; otherwise the idle share on GPUs with
less than u free is. F_n(M) = Σ p_m F_n(m). Values in milli-GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetlab.placement.fragmentation import fragmentation_of, target_workload
from fleetlab.placement.sharing import PodRequest, ShareState


def _target(specs: list[tuple[int, int, int, int, int]]):  # type: ignore[no-untyped-def]
    """(cpu, num_gpu, gpu_milli, model_mask, count) rows -> M keeping every spec (popularity 1.0)."""
    rows = [(c, g, m, k) for c, g, m, k, n in specs for _ in range(n)]
    cpu, gpus, milli, mask = (np.asarray(col, dtype=np.int64) for col in zip(*rows, strict=True))
    return target_workload(cpu, gpus, milli, mask, popularity=1.0)


# M: A = 1 GPU × 500m with 4 CPUs (p 0.5), B = 1 whole GPU with 8 CPUs (p 0.3), C = CPU-only 2 CPUs (p 0.2)
M = _target([(4000, 1, 500, 0, 5), (8000, 1, 1000, 0, 3), (2000, 0, 0, 0, 2)])


def test_weights_are_pod_shares() -> None:
    assert sorted(np.round(M.weight, 6)) == [0.2, 0.3, 0.5]


def test_every_task_fits_remnants_below_each_share_are_fragments() -> None:
    # GPUs free [1000, 300], 16 CPUs: A fits (300 < 500 is a fragment), B fits (300 < 1000), C takes all.
    assert fragmentation_of([1000, 300], 16000, 0, M) == pytest.approx(0.5 * 300 + 0.3 * 300 + 0.2 * 1300)


def test_lack_of_cpu_makes_all_idle_gpu_a_fragment_for_that_task() -> None:
    # 6 CPUs: A fits (300), B lacks CPU (Q4: all 1300), C (CPU-only, XL): all 1300.
    assert fragmentation_of([1000, 300], 6000, 0, M) == pytest.approx(0.5 * 300 + 0.3 * 1300 + 0.2 * 1300)


def test_lack_of_gpu_share_makes_all_idle_gpu_a_fragment() -> None:
    # GPUs [400, 300]: no GPU has 500 or 1000 free (Q2 for A and B), C: all; F = all idle = 700.
    assert fragmentation_of([400, 300], 16000, 0, M) == pytest.approx(700.0)


def test_fully_allocated_node_has_no_fragment() -> None:
    assert fragmentation_of([0, 0, 0, 0], 1000, 0, M) == 0.0


def test_cpu_only_target_counts_every_idle_gpu() -> None:
    only_cpu = _target([(1000, 0, 0, 0, 1)])
    assert fragmentation_of([1000, 1000, 250], 64000, 0, only_cpu) == pytest.approx(2250.0)


def test_gpu_type_constraint_no_access_counts_all_idle() -> None:
    # Task allowed on model 1 only; on a model-0 node it has no access: all 1500 idle are fragments.
    typed = _target([(1000, 1, 1000, 1 << 1, 1)])
    assert fragmentation_of([1000, 500], 8000, 0, typed) == pytest.approx(1500.0)
    assert fragmentation_of([1000, 500], 8000, 1, typed) == pytest.approx(500.0)


def test_multi_gpu_task_needs_d_gpus_with_the_share() -> None:
    # 2 whole GPUs wanted: [1000, 1000, 600] fits (600 is a fragment); [1000, 600, 600] does not (all 2200).
    two = _target([(1000, 2, 1000, 0, 1)])
    assert fragmentation_of([1000, 1000, 600], 8000, 0, two) == pytest.approx(600.0)
    assert fragmentation_of([1000, 600, 600], 8000, 0, two) == pytest.approx(2200.0)


def test_popularity_cut_keeps_most_popular_specs_and_renormalises() -> None:
    # Counts 50/30/15/5: the first three reach 95 %; weights become 50/95, 30/95, 15/95 (GetTypicalPods).
    rows = (
        [(1000, 1, 1000, 0)] * 50
        + [(2000, 1, 500, 0)] * 30
        + [(3000, 0, 0, 0)] * 15
        + [(4000, 1, 250, 0)] * 5
    )
    cpu, gpus, milli, mask = (np.asarray(col, dtype=np.int64) for col in zip(*rows, strict=True))
    m = target_workload(cpu, gpus, milli, mask, popularity=0.95)
    assert m.cpu_milli.tolist() == [1000, 2000, 3000]
    assert m.weight.tolist() == pytest.approx([50 / 95, 30 / 95, 15 / 95])


def test_equal_counts_keep_the_larger_spec_first_like_upstreams_reverse_sort() -> None:
    rows = [(1000, 1, 1000, 0)] * 2 + [(9000, 1, 1000, 0)] * 2
    cpu, gpus, milli, mask = (np.asarray(col, dtype=np.int64) for col in zip(*rows, strict=True))
    assert target_workload(cpu, gpus, milli, mask, popularity=0.5).cpu_milli.tolist() == [9000]


@settings(max_examples=40, deadline=None)
@given(
    pods=st.lists(
        st.tuples(
            st.sampled_from([0, 2000, 4000, 8000]),
            st.sampled_from(
                [(0, 0), (1, 100), (1, 250), (1, 500), (1, 750), (1, 1000), (2, 1000), (4, 1000)]
            ),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_incremental_fragmentation_equals_recomputation(pods: list[tuple[int, tuple[int, int]]]) -> None:
    """Per-bind summaries give the same F_n(M) as computing it afresh from the node's GPUs."""
    gpus = np.asarray([8, 4, 2, 1], dtype=np.int64)
    state = ShareState(
        np.full(4, 32000, dtype=np.int64),
        np.full(4, 10**6, dtype=np.int64),
        gpus,
        np.zeros(4, dtype=np.int64),
        M,
    )
    rng = np.random.default_rng(0)
    for cpu, (count, milli) in pods:
        pod = PodRequest(cpu, 0, count, milli, 0)
        nodes = state.feasible(pod)
        if len(nodes) == 0:
            continue
        node = int(nodes[rng.integers(len(nodes))])
        gpu = int(np.flatnonzero(state.free[node] >= milli)[0]) if pod.sharing else None
        state.bind(pod, node, gpu)
    for n in range(4):
        free = [int(f) for f in state.free[n] if f >= 0]
        assert state.frag[n] == pytest.approx(fragmentation_of(free, int(state.cpu_free[n]), 0, M))
