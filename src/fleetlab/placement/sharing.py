"""GPU-sharing node state in milli-GPU, and the choice of GPUs inside one node.

State is one row per node and one column per GPU slot (free milli-GPU, -1 where the node has no such GPU),
plus free CPU and memory, each node's GpuClustering tags and its fragmentation against a target workload,
kept current per bind from per-node summaries (:mod:`fleetlab.placement.fragmentation`). A pod asks for
``num_gpu`` GPUs of ``gpu_milli`` share each; a share below 1000 only with one GPU (the authors' simulator
panics on anything else). GPU choice follows its Open-Gpu-Share plugin: whole-GPU pods take the
lowest-index fully free GPUs (``AllocateExclusiveGpuId``); a sharing pod's GPU is the tightest fit
(``best``), a random fit (``random``) or the one FGD scores best
(see :mod:`fleetlab.placement.share_policies`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fleetlab.placement.fragmentation import (
    TargetWorkload,
    model_bits,
    model_compatibility,
    node_fragmentation,
    share_summaries,
)

IntArray = NDArray[np.int64]
FULL = 1000
MAX_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class PodRequest:
    """One pod: CPU, memory, GPU count and per-GPU share, allowed GPU models (bit mask, 0 = any)."""

    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    model_mask: int

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def sharing(self) -> bool:
        return self.num_gpu == 1 and self.gpu_milli < FULL

    @property
    def tag(self) -> int:
        """GpuClustering's affinity tag as a bit: 0 ``share-gpu``, 1 + log2(k) for ``k-gpu``, -1 none."""
        if self.num_gpu == 0:
            return -1
        return 0 if self.sharing else int(self.num_gpu).bit_length()


class ShareState:
    """Free resources of every node and GPU, and each node's fragmentation against a target workload."""

    def __init__(
        self,
        cpu_milli: IntArray,
        memory_mib: IntArray,
        gpus: IntArray,
        model: IntArray,
        target: TargetWorkload,
        width: int = MAX_GPUS_PER_NODE,
    ) -> None:
        n = len(cpu_milli)
        slots = np.arange(width)[None, :]
        self.free = np.where(slots < gpus[:, None], FULL, -1).astype(np.int64)
        self.cpu_free = cpu_milli.astype(np.int64).copy()
        self.mem_free = memory_mib.astype(np.int64).copy()
        self.model = model.astype(np.int64)
        self.model_bit = model_bits(self.model)
        self.gpus = gpus.astype(np.int64)
        self.tags = np.zeros(n, dtype=np.int64)  # bit set of GpuClustering tags on the node
        self.target = target
        self.model_ok = model_compatibility(target, self.model)
        self.count_ge, self.sum_lt, self.total = share_summaries(self.free, target.shares)
        self.frag = node_fragmentation(
            target, self.count_ge, self.sum_lt, self.total, self.cpu_free, self.model_ok
        )
        self.allocated_milli = 0
        self.capacity_milli = int(self.gpus.sum()) * FULL
        #: Bumped on every bind to a node, so per-node scores cached by policies know when to recompute.
        self.version = np.zeros(n, dtype=np.int64)
        #: Scratch space for policies (keyed by policy and pod shape); lives and dies with this state.
        self.memo: dict[object, object] = {}

    def fits_without_memory(self, pod: PodRequest, rows: IntArray) -> NDArray[np.bool_]:
        """For the nodes ``rows``: the filters of :meth:`feasible` except memory."""
        ok = self.cpu_free[rows] >= pod.cpu_milli
        if pod.num_gpu:
            ok &= self.gpus[rows] > 0
            if pod.model_mask:
                ok &= (self.model_bit[rows] & pod.model_mask) != 0
            ok &= (self.free[rows] >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
        return np.asarray(ok, dtype=np.bool_)

    def feasible(self, pod: PodRequest) -> IntArray:
        """Nodes the pod passes the filters on: CPU and memory (NodeResourcesFit), and for a GPU pod a GPU
        node of an allowed model with enough GPUs that have the share free (Open-Gpu-Share)."""
        ok = (self.cpu_free >= pod.cpu_milli) & (self.mem_free >= pod.memory_mib)
        if pod.num_gpu:
            ok &= self.gpus > 0
            if pod.model_mask:
                ok &= (self.model_bit & pod.model_mask) != 0
            ok &= (self.free >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
        return np.flatnonzero(ok)

    def bind(self, pod: PodRequest, node: int, gpu: int | None) -> None:
        """Take the pod's resources on ``node`` (``gpu`` for a sharing pod); refresh the node's summaries."""
        if self.cpu_free[node] < pod.cpu_milli or self.mem_free[node] < pod.memory_mib:
            raise ValueError(f"node {node} lacks CPU or memory for {pod}")
        if pod.sharing:
            if gpu is None or self.free[node, gpu] < pod.gpu_milli:
                raise ValueError(f"GPU {gpu} of node {node} lacks {pod.gpu_milli} milli")
            self.free[node, gpu] -= pod.gpu_milli
        elif pod.num_gpu:
            chosen = whole_gpus(self.free[node], pod.num_gpu)
            if len(chosen) < pod.num_gpu:
                raise ValueError(f"node {node} has fewer than {pod.num_gpu} free GPUs")
            self.free[node, chosen] = 0
        self.cpu_free[node] -= pod.cpu_milli
        self.mem_free[node] -= pod.memory_mib
        if pod.tag >= 0:
            self.tags[node] |= 1 << pod.tag
        self.allocated_milli += pod.total_milli
        self.version[node] += 1
        row = self.free[node : node + 1]
        count_ge, sum_lt, total = share_summaries(row, self.target.shares)
        self.count_ge[node], self.sum_lt[node], self.total[node] = count_ge[0], sum_lt[0], total[0]
        self.frag[node] = node_fragmentation(
            self.target,
            count_ge,
            sum_lt,
            total,
            self.cpu_free[node : node + 1],
            self.model_ok[node : node + 1],
        )[0]

    def refresh(self, rows: IntArray, free: IntArray, cpu_free: IntArray) -> None:
        """Set the nodes ``rows`` to the given free milli-GPU per GPU (-1 where none) and free CPU, kept by
        another bookkeeper (the main simulator's devices), and recompute their summaries and F_n(M)."""
        self.free[rows] = free
        self.cpu_free[rows] = cpu_free
        count_ge, sum_lt, total = share_summaries(free, self.target.shares)
        self.count_ge[rows], self.sum_lt[rows], self.total[rows] = count_ge, sum_lt, total
        self.frag[rows] = node_fragmentation(
            self.target, count_ge, sum_lt, total, cpu_free, self.model_ok[rows]
        )
        self.version[rows] += 1


def whole_gpus(free_row: IntArray, count: int) -> IntArray:
    """The lowest-index fully free GPUs of a node (upstream ``AllocateExclusiveGpuId``)."""
    return np.flatnonzero(free_row == FULL)[:count]


def tightest_gpu(free_row: IntArray, share: int) -> int:
    """The fitting GPU with the least free share, lowest index on ties (Open-Gpu-Share ``best``)."""
    return int(np.argmin(np.where(free_row >= share, free_row, FULL + 1)))


def random_gpu(free_row: IntArray, share: int, rng: np.random.Generator) -> int:
    """A fitting GPU chosen uniformly (Open-Gpu-Share ``random``)."""
    fitting = np.flatnonzero(free_row >= share)
    return int(fitting[rng.integers(len(fitting))])
