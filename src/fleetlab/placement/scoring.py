"""kube-scheduler node scoring formulas, vectorised over many nodes, exact to upstream integer arithmetic.

Every scorer takes ``(K, R)`` int64 arrays -- K nodes, R configured resources -- holding the values
*as passed to the upstream scorer* (semantics.md §1.3): ``requested`` already includes the incoming pod
(with the non-zero cpu/memory defaults for the three Fit strategies), and a resource that upstream bypasses
appears as ``requested 0, allocatable 0``. Resources with ``allocatable == 0`` are skipped, per node, and do
not enter any weight sum or fraction count.

Upstream sources (kubernetes/kubernetes):

* ``pkg/scheduler/framework/plugins/noderesources/least_allocated.go``
* ``pkg/scheduler/framework/plugins/noderesources/most_allocated.go`` @9d3a8c1d
* ``pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio.go`` @0a295a8d
* ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`` @02d7708a; v1.36: PR #135573
* ``pkg/scheduler/framework/plugins/helper/shape_score.go`` @2d58ef78
* ``pkg/scheduler/framework/plugins/helper/normalize_score.go`` @2e94b405
* ``pkg/scheduler/apis/config/validation/validation_pluginargs.go`` (``validateFunctionShape``)

Arithmetic notes. Go's ``/`` on int64 truncates toward zero; this module uses one truncating division
(:func:`_go_div`) everywhere, which equals floor division wherever operands are non-negative and stays
faithful where a numerator can be negative (broken-linear segments that decrease, the v1.36 balance delta).
numpy int64 array arithmetic wraps on overflow exactly as Go's int64 does. Float steps are done in float64
in upstream's order, without fused multiply-add (as Go compiles them on amd64).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MAX_NODE_SCORE",
    "MAX_UTILIZATION",
    "MIN_NODE_SCORE",
    "balanced_allocation",
    "balanced_allocation_v136",
    "broken_linear",
    "default_normalize_score",
    "least_allocated",
    "max_node_score",
    "most_allocated",
    "requested_to_capacity_ratio",
    "validate_shape",
]

MAX_NODE_SCORE = 100
"""``fwk.MaxNodeScore`` (k8s.io/kube-scheduler/framework)."""
MIN_NODE_SCORE = 0
"""``fwk.MinNodeScore``."""
MAX_CUSTOM_PRIORITY_SCORE = 10
"""``config.MaxCustomPriorityScore``: the scale of user-written RequestedToCapacityRatio shape scores."""
MAX_UTILIZATION = 100
"""``maxUtilization`` in requested_to_capacity_ratio.go."""

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]


def max_node_score() -> int:
    """Return ``fwk.MaxNodeScore`` (100), the top of every plugin's score range after normalising."""
    return MAX_NODE_SCORE


# --------------------------------------------------------------------------------------------------------
# integer helpers
# --------------------------------------------------------------------------------------------------------


def _go_div(a: ArrayLike, b: ArrayLike) -> _I64:
    """Go int64 ``a / b``: quotient truncated toward zero (``b`` must be non-zero everywhere)."""
    an = np.asarray(a, dtype=np.int64)
    bn = np.asarray(b, dtype=np.int64)
    q = np.floor_divide(an, bn)
    inexact = (an - q * bn) != 0
    # floor and truncation differ only for inexact quotients of opposite-signed operands.
    return np.asarray(q + (inexact & ((an < 0) != (bn < 0))), dtype=np.int64)


def _safe_den(den: _I64) -> _I64:
    """Replace zero denominators by 1 so a vectorised division never traps; callers mask those lanes."""
    return np.where(den == 0, np.int64(1), den).astype(np.int64)


