"""GPU utilisation next to allocation, and free-GPU blocks per node: two timeline views kept incrementally.

*Allocation is not utilisation.* A GPU counts as allocated from bind to release, but it does useful work
only while its pod computes: not while the pod pulls its image, downloads data or waits for gang peers.
Even then a job keeps it busy only ``gpu_utilization`` (0-1) of the time (what DCGM's GPU utilisation would
show), and a pod slowed down (time-slicing, interference) does its work at 1 / slowdown of full speed. So
each computing pod contributes ``GPUs × gpu_utilization / slowdown`` full-speed GPU equivalents (milli-GPU
in the timeline); the sum is updated when a pod starts, stops or changes speed, never by scanning pods.

*Largest free block.* A node's largest free block is its free whole GPUs (``nvidia.com/gpu`` not
allocated). Per sample: how many ready GPU nodes have a block of at least k GPUs for k in BLOCK_SIZES, and
the cluster's largest block. Only nodes a bind or release touched are re-read (all when readiness changes).

Subscribes to ``start`` (not on a cluster without GPUs) and ``release``; the timeline recorder samples it
after each step.
May change: nothing (pod pace tells it a pod's new speed).
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from fleetlab.model.gpu_share import MILLI_PER_GPU
from fleetlab.placement.devices import gpu_slots
from fleetlab.sim.handle import EngineHandle

#: Block sizes (free whole GPUs on one node) counted in the timeline, ascending.
BLOCK_SIZES = (1, 2, 4, 8)

#: The timeline columns this meter adds, in row order after the allocation columns.
COLUMNS = ("busy_gpu_milli", *(f"free_block_ge{k}_nodes" for k in BLOCK_SIZES), "largest_free_block")

NOT_COUNTED = -1


class UsageMeter:
    """Busy GPU equivalents and the histogram of free whole GPUs over ready GPU nodes."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        state = sim.state
        self.capacity = state.allocatable[:, state.gpu_col].copy()
        #: Per node its free whole GPUs (NOT_COUNTED: not a ready GPU node), how many nodes have each
        #: count, and how many have at least each of BLOCK_SIZES (plain lists: a few touched per step).
        self.block: list[int] = [NOT_COUNTED] * state.n
        self.histogram: list[int] = [0] * (int(self.capacity.max(initial=0)) + 1)
        #: ``sizes_upto[count + 1]``: how many BLOCK_SIZES are at most ``count``, for every count the
        #: histogram holds and NOT_COUNTED (a list lookup per refresh instead of two bisects).
        self.sizes_upto: list[int] = []
        self._extend_sizes_upto()
        self.at_least: list[int] = [0] * len(BLOCK_SIZES)
        #: The nodes a bind or release touched in this step (the engine's set, cleared after each step).
        self.dirty = sim.touched
        self.generation = -1
        self.busy_milli = 0.0
        self.weight: dict[int, float] = {}
        self.slowdown: dict[int, float] = {}
        #: The last sample and the busy total it was taken at: a step that changed no node's block and no
        #: pod's speed gets it back without recounting.
        self._last: tuple[int, ...] = ()
        self._last_busy = 0.0
        #: The largest free block at the last sample: recounted only when a node's block changed.
        self._largest = 0
        #: Per node whether it has GPUs at all, and Python-int views of free resources and readiness (the
        #: arrays are never replaced): ``_refresh`` reads single cells, where numpy scalars cost most.
        self._has_gpus: list[bool] = (self.capacity > 0).tolist()
        #: Some node has GPUs (fixed, as ``capacity``): without one no node is ever counted, so a touched
        #: node's refresh would change nothing.
        self._any_gpu_node = any(self._has_gpus)
        self._state = state
        self._free = state.free.data
        self._ready = state.ready.data
        self._gpu_col = state.gpu_col
        #: The job and pod spec ``_full_speed_milli`` answered last, and its answer.
        self._last_job, self._last_sid, self._last_milli = -1, -1, 0.0
        #: No node has GPUs and no pool can bring one (pools are fixed for the run): every pod's full-speed
        #: weight is 0, so ``started`` would record nothing and is not subscribed.
        self.gpu_less = not self.capacity.any() and not any(gpu_slots(p) for p in sim.pools)
        if not self.gpu_less:
            sim.on.start.append(self.started)
        sim.on.release.append(self.released)

    # -- utilisation ---------------------------------------------------------------------------------
    def _full_speed_milli(self, pod: int) -> float:
        """Milli-GPU the pod keeps busy at full speed: its GPUs (or GPU share) × its gpu_utilization. The
        value depends only on the job and its pod spec; the last pair's is kept, as a gang's members
        start one after another."""
        sim = self.sim
        job_index = sim.book.job_at[pod]
        sid = sim.spec_of(job_index)
        if job_index == self._last_job and sid == self._last_sid:
            return self._last_milli
        job = sim.job_table.template_of(job_index)  # GPU share and utilisation are template fields
        if job.shares_gpu:
            milli = float(job.gpu_milli or 0)
        else:
            request = sim.compiled[sid].request
            milli = float(MILLI_PER_GPU * int(request[sim.state.gpu_col]))
        self._last_job, self._last_sid = job_index, sid
        self._last_milli = milli * job.gpu_utilization
        return self._last_milli

    def started(self, pod: int, wall_ms: int) -> None:
        """The pod began computing."""
        weight = self._full_speed_milli(pod)
        if weight <= 0:
            return
        self.weight[pod] = weight
        self.busy_milli += weight / self.slowdown.get(pod, 1.0)

    def add_devices(self, pod: int, gpus: int) -> None:
        """The computing pod also keeps ``gpus`` whole GPUs busy that DRA allocated to it (its claims, not
        its ``nvidia.com/gpu`` request: sim/dra_claims.py calls this right after ``started``)."""
        job = self.sim.job_table.template_of(int(self.sim.book.job[pod]))
        weight = float(MILLI_PER_GPU * gpus) * job.gpu_utilization
        if weight <= 0:
            return
        self.weight[pod] = self.weight.get(pod, 0.0) + weight
        self.busy_milli += weight / self.slowdown.get(pod, 1.0)

    def released(self, pod: int, node: int) -> None:
        """The pod gave its node back: it stopped computing (finished, evicted, killed) or never started."""
        weight = self.weight.pop(pod, None)
        slowdown = self.slowdown.pop(pod, 1.0)
        if weight is not None:
            self.busy_milli -= weight / slowdown

    def set_slowdown(self, pod: int, slowdown: float) -> None:
        """The pod now computes at 1 / ``slowdown`` of full speed (time-slicing, interference)."""
        old = self.slowdown.get(pod, 1.0)
        if slowdown == old:
            return
        weight = self.weight.get(pod)
        if weight is not None:
            self.busy_milli += weight / slowdown - weight / old
        if slowdown == 1.0:
            self.slowdown.pop(pod, None)
        else:
            self.slowdown[pod] = slowdown

    # -- free blocks ---------------------------------------------------------------------------------
    def _refresh(self, node: int) -> bool:
        """Re-read one node's free whole GPUs; False when its block did not change."""
        old = self.block[node]
        new = NOT_COUNTED
        if self._has_gpus[node] and self._ready[node]:
            free = self._free[node, self._gpu_col]
            new = free if free > 0 else 0
        if new == old:
            return False
        histogram, at_least = self.histogram, self.at_least
        if old != NOT_COUNTED:
            histogram[old] -= 1
        if new != NOT_COUNTED:
            if new >= len(histogram):
                histogram.extend([0] * (new + 1 - len(histogram)))
                self._extend_sizes_upto()
            histogram[new] += 1
        # Only the block sizes above the lower count and up to the higher one change their count of
        # nodes: sizes with index bisect_right(BLOCK_SIZES, lower) up to bisect_right(BLOCK_SIZES, higher).
        sizes_upto = self.sizes_upto
        if old < new:
            for i in range(sizes_upto[old + 1], sizes_upto[new + 1]):
                at_least[i] += 1
        else:
            for i in range(sizes_upto[new + 1], sizes_upto[old + 1]):
                at_least[i] -= 1
        self.block[node] = new
        return True

    def _extend_sizes_upto(self) -> None:
        """Cover every count of the (grown) histogram in ``sizes_upto``."""
        first = len(self.sizes_upto) + NOT_COUNTED
        self.sizes_upto.extend(bisect_right(BLOCK_SIZES, k) for k in range(first, len(self.histogram)))

    def _rebuild(self) -> None:
        """Every node anew (readiness changed): one array pass."""
        state = self.sim.state
        counted = (self.capacity > 0) & state.ready
        free = np.maximum(state.free[:, state.gpu_col], 0)
        block = np.where(counted, free, NOT_COUNTED).astype(np.int64)
        size = max(len(self.histogram), int(free[counted].max(initial=0)) + 1)
        self.histogram = np.bincount(block[counted], minlength=size).astype(np.int64).tolist()
        self._extend_sizes_upto()
        self.block = block.tolist()
        self.at_least = [int((block >= k).sum()) for k in BLOCK_SIZES]

    def sample(self) -> tuple[int, ...]:
        """The meter's timeline values now, in COLUMNS order."""
        generation = self._state.topology_generation
        dirty = self.dirty
        changed = False
        if generation != self.generation:
            self.generation = generation
            self._rebuild()
            changed = True
        elif dirty and self._any_gpu_node:
            for node in dirty:
                changed = self._refresh(node) or changed
        busy = self.busy_milli
        if changed or not self._last:
            histogram = self.histogram
            largest = len(histogram) - 1
            while largest > 0 and histogram[largest] == 0:
                largest -= 1
            self._largest = largest
        elif busy == self._last_busy:
            return self._last
        self._last_busy = busy
        busy_milli = round(busy)
        self._last = (busy_milli if busy_milli > 0 else 0, *self.at_least, self._largest)
        return self._last
