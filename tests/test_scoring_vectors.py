"""kube-scheduler scoring formulas (fleetlab.placement.scoring) against upstream test vectors.

Three layers:

* every vector of ``shared/reference/kube-scheduler/scoring_vectors.json`` (skipped when absent);
* self-contained table rows copied from the upstream scorer tests, so the formulas are checked without it;
* batch-vs-single and scalar-reference cross-checks, and shape validation.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fleetlab.placement import scoring
from fleetlab.placement.scoring import (
    MAX_NODE_SCORE,
    balanced_allocation,
    balanced_allocation_v136,
    broken_linear,
    default_normalize_score,
    least_allocated,
    max_node_score,
    most_allocated,
    requested_to_capacity_ratio,
    validate_shape,
)
from shared_data import shared_path

REFERENCE = (
    Path(os.environ["FLEETLAB_REFERENCE"]) if "FLEETLAB_REFERENCE" in os.environ else shared_path("reference")
)
VECTORS_FILE = REFERENCE / "kube-scheduler" / "scoring_vectors.json"
HAVE_VECTORS = VECTORS_FILE.is_file()
needs_vectors = pytest.mark.skipif(not HAVE_VECTORS, reason=f"reference vectors not found at {VECTORS_FILE}")

VECTORS: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text()) if HAVE_VECTORS else []


def i64(rows: list[list[int]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.int64)


def _matrices(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    req = i64([[r["requested"] for r in rows]])
    alloc = i64([[r["allocatable"] for r in rows]])
    weights = np.asarray([r["weight"] for r in rows], dtype=np.int64)
    return req, alloc, weights


def score_vector(v: dict[str, Any]) -> int:
    strategy = v["strategy"]
    if strategy == "broken_linear_function":
        points = [(int(u), int(s)) for u, s in v["shape"]]
        return int(broken_linear(points, np.asarray([v["utilization"]], dtype=np.int64))[0])
    req, alloc, weights = _matrices(v["resources"])
    if strategy == "least_allocated":
        out = least_allocated(req, alloc, weights)
    elif strategy == "most_allocated":
        out = most_allocated(req, alloc, weights)
    elif strategy == "requested_to_capacity_ratio":
        out = requested_to_capacity_ratio(req, alloc, weights, [(int(u), int(s)) for u, s in v["shape"]])
    elif strategy == "balanced_allocation":
        out = balanced_allocation(req, alloc)
    elif strategy == "balanced_allocation_v136":
        without, alloc_without, _ = _matrices(v["resources_without_pod"])
        assert np.array_equal(alloc_without, alloc)
        out = balanced_allocation_v136(req, without, alloc)
    else:  # pragma: no cover - a new strategy in the reference file must be wired up here
        raise AssertionError(f"unknown strategy {strategy!r}")
    assert out.shape == (1,) and out.dtype == np.int64
    return int(out[0])


# --------------------------------------------------------------------------------------------------------
# 1. reference vectors
# --------------------------------------------------------------------------------------------------------


@needs_vectors
def test_vector_file_has_all_80_vectors() -> None:
    assert len(VECTORS) == 80
    assert len({v["id"] for v in VECTORS}) == 80


@needs_vectors
@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_reference_vector(vector: dict[str, Any]) -> None:
    got = score_vector(vector)
    assert got == vector["expected"], f"{vector['id']} ({vector.get('note', '')}): got {got}"


@needs_vectors
def test_reference_vectors_batched_per_strategy() -> None:
    """Scoring all nodes of one strategy and resource layout at once gives the per-vector answers."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for v in VECTORS:
        if v["strategy"] == "broken_linear_function":
            key: tuple[Any, ...] = (v["strategy"], json.dumps(v["shape"]))
        else:
            key = (
                v["strategy"],
                len(v["resources"]),
                tuple(r["weight"] for r in v["resources"]),
                json.dumps(v.get("shape")),
            )
        groups.setdefault(key, []).append(v)
    for (strategy, *_), vs in groups.items():
        expected = np.asarray([v["expected"] for v in vs], dtype=np.int64)
        if strategy == "broken_linear_function":
            points = [(int(u), int(s)) for u, s in vs[0]["shape"]]
            got = broken_linear(points, np.asarray([v["utilization"] for v in vs], dtype=np.int64))
        else:
            req = i64([[r["requested"] for r in v["resources"]] for v in vs])
            alloc = i64([[r["allocatable"] for r in v["resources"]] for v in vs])
            w = np.asarray([r["weight"] for r in vs[0]["resources"]], dtype=np.int64)
            if strategy == "least_allocated":
                got = least_allocated(req, alloc, w)
            elif strategy == "most_allocated":
                got = most_allocated(req, alloc, w)
            elif strategy == "requested_to_capacity_ratio":
                got = requested_to_capacity_ratio(req, alloc, w, [tuple(p) for p in vs[0]["shape"]])
            elif strategy == "balanced_allocation":
                got = balanced_allocation(req, alloc)
            else:
                without = i64([[r["requested"] for r in v["resources_without_pod"]] for v in vs])
                got = balanced_allocation_v136(req, without, alloc)
        np.testing.assert_array_equal(got, expected, err_msg=f"{[v['id'] for v in vs]}")