def _as_matrix(name: str, x: ArrayLike) -> _I64:
    arr = np.asarray(x, dtype=np.int64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (K nodes, R resources), got shape {arr.shape}")
    return arr


def _check_inputs(requested: ArrayLike, allocatable: ArrayLike) -> tuple[_I64, _I64]:
    req = _as_matrix("requested", requested)
    alloc = _as_matrix("allocatable", allocatable)
    if req.shape != alloc.shape:
        raise ValueError(f"requested shape {req.shape} != allocatable shape {alloc.shape}")
    return req, alloc


def _check_weights(weights: ArrayLike, n_resources: int) -> _I64:
    w = np.asarray(weights, dtype=np.int64)
    if w.shape != (n_resources,):
        raise ValueError(f"weights must have shape ({n_resources},), got shape {w.shape}")
    return w


def _weighted_mean(scores: _I64, weights: _I64, include: NDArray[np.bool_]) -> _I64:
    """``Σ score·w / Σ w`` over included resources, Go int64 division, 0 when the weight sum is 0."""
    w = np.broadcast_to(weights, scores.shape)
    num = np.where(include, scores * w, 0).sum(axis=1, dtype=np.int64)
    den = np.where(include, w, 0).sum(axis=1, dtype=np.int64)
    return np.where(den == 0, np.int64(0), _go_div(num, _safe_den(den))).astype(np.int64)


def _mul_div_below(x: _I64, m: int, d: _I64) -> _I64:
    """Exact ``floor(x·m / d)`` for ``0 <= x < d`` without forming ``x·m`` (no int64 overflow).

    Binary long division over the bits of ``m``, keeping ``q·d + r == t·x`` with ``0 <= r < d``; it stands in
    for upstream's 128-bit ``bits.Mul64`` / ``bits.Div64`` path in ``scaledUtilization``.
    """
    q = np.zeros_like(x)
    r = np.zeros_like(x)
    for bit in bin(m)[2:]:
        gap = d - r  # in (0, d]: no overflow
        carry = r >= gap  # 2r >= d
        q = 2 * q + carry
        r = np.where(carry, r - gap, r + r)
        if bit == "1":
            gap = d - r
            carry = x >= gap  # r + x >= d
            q = q + carry
            r = np.where(carry, x - gap, r + x)
    return q.astype(np.int64)


def _scaled_utilization(requested: _I64, capacity: _I64) -> _I64:
    """``scaledUtilization(requested, capacity, 100)``: exact ``floor(req·100/cap)`` clamped to [0, 100]."""
    inside = (capacity > 0) & (requested > 0) & (requested < capacity)
    safe_cap = np.where(inside, capacity, np.int64(1)).astype(np.int64)
    safe_req = np.where(inside, requested, np.int64(0)).astype(np.int64)
    exact = _mul_div_below(safe_req, MAX_UTILIZATION, safe_cap)
    full = (capacity > 0) & (requested > 0) & (requested >= capacity)
    return np.where(inside, exact, np.where(full, np.int64(MAX_UTILIZATION), np.int64(0))).astype(np.int64)


# --------------------------------------------------------------------------------------------------------
# LeastAllocated / MostAllocated
# --------------------------------------------------------------------------------------------------------


def least_allocated(
    requested: NDArray[np.int64], allocatable: NDArray[np.int64], weights: NDArray[np.int64]
) -> NDArray[np.int64]:
    """NodeResourcesFit LeastAllocated: weighted integer mean of ``(cap-req)·100/cap``, favouring free nodes.

    Mirrors ``leastResourceScorer`` in noderesources/least_allocated.go: 0 for a resource with req > cap.
    """
    req, alloc = _check_inputs(requested, allocatable)
    w = _check_weights(weights, req.shape[1])
    include = alloc != 0
    per = _go_div((alloc - req) * MAX_NODE_SCORE, _safe_den(alloc))
    per = np.where(req > alloc, np.int64(0), per).astype(np.int64)
    return _weighted_mean(per, w, include)


def most_allocated(
    requested: NDArray[np.int64], allocatable: NDArray[np.int64], weights: NDArray[np.int64]
) -> NDArray[np.int64]:
    """NodeResourcesFit MostAllocated: integer mean of ``min(req,cap)·100/cap``, favouring full nodes.

    Mirrors ``mostResourceScorer`` in noderesources/most_allocated.go @9d3a8c1d (req clamped to cap, case M7).
    """
    req, alloc = _check_inputs(requested, allocatable)
    w = _check_weights(weights, req.shape[1])
    include = alloc != 0
    clamped = np.where(req > alloc, alloc, req).astype(np.int64)
    per = _go_div(clamped * MAX_NODE_SCORE, _safe_den(alloc))
    return _weighted_mean(per, w, include)


# --------------------------------------------------------------------------------------------------------
# RequestedToCapacityRatio
# --------------------------------------------------------------------------------------------------------


def validate_shape(shape: Sequence[tuple[int, int]]) -> None:
    """Reject a RequestedToCapacityRatio shape upstream's config validation would reject.

    Mirrors ``validateFunctionShape`` (apis/config/validation/validation_pluginargs.go): non-empty,
    utilization strictly increasing and in [0, 100], scores in [0, 10];
    all problems are reported in one ValueError.
    """
    if len(shape) == 0:
        raise ValueError("shape: Required value: at least one point must be specified")
    errors: list[str] = []
    points: list[tuple[int, int]] = []
    for i, point in enumerate(shape):
        if len(point) != 2:
            raise ValueError(f"shape[{i}]: expected a (utilization, score) pair, got {point!r}")
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in point):
            raise ValueError(f"shape[{i}]: utilization and score must be integers, got {point!r}")
        points.append((int(point[0]), int(point[1])))
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            errors.append(
                f"shape[{i}].utilization: Invalid value: {points[i][0]}: "
                "utilization values must be sorted in increasing order"
            )
            break
    for i, (u, s) in enumerate(points):
        if not 0 <= u <= MAX_UTILIZATION:
            errors.append(
                f"shape[{i}].utilization: Invalid value: {u}: not in valid range [0, {MAX_UTILIZATION}]"
            )
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"shape[{i}].score: Invalid value: {s}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    if errors:
        raise ValueError("invalid RequestedToCapacityRatio shape: " + "; ".join(errors))


