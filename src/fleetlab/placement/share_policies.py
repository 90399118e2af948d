"""The FGD paper's placement policies over :class:`~fleetlab.placement.sharing.ShareState`.

Each policy scores every feasible node in one vectorised pass, as the authors' score plugins do
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin``): FGD, BestFit, DotProd, GpuPacking,
GpuClustering, and Random. The node with the highest score wins; on a tie the simulator's patched
``selectHost`` takes the lexicographically smallest node name, which is the lowest index here because
the experiment orders nodes by name. Scores are the plugins' integers (Go's ``int64()`` truncation), so
nodes a plugin cannot tell apart tie exactly as they do upstream. ``fgd-exact`` is FGD as the paper's
Algorithm 1 states it: the placement with the least fragmentation increase, compared unrounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fleetlab.placement.fragmentation import node_fragmentation
from fleetlab.placement.sharing import FULL, PodRequest, ShareState, random_gpu, tightest_gpu

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
#: The paper's six policies, in its plots' order.
POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd")
EXTRA_POLICIES = ("fgd-exact",)
#: Normalisers of BestFit and DotProd (upstream ``MaxSpecCpu`` / ``MaxSpecGpu``: a 128-core, 8-GPU node).
MAX_CPU_MILLI = 128_000
MAX_GPU_MILLI = 8_000


@dataclass(frozen=True)
class Choice:
    """Where a pod goes: the node and, for a sharing pod, the GPU index."""

    node: int
    gpu: int | None


def _best(scores: FloatArray | IntArray) -> int:
    """Position of the highest score; the first (lowest node index) on ties."""
    return int(np.argmax(scores))


def fgd_score(delta: FloatArray) -> FloatArray:
    """Upstream FGD score ⌊sigmoid(−Δ/1000)·100⌋ for a fragmentation change Δ in milli-GPU."""
    return np.floor(100.0 / (1.0 + np.exp(delta / 1000.0)))


def fgd_deltas(state: ShareState, pod: PodRequest, nodes: IntArray) -> tuple[FloatArray, IntArray, IntArray]:
    """Fragmentation change Δ = F_{n⊕pod}(M) − F_n(M) of every candidate placement, as (Δ, row into
    ``nodes``, GPU index or -1). A sharing pod has one candidate per GPU it fits on; other pods one per
    node (whole GPUs taken lowest index first, CPU-only pods take CPU only)."""
    target = state.target
    count_ge, sum_lt, total = state.count_ge[nodes], state.sum_lt[nodes], state.total[nodes]
    cpu = state.cpu_free[nodes] - pod.cpu_milli
    model_ok = state.model_ok[nodes]
    if not pod.sharing:
        if pod.num_gpu:  # d fully free GPUs drop to 0: every count_ge loses d, sum_lt is unchanged
            count_ge = count_ge - pod.num_gpu
            total = total - pod.total_milli
        after = node_fragmentation(target, count_ge, sum_lt, total, cpu, model_ok)
        rows = np.arange(len(nodes))
        return after - state.frag[nodes], rows, np.full(len(nodes), -1, dtype=np.int64)
    free = state.free[nodes]
    rows, gpus = np.nonzero(free >= pod.gpu_milli)
    before = free[rows, gpus]
    left = before - pod.gpu_milli
    shares = target.shares[None, :]
    ge = count_ge[rows] - (before[:, None] >= shares) + (left[:, None] >= shares)
    lt = (
        sum_lt[rows]
        - np.where(before[:, None] < shares, before[:, None], 0)
        + np.where(left[:, None] < shares, left[:, None], 0)
    )
    after = node_fragmentation(target, ge, lt, total[rows] - pod.gpu_milli, cpu[rows], model_ok[rows])
    return after - state.frag[nodes][rows], rows.astype(np.int64), gpus.astype(np.int64)


@dataclass
class _NodeScores:
    """FGD's per-node best score and GPU for one pod shape, valid for nodes whose version still matches."""

    version: IntArray
    score: FloatArray
    gpu: IntArray


