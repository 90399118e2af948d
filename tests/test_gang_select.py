"""A gang's members chosen and bound in one call (placement/gang_select.py) give what as many rounds of
``Scheduler.select`` and ``ClusterState.bind`` give: the same nodes, random draws, change log, sums and
cached fit mask and scores; and the one-node catch-up is what the rounds after the first take."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fleetlab.placement.gang_select import select_and_bind
from fleetlab.placement.scheduler import Scheduler
from test_placement import make, node, spec


def _world(policy: str, tie_break: str = "random") -> Scheduler:
    # 12 nodes (at least FULL_RESCORE_FRACTION = 8, so a one-node catch-up is never batched) of 4, 6 or
    # 8 CPUs: the most-allocated and least-allocated policies both meet ties and unequal scores.
    s = make(
        [node(f"n{i}", cpu=(4 + 2 * (i % 3)) * 1000, gpus=0) for i in range(12)],
        policy=policy,
        tie_break=tie_break,
    )
    other = s.compile(spec(cpu=2000, mem=1))
    for n in (0, 4, 5, 9):  # some nodes partly taken before the gang
        s.state.bind(n, other.request, other.nonzero)
    return s


def _observed(s: Scheduler, pod: Any) -> tuple[Any, ...]:
    inc = pod.cache["incremental"]
    return (
        s.state.requested.tolist(),
        list(s.state.changes),
        inc.best.tolist(),
        inc.fits.tolist(),
        inc.n_fit,
        inc.log_pos,
        s.rng.integers(1 << 30),  # the next draw: the same only after the same draws
    )


def _by_rounds(s: Scheduler, pod: Any, count: int, mask: Any) -> tuple[bool, list[int]]:
    chosen: list[int] = []
    for _ in range(count):
        n = s.select(pod, mask)
        if n < 0:
            return False, chosen
        s.state.bind(n, pod.request, pod.nonzero)
        chosen.append(n)
    return True, chosen


@pytest.mark.parametrize("policy", ["default", "most-allocated"])
@pytest.mark.parametrize("tie_break", ["random", "first"])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("count", [1, 4, 9, 40, 70])
def test_one_call_equals_rounds_of_select_and_bind(
    policy: str, tie_break: str, masked: bool, count: int
) -> None:
    results = []
    for one_call in (False, True):
        s = _world(policy, tie_break)
        pod = s.compile(spec(cpu=1000, mem=1))
        s.select(pod)  # a cache exists before the gang, as after earlier cycles
        mask = np.arange(12) % 2 == 0 if masked else None
        if one_call:
            chosen: list[int] = []
            ok = select_and_bind(s, pod, count, mask, chosen)
        else:
            ok, chosen = _by_rounds(s, pod, count, mask)
        results.append((ok, chosen, _observed(s, pod)))
    assert results[0] == results[1]
    # 4+6+8+4+6+8+4+6+8+4+6+8 = 72 CPUs less 4 x 2 taken = 64 one-CPU pods fit; the even nodes hold
    # 4+8+6+4+8+6 = 36 less 2 (node 0) less 2 (node 4) = 32.
    assert results[0][0] is (count <= (32 if masked else 64))


def test_rounds_after_the_first_skip_select(monkeypatch: pytest.MonkeyPatch) -> None:
    # A gang of 4 unmasked: only the first member goes through ``select``; members 2-4 are the one-node
    # catch-up (the node the previous member took) and the choice by score.
    s = _world("default")
    pod = s.compile(spec(cpu=1000, mem=1))
    s.select(pod)
    calls = []
    real = s.select
    monkeypatch.setattr(s, "select", lambda p, m=None: calls.append(1) or real(p, m))
    chosen: list[int] = []
    assert select_and_bind(s, pod, 4, None, chosen)
    assert len(calls) == 1 and len(chosen) == 4


def test_a_member_that_fits_nowhere_stops_the_call() -> None:
    # 12 nodes of 2 CPUs: 12 two-CPU pods fill every node, one each, and the 13th finds none.
    s = make([node(f"n{i}", cpu=2000, gpus=0) for i in range(12)])
    pod = s.compile(spec(cpu=2000, mem=1))
    chosen: list[int] = []
    assert not select_and_bind(s, pod, 13, None, chosen)
    assert sorted(chosen) == list(range(12))