def broken_linear(points: Sequence[tuple[int, int]], p: NDArray[np.int64]) -> NDArray[np.int64]:
    """Piecewise-linear shape function, evaluated elementwise on ``p`` (any array shape).

    Mirrors ``BuildBrokenLinearFunction`` (helper/shape_score.go @2d58ef78): points are used as given (no
    ×10 scaling), flat outside the first/last point, Go truncating division on each segment.
    """
    if len(points) == 0:
        raise ValueError("broken_linear needs at least one point")
    util = [int(u) for u, _ in points]
    score = [int(s) for _, s in points]
    pv = np.asarray(p, dtype=np.int64)
    out = np.full(pv.shape, score[-1], dtype=np.int64)
    # Walk the points from last to first so the lowest index with p <= utilization[i] wins, as in Go's loop.
    for i in range(len(points) - 1, -1, -1):
        hit = pv <= util[i]
        if i == 0:
            value = np.full(pv.shape, score[0], dtype=np.int64)
        else:
            du = util[i] - util[i - 1]
            # A segment is only reached when utilization[i-1] < p <= utilization[i], so du > 0 there;
            # du <= 0 segments (invalid shapes) are always shadowed by an earlier point.
            value = score[i - 1] + _go_div((score[i] - score[i - 1]) * (pv - util[i - 1]), du if du else 1)
        out = np.where(hit, value, out).astype(np.int64)
    return out


def _go_round(x: _F64) -> _F64:
    """Go ``math.Round``: nearest integer, halves away from zero (numpy's ``round`` is half-to-even)."""
    t = np.trunc(x)
    frac = x - t  # exact in float64
    return np.asarray(t + np.where(np.abs(frac) >= 0.5, np.sign(x), 0.0), dtype=np.float64)


def requested_to_capacity_ratio(
    requested: NDArray[np.int64],
    allocatable: NDArray[np.int64],
    weights: NDArray[np.int64],
    shape: Sequence[tuple[int, int]],
) -> NDArray[np.int64]:
    """NodeResourcesFit RequestedToCapacityRatio: user shape over utilization, rounded weighted mean.

    Mirrors requested_to_capacity_ratio.go @0a295a8d: scores ×10, req > cap scores shape(100), resources that
    score 0 leave the weight sum, result is ``math.Round`` of the float64 mean.
    """
    validate_shape(shape)
    req, alloc = _check_inputs(requested, allocatable)
    w = _check_weights(weights, req.shape[1])
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    scaled = [(int(u), int(s) * factor) for u, s in shape]
    util = np.where(req > alloc, np.int64(MAX_UTILIZATION), _scaled_utilization(req, alloc)).astype(np.int64)
    per = broken_linear(scaled, util)
    include = (alloc != 0) & (per > 0)
    wb = np.broadcast_to(w, per.shape)
    num = np.where(include, per * wb, 0).sum(axis=1, dtype=np.int64)
    den = np.where(include, wb, 0).sum(axis=1, dtype=np.int64)
    ratio = num.astype(np.float64) / _safe_den(den).astype(np.float64)
    return np.where(den == 0, np.int64(0), _go_round(ratio).astype(np.int64)).astype(np.int64)


