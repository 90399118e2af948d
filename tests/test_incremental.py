"""The scheduler's incremental caches (fit mask and per-node scores) always equal a full recompute.

Also checks the one-node scorers against the vectorised ones on random inputs, so the fast path used
after each bind can never drift from the formulas tested against upstream's vectors.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement import scheduler as scheduler_module
from fleetlab.placement import scoring, scoring_scalar
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.profiles import resolve_profile
from fleetlab.placement.scheduler import UNFIT, Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo

GI = 1024**3


def _nodes(shapes: list[tuple[int, int, int]]) -> list[NodeInfo]:
    return [
        NodeInfo(
            name=f"n{i}",
            pool=0,
            labels={"kubernetes.io/hostname": f"n{i}", ZONE: ZONES[i % 3 % 2]},
            taints=(),
            allocatable={"cpu": cpu, "memory": mem, "pods": 110, "nvidia.com/gpu": gpus},
        )
        for i, (cpu, mem, gpus) in enumerate(shapes)
    ]


ZONE = "topology.kubernetes.io/zone"
#: Nodes 0, 2, 3, 5, 6, ... in zone-a, 1, 4, 7, ... in zone-b.
ZONES = ("zone-a", "zone-b")


def _in_zone(spec: PodSpec, zone: str) -> PodSpec:
    """The spec with a zone node selector, as a Kueue ResourceFlavor's nodeLabels inject it."""
    return PodSpec(requests=spec.requests, node_selector=((ZONE, zone),))


@settings(max_examples=40, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(
            st.sampled_from([8000, 32000, 96000]),
            st.sampled_from([64 * GI, 512 * GI]),
            st.sampled_from([0, 4, 8]),
        ),
        min_size=2,
        max_size=40,
    ),
    policy=st.sampled_from(["default", "least-allocated", "most-allocated", "bin-packing"]),
    version=st.sampled_from(["1.35", "1.36"]),
    ops=st.lists(st.tuples(st.integers(0, 7), st.booleans()), min_size=1, max_size=80),
    batch_from=st.sampled_from([None, 0, 2]),
)
def test_incremental_equals_rebuild(
    shapes: list[tuple[int, int, int]],
    policy: str,
    version: str,
    ops: list[tuple[int, bool]],
    batch_from: int | None,
) -> None:
    """Random binds and releases of eight pod specs (four shapes, and three of them again with a zone
    node selector: twins that share the usage memo and one batched row); after each, every spec's cache
    equals a fresh scheduler's full computation. ``batch_from`` 0 or 2 makes (nearly) every catch-up the one vector pass
    over all specs behind (``Scheduler._catch_up_together``, from one spec behind on); None keeps the
    default thresholds (with four specs: one node at a time)."""
    if batch_from is None:
        _incremental_equals_rebuild(shapes, policy, version, ops)
        return
    with (
        mock.patch.object(scheduler_module, "BATCH_FROM", batch_from),
        mock.patch.object(scheduler_module, "BATCH_SPECS", 1),
    ):
        _incremental_equals_rebuild(shapes, policy, version, ops)


