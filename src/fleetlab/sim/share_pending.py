"""Why a pending pod that wants part of a GPU does not fit: no GPU is big enough, too little GPU is free in
total, or enough is free but split over GPUs (fragmentation) — what kube-scheduler's message cannot say."""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.state import ClusterState, IntArray


def classify_share(state: ClusterState, pod: CompiledPod, nodes: IntArray) -> tuple[str, str] | None:
    """("too-large" | "shortage" | "fragmentation", detail) for a shared pod on the eligible ``nodes``, or
    None when some GPU has room (another filter then blocks it)."""
    devices = state.devices
    milli, memory = pod.spec.gpu_share
    if devices is None or not (milli or memory):
        return None
    need_milli, need_memory = devices.share_need(nodes, milli, memory)
    cap = devices.milli_cap[nodes]
    plain = cap > 0
    if not (plain & (cap >= need_milli) & (devices.mem_cap[nodes] >= need_memory)).any():
        return "too-large", "no eligible GPU is large enough for the share (or the nodes have no plain GPUs)"
    if devices.share_fits_gpus(nodes, milli, memory).any():
        return None
    free = np.where(plain, cap - devices.milli_used[nodes], 0)
    total, best = int(free.sum()), int(free.max())
    want = int(need_milli[plain].min())
    holding = int(np.count_nonzero(free > 0))
    if total < want:
        return "shortage", (
            f"{total} milli-GPU free in total on {len(nodes)} eligible node(s); the pod needs {want}"
        )
    return "fragmentation", (
        f"{total} milli-GPU free across {holding} GPU(s), at most {best} on one GPU (memory counts too); "
        f"the pod needs {want} of one GPU"
    )


def stranded_note(state: ClusterState, nodes: IntArray) -> str:
    """For whole-GPU pods: the free share left on partly used GPUs, which whole-GPU pods cannot use."""
    devices = state.devices
    if devices is None:
        return ""
    used = devices.milli_used[nodes]
    cap = devices.milli_cap[nodes]
    partial = (used > 0) & (used < cap)
    stranded = int((cap - used)[partial].sum())
    if not stranded:
        return ""
    return f" (plus {stranded} milli-GPU free on {int(np.count_nonzero(partial))} partly used GPU(s))"