# --------------------------------------------------------------------------------------------------------
# 2. self-contained table tests (no reference folder needed)
# --------------------------------------------------------------------------------------------------------


def test_constants() -> None:
    assert MAX_NODE_SCORE == 100 == max_node_score()
    assert scoring.MAX_CUSTOM_PRIORITY_SCORE == 10


def test_least_allocated_table() -> None:
    """Rows L2, L8, L10, L13, L14 of TestLeastAllocatedScoringStrategy.

    kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/least_allocated_test.go @008b3652.
    """
    # L2: (25+50)/2 = 37 floor; node2 50.
    assert least_allocated(
        i64([[3000, 5000], [3000, 5000]]), i64([[4000, 10000], [6000, 10000]]), i64([1, 1])
    ).tolist() == [37, 50]
    # L8: requested cpu 6000 > 4000 scores 0 (not negative, not clamped): (0+100)/2, (0+50)/2.
    assert least_allocated(
        i64([[6000, 0], [6000, 5000]]), i64([[4000, 10000]] * 2), i64([1, 1])
    ).tolist() == [50, 25]
    # L10: memory weight 2, cpu weight 1: (50*2 + 25)/3 = 41.
    assert least_allocated(i64([[5000, 3000]]), i64([[10000, 4000]]), i64([2, 1])).tolist() == [41]
    # L13: extended resource honoured: (50+50+80)/3 = 60.
    assert least_allocated(i64([[3000, 5000, 2]]), i64([[6000, 10000, 10]]), i64([1, 1, 1])).tolist() == [60]
    # L14: node lacks xyz (allocatable 0, weight 2) -> skipped, not in the weight sum: (50+60)/2 = 55.
    assert least_allocated(i64([[0, 3000, 4000]]), i64([[0, 6000, 10000]]), i64([2, 1, 1])).tolist() == [55]
    # L9: node with no resources at all -> weight sum 0 -> 0.
    assert least_allocated(i64([[3000, 0]]), i64([[0, 0]]), i64([1, 1])).tolist() == [0]


def test_gpu_worked_example() -> None:
    """semantics.md §2.5: cpu 12/32, memory 96Gi/256Gi, gpu 6/8; formulas of least_allocated.go.

    Default profile (cpu, memory) -> 62; with nvidia.com/gpu weight 5: (62+62+25*5)/7 = 249/7 -> 35.
    """
    gi = 1 << 30
    req = i64([[12, 96 * gi, 6]])
    alloc = i64([[32, 256 * gi, 8]])
    assert least_allocated(req[:, :2], alloc[:, :2], i64([1, 1])).tolist() == [62]
    assert least_allocated(req, alloc, i64([1, 1, 5])).tolist() == [35]
    assert balanced_allocation(req[:, :2], alloc[:, :2]).tolist() == [100]


def test_most_allocated_table() -> None:
    """Rows M2, M5, M6, M7, M10 of most_allocated_test.go @030880a5 (kubernetes/kubernetes noderesources)."""
    assert most_allocated(
        i64([[3000, 5000], [3000, 5000]]), i64([[4000, 10000], [6000, 10000]]), i64([1, 1])
    ).tolist() == [62, 50]
    assert most_allocated(
        i64([[5000, 9000], [5000, 9000]]), i64([[5000, 10000], [10000, 9000]]), i64([1, 1])
    ).tolist() == [95, 75]
    assert most_allocated(i64([[5000, 3000]]), i64([[10000, 4000]]), i64([2, 1])).tolist() == [58]
    # M7: three pods' non-zero defaults (300m) exceed a 250m node: cpu clamps to 100 (memory 60).
    mi = 1 << 20
    got = most_allocated(i64([[300, 600 * mi], [100, 200 * mi]]), i64([[250, 1000 * mi]] * 2), i64([1, 1]))
    assert got.tolist() == [80, 30]
    assert most_allocated(i64([[0, 3000, 4000]]), i64([[0, 6000, 10000]]), i64([2, 1, 1])).tolist() == [45]