def _incremental_equals_rebuild(
    shapes: list[tuple[int, int, int]], policy: str, version: str, ops: list[tuple[int, bool]]
) -> None:
    state = ClusterState(_nodes(shapes))
    for i in range(state.n):
        state.set_ready(i)
    scheduler = Scheduler(state, resolve_profile(SchedulerConfig(policy=policy, kubernetes_version=version)))
    specs = [
        PodSpec(requests=(("cpu", 2000), ("memory", 8 * GI), ("nvidia.com/gpu", 1))),
        PodSpec(requests=(("cpu", 6000), ("memory", 32 * GI), ("nvidia.com/gpu", 4))),
        PodSpec(requests=(("cpu", 1000), ("memory", GI))),
        PodSpec(requests=(("memory", 2 * GI),)),
    ]
    specs += [_in_zone(specs[0], "zone-a"), _in_zone(specs[0], "zone-b"), _in_zone(specs[1], "zone-b")]
    specs.append(_in_zone(specs[2], "zone-a"))
    compiled = [scheduler.compile(s) for s in specs]
    placed: list[tuple[int, int]] = []
    for which, release in ops:
        if release and placed:
            node, k = placed.pop(0)
            state.release(node, compiled[k].request, compiled[k].nonzero)
        else:
            pod = compiled[which]
            node = scheduler.select(pod)
            if node >= 0:
                state.bind(node, pod.request, pod.nonzero)
                placed.append((node, which))
        reference = Scheduler(state, scheduler.profile)
        for pod in compiled:
            inc = scheduler._incremental(pod)
            fresh = reference._rebuild(reference.compile(pod.spec))
            assert np.array_equal(inc.fits, fresh.fits)
            assert inc.n_fit == fresh.n_fit == int(np.count_nonzero(fresh.fits))
            assert np.array_equal(inc.best, fresh.best)
            assert (fresh.best[~fresh.fits] == UNFIT).all() and (fresh.best[fresh.fits] > UNFIT).all()
        for node in range(state.n):  # a cached usage key is the node's usage now
            key = state.usage_key[node]
            if key is not None:
                row = [state.requested[node], state.nonzero_requested[node], state.free[node]]
                assert key == np.concatenate([*row, [state.alloc_class[node]]]).astype(np.int64).tobytes()


ints = st.integers(0, 10**7)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(ints, ints, st.integers(1, 100)), min_size=1, max_size=5))
def test_one_node_scorers_equal_vectorised(rows: list[tuple[int, int, int]]) -> None:
    req = [r for r, _, _ in rows]
    cap = [c if i % 3 else c // 2 for i, (_, c, _) in enumerate(rows)]
    w = [x for _, _, x in rows]
    R, C, W = (np.asarray([v], dtype=np.int64) for v in (req, cap, w))
    assert scoring_scalar.least_allocated_one(req, cap, w) == int(scoring.least_allocated(R, C, W[0])[0])
    assert scoring_scalar.most_allocated_one(req, cap, w) == int(scoring.most_allocated(R, C, W[0])[0])
    shape = [(0, 0), (40, 7), (100, 10)]
    assert scoring_scalar.requested_to_capacity_ratio_one(req, cap, w, shape) == int(
        scoring.requested_to_capacity_ratio(R, C, W[0], shape)[0]
    )
    down = [(0, 10), (100, 0)]
    assert scoring_scalar.requested_to_capacity_ratio_one(req, cap, w, down) == int(
        scoring.requested_to_capacity_ratio(R, C, W[0], down)[0]
    )
    assert scoring_scalar.balanced_allocation_one(req, cap) == int(scoring.balanced_allocation(R, C)[0])
    half = [r // 2 for r in req]
    H = np.asarray([half], dtype=np.int64)
    assert scoring_scalar.balanced_allocation_v136_one(req, half, cap) == int(
        scoring.balanced_allocation_v136(R, H, C)[0]
    )


@settings(max_examples=30, deadline=None)
@given(
    gpus=st.lists(st.sampled_from([0, 4, 8]), min_size=2, max_size=30),
    policy=st.sampled_from(["default", "most-allocated", "bin-packing"]),
    tie_break=st.sampled_from(["random", "first"]),
    ops=st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=60),
)
def test_select_by_best_equals_general_path(
    gpus: list[int], policy: str, tie_break: str, ops: list[tuple[int, bool]]
) -> None:
    """``select``'s by-best shortcut picks the node (and makes the random draws) the general path does."""
    state = ClusterState(_nodes([(32000, 512 * GI, g) for g in gpus]))
    for i in range(state.n):
        state.set_ready(i)
    profile = resolve_profile(SchedulerConfig(policy=policy, tie_break=tie_break))
    fast, general = Scheduler(state, profile, seed=3), Scheduler(state, profile, seed=3)
    specs = [
        PodSpec(requests=(("cpu", 2000), ("memory", 8 * GI), ("nvidia.com/gpu", 1))),
        PodSpec(requests=(("cpu", 6000), ("memory", 32 * GI), ("nvidia.com/gpu", 4))),
        PodSpec(requests=(("cpu", 1000), ("memory", GI))),
    ]
    everywhere = np.ones(state.n, dtype=bool)  # an ``allowed`` mask takes the general path
    placed: list[tuple[int, int]] = []
    for which, release in ops:
        if release and placed:
            node, k = placed.pop(0)
            pod = fast.compile(specs[k])
            state.release(node, pod.request, pod.nonzero)
            continue
        pod = fast.compile(specs[which])
        node = fast.select(pod)
        assert node == general.select(general.compile(specs[which]), everywhere)
        if node >= 0:
            state.bind(node, pod.request, pod.nonzero)
            placed.append((node, which))


@settings(max_examples=40, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(
            st.sampled_from([8000, 32000, 96000]),
            st.sampled_from([64 * GI, 512 * GI]),
            st.sampled_from([0, 4, 8]),
        ),
        min_size=1,
        max_size=20,
    ),
    pods=st.lists(
        st.tuples(
            st.sampled_from([0, 500, 4000]), st.sampled_from([0, GI, 16 * GI]), st.sampled_from([0, 1, 8])
        ),
        min_size=1,
        max_size=6,
    ),
    policy=st.sampled_from(["default", "most-allocated", "bin-packing"]),
    version=st.sampled_from(["1.35", "1.36"]),
)
def test_score_rows_equal_score_per_pod(
    shapes: list[tuple[int, int, int]], pods: list[tuple[int, int, int]], policy: str, version: str
) -> None:
    """The per-node scorers' ``score_rows`` (many pod specs in one pass) give, row by row, what ``score``
    gives for each pod alone (a skipping pod scores 0), on nodes with some usage."""
    state = ClusterState(_nodes(shapes))
    for i in range(state.n):
        state.set_ready(i)
    scheduler = Scheduler(state, resolve_profile(SchedulerConfig(policy=policy, kubernetes_version=version)))
    busy = scheduler.compile(PodSpec(requests=(("cpu", 1000), ("memory", 2 * GI))))
    state.bind(0, busy.request, busy.nonzero)
    specs = []
    for cpu, memory, gpus in pods:
        requests = tuple((r, v) for r, v in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpus)) if v)
        specs.append(scheduler.compile(PodSpec(requests=requests)))
    nodes = np.arange(state.n, dtype=np.int64)
    for plugin, _ in scheduler.local_scorers:
        rows = plugin.score_rows(state, specs, nodes)
        for i, pod in enumerate(specs):
            alone = plugin.score(state, pod, nodes)
            assert np.array_equal(rows[i], np.zeros(state.n, dtype=np.int64) if alone is None else alone)