def _fgd_node_scores(
    state: ShareState, pod: PodRequest, name: str, score_of: Callable[[FloatArray], FloatArray]
) -> _NodeScores:
    """Every node's FGD score for ``pod`` (-inf where CPU, GPUs or model rule it out), recomputed only for
    nodes bound since this pod shape was last scored: Δ depends on nothing but the node and the shape."""
    key = (name, pod.cpu_milli, pod.num_gpu, pod.gpu_milli, pod.model_mask)
    memo = state.memo.get(key)
    if not isinstance(memo, _NodeScores):
        n = len(state.version)
        memo = _NodeScores(
            np.full(n, -1, dtype=np.int64), np.full(n, -np.inf), np.full(n, -1, dtype=np.int64)
        )
        state.memo[key] = memo
    stale = np.flatnonzero(memo.version != state.version)
    if len(stale) == 0:
        return memo
    memo.version[stale] = state.version[stale]
    memo.score[stale] = -np.inf
    memo.gpu[stale] = -1
    nodes = stale[state.fits_without_memory(pod, stale)]
    if len(nodes) == 0:
        return memo
    delta, rows, gpus = fgd_deltas(state, pod, nodes)
    scores = score_of(delta)
    if pod.sharing:  # per node its best GPU: upstream keeps the first GPU with the top score
        order = np.lexsort((gpus, -scores, rows))
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
        rows, scores, gpus = rows[first], scores[first], gpus[first]
    memo.score[nodes[rows]] = scores
    memo.gpu[nodes[rows]] = gpus
    return memo


ScoreFn = Callable[[ShareState, PodRequest, IntArray, np.random.Generator], FloatArray]


def _fgd_with(name: str, score_of: Callable[[FloatArray], FloatArray]) -> ScoreFn:
    def scores(state: ShareState, pod: PodRequest, nodes: IntArray, rng: np.random.Generator) -> FloatArray:
        return np.asarray(_fgd_node_scores(state, pod, name, score_of).score[nodes], dtype=np.float64)

    return scores


def _exact(delta: FloatArray) -> FloatArray:
    return np.asarray(-np.round(delta, 6), dtype=np.float64)


def _bestfit(state: ShareState, pod: PodRequest, nodes: IntArray, rng: np.random.Generator) -> FloatArray:
    """Upstream BestFitScore: (1 − ½·CPU left/128 cores − ½·GPU left/8 GPUs)·100, min-max normalised."""
    left_cpu = (state.cpu_free[nodes] - pod.cpu_milli) / MAX_CPU_MILLI
    left_gpu = (state.total[nodes] - pod.total_milli) / MAX_GPU_MILLI
    raw = np.trunc((1.0 - (0.5 * left_cpu + 0.5 * left_gpu)) * 100.0).astype(np.int64)
    low, high = int(raw.min()), int(raw.max())
    scores = (raw - low) * 100 // (high - low) if high > low else np.zeros_like(raw)
    return scores.astype(np.float64)


def _dotprod(state: ShareState, pod: PodRequest, nodes: IntArray, rng: np.random.Generator) -> FloatArray:
    """Upstream DotProductScore (merged GPU dimension, max-normalised): (1 − ⟨free, request⟩/2)·100; the
    node whose free vector aligns least with the request wins (the code's sign, not classic Tetris)."""
    dot = (state.cpu_free[nodes] / MAX_CPU_MILLI) * (pod.cpu_milli / MAX_CPU_MILLI) + (
        state.total[nodes] / MAX_GPU_MILLI
    ) * (pod.total_milli / MAX_GPU_MILLI)
    return np.asarray(np.trunc((1.0 - dot / 2.0) * 100.0), dtype=np.float64)


