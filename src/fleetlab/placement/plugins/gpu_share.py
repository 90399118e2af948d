"""GPU-sharing filters: a share fits a node when one of its GPUs has the milli and memory free (KAI's
``gpu-fraction`` / ``gpu-memory``, the FGD simulator's ``gpu-milli``), and time-slicing's request size.

Both are array expressions over nodes × GPUs (fleetlab.placement.devices).
"""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import CompiledPod, FilterFailure, FilterPlugin
from fleetlab.placement.state import BoolArray, ClusterState

INSUFFICIENT_SHARE = "Insufficient GPU share (no single GPU has the fraction and memory free)"
SHARE_TOO_LARGE = "GPU share larger than any GPU of the node"


class GpuShareFilter(FilterPlugin):
    """Shared pods only: some GPU of the node has ``gpu_milli`` thousandths and the memory free."""

    name = "GpuShare"
    static = False

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        milli, memory = pod.spec.gpu_share
        if not (milli or memory):
            return np.ones(state.n, dtype=bool)
        if state.devices is None:
            return np.zeros(state.n, dtype=bool)
        return state.devices.share_fits(np.arange(state.n), milli, memory)

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        milli, memory = pod.spec.gpu_share
        devices = state.devices
        never = failing.copy()
        if devices is not None:
            need_milli, need_memory = devices.share_need(slice(None), milli, memory)
            could = (
                (devices.milli_cap > 0) & (devices.milli_cap >= need_milli) & (devices.mem_cap >= need_memory)
            ).any(axis=1)
            never &= ~could
        busy = failing & ~never
        counts = {
            reason: int(np.count_nonzero(mask))
            for reason, mask in ((INSUFFICIENT_SHARE, busy), (SHARE_TOO_LARGE, never))
            if mask.any()
        }
        return FilterFailure(
            self.name, counts, int(np.count_nonzero(failing)), unresolvable=not bool(busy.any())
        )


def request_too_large(resource: str, amount: int) -> str:
    """The kubelet's admission error for a time-sliced resource asked for more than once."""
    return f"request for '{resource}: {amount}' too large: maximum request size for shared resources is 1"


class TimeSlicingRequestFilter(FilterPlugin):
    """``failRequestsGreaterThanOne``: the device plugin fails Allocate for a request above 1 of a
    time-sliced resource. Upstream the pod is bound and then fails kubelet admission (and its Job makes
    a new pod, which fails again); fleetlab keeps it off such nodes with the kubelet's message instead."""

    name = "TimeSlicingRequestSize"
    static = True

    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        devices = state.devices
        if devices is None or not devices.fail_over_one.any():
            return np.ones(state.n, dtype=bool)
        ok = np.ones(state.n, dtype=bool)
        sliced = np.asarray(devices.sliced_resource)
        for resource in {r for r in devices.sliced_resource if r}:
            col = state.column.get(resource)
            if col is not None and pod.request[col] > 1:
                ok &= ~(devices.fail_over_one & (sliced == resource))
        return ok

    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        devices = state.devices
        assert devices is not None
        counts: dict[str, int] = {}
        for node in np.flatnonzero(failing)[:1]:
            resource = devices.sliced_resource[int(node)]
            amount = int(pod.request[state.column[resource]])
            counts[request_too_large(resource, amount)] = int(np.count_nonzero(failing))
        return FilterFailure(self.name, counts, int(np.count_nonzero(failing)), unresolvable=True)
