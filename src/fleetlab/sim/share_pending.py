"""Why a pending pod that wants part of a GPU does not fit: no GPU is big enough, too little GPU is free in
total, or enough is free but split over GPUs (fragmentation) — what kube-scheduler's message cannot say."""

from __future__ import annotations

import numpy as np

from fleetlab.model.gpu_share import MILLI_PER_GPU
from fleetlab.model.resources import GPU, format_amount
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.state import ClusterState, IntArray

MIG_PREFIX = "nvidia.com/mig-"


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
        f"{total / 1000:.1f} GPUs free in fragments, no GPU has {want} milli free: {total} milli-GPU "
        f"free across {holding} GPU(s), at most {best} on one GPU (memory counts too); the pod needs "
        f"{want} of one GPU"
    )


def whole_gpu_verdict(
    state: ClusterState, nodes: IntArray, want: int, total: int, best: int
) -> tuple[str, str]:
    """For whole GPUs (``total`` idle in all, ``best`` on the roomiest node, of the ``want`` needed): a
    shortage only when idle GPUs plus the share free on partly used GPUs fall short; otherwise
    fragmentation, across nodes or across partly used GPUs."""
    note = stranded_note(state, nodes)
    name = format_amount(GPU, want)
    if total >= want:
        holding = int(np.count_nonzero(state.free[nodes, state.gpu_col] > 0))
        return "fragmentation", (
            f"{total} {GPU} free across {holding} node(s), "
            f"at most {best} on one node{note}; the pod needs {name}"
        )
    if total * MILLI_PER_GPU + stranded_milli(state, nodes) >= want * MILLI_PER_GPU:
        return "fragmentation", (
            f"{total} whole {GPU} free on {len(nodes)} eligible node(s){note}: enough GPU in total but in "
            f"fragments; the pod needs {name} whole GPU(s)"
        )
    return "shortage", (
        f"{total} {GPU} free in total on {len(nodes)} eligible node(s){note}; the pod needs {name}"
    )


def stranded_milli(state: ClusterState, nodes: IntArray) -> int:
    """Free milli-GPU on the partly used plain GPUs of ``nodes``."""
    devices = state.devices
    if devices is None:
        return 0
    used, cap = devices.milli_used[nodes], devices.milli_cap[nodes]
    return int((cap - used)[(used > 0) & (used < cap)].sum())


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


def other_mig_note(state: ClusterState, nodes: IntArray, resource: str) -> str:
    """For a MIG profile in short supply: the other profiles' free instances on the same nodes, which
    the pod cannot use because a GPU's MIG layout is fixed until it is repartitioned."""
    if not resource.startswith(MIG_PREFIX):
        return ""
    others = [
        f"{int(state.free[nodes, col].clip(min=0).sum())} {name}"
        for name, col in sorted(state.column.items())
        if name.startswith(MIG_PREFIX) and name != resource and state.free[nodes, col].max() > 0
    ]
    if not others:
        return ""
    return f" (other MIG instances free: {', '.join(others)}; MIG layouts are fixed)"