def test_broken_linear_table() -> None:
    """TestBrokenLinearFunction, requested_to_capacity_ratio_test.go @8519d339 (points unscaled)."""
    p = np.asarray([-10, 0, 9, 10, 15, 19, 20, 89, 90, 99, 100, 110], dtype=np.int64)
    assert broken_linear([(10, 1), (90, 9)], p).tolist() == [1, 1, 1, 1, 1, 1, 2, 8, 9, 9, 9, 9]
    p2 = np.asarray([-10, 0, 20, 30, 40, 70, 100, 110], dtype=np.int64)
    assert broken_linear([(0, 2), (40, 10), (100, 0)], p2).tolist() == [2, 2, 6, 8, 10, 5, 0, 0]
    assert broken_linear([(0, 2), (40, 2), (100, 2)], p2).tolist() == [2] * 8
    # Derived: decreasing segment at 50 -> 10 + trunc(-100/60) = 9; floor division would give 8.
    assert broken_linear([(0, 2), (40, 10), (100, 0)], np.asarray([50], dtype=np.int64)).tolist() == [9]
    # Keeps the input's shape.
    assert broken_linear([(0, 0), (100, 10)], i64([[10, 20], [30, 40]])).tolist() == [[1, 2], [3, 4]]


def test_requested_to_capacity_ratio_table() -> None:
    """Rows R2, R5, R9, R10 of requested_to_capacity_ratio_test.go @8519d339, plus derived edge cases."""
    shape_a = [(0, 10), (100, 0)]
    shape_b = [(0, 0), (100, 1)]
    # R2: cpu 75% -> 25, memory 50% -> 50, math.Round(37.5) = 38.
    got = requested_to_capacity_ratio(
        i64([[3000, 5000], [3000, 5000]]), i64([[4000, 10000], [6000, 10000]]), i64([1, 1]), shape_a
    )
    assert got.tolist() == [38, 50]
    # R5: 25% on (0,0)-(100,10 scaled) -> 10*25/100 = 2 (integer), node2 50% -> 5.
    assert requested_to_capacity_ratio(i64([[2], [2]]), i64([[8], [4]]), i64([1]), shape_b).tolist() == [2, 5]
    # R9: (2*3 + 5*5)/8 = 3.875 -> 4; (5*3 + 2*5)/8 = 3.125 -> 3.
    got = requested_to_capacity_ratio(i64([[2, 2], [2, 2]]), i64([[8, 4], [4, 8]]), i64([3, 5]), shape_b)
    assert got.tolist() == [4, 3]
    # R10 node2: foo 6 > 4 -> shape(100) = 10; bar 50% -> 5; (30+25)/8 = 6.875 -> 7.
    assert requested_to_capacity_ratio(i64([[6, 4]]), i64([[4, 8]]), i64([3, 5]), shape_b).tolist() == [7]
    # Derived: shape (0,2),(40,10),(100,0) scaled x10 at 50%: 100 + trunc(-1000/60) = 84 (floor: 83).
    assert requested_to_capacity_ratio(
        i64([[50]]), i64([[100]]), i64([1]), [(0, 2), (40, 10), (100, 0)]
    ).tolist() == [84]
    # Derived: zero-score exclusion; a full cpu scores 0 and drops out instead of halving the mean.
    assert requested_to_capacity_ratio(
        i64([[4000, 5000]]), i64([[4000, 10000]]), i64([1, 1]), shape_a
    ).tolist() == [50]
    # Derived: half away from zero; (25 + 48)/2 = 36.5 -> 37 (numpy's half-to-even round would give 36).
    assert requested_to_capacity_ratio(
        i64([[3000, 5200]]), i64([[4000, 10000]]), i64([1, 1]), shape_a
    ).tolist() == [37]
    # Derived: allocatable 0 is skipped even though shape(100) would be > 0 for it.
    assert requested_to_capacity_ratio(i64([[5, 0]]), i64([[10, 0]]), i64([1, 9]), shape_b).tolist() == [5]


