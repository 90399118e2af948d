"""``ResourceTree.lent_series`` (the vectorised ``lent`` the Kueue bridge computes over its recorded usage
samples at the end of a run) gives, at every recorded state, what the scalar ``lent`` gave in that state,
in random cohort forests with nested cohorts, lending and borrowing limits.

``lent_series`` yields its series one at a time, parents first, and keeps only the series of cohorts below
a root (their children read them): a three-level tree is where a child reads its parent's series.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings

from fleetlab.admission.manager import AdmissionManager
from fleetlab.admission.preemption import ClassicPreemption
from fleetlab.admission.tree import FlavorResource, ResourceTree
from test_admission import cohort, config, cq, quota, wl, worlds
from test_admission_shortcuts import replayed, step


def _frs(tree: ResourceTree) -> list[FlavorResource]:
    return sorted({fr for node in tree.all_nodes() for fr in node.subtree_quota}, key=str)


def _check_recorded(tree: ResourceTree, usage_rows: list[list[int]], lent_rows: list[list[int]]) -> None:
    """``lent_series`` over the recorded usage rows gives the recorded scalar ``lent`` rows."""
    frs, nodes = _frs(tree), tree.all_nodes()
    usage = np.array(usage_rows, dtype=np.int64).reshape(len(usage_rows), len(nodes) * len(frs))
    series = {
        (id(n), fr): usage[:, k * len(frs) + j] for k, n in enumerate(nodes) for j, fr in enumerate(frs)
    }
    got = dict(tree.lent_series(frs, series))
    assert list(got) == list(series)  # every node and pair, parents first
    for k, node in enumerate(nodes):
        for j, fr in enumerate(frs):
            want = [row[k * len(frs) + j] for row in lent_rows]
            assert got[(id(node), fr)].tolist() == want, (node, fr)


def _record(tree: ResourceTree, usage_rows: list[list[int]], lent_rows: list[list[int]]) -> None:
    frs, nodes = _frs(tree), tree.all_nodes()
    usage_rows.append([node.usage.get(fr, 0) for node in nodes for fr in frs])
    lent_rows.append([tree.lent(node, fr) if node.parent else 0 for node in nodes for fr in frs])


def test_a_cohort_below_the_root_passes_its_lent_series_to_its_children() -> None:
    """top ⊃ {mid ⊃ {qa: 4 GPUs}, qb: 0}; mid has 4 GPUs of its own. qb borrows 8: all of mid's pool.
    lent(mid) = min(unused 8, consumed(top) 8 − used 0 − (SQ(top) 8 − contribution 8)) = 8; qa's parent
    pool is consumed by 0 + lent(mid) 8, so lent(qa) = min(4, 8 − 0 − (SQ(mid) 8 − 4)) = 4. Without mid's
    series (read as 0) qa would lend nothing."""
    gpu = {"f1": quota(4)}
    m = AdmissionManager(
        config(
            cohort("top", None, None),
            cohort("mid", "top", gpu),
            cq("qa", "mid", gpu),
            cq("qb", "top", {"f1": quota(0)}),
        )
    )
    usage_rows: list[list[int]] = []
    lent_rows: list[list[int]] = []
    _record(m.tree, usage_rows, lent_rows)
    m.submit(wl("w1", "qb", 8, t=1))
    assert [a.workload_id for a in m.cycle(1)] == ["w1"]
    _record(m.tree, usage_rows, lent_rows)
    fr = FlavorResource("f1", "nvidia.com/gpu")
    assert m.tree.lent(m.tree.cohorts["mid"], fr) == 8 and m.tree.lent(m.tree.cluster_queue("qa"), fr) == 4
    _check_recorded(m.tree, usage_rows, lent_rows)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_lent_series_equals_the_scalar_lent_at_every_recorded_state(
    world: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    objects, ops = world
    m = AdmissionManager(config(*objects), preemption=ClassicPreemption())
    usage_rows: list[list[int]] = []
    lent_rows: list[list[int]] = []
    for now in replayed(ops, (m,)):
        step(m, now)
        _record(m.tree, usage_rows, lent_rows)
    _check_recorded(m.tree, usage_rows, lent_rows)
