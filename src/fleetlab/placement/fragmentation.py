"""GPU fragmentation as FGD defines it (Weng et al., USENIX ATC 2023; the authors' simulator,
``pkg/utils/frag.go``), over GPU-sharing node state.

For a node n and a task m (d GPUs of share u each, c milli-CPU, allowed models T):
F_n(m) = all of n's unallocated GPU share if m cannot run on n (CPU-only task, wrong model, too little CPU,
fewer than d GPUs with at least u free), otherwise the share of the GPUs whose free share is below u.
Against a target workload M = {(m, p_m)}: F_n(M) = Σ p_m F_n(m). Memory is not part of the measure.

Everything here works on per-node summaries that a bind updates in O(GPUs): for each distinct per-GPU share
u_j of the target workload, ``count_ge[n, j]`` (GPUs with at least u_j free) and ``sum_lt[n, j]`` (free share
on GPUs with less than u_j), so F_n(M) for many nodes is one vectorised expression over (nodes × tasks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class TargetWorkload:
    """The typical tasks M with their popularity p (summing to 1); ``share_index[k]`` points into
    ``shares`` (the distinct per-GPU shares) for tasks with GPUs, -1 for CPU-only tasks."""

    cpu_milli: IntArray
    num_gpu: IntArray
    gpu_milli: IntArray
    model_mask: IntArray
    weight: FloatArray
    shares: IntArray
    share_index: IntArray

    def __len__(self) -> int:
        return len(self.weight)


def target_workload(
    cpu_milli: IntArray,
    num_gpu: IntArray,
    gpu_milli: IntArray,
    model_mask: IntArray,
    popularity: float = 0.95,
) -> TargetWorkload:
    """Upstream ``GetTypicalPods`` as the experiments configure it (CPU-only pods included, plain counts,
    step 1): count pods by (CPU, GPU share, GPU count, models); keep the most popular specs until their
    cumulative share reaches ``popularity`` (95 % in the paper's runs); renormalise. Equal counts are
    ordered as upstream's reversed sort leaves them: the larger spec
    (CPU, then share, count, models) first."""
    specs = np.stack([cpu_milli, gpu_milli, num_gpu, model_mask], axis=1)
    if len(specs) == 0:
        raise ValueError("the target workload needs at least one pod")
    unique, counts = np.unique(specs, axis=0, return_counts=True)
    order = np.lexsort((*(-unique.T[::-1]), -counts))
    unique, counts = unique[order], counts[order]
    cumulative = np.cumsum(counts) / counts.sum()
    keep = int(np.searchsorted(cumulative, popularity - 1e-12) + 1)
    unique, counts = unique[:keep], counts[:keep]
    gpus = unique[:, 2]
    shares = np.unique(unique[gpus > 0, 1]) if np.any(gpus > 0) else np.zeros(0, dtype=np.int64)
    index = np.where(gpus > 0, np.searchsorted(shares, unique[:, 1]), -1)
    return TargetWorkload(
        cpu_milli=unique[:, 0].astype(np.int64),
        num_gpu=gpus.astype(np.int64),
        gpu_milli=unique[:, 1].astype(np.int64),
        model_mask=unique[:, 3].astype(np.int64),
        weight=counts / counts.sum(),
        shares=shares.astype(np.int64),
        share_index=index.astype(np.int64),
    )


def share_summaries(free: IntArray, shares: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Per row of ``free`` (nodes × GPUs, -1 where a GPU does not exist): count_ge, sum_lt (rows × shares)
    and the total free share (rows)."""
    present = np.maximum(free, 0)
    ge = free[:, :, None] >= shares[None, None, :]
    count_ge = ge.sum(axis=1).astype(np.int64)
    sum_lt = np.where(~ge & (free[:, :, None] >= 0), present[:, :, None], 0).sum(axis=1).astype(np.int64)
    return count_ge, sum_lt, present.sum(axis=1).astype(np.int64)


def node_fragmentation(
    target: TargetWorkload,
    count_ge: IntArray,
    sum_lt: IntArray,
    total: IntArray,
    cpu_free: IntArray,
    model_ok: NDArray[np.bool_],
) -> FloatArray:
    """F_n(M) in milli-GPU for each row; ``model_ok[row, k]`` says whether task k may use the row's model."""
    has_gpu = target.num_gpu > 0
    j = np.maximum(target.share_index, 0)
    if len(target.shares):
        enough_gpus = count_ge[:, j] >= target.num_gpu[None, :]
        usable_remnant = sum_lt[:, j]
    else:
        enough_gpus = np.zeros((len(total), len(target)), dtype=bool)
        usable_remnant = np.zeros((len(total), len(target)), dtype=np.int64)
    fits = has_gpu[None, :] & model_ok & (cpu_free[:, None] >= target.cpu_milli[None, :]) & enough_gpus
    per_task = np.where(fits, usable_remnant, total[:, None])
    return np.asarray(per_task @ target.weight, dtype=np.float64)


def model_bits(model: IntArray) -> IntArray:
    """Each node's GPU model as one bit (0 for CPU-only nodes), to test against a pod's ``model_mask``."""
    return np.where(model >= 0, np.left_shift(1, np.maximum(model, 0)), 0).astype(np.int64)


def model_compatibility(target: TargetWorkload, node_model: IntArray) -> NDArray[np.bool_]:
    """``[node, task]``: task k accepts the node's GPU model (any model when its mask is 0)."""
    bits = model_bits(node_model)
    mask = target.model_mask[None, :]
    return np.asarray((mask == 0) | ((bits[:, None] & mask) != 0), dtype=np.bool_)


def fragmentation_of(free_gpus: list[int], cpu_free: int, model: int, target: TargetWorkload) -> float:
    """F_n(M) in milli-GPU of one node given its GPUs' free milli-GPU, free CPU and GPU model index
    (-1 for a CPU-only node); the per-node form of :func:`node_fragmentation`, for checks and examples."""
    free = np.asarray([free_gpus], dtype=np.int64).reshape(1, -1)
    count_ge, sum_lt, total = share_summaries(free, target.shares)
    model_ok = model_compatibility(target, np.asarray([model], dtype=np.int64))
    cpu = np.asarray([cpu_free], dtype=np.int64)
    return float(node_fragmentation(target, count_ge, sum_lt, total, cpu, model_ok)[0])