def test_balanced_allocation_table() -> None:
    """Rows B2, B3, B5, B6, B7, B9 of balanced_allocation_test.go @00fdb4ff (form a, v1.35)."""
    # B2: fractions .75/.5 -> std .125 -> int(87.5) = 87; node2 balanced -> 100.
    assert balanced_allocation(
        i64([[3000, 5000], [3000, 5000]]), i64([[4000, 10000], [6000, 10000]])
    ).tolist() == [87, 100]
    # B3: .6 vs .25 -> 82; .6 vs .5 -> 95.
    assert balanced_allocation(i64([[6000, 5000], [6000, 10000]]), i64([[10000, 20000]] * 2)).tolist() == [
        82,
        95,
    ]
    # B5: 1.0 vs 0 -> 50; 1.0 vs .5 -> 75.
    assert balanced_allocation(i64([[6000, 0], [6000, 5000]]), i64([[6000, 10000]] * 2)).tolist() == [50, 75]
    # B6: three fractions, population std: (.857, .125, .5) -> 70; (.857, .125, .125) -> 65.
    got = balanced_allocation(i64([[3000, 5000, 4], [3000, 5000, 1]]), i64([[3500, 40000, 8]] * 2))
    assert got.tolist() == [70, 65]
    # B7: GPU skipped (allocatable 0) -> two fractions .857/.125 -> 63.
    assert balanced_allocation(i64([[3000, 5000, 0]]), i64([[3500, 40000, 0]])).tolist() == [63]
    # B9: (.857, 0, .125) with the DRA-backed resource -> 62; node2 skips it -> 63. Mixed n in one batch.
    got = balanced_allocation(i64([[3000, 0, 1], [3000, 5000, 0]]), i64([[3500, 40000, 8], [3500, 40000, 0]]))
    assert got.tolist() == [62, 63]
    # n < 2 -> std 0 -> 100; fraction > 1 clamps to 1.
    assert balanced_allocation(i64([[7, 0], [0, 0]]), i64([[10, 0], [0, 0]])).tolist() == [100, 100]
    assert balanced_allocation(i64([[20, 5]]), i64([[10, 10]])).tolist() == [75]


def test_balanced_allocation_v136_table() -> None:
    """Derived v1.36 (PR #135573) values on B2, B3, B5 inputs, semantics.md §2.4."""
    req = i64([[3000, 5000], [6000, 5000], [6000, 10000], [6000, 0]])
    without = i64([[0, 0], [3000, 0], [3000, 5000], [3000, 0]])
    alloc = i64([[4000, 10000], [10000, 20000], [10000, 20000], [6000, 10000]])
    assert balanced_allocation_v136(req, without, alloc).tolist() == [68, 73, 74, 62]
    # No change scores 75; perfectly balanced -> perfectly imbalanced 50; the reverse 100.
    assert balanced_allocation_v136(i64([[5, 5]]), i64([[5, 5]]), i64([[10, 10]])).tolist() == [75]
    assert balanced_allocation_v136(i64([[10, 0]]), i64([[0, 0]]), i64([[10, 10]])).tolist() == [50]
    assert balanced_allocation_v136(i64([[10, 10]]), i64([[10, 0]]), i64([[10, 10]])).tolist() == [100]


def test_default_normalize_score_table() -> None:
    """DefaultNormalizeScore, helper/normalize_score.go @2e94b405 (and its normalize_score_test.go rows)."""
    s = i64([[10, 20, 30, 40, 50]])[0]
    assert default_normalize_score(s, reverse=False).tolist() == [20, 40, 60, 80, 100]
    assert default_normalize_score(s, reverse=True).tolist() == [80, 60, 40, 20, 0]
    assert default_normalize_score(i64([[1, 2, 3]])[0], reverse=False).tolist() == [33, 66, 100]
    assert default_normalize_score(i64([[0, 0]])[0], reverse=True).tolist() == [100, 100]
    assert default_normalize_score(i64([[0, 0]])[0], reverse=False).tolist() == [0, 0]
    assert default_normalize_score(i64([[3, 1]])[0], reverse=False, max_priority=10).tolist() == [10, 3]
    assert default_normalize_score(np.zeros(0, dtype=np.int64), reverse=True).tolist() == []
    # Input is not modified in place.
    assert s.tolist() == [10, 20, 30, 40, 50]


# --------------------------------------------------------------------------------------------------------
# 3. batch vs single, scalar Go transcription, big values
# --------------------------------------------------------------------------------------------------------


def go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def ref_least(req: list[int], alloc: list[int], w: list[int]) -> int:
    num = den = 0
    for r, c, wi in zip(req, alloc, w, strict=True):
        if c == 0:
            continue
        num += (0 if r > c else go_div((c - r) * 100, c)) * wi
        den += wi
    return 0 if den == 0 else go_div(num, den)


