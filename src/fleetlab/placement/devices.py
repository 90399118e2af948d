"""Per-GPU bookkeeping inside nodes: arrays of shape (nodes, max GPUs per node), updated on bind/release.

Kubernetes counts ``nvidia.com/gpu`` per node; which physical GPU a pod gets is decided by the kubelet and
the device plugin, and GPU sharing (fractions, time-slicing replicas, MIG instances) only makes sense per
GPU. Each GPU slot is one of:

* *plain* (``milli_cap`` 1000): whole-GPU pods take the lowest-index idle GPUs (as the FGD simulator and
  a kubelet without topology hints do); shared pods take ``milli`` thousandths and ``memory`` bytes of one
  GPU, chosen by ``choose_gpu`` (best fit by default; a plug-in point for other rules such as FGD);
* *time-sliced*: ``replica_cap`` replicas; each replica a pod asks for goes to the GPU with the fewest
  replicas handed out (the device plugin spreads replicas across GPUs), ties to the lowest index;
* *MIG*: a fixed number of instances per profile resource (``mig_slots``); an instance is never shared.

The node's ``nvidia.com/gpu`` column in ClusterState stays the count of idle plain GPUs: the simulator
takes one unit when a shared pod lands on an idle GPU and gives it back when the GPU's last share leaves,
so whole-GPU filtering and scoring need no change. Every per-pod check here is an array expression over
nodes × GPUs; nothing loops over nodes in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.cluster import NodePool
from fleetlab.model.gpu_share import MILLI_PER_GPU
from fleetlab.model.mig import place_layout
from fleetlab.model.resources import GPU
from fleetlab.placement.element_views import int_elements

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

PLAIN, TIME_SLICED, MIG = 0, 1, 2


class Holding(NamedTuple):
    """What one bound pod holds on its node's GPUs, so a release gives back exactly that (a named tuple:
    one is made per bind)."""

    kind: int  # PLAIN (whole or share), TIME_SLICED or MIG
    gpus: tuple[int, ...]
    milli: int = 0
    memory: int = 0
    resource: str = ""

    @property
    def shared(self) -> bool:
        """A share of one plain GPU (not whole GPUs)."""
        return self.kind == PLAIN and self.milli < MILLI_PER_GPU


#: Picks the GPU index for a share on ``node``: given per GPU the (milli, bytes) the share would take there
#: and whether it fits (at least one does), returns a GPU where it fits. FGD's GPU choice plugs in here.
GpuChooser = Callable[["GpuDevices", int, list[int], list[int], list[bool]], int]


def best_fit_gpu(
    devices: GpuDevices, node: int, milli: list[int], memory: list[int], fits: list[bool]
) -> int:
    """The GPU left with the least free milli after the share (then least free memory, then lowest index):
    fills partly used GPUs before idle ones, keeping idle GPUs whole for whole-GPU pods."""
    free_milli = (devices.milli_cap[node] - devices.milli_used[node]).tolist()
    free_memory = (devices.mem_cap[node] - devices.mem_used[node]).tolist()
    candidates = [
        (free_milli[g] - milli[g], free_memory[g] - memory[g], g) for g in range(len(fits)) if fits[g]
    ]
    return min(candidates)[2]


def _need(gpu_memory: int, milli: int, memory: int) -> tuple[int, int]:
    """(milli, bytes) a share takes on one GPU with ``gpu_memory`` bytes (see GpuDevices.share_need)."""
    if milli and memory:
        return milli, memory
    if milli:
        return milli, gpu_memory * milli // MILLI_PER_GPU
    if gpu_memory <= 0:
        return MILLI_PER_GPU + 1, memory
    return -(-memory * MILLI_PER_GPU // gpu_memory), memory


class GpuDevices:
    """Usage of every GPU of every node; rows are nodes (ClusterState order), columns GPU indices."""

    def __init__(self, n: int, max_gpus: int) -> None:
        g = max(1, max_gpus)
        self.n, self.width = n, g
        self.kind = np.zeros(n, dtype=np.int64)
        self.milli_cap = np.zeros((n, g), dtype=np.int64)
        self.mem_cap = np.zeros((n, g), dtype=np.int64)
        self.milli_used = np.zeros((n, g), dtype=np.int64)
        self.mem_used = np.zeros((n, g), dtype=np.int64)
        #: Pods holding any part of the GPU (a share, the whole GPU, replicas or a MIG instance).
        self.pods = np.zeros((n, g), dtype=np.int64)
        self.replica_cap = np.zeros((n, g), dtype=np.int64)
        self.replica_used = np.zeros((n, g), dtype=np.int64)
        #: Time-sliced nodes: the advertised resource name and whether requests > 1 fail at admission.
        self.sliced_resource: list[str] = [""] * n
        self.fail_over_one = np.zeros(n, dtype=bool)
        self.mig_slots: dict[str, IntArray] = {}
        #: Nodes whose ``nvidia.com/gpu`` are MIG devices (the single strategy).
        self.single_mig = np.zeros(n, dtype=bool)
        self.chooser: GpuChooser = best_fit_gpu
        #: Per node, whether all its GPU slots are plain (no time-slicing, no MIG); built on first use.
        self._plain: list[bool] | None = None
        #: Per node, its plain GPUs' (free milli, memory cap, free memory) as Python ints and the largest
        #: free milli; built on first use and dropped when the node's usage changes.
        self._rows: dict[int, tuple[list[tuple[int, int, int]], int]] = {}
        #: Flat (row-major) views of the arrays a whole-GPU bind or release touches: element ``node * width
        #: + gpu`` reads as a Python int and writes through, cheaper than numpy scalars or row slices for
        #: the few GPUs of one node (the arrays above are never replaced, so the views stay valid).
        self._milli_cap_at = int_elements(self.milli_cap)
        self._mem_cap_at = int_elements(self.mem_cap)
        self._milli_used_at = int_elements(self.milli_used)
        self._mem_used_at = int_elements(self.mem_used)
        self._pods_at = int_elements(self.pods)
        #: The Holding of each tuple of whole GPUs taken (immutable, so one is shared by every bind).
        self._whole: dict[tuple[int, ...], Holding] = {}

    def plain(self, node: int) -> bool:
        """The node's GPUs are all plain (its kind is fixed once the devices are built)."""
        if self._plain is None:
            self._plain = (self.kind == PLAIN).tolist()
        return self._plain[node]

    # -- shares of plain GPUs ------------------------------------------------------------------------
    def share_need(self, rows: IntArray | slice, milli: int, memory: int) -> tuple[IntArray, IntArray]:
        """Per GPU of ``rows``: the (milli, bytes) a share takes there. A milli-only share takes that part
        of the GPU's memory too; a memory-only share takes the matching part of its compute (KAI's view
        of ``gpu-memory`` as a fraction of the device)."""
        cap = self.mem_cap[rows]
        if milli and memory:
            return np.full(cap.shape, milli, dtype=np.int64), np.full(cap.shape, memory, dtype=np.int64)
        if milli:
            return np.full(cap.shape, milli, dtype=np.int64), cap * milli // MILLI_PER_GPU
        need = np.where(cap > 0, -(-memory * MILLI_PER_GPU // np.maximum(cap, 1)), MILLI_PER_GPU + 1)
        return need.astype(np.int64), np.full(cap.shape, memory, dtype=np.int64)

    def share_fits_gpus(self, rows: IntArray | slice, milli: int, memory: int) -> BoolArray:
        """Per GPU of ``rows``: whether the share fits on it now."""
        need_milli, need_memory = self.share_need(rows, milli, memory)
        cap = self.milli_cap[rows]
        return np.asarray(
            (cap > 0)
            & (cap - self.milli_used[rows] >= need_milli)
            & (self.mem_cap[rows] - self.mem_used[rows] >= need_memory),
            dtype=bool,
        )

    def share_fits(self, nodes: IntArray, milli: int, memory: int) -> BoolArray:
        """Per node in ``nodes``: at least one GPU has room for the share."""
        return np.asarray(self.share_fits_gpus(nodes, milli, memory).any(axis=1), dtype=bool)

    def _row(self, node: int) -> tuple[list[tuple[int, int, int]], int]:
        row = self._rows.get(node)
        if row is None:
            caps = self.milli_cap[node].tolist()
            free = (self.milli_cap[node] - self.milli_used[node]).tolist()
            mem_caps = self.mem_cap[node].tolist()
            mem_free = (self.mem_cap[node] - self.mem_used[node]).tolist()
            gpus = [
                (f, mc, mf) if c > 0 else (-1, mc, mf)
                for c, f, mc, mf in zip(caps, free, mem_caps, mem_free, strict=True)
            ]
            row = self._rows[node] = (gpus, max(g[0] for g in gpus))
        return row

    def _one_node(self, node: int, milli: int, memory: int) -> tuple[list[int], list[int], list[bool]]:
        """Per GPU of one node, in plain Python (cheaper than arrays for 8 GPUs): need and fit."""
        caps = self.milli_cap[node].tolist()
        used = self.milli_used[node].tolist()
        mem_caps = self.mem_cap[node].tolist()
        mem_used = self.mem_used[node].tolist()
        need_milli, need_memory, fits = [], [], []
        for cap, u, mem_cap, mu in zip(caps, used, mem_caps, mem_used, strict=True):
            m, b = _need(mem_cap, milli, memory)
            need_milli.append(m)
            need_memory.append(b)
            fits.append(cap > 0 and cap - u >= m and mem_cap - mu >= b)
        return need_milli, need_memory, fits

    def share_fits_one(self, node: int, milli: int, memory: int) -> bool:
        """The same for one node (incremental rescoring), from the node's cached row."""
        gpus, best = self._row(node)
        if milli and best < milli:
            return False
        for free, mem_cap, mem_free in gpus:
            if free < 0:
                continue
            m, b = _need(mem_cap, milli, memory)
            if free >= m and mem_free >= b:
                return True
        return False

    def take_share(self, node: int, milli: int, memory: int) -> tuple[Holding, bool]:
        """Place a share on the chosen GPU; also returns whether that GPU was idle before."""
        need_milli, need_memory, fits = self._one_node(node, milli, memory)
        if not any(fits):
            raise RuntimeError(f"internal error: no GPU of node {node} holds a share of {milli} milli")
        gpu = self.chooser(self, node, need_milli, need_memory, fits)
        was_idle = bool(self.pods[node, gpu] == 0)
        took_milli, took_memory = need_milli[gpu], need_memory[gpu]
        self._rows.pop(node, None)
        self.milli_used[node, gpu] += took_milli
        self.mem_used[node, gpu] += took_memory
        self.pods[node, gpu] += 1
        return Holding(PLAIN, (gpu,), took_milli, took_memory), was_idle

    # -- whole GPUs, replicas, MIG instances ---------------------------------------------------------
    def take_whole(self, node: int, count: int) -> Holding:
        """The ``count`` lowest-index idle plain GPUs."""
        if count <= 0:
            return Holding(PLAIN, (), MILLI_PER_GPU, 0)
        cap, pods = self._milli_cap_at, self._pods_at
        milli_used, mem_used, mem_cap = self._milli_used_at, self._mem_used_at, self._mem_cap_at
        base = node * self.width
        gpus: list[int] = []
        for g in range(self.width):
            k = base + g
            if cap[k] > 0 and pods[k] == 0:
                gpus.append(g)
                if len(gpus) == count:
                    break
        else:
            raise RuntimeError(f"internal error: node {node} has {len(gpus)} idle GPUs, {count} wanted")
        self._rows.pop(node, None)
        for g in gpus:  # taken whole: used as much as it has, one pod
            k = base + g
            milli_used[k] = cap[k]
            mem_used[k] = mem_cap[k]
            pods[k] = 1
        taken = tuple(gpus)
        holding = self._whole.get(taken)
        if holding is None:
            holding = self._whole[taken] = Holding(PLAIN, taken, MILLI_PER_GPU, 0)
        return holding

    def take_gpu(self, node: int, gpu: int) -> Holding | None:
        """GPU ``gpu`` whole (a DRA allocation named it), or the lowest-index idle plain GPU when a
        device-plugin pod already holds that index; None when no plain GPU of the node is idle."""
        pods = self._pods_at
        base = node * self.width
        if not (0 <= gpu < self.width and self._milli_cap_at[base + gpu] > 0 and pods[base + gpu] == 0):
            idle = [g for g in range(self.width) if self._milli_cap_at[base + g] > 0 and pods[base + g] == 0]
            if not idle:
                return None
            gpu = idle[0]
        self._rows.pop(node, None)
        k = base + gpu
        self._milli_used_at[k] = self._milli_cap_at[k]
        self._mem_used_at[k] = self._mem_cap_at[k]
        pods[k] = 1
        return Holding(PLAIN, (gpu,), MILLI_PER_GPU, 0)

    def take_replicas(self, node: int, count: int) -> Holding:
        """``count`` replicas, each from the GPU with the fewest handed out (lowest index on ties)."""
        chosen: list[int] = []
        for _ in range(count):
            room = self.replica_used[node] < self.replica_cap[node]
            load = np.where(room, self.replica_used[node], np.iinfo(np.int64).max)
            gpu = int(np.argmin(load))
            if not room[gpu]:
                raise RuntimeError(f"internal error: node {node} has no time-slicing replica left")
            self.replica_used[node, gpu] += 1
            chosen.append(gpu)
        distinct = sorted(set(chosen))
        self.pods[node, distinct] += 1
        return Holding(TIME_SLICED, tuple(chosen))

    def take_mig(self, node: int, resource: str, count: int) -> Holding:
        """``count`` instances of a MIG resource, lowest GPU index first."""
        slots = self.mig_slots[resource][node]
        chosen: list[int] = []
        for _ in range(count):
            gpu = int(np.flatnonzero(slots > 0)[0])
            slots[gpu] -= 1
            chosen.append(gpu)
        self.pods[node, sorted(set(chosen))] += 1
        return Holding(MIG, tuple(chosen), resource=resource)

    def release(self, node: int, holding: Holding) -> bool:
        """Give back what ``holding`` took; returns whether a shared GPU became idle."""
        gpus, kind = holding.gpus, holding.kind
        if kind == PLAIN and not holding.shared:  # whole GPUs, the usual release
            self._rows.pop(node, None)
            milli_used, mem_used, pods = self._milli_used_at, self._mem_used_at, self._pods_at
            base = node * self.width
            for g in gpus:  # one element at a time through the flat views: cheaper than numpy slices
                k = base + g
                milli_used[k] = 0
                mem_used[k] = 0
                pods[k] -= 1
            return False
        if kind == TIME_SLICED:
            for gpu in gpus:
                self.replica_used[node, gpu] -= 1
            self.pods[node, sorted(set(gpus))] -= 1
            return False
        if kind == MIG:
            for gpu in gpus:
                self.mig_slots[holding.resource][node, gpu] += 1
            self.pods[node, sorted(set(gpus))] -= 1
            return False
        gpu = gpus[0]  # a share of one plain GPU (``holding.shared``)
        self._rows.pop(node, None)
        self.milli_used[node, gpu] -= holding.milli
        self.mem_used[node, gpu] -= holding.memory
        self.pods[node, gpu] -= 1
        return bool(self.pods[node, gpu] == 0)

    # -- summaries -----------------------------------------------------------------------------------
    def free_milli(self) -> IntArray:
        """Unallocated milli per plain GPU (0 on other slots)."""
        return np.asarray(self.milli_cap - self.milli_used, dtype=np.int64)


def gpu_slots(pool: NodePool) -> int:
    """GPU slots of each of the pool's nodes (a pool may state its GPUs only as an extended resource, as
    cluster snapshots do)."""
    return pool.gpus_per_node or int(pool.extended_resources.get(GPU, 0))


def build_devices(pools: Sequence[NodePool], node_pool: IntArray) -> GpuDevices:
    """Every node's GPU slots from its pool: plain, time-sliced or MIG (the first ``mig.gpus`` GPUs)."""
    n = len(node_pool)
    widths = [gpu_slots(pool) for pool in pools]
    devices = GpuDevices(n, max(widths, default=0))
    for p_index, pool in enumerate(pools):
        rows = np.flatnonzero(node_pool == p_index)
        g = widths[p_index]
        if not len(rows) or g == 0:
            continue
        devices.mem_cap[np.ix_(rows, np.arange(g))] = pool.gpu_memory_bytes or 0
        replicated = pool.replicated  # time-slicing or MPS: replicas of each GPU handed out alike
        if replicated is not None:
            devices.kind[rows] = TIME_SLICED
            devices.replica_cap[np.ix_(rows, np.arange(g))] = replicated.replicas
            for r in rows:
                devices.sliced_resource[int(r)] = replicated.resource
            sliced = pool.time_slicing
            devices.fail_over_one[rows] = sliced is None or sliced.fail_requests_greater_than_one
            continue
        mig_gpus = 0
        if pool.mig is not None and pool.gpu_model is not None:
            mig_gpus = g if pool.mig.gpus is None or pool.mig.strategy == "single" else pool.mig.gpus
            devices.kind[rows] = MIG
            devices.single_mig[rows] = pool.mig.strategy == "single"
            for placed in place_layout(pool.gpu_model, list(pool.mig.layout)):
                resource = GPU if pool.mig.strategy == "single" else placed.profile.resource
                slots = devices.mig_slots.setdefault(resource, np.zeros((n, devices.width), dtype=np.int64))
                slots[np.ix_(rows, np.arange(mig_gpus))] += 1
        devices.milli_cap[np.ix_(rows, np.arange(mig_gpus, g))] = MILLI_PER_GPU
    return devices