def test_zone_twins_share_memo_and_rows() -> None:
    """One shape selected into zone-a and into zone-b (nodes 0, 2, 3 and node 1): both share the usage
    memo of the shape without a selector, and after a batched catch-up each equals that shape's row on its
    own zone's nodes and is UNFIT on the other zone's."""
    state = ClusterState(_nodes([(32000, 64 * GI, 8)] * 4))
    for i in range(state.n):
        state.set_ready(i)
    scheduler = Scheduler(state, resolve_profile(SchedulerConfig()))
    shape = PodSpec(requests=(("cpu", 2000), ("memory", 8 * GI), ("nvidia.com/gpu", 1)))
    plain, in_a, in_b = (
        scheduler.compile(s) for s in (shape, _in_zone(shape, "zone-a"), _in_zone(shape, "zone-b"))
    )
    incs = [scheduler._incremental(p) for p in (plain, in_a, in_b)]
    assert incs[0].memo is incs[1].memo is incs[2].memo
    for node in (0, 1):  # one bind in each zone: both zones' rows change
        state.bind(node, plain.request, plain.nonzero)
    with (
        mock.patch.object(scheduler_module, "BATCH_FROM", 0),
        mock.patch.object(scheduler_module, "BATCH_SPECS", 1),
    ):
        scheduler._incremental(in_a)  # the one vector pass brings all three up to date
    assert all(inc.log_pos == len(state.changes) for inc in incs)
    best = incs[0].best
    assert best[0] == best[1] < best[2] == best[3]  # a used node scores below an empty one (LeastAllocated)
    assert list(incs[1].best) == [best[0], UNFIT, best[2], best[3]]
    assert list(incs[2].best) == [UNFIT, best[1], UNFIT, UNFIT]
    assert [inc.n_fit for inc in incs] == [4, 3, 1]