def ref_most(req: list[int], alloc: list[int], w: list[int]) -> int:
    num = den = 0
    for r, c, wi in zip(req, alloc, w, strict=True):
        if c == 0:
            continue
        num += go_div(min(r, c) * 100, c) * wi
        den += wi
    return 0 if den == 0 else go_div(num, den)


def ref_broken_linear(points: list[tuple[int, int]], p: int) -> int:
    for i, (u, s) in enumerate(points):
        if p <= u:
            if i == 0:
                return points[0][1]
            pu, ps = points[i - 1]
            return ps + go_div((s - ps) * (p - pu), u - pu)
    return points[-1][1]


def ref_rtcr(req: list[int], alloc: list[int], w: list[int], shape: list[tuple[int, int]]) -> int:
    pts = [(u, s * 10) for u, s in shape]
    num = den = 0
    for r, c, wi in zip(req, alloc, w, strict=True):
        if c == 0:
            continue
        if r > c:
            util = 100
        elif r <= 0:
            util = 0
        else:
            util = min(100, r * 100 // c)  # Python ints: the exact 128-bit result
        s = ref_broken_linear(pts, util)
        if s > 0:
            num += s * wi
            den += wi
    if den == 0:
        return 0
    x = float(num) / float(den)
    return int(math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)) if abs(x) < 2**52 else int(x)


def ref_balanced(req: list[int], alloc: list[int]) -> int:
    fr: list[float] = []
    total = 0.0
    for r, c in zip(req, alloc, strict=True):
        if c == 0:
            continue
        f = float(r) / float(c)
        if f > 1:
            f = 1.0
        total += f
        fr.append(f)
    std = 0.0
    if len(fr) == 2:
        std = abs((fr[0] - fr[1]) / 2)
    elif len(fr) > 2:
        mean = total / len(fr)
        acc = 0.0
        for f in fr:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fr))
    return int((1 - std) * 100.0)