def _packing(state: ShareState, pod: PodRequest, nodes: IntArray, rng: np.random.Generator) -> FloatArray:
    """Upstream GpuPackingScore tiers: fits on a partly used GPU: 100 − (its free %)//10, at least 50; must
    take fully free GPUs of a node in use: 50 − their number, at least 33; every GPU of the node free:
    33 − #GPUs (at least #GPUs). CPU-only pods score 0 everywhere."""
    if pod.num_gpu == 0:
        return np.zeros(len(nodes), dtype=np.float64)
    free = state.free[nodes]
    fully_free = (free == FULL).sum(axis=1)
    all_free = fully_free == state.gpus[nodes]
    scores = np.where(all_free, np.maximum(33 - fully_free, fully_free), max(50 - pod.num_gpu, 33))
    if pod.sharing:
        candidate = np.where(free >= pod.gpu_milli, free, FULL + 1)
        tight = candidate.min(axis=1)
        partial = tight < FULL
        tier1 = np.maximum(100 - (tight * 100 // FULL) // 10, 50)
        scores = np.where(~all_free & partial, tier1, scores)
    return scores.astype(np.float64)


def _clustering(state: ShareState, pod: PodRequest, nodes: IntArray, rng: np.random.Generator) -> FloatArray:
    """Upstream GpuClusteringScore (Gandiva-style): nodes holding only this pod's tag (75, 100], mixed tags
    including it (50, 75], no GPU pods (25, 50], other tags only (0, 25]; within a band
    25·(8000 − free milli-GPU)//8000. CPU-only pods score 0 and carry no tag."""
    if pod.num_gpu == 0:
        return np.zeros(len(nodes), dtype=np.float64)
    tags = state.tags[nodes]
    mine = 1 << pod.tag
    band = np.where(tags == 0, 25, np.where(tags == mine, 75, np.where((tags & mine) != 0, 50, 0)))
    return np.asarray(band + 25 * (MAX_GPU_MILLI - state.total[nodes]) // MAX_GPU_MILLI, dtype=np.float64)


def _random(state: ShareState, pod: PodRequest, nodes: IntArray, rng: np.random.Generator) -> FloatArray:
    """Upstream RandomScore: PreScore picks one feasible node at random; it scores 100, the others 0."""
    scores = np.zeros(len(nodes), dtype=np.float64)
    scores[rng.integers(len(nodes))] = 100.0
    return scores


_SCORES: dict[str, ScoreFn] = {
    "random": _random,
    "dotprod": _dotprod,
    "clustering": _clustering,
    "packing": _packing,
    "bestfit": _bestfit,
    "fgd": _fgd_with("fgd", fgd_score),
    "fgd-exact": _fgd_with("fgd-exact", _exact),
}


def node_scores(
    state: ShareState, pod: PodRequest, policy: str, nodes: IntArray, rng: np.random.Generator
) -> FloatArray:
    """The policy's score of every node in ``nodes`` (all feasible for ``pod``); higher is better. FGD
    scores -inf where its own view of the node rules the pod out."""
    return _SCORES[policy](state, pod, nodes, rng)


def gpu_for(
    state: ShareState, pod: PodRequest, policy: str, node: int, rng: np.random.Generator
) -> int | None:
    """The GPU a sharing pod takes on ``node`` under ``policy`` (None for other pods): FGD's best-scored
    GPU (from the scores just computed), a random fitting GPU for Random, else the tightest fit."""
    if not pod.sharing:
        return None
    if policy.startswith("fgd"):
        memo = state.memo.get((policy, pod.cpu_milli, pod.num_gpu, pod.gpu_milli, pod.model_mask))
        assert isinstance(memo, _NodeScores)
        return int(memo.gpu[node])
    if policy == "random":
        return random_gpu(state.free[node], pod.gpu_milli, rng)
    return tightest_gpu(state.free[node], pod.gpu_milli)


def known_policies() -> tuple[str, ...]:
    """Every policy name :func:`place` accepts."""
    return POLICIES + EXTRA_POLICIES


def place(state: ShareState, pod: PodRequest, policy: str, rng: np.random.Generator) -> Choice | None:
    """Choose a placement for ``pod`` under ``policy`` (None when no node fits); does not bind."""
    nodes = state.feasible(pod)
    if len(nodes) == 0:
        return None
    node = int(nodes[_best(node_scores(state, pod, policy, nodes, rng))])
    return Choice(node, gpu_for(state, pod, policy, node, rng))
