"""Stranded GPU capacity over the run (typical pod shapes) and at its end (typical shapes and pending
jobs): free share on plain GPUs that no pending job and no typical pod shape of the workload (the FGD
target workload's shapes) could use where it is.

A free GPU share is usable by a shape when the shape passes the node's static filters, the node has the
shape's CPU, memory and other requests free, and either the shape is a share that fits on that GPU (milli
and memory), or it asks for whole GPUs, the GPU is idle and the node has enough idle GPUs. Everything else
is stranded: it is free, paid for, and nothing in sight can run on it. One array pass per distinct shape.

Subscribes to ``run_end`` (the series the fragmentation meter sampled, the figure at the end).
May change: nothing.
"""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import PodSpec
from fleetlab.placement.state import BoolArray
from fleetlab.sim.gpu_fragments import FragmentationMeter
from fleetlab.sim.handle import EngineHandle, ResultParts


def _pending_specs(sim: EngineHandle) -> list[PodSpec]:
    by_id = {sid: key for key, sid in sim.spec_ids.items()}
    return [by_id[sim.groups[gid].spec_id][0] for gid in sim.queue.pending()]


def stranded_gpu_milli(sim: EngineHandle, typical: list[PodSpec]) -> int:
    """Free milli-GPU on ready nodes' plain GPUs that no pending job and no typical shape can use now."""
    state, devices = sim.state, sim.state.devices
    if devices is None:
        return 0
    rows = np.flatnonzero(state.ready & (devices.milli_cap > 0).any(axis=1))
    if len(rows) == 0:
        return 0
    cap = devices.milli_cap[rows]
    free = np.where(cap > 0, cap - devices.milli_used[rows], 0)
    idle = (cap > 0) & (devices.pods[rows] == 0)
    usable = np.zeros(free.shape, dtype=bool)
    scheduler = sim.scheduler
    gpu = state.gpu_col
    for spec in dict.fromkeys([*typical, *_pending_specs(sim)]):
        pod = scheduler.compile(spec)
        others = pod.request_cols[pod.request_cols != gpu]
        node_ok: BoolArray = scheduler.static_mask(pod)[rows] & (
            state.free[rows][:, others] >= pod.request[others]
        ).all(axis=1)
        milli, memory = spec.gpu_share
        whole = int(pod.request[gpu])
        if milli or memory:
            usable |= node_ok[:, None] & devices.share_fits_gpus(rows, milli, memory)
        elif whole:
            enough = idle.sum(axis=1) >= whole
            usable |= (node_ok & enough)[:, None] & idle
    return int(np.where(usable, 0, free).sum())


class StrandedMeter:
    """Records the stranded series the fragmentation meter sampled and the stranded figure at the end (the
    typical shapes of the meter and the pending jobs' shapes)."""

    def __init__(self, sim: EngineHandle, meter: FragmentationMeter) -> None:
        self.sim = sim
        self.meter = meter
        sim.on.run_end.append(self.finish)

    def finish(self, parts: ResultParts) -> None:
        """The series and the figure at the run's end."""
        parts.stranded = self.meter.stranded_rows.close()
        parts.stranded_end = stranded_gpu_milli(self.sim, self.meter.specs)
