"""A node's usage kept as one row (requested | non-zero requested | free | allocatable class): binds and
releases through a pod's ``usage_delta`` leave exactly what the three separate sums did, and the row's
bytes, as a UsageKey, tell usages apart exactly as the requested, non-zero and class parts alone do."""

from __future__ import annotations

import random

import numpy as np

from fleetlab.placement.state import ClusterState, NodeInfo


def _state(n: int, rnd: random.Random) -> ClusterState:
    nodes = [
        NodeInfo(
            f"n{i}",
            0,
            {},
            (),
            {"cpu": rnd.choice([1000, 4000]), "memory": rnd.choice([1, 2]) << 30, "pods": 110},
        )
        for i in range(n)
    ]
    return ClusterState(nodes, extra_resources=("example.com/fpga",))


def test_one_row_bind_by_hand() -> None:
    """Two 1500m pods on an 8000m node, one released: requested 1500m, free 8000 − 1500 = 6500m, the non-zero
    requested 1500m and the default 200 MiB, one pod; the class column untouched."""
    state = ClusterState([NodeInfo("a", 0, {}, (), {"cpu": 8000, "pods": 110})])
    request = np.zeros(state.width, dtype=np.int64)
    request[state.cpu_col], request[state.pods_col] = 1500, 1
    nonzero = np.array([1500, 200 << 20], dtype=np.int64)
    delta = state.usage_delta(request, nonzero)
    assert delta.tolist() == [*request.tolist(), 1500, 200 << 20, *(-request).tolist(), 0]
    state.bind(0, request, nonzero, -1, delta)
    state.bind(0, request, nonzero)  # no delta kept: made afresh
    state.release(0, request, nonzero, -1, delta)
    assert state.requested[0, state.cpu_col] == 1500 and state.free[0, state.cpu_col] == 6500
    assert state.free[0, state.pods_col] == 109 and state.requested[0, state.pods_col] == 1
    assert state.nonzero_requested[0].tolist() == [1500, 200 << 20] and state.pod_count.tolist() == [1]
    assert state.alloc_class == [0]


def test_one_row_binds_match_the_three_sums_on_random_runs() -> None:
    for seed in range(30):
        rnd = random.Random(seed)
        state = _state(rnd.randint(1, 6), rnd)
        requested = np.zeros((state.n, state.width), dtype=np.int64)
        counted = np.zeros((state.n, 2), dtype=np.int64)
        specs = []
        for _ in range(4):
            request = np.asarray([rnd.choice([0, 250, 1000]) for _ in range(state.width)], dtype=np.int64)
            request[state.pods_col] = 1
            nonzero = np.asarray([rnd.randint(0, 4000), rnd.randint(0, 1 << 30)], dtype=np.int64)
            specs.append((request, nonzero, state.usage_delta(request, nonzero)))
        bound: list[tuple[int, int]] = []
        for _ in range(60):
            if bound and rnd.random() < 0.4:
                node, k = bound.pop(rnd.randrange(len(bound)))
                request, nonzero, delta = specs[k]
                state.release(node, request, nonzero, -1, delta if rnd.random() < 0.5 else None)
                requested[node] -= request
                counted[node] -= nonzero
            else:
                node, k = rnd.randrange(state.n), rnd.randrange(len(specs))
                request, nonzero, delta = specs[k]
                state.bind(node, request, nonzero, -1, delta if rnd.random() < 0.5 else None)
                requested[node] += request
                counted[node] += nonzero
                bound.append((node, k))
            assert np.array_equal(state.requested, requested)
            assert np.array_equal(state.free, state.allocatable - requested)
            assert np.array_equal(state.nonzero_requested, counted)
            for a in range(state.n):  # keys equal exactly where the requested, non-zero and class parts are
                for b in range(state.n):
                    same = (
                        requested[a].tolist() == requested[b].tolist()
                        and counted[a].tolist() == counted[b].tolist()
                        and state.alloc_class[a] == state.alloc_class[b]
                    )
                    assert (state.node_usage_key(a) == state.node_usage_key(b)) == same
            for node in range(state.n):  # the element view reads the requested column in place
                col = state.cpu_col
                assert state.requested_at[node * state.row_width + col] == requested[node, col]
