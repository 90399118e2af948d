"""The FGD paper's policies inside the main simulator: a :class:`ShareState` mirror of the cluster's plain
GPUs and CPU, kept current per bind and release, plus the policy's choice of GPU inside a node.

The simulator's bookkeeping (ClusterState, GpuDevices) stays the truth. A bind or release marks its node
dirty; before the next score or GPU choice, the dirty nodes' rows (free milli per plain GPU, free CPU) are
copied over in one array expression and only their F_n(M) is recomputed, so nothing is rescanned per event.
Time-sliced and MIG GPUs are not plain GPUs and count as absent (-1), as in the fragmentation timeline.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fleetlab.model.gpu_share import MILLI_PER_GPU
from fleetlab.placement.devices import GpuDevices, best_fit_gpu
from fleetlab.placement.fragmentation import TargetWorkload, node_fragmentation, share_summaries
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.share_policies import fgd_score
from fleetlab.placement.sharing import PodRequest, ShareState
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

#: GpuClustering tag columns: share-gpu, then k-GPU pods by bit length of k (PodRequest.tag), k < 128.
TAGS = 8


class ShareView:
    """Per-node GPU-sharing summaries for one policy over a ClusterState with per-GPU devices."""

    def __init__(
        self,
        state: ClusterState,
        policy: str,
        target: TargetWorkload,
        eligibility: Callable[[], BoolArray],
        seed: int,
    ) -> None:
        devices = state.devices
        if devices is None:
            raise ValueError("the share policies need per-GPU bookkeeping (ClusterState.devices)")
        self.state, self.devices, self.policy = state, devices, policy
        self.eligibility = eligibility
        self.rng = np.random.Generator(np.random.PCG64(seed))
        n = state.n
        plain = devices.milli_cap > 0
        self.share = ShareState(
            state.free[:, state.cpu_col],
            np.zeros(n, dtype=np.int64),
            plain.sum(axis=1).astype(np.int64),
            np.full(n, -1, dtype=np.int64),
            target,
            width=devices.width,
        )
        self.tag_count = np.zeros((n, TAGS), dtype=np.int64)
        self.pod_tag: dict[int, int] = {}
        self.dirty: set[int] = set()
        self.generation = -1
        #: The pod being bound (set by the simulator just before it takes GPUs), for the GPU choice.
        self.binding = PodRequest(0, 0, 0, 0, 0)

    # -- keeping current -----------------------------------------------------------------------------
    def bound(self, pod: int, node: int) -> None:
        """Pod ``pod`` (the one in ``binding``) was bound to the node."""
        self.dirty.add(node)
        tag = self.binding.tag
        if 0 <= tag < TAGS:
            self.pod_tag[pod] = tag
            self._tag(node, tag, 1)

    def released(self, pod: int, node: int) -> None:
        """Pod ``pod`` left the node."""
        self.dirty.add(node)
        tag = self.pod_tag.pop(pod, -1)
        if tag >= 0:
            self._tag(node, tag, -1)

    def _tag(self, node: int, tag: int, delta: int) -> None:
        """GpuClustering's tag set of the node: tags of the GPU pods on it."""
        self.tag_count[node, tag] += delta
        bits = (self.tag_count[node] > 0).astype(np.int64)
        self.share.tags[node] = int(np.dot(bits, 1 << np.arange(TAGS, dtype=np.int64)))

    def _rows(self, rows: IntArray) -> tuple[IntArray, IntArray]:
        devices = self.devices
        cap = devices.milli_cap[rows]
        free = np.where(cap > 0, cap - devices.milli_used[rows], -1).astype(np.int64)
        return free, self.state.free[rows, self.state.cpu_col].astype(np.int64)

    def sync(self) -> ShareState:
        """Bring the dirty nodes (every node after readiness or cordon changes) up to date."""
        state = self.state
        if state.topology_generation != self.generation:
            self.generation = state.topology_generation
            self.share.model_ok = self.eligibility()
            rows = np.arange(state.n, dtype=np.int64)
            self.dirty.clear()
        elif self.dirty:
            rows = np.fromiter(sorted(self.dirty), dtype=np.int64, count=len(self.dirty))
            self.dirty.clear()
        else:
            return self.share
        self.share.refresh(rows, *self._rows(rows))
        return self.share

    # -- pods ----------------------------------------------------------------------------------------
    def request_of(self, pod: CompiledPod) -> PodRequest:
        """The pod as the policies see it (:func:`share_request`)."""
        return share_request(self.state, pod)

    def choose_gpu(
        self, devices: GpuDevices, node: int, milli: list[int], memory: list[int], fits: list[bool]
    ) -> int:
        """``GpuDevices.chooser``: FGD takes the fitting GPU whose use grows F_n(M) least (first on equal
        plugin scores, as upstream); Random a random fitting GPU; the others the tightest fit."""
        if self.policy == "random":
            fitting = [g for g, ok in enumerate(fits) if ok]
            return fitting[int(self.rng.integers(len(fitting)))]
        if self.policy != "fgd":
            return best_fit_gpu(devices, node, milli, memory, fits)
        share = self.sync()
        before_free, cpu_now = self._rows(np.asarray([node], dtype=np.int64))
        gpus = np.flatnonzero(np.asarray(fits, dtype=bool))
        free = np.repeat(np.vstack([before_free, before_free]), [1, len(gpus)], axis=0)
        free[1 + np.arange(len(gpus)), gpus] -= np.asarray(milli, dtype=np.int64)[gpus]
        cpu = np.repeat(cpu_now, len(gpus) + 1)
        cpu[0] += self.binding.cpu_milli  # the bind has taken the pod's CPU already
        count_ge, sum_lt, total = share_summaries(free, share.target.shares)
        model_ok = np.repeat(share.model_ok[node : node + 1], len(gpus) + 1, axis=0)
        frag = node_fragmentation(share.target, count_ge, sum_lt, total, cpu, model_ok)
        scores = fgd_score(frag[1:] - frag[0])
        return int(gpus[int(np.argmax(scores))])


def pod_request(state: ClusterState, pod: CompiledPod) -> PodRequest:
    """The pod as the policies see it: CPU, and one GPU share or whole plain GPUs (a memory-only share as
    the matching part of the largest GPU); MIG and time-sliced requests count as no GPU."""
    cpu = int(pod.request[state.cpu_col])
    milli, memory = pod.spec.gpu_share
    if milli or memory:
        devices = state.devices
        gpu_memory = int(devices.mem_cap.max()) if devices is not None and devices.mem_cap.size else 0
        if not milli:
            milli = -(-memory * MILLI_PER_GPU // gpu_memory) if gpu_memory else MILLI_PER_GPU
        return PodRequest(cpu, 0, 1, min(milli, MILLI_PER_GPU), 0)
    whole = int(pod.request[state.gpu_col])
    return PodRequest(cpu, 0, whole, MILLI_PER_GPU if whole else 0, 0)


def share_request(state: ClusterState, pod: CompiledPod) -> PodRequest:
    """:func:`pod_request`, cached on the compiled pod (its requests never change)."""
    found = pod.cache.get("share_request")
    if isinstance(found, PodRequest):
        return found
    request = pod.cache["share_request"] = pod_request(state, pod)
    return request