# --------------------------------------------------------------------------------------------------------
# BalancedAllocation
# --------------------------------------------------------------------------------------------------------


def balanced_allocation(requested: NDArray[np.int64], allocatable: NDArray[np.int64]) -> NDArray[np.int64]:
    """BalancedAllocation v1.22–v1.35 (form a): ``int((1 − std(fractions))·100)``, favouring even usage.

    Mirrors ``balancedResourceScorer`` (noderesources/balanced_allocation.go @02d7708a); callers apply the
    PreScore Skip for best-effort pods (plugin contributes 0) themselves.
    """
    req, alloc = _check_inputs(requested, allocatable)
    k, r = req.shape
    valid = alloc != 0
    safe_alloc = np.where(valid, alloc, np.int64(1)).astype(np.int64)
    frac = req.astype(np.float64) / safe_alloc.astype(np.float64)
    frac = np.where(frac > 1.0, 1.0, frac)
    frac = np.where(valid, frac, 0.0)
    n = valid.sum(axis=1, dtype=np.int64)

    # Accumulate exactly as Go does: left to right over the kept fractions (adding +0.0 is an identity).
    total = np.zeros(k, dtype=np.float64)
    for j in range(r):
        total = total + frac[:, j]
    nf = np.where(n > 0, n, 1).astype(np.float64)
    mean = total / nf
    sq = np.zeros(k, dtype=np.float64)
    for j in range(r):
        d = frac[:, j] - mean
        sq = np.where(valid[:, j], sq + d * d, sq)
    std_many = np.sqrt(sq / nf)

    # n == 2: |(f0 − f1) / 2| with f0, f1 the first and second kept fractions in resource order.
    rank = np.cumsum(valid, axis=1)
    f0 = np.where(valid & (rank == 1), frac, 0.0).sum(axis=1)
    f1 = np.where(valid & (rank == 2), frac, 0.0).sum(axis=1)
    std_two = np.abs((f0 - f1) / 2.0)

    std = np.where(n == 2, std_two, np.where(n > 2, std_many, 0.0))
    # int64(float) in Go truncates toward zero; so does numpy's float -> int cast.
    return ((1.0 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def balanced_allocation_v136(
    requested: NDArray[np.int64],
    requested_without_pod: NDArray[np.int64],
    allocatable: NDArray[np.int64],
) -> NDArray[np.int64]:
    """BalancedAllocation v1.36+ (form b): scores the *change* in balance the pod causes, range 50..100.

    Mirrors PR #135573 (noderesources/balanced_allocation.go): ``50 + (50 + withPod − withoutPod) / 2`` with
    Go truncating division; ``requested_without_pod`` is upstream's ``allocated`` argument.
    """
    req, alloc = _check_inputs(requested, allocatable)
    without = _as_matrix("requested_without_pod", requested_without_pod)
    if without.shape != alloc.shape:
        raise ValueError(f"requested_without_pod shape {without.shape} != allocatable shape {alloc.shape}")
    with_pod = balanced_allocation(req, alloc)
    without_pod = balanced_allocation(without, alloc)
    half = MAX_NODE_SCORE // 2
    return (half + _go_div(half + with_pod - without_pod, 2)).astype(np.int64)


# --------------------------------------------------------------------------------------------------------
# NormalizeScore
# --------------------------------------------------------------------------------------------------------


def default_normalize_score(
    scores: NDArray[np.int64], reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> NDArray[np.int64]:
    """Scale raw plugin scores to ``[0, max_priority]`` by the maximum, optionally reversed.

    Mirrors ``DefaultNormalizeScore`` (helper/normalize_score.go @2e94b405): the max starts at 0, so all-zero
    (or all-negative) scores stay unchanged, or all become ``max_priority`` when ``reverse``. Returns a copy.
    """
    s = np.asarray(scores, dtype=np.int64)
    if s.ndim != 1:
        raise ValueError(f"scores must be a 1-D array of node scores, got shape {s.shape}")
    max_count = int(max(0, int(s.max()))) if s.size else 0
    if max_count == 0:
        if reverse:
            return np.full(s.shape, max_priority, dtype=np.int64)
        return s.copy()
    out = _go_div(np.int64(max_priority) * s, max_count)
    if reverse:
        out = np.int64(max_priority) - out
    return out.astype(np.int64)