def _random_cluster(seed: int, k: int, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    alloc = rng.integers(1, 64, size=(k, r)) * rng.choice([1, 7, 1000, 1 << 30], size=(1, r))
    alloc = np.where(rng.random((k, r)) < 0.15, 0, alloc)  # some resources missing on some nodes
    frac = rng.choice([0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.3], size=(k, r)) * rng.random((k, r)) ** 0.1
    req = np.floor(np.maximum(alloc, rng.integers(1, 64, size=(k, r))) * frac).astype(np.int64)
    without = np.floor(req * rng.random((k, r))).astype(np.int64)
    weights = rng.integers(1, 6, size=r).astype(np.int64)
    return req.astype(np.int64), alloc.astype(np.int64), weights, without


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_batch_equals_single_and_scalar_reference(seed: int) -> None:
    """Scoring K nodes at once equals scoring each alone, and equals a line-by-line Go transcription."""
    k, r = 300, 1 + seed  # R = 1..4 covers n = 0, 1, 2 and > 2 fractions for BalancedAllocation
    req, alloc, w, without = _random_cluster(seed, k, r)
    shapes = [
        [(0, 10), (100, 0)],
        [(0, 0), (100, 10)],
        [(0, 2), (40, 10), (100, 0)],
        [(10, 1), (50, 7), (90, 3)],
    ]
    shape = shapes[seed]
    batch = {
        "la": least_allocated(req, alloc, w),
        "ma": most_allocated(req, alloc, w),
        "rtcr": requested_to_capacity_ratio(req, alloc, w, shape),
        "ba": balanced_allocation(req, alloc),
        "ba136": balanced_allocation_v136(req, without, alloc),
    }
    for out in batch.values():
        assert out.shape == (k,) and out.dtype == np.int64
    for i in range(k):
        one_req, one_alloc, one_without = req[i : i + 1], alloc[i : i + 1], without[i : i + 1]
        single = {
            "la": least_allocated(one_req, one_alloc, w),
            "ma": most_allocated(one_req, one_alloc, w),
            "rtcr": requested_to_capacity_ratio(one_req, one_alloc, w, shape),
            "ba": balanced_allocation(one_req, one_alloc),
            "ba136": balanced_allocation_v136(one_req, one_without, one_alloc),
        }
        rq, al, wl = req[i].tolist(), alloc[i].tolist(), w.tolist()
        ref_ba = ref_balanced(rq, al)
        ref = {
            "la": ref_least(rq, al, wl),
            "ma": ref_most(rq, al, wl),
            "rtcr": ref_rtcr(rq, al, wl, shape),
            "ba": ref_ba,
            "ba136": 50 + go_div(50 + ref_ba - ref_balanced(without[i].tolist(), al), 2),
        }
        for name in batch:
            assert int(single[name][0]) == int(batch[name][i]) == ref[name], (name, i, rq, al)


def test_empty_batches() -> None:
    empty = np.zeros((0, 2), dtype=np.int64)
    w = i64([[1, 1]])[0]
    assert least_allocated(empty, empty, w).shape == (0,)
    assert most_allocated(empty, empty, w).shape == (0,)
    assert requested_to_capacity_ratio(empty, empty, w, [(0, 10), (100, 0)]).shape == (0,)
    assert balanced_allocation(empty, empty).shape == (0,)
    assert balanced_allocation_v136(empty, empty, empty).shape == (0,)
    # R = 0: nothing to score.
    none = np.zeros((3, 0), dtype=np.int64)
    assert least_allocated(none, none, np.zeros(0, dtype=np.int64)).tolist() == [0, 0, 0]
    assert balanced_allocation(none, none).tolist() == [100, 100, 100]


def test_rtcr_scaled_utilization_exact_for_huge_values() -> None:
    """req*100 overflows int64; upstream takes a 128-bit product (requested_to_capacity_ratio.go)."""
    cap = (1 << 62) + 12345
    reqs = [cap - 1, cap // 2, cap // 3 + 7, (1 << 61) + 3, 1, cap]
    req = i64([[x] for x in reqs])
    alloc = i64([[cap]] * len(reqs))
    got = requested_to_capacity_ratio(req, alloc, i64([[1]])[0], [(0, 0), (100, 10)])
    assert got.tolist() == [min(100, x * 100 // cap) for x in reqs] == [99, 49, 33, 49, 0, 100]


def test_input_shape_errors() -> None:
    with pytest.raises(ValueError, match="shape"):
        least_allocated(i64([[1, 2]])[0], i64([[1, 2]])[0], i64([[1, 1]])[0])
    with pytest.raises(ValueError, match="weights"):
        most_allocated(i64([[1, 2]]), i64([[1, 2]]), i64([[1, 1, 1]])[0])
    with pytest.raises(ValueError, match="allocatable"):
        balanced_allocation(i64([[1, 2]]), i64([[1, 2, 3]]))
    with pytest.raises(ValueError, match="at least one point"):
        broken_linear([], i64([[1]])[0])


# --------------------------------------------------------------------------------------------------------
# 4. shape validation (validateFunctionShape, apis/config/validation/validation_pluginargs.go)
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape",
    [[(0, 10), (100, 0)], [(0, 0), (100, 10)], [(50, 5)], [(0, 2), (40, 10), (100, 0)], [(10, 1), (90, 9)]],
)
def test_validate_shape_accepts(shape: list[tuple[int, int]]) -> None:
    validate_shape(shape)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ([], "at least one point must be specified"),
        ([(50, 1), (50, 2)], r"shape\[1\]\.utilization: Invalid value: 50: .*increasing order"),
        ([(60, 1), (40, 2)], r"shape\[1\]\.utilization.*increasing order"),
        ([(-1, 1), (10, 2)], r"shape\[0\]\.utilization: Invalid value: -1: not in valid range \[0, 100\]"),
        ([(0, 1), (101, 2)], r"shape\[1\]\.utilization: Invalid value: 101"),
        ([(0, -1), (100, 2)], r"shape\[0\]\.score: Invalid value: -1: not in valid range \[0, 10\]"),
        ([(0, 1), (100, 11)], r"shape\[1\]\.score: Invalid value: 11"),
        ([(0, 1.5), (100, 2)], r"shape\[0\]: .*integers"),
        ([(0, 1, 2)], r"shape\[0\]: expected a \(utilization, score\) pair"),
    ],
)
def test_validate_shape_rejects(shape: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_shape(shape)


def test_validate_shape_reports_every_problem() -> None:
    with pytest.raises(ValueError) as info:
        validate_shape([(-1, 1), (10, -1), (20, 11), (101, 1)])
    text = str(info.value)
    for field in ("shape[0].utilization", "shape[1].score", "shape[2].score", "shape[3].utilization"):
        assert field in text


def test_rtcr_rejects_bad_shape() -> None:
    with pytest.raises(ValueError, match="increasing order"):
        requested_to_capacity_ratio(i64([[1]]), i64([[2]]), i64([[1]])[0], [(100, 0), (0, 10)])
