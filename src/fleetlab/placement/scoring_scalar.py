"""One-node versions of the resource scorers, for incremental rescoring of the few nodes a bind changed.

Same arithmetic as ``fleetlab.placement.scoring`` (Go int64 division, float64 in upstream's order), on
Python ints and floats: a numpy call per tiny update costs more than the arithmetic itself. Tests check
both against the upstream vectors and against each other on random inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_NODE_SCORE = 100
MAX_UTILIZATION = 100
SHAPE_FACTOR = 10  # MaxNodeScore / MaxCustomPriorityScore


def go_div(a: int, b: int) -> int:
    """Go integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_allocated_one(requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]) -> int:
    """LeastAllocated for one node (least_allocated.go)."""
    num = den = 0
    for req, cap, w in zip(requested, allocatable, weights, strict=True):
        if cap == 0:
            continue
        if req <= cap:  # both non-negative: Go's truncation equals floor division
            num += (cap - req) * MAX_NODE_SCORE // cap * w
        den += w
    return num // den if den else 0


def most_allocated_one(requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]) -> int:
    """MostAllocated for one node (most_allocated.go; requests clamped to capacity)."""
    num = den = 0
    for req, cap, w in zip(requested, allocatable, weights, strict=True):
        if cap == 0:
            continue
        num += (req if req < cap else cap) * MAX_NODE_SCORE // cap * w  # non-negative: floor == Go's trunc
        den += w
    return num // den if den else 0


def broken_linear_one(points: Sequence[tuple[int, int]], p: int) -> int:
    """The shape function at one point (helper/shape_score.go)."""
    for i, (util, score) in enumerate(points):
        if p <= util:
            if i == 0:
                return score
            prev_u, prev_s = points[i - 1]
            return prev_s + go_div((score - prev_s) * (p - prev_u), util - prev_u)
    return points[-1][1]


def requested_to_capacity_ratio_one(
    requested: Sequence[int],
    allocatable: Sequence[int],
    weights: Sequence[int],
    shape: Sequence[tuple[int, int]],
) -> int:
    """RequestedToCapacityRatio for one node (requested_to_capacity_ratio.go), shape as the user writes it."""
    scaled = [(u, s * SHAPE_FACTOR) for u, s in shape]
    num = den = 0
    for req, cap, w in zip(requested, allocatable, weights, strict=True):
        if cap == 0:
            continue
        if req > cap:
            util = MAX_UTILIZATION
        elif req <= 0:
            util = 0
        else:
            util = min(req * MAX_UTILIZATION // cap, MAX_UTILIZATION)
        score = broken_linear_one(scaled, util)
        if score > 0:
            num += score * w
            den += w
    if den == 0:
        return 0
    x = float(num) / float(den)
    t = math.trunc(x)
    return int(t + (1 if x - t >= 0.5 else 0))


def balanced_allocation_one(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """BalancedAllocation v1.22–v1.35 for one node: ``int((1 − std)·100)`` over kept fractions."""
    fractions = []
    for req, cap in zip(requested, allocatable, strict=True):
        if cap == 0:
            continue
        f = float(req) / float(cap)
        fractions.append(1.0 if f > 1.0 else f)
    n = len(fractions)
    if n == 2:
        std = abs((fractions[0] - fractions[1]) / 2.0)
    elif n > 2:
        total = 0.0
        for f in fractions:
            total = total + f
        mean = total / float(n)
        sq = 0.0
        for f in fractions:
            d = f - mean
            sq = sq + d * d
        std = math.sqrt(sq / float(n))
    else:
        std = 0.0
    return int((1.0 - std) * float(MAX_NODE_SCORE))


def balanced_allocation_v136_one(
    requested: Sequence[int], requested_without_pod: Sequence[int], allocatable: Sequence[int]
) -> int:
    """BalancedAllocation v1.36 for one node: ``50 + (50 + withPod − withoutPod) / 2``."""
    with_pod = balanced_allocation_one(requested, allocatable)
    without = balanced_allocation_one(requested_without_pod, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without, 2)
