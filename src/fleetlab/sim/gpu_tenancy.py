"""Which GPUs each bound pod holds, and what sharing them does: the simulator's side of GPU sharing.

On bind a pod gets GPU indices (fleetlab.placement.devices); on release it gives them back. On
time-sliced nodes two more things happen, because the device plugin isolates nothing:

* **OOM.** Every pod declares the GPU memory it uses (``gpu_memory``; none declared = 0). When a pod starts
  computing and the declared memory of the running pods on one of its GPUs exceeds that GPU's memory, the
  pod that just started — the newest, whose allocation fails — is OOM-killed. Its pod fails and is not
  retried (a Job with ``backoffLimit: 0``); a gang job fails with it. Kills are counted per job.
* **Interference.** With k running pods on a GPU each computes at 1 / (1 + α·(k−1)) of its full speed
  (α = ``time_slicing.slowdown_per_extra_pod``; α = 1 is a fair time-slice of compute-bound work). A pod on
  several GPUs runs at its slowest GPU's speed. Whenever k changes the affected pods' work done so far is
  settled at the old speed and their finish events are rescheduled at the new one (sim/pod_pace.py,
  shared with the node-level interference model).

MPS (``sharing.mps``) hands out replicas the same way but isolates its clients: each computes at 1/n of
the GPU (n = replicas) whoever else runs, and only a pod declaring more than 1/n of the GPU's memory is
OOM-killed (its own limit, ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``, is exceeded).

Subscribes to ``bind`` and ``release`` (not on a cluster without GPUs) and ``run_end``; with time-sliced or
MPS GPUs also ``start`` and ``stop``.
May change: GPU devices, the nvidia.com/gpu column and GPU counters; asks to ``fail`` OOM-killed pods.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetlab.model.resources import GPU
from fleetlab.placement.devices import MIG, PLAIN, TIME_SLICED, Holding, build_devices, gpu_slots
from fleetlab.placement.framework import CompiledPod
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.pod_pace import PodPace
from fleetlab.sim.share_policy_hook import attach_share_view, policy_of


@dataclass
class _Run:
    """A computing pod on time-sliced GPUs (its pace, work left and speed, is in sim/pod_pace.py)."""

    node: int
    gpus: tuple[int, ...]
    memory: int


class GpuTenancy:
    """Per-pod GPU holdings, and time-slicing's OOM kills and slowdown."""

    def __init__(self, sim: EngineHandle, pace: PodPace | None) -> None:
        self.sim = sim
        self.pace = pace
        state = sim.state
        self.devices = build_devices(sim.pools, state.pool)
        state.devices = self.devices
        #: Whether any node time-slices its GPUs (node kinds are fixed); without one ``started`` does nothing.
        self.time_sliced = bool((self.devices.kind == TIME_SLICED).any())
        self.alpha = [p.time_slicing.slowdown_per_extra_pod if p.time_slicing else 0.0 for p in sim.pools]
        #: Per pool its MPS replicas (0: not MPS): an MPS client computes at 1/replicas, isolated.
        self.mps = [p.mps.replicas if p.mps else 0 for p in sim.pools]
        n_pods = sim.book.n_pods
        self.holdings: dict[int, list[Holding]] = {}
        #: Per pod the GPU indices it last held, as a code into ``gpu_names`` (few distinct strings).
        self.gpu_index = np.zeros(n_pods, dtype=np.int32)
        self.gpu_names: dict[str, int] = {"": 0}
        self._gpu_codes: dict[tuple[int, ...], int] = {}
        self.oom_kills = np.zeros(n_pods, dtype=np.int64)
        self.runs: dict[int, _Run] = {}
        self.on_gpu: dict[tuple[int, int], set[int]] = {}
        self.share_view = attach_share_view(sim)
        #: Whether every node's GPUs are plain (fixed, like ``time_sliced``).
        self.all_plain = bool((self.devices.kind == PLAIN).all())
        #: No pool has a GPU of any kind (whole, shared, time-sliced or MIG; pools are fixed for the run)
        #: and no share view scores binds: no pod can take a GPU, so ``bound`` and ``released`` would do
        #: nothing for any pod and are not subscribed (two calls per pod fewer on a CPU-only cluster).
        self.gpu_less = self.share_view is None and not any(gpu_slots(p) for p in sim.pools)
        on = sim.on
        if not self.gpu_less:
            on.bind.append(self.bound)
            on.bind_state_blind.append(self.state_blind)
            on.release.append(self.released)
        if self.time_sliced:
            on.start.append(self.started)
            on.stop.append(self.stopped)
        on.run_end.append(self.finish)

    # -- bind / release ------------------------------------------------------------------------------
    def state_blind(self, compiled: CompiledPod) -> bool:
        """``bound`` takes whole GPUs of plain nodes only (or nothing) for this spec: the devices alone."""
        return self.all_plain and self.share_view is None and not any(compiled.spec.gpu_share)

    def bound(self, pod: int, node: int, compiled: CompiledPod, whole_gpus: int) -> None:
        """Take GPUs for a pod the simulator just bound to ``node`` (``whole_gpus``: its request's
        nvidia.com/gpu, which the simulator keeps per spec)."""
        devices = self.devices
        milli, memory = compiled.spec.gpu_share
        view = self.share_view
        if view is None and not (milli or memory) and devices.plain(node):
            if whole_gpus:  # whole GPUs of a plain node: the usual bind
                holding = devices.take_whole(node, whole_gpus)
                self.holdings[pod] = [holding]
                self.gpu_index[pod] = self._gpu_code(holding.gpus)
            return
        state = self.sim.state
        holdings: list[Holding] = []
        request = compiled.request
        if view is not None:
            view.binding = view.request_of(compiled)
            view.policy = policy_of(self.sim, pod)
        if milli or memory:
            holding, was_idle = devices.take_share(node, milli, memory)
            holdings.append(holding)
            if was_idle:  # the GPU is no longer an idle nvidia.com/gpu
                col = state.gpu_col
                state.requested[node, col] += 1
                state.free[node, col] -= 1
                self.sim.counters.gpus_taken(1, state.requested[node, col] == 1)  # out of the whole-GPU pool
        elif devices.kind[node] == TIME_SLICED:
            sliced = state.column.get(devices.sliced_resource[node])
            if sliced is not None and request[sliced] > 0:
                holdings.append(devices.take_replicas(node, int(request[sliced])))
        else:
            if whole_gpus and devices.single_mig[node]:
                holdings.append(devices.take_mig(node, GPU, whole_gpus))
            elif whole_gpus:
                holdings.append(devices.take_whole(node, whole_gpus))
        if devices.kind[node] == MIG:
            for resource in devices.mig_slots:
                mig_col = state.column.get(resource)
                if resource != GPU and mig_col is not None and request[mig_col] > 0:
                    holdings.append(devices.take_mig(node, resource, int(request[mig_col])))
        if holdings:
            self.holdings[pod] = holdings
            self.gpu_index[pod] = self._gpu_code(tuple(g for h in holdings for g in h.gpus))
        if view is not None:
            view.bound(pod, node)

    def _gpu_code(self, gpus: tuple[int, ...]) -> int:
        """The ``gpu_names`` code of GPU indices as the pods table shows them ("0-1-2"), cached per tuple."""
        code = self._gpu_codes.get(gpus)
        if code is None:
            name = "-".join(str(g) for g in gpus)
            code = self._gpu_codes[gpus] = self.gpu_names.setdefault(name, len(self.gpu_names))
        return code

    def released(self, pod: int, node: int) -> None:
        """Give the pod's GPUs back (it finished, was evicted or OOM-killed)."""
        if self.share_view is not None:
            self.share_view.released(pod, node)
        holdings = self.holdings.pop(pod, None)
        if holdings is None:
            return
        state = self.sim.state
        for holding in holdings:
            if self.devices.release(node, holding):
                col = state.gpu_col
                state.requested[node, col] -= 1
                state.free[node, col] += 1
                self.sim.counters.gpus_returned(1, state.requested[node, col] == 0)

    # -- time-slicing --------------------------------------------------------------------------------
    def started(self, pod: int, wall_ms: int) -> None:
        """The pod began computing with ``wall_ms`` of wall time to go at full speed."""
        holdings = self.holdings.get(pod)
        if not holdings or holdings[0].kind != TIME_SLICED:
            return
        sim = self.sim
        node, gpus = int(sim.book.node[pod]), tuple(sorted(set(holdings[0].gpus)))
        memory = sim.jobs[int(sim.book.job[pod])].gpu_memory or 0
        mps = self.mps[int(sim.state.pool[node])]
        for gpu in gpus:
            if mps:  # isolated: only the client's own limit, 1/replicas of the GPU's memory, counts
                used, cap = 0, int(self.devices.mem_cap[node, gpu]) // mps
            else:
                used = sum(self.runs[p].memory for p in self.on_gpu.get((node, gpu), ()))
                cap = int(self.devices.mem_cap[node, gpu])
            if used + memory > cap > 0:
                self.oom_kills[pod] += 1
                sim.fail(pod)  # the newest pod's allocation fails: it dies at the end of the step
                return
        self.runs[pod] = _Run(node, gpus, memory)
        assert self.pace is not None
        self.pace.begin(pod, wall_ms, sliced=True)
        for gpu in gpus:
            self.on_gpu.setdefault((node, gpu), set()).add(pod)
        self._retime(node, gpus)

    def stopped(self, pod: int) -> None:
        """The pod stopped computing: the other pods on its GPUs speed up."""
        if not self.runs:
            return
        run = self.runs.pop(pod, None)
        if run is None:
            return
        assert self.pace is not None
        self.pace.end(pod)
        for gpu in run.gpus:
            self.on_gpu[(run.node, gpu)].discard(pod)
        self._retime(run.node, run.gpus)

    def _retime(self, node: int, gpus: tuple[int, ...]) -> None:
        """New speeds for the pods on ``gpus`` of ``node``; reschedule the finish of those that changed."""
        pace = self.pace
        assert pace is not None
        pool = int(self.sim.state.pool[node])
        alpha, mps = self.alpha[pool], self.mps[pool]
        affected = sorted({p for gpu in gpus for p in self.on_gpu.get((node, gpu), ())})
        for pod in affected:
            run = self.runs[pod]
            k = max(len(self.on_gpu[(node, gpu)]) for gpu in run.gpus)
            pace.set_factors(pod, slicing=float(mps) if mps else 1.0 + alpha * (k - 1))

    def pods_on(self, node: int, gpu: int) -> int:
        """Computing pods on one time-sliced or MPS GPU (the k of the slowdown)."""
        return len(self.on_gpu.get((node, gpu), ()))

    # -- results -----------------------------------------------------------------------------------
    def finish(self, parts: ResultParts) -> None:
        """Per pod its OOM kills and the GPU indices it last held."""
        parts.oom_kills = self.oom_kills
        parts.pod_gpus = np.asarray(list(self.gpu_names), dtype=object)[self.gpu_index].tolist()
