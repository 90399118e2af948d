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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fleetlab.model.resources import GPU
from fleetlab.placement.devices import MIG, TIME_SLICED, Holding, build_devices
from fleetlab.sim.book import scenario_positions
from fleetlab.sim.consolidation import Consolidator
from fleetlab.sim.gpu_fragments import FragmentationMeter
from fleetlab.sim.result import SharingTable
from fleetlab.sim.share_policy_hook import attach_share_view, policy_of
from fleetlab.sim.stranded import StrandedMeter, stranded_gpu_milli

if TYPE_CHECKING:
    from fleetlab.placement.framework import CompiledPod
    from fleetlab.sim.simulator import Simulator


@dataclass
class _Run:
    """A computing pod on time-sliced GPUs (its pace, work left and speed, is in sim/pod_pace.py)."""

    node: int
    gpus: tuple[int, ...]
    memory: int


class GpuTenancy:
    """Per-pod GPU holdings, time-slicing OOM kills and slowdown, and the fragmentation timeline."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        state = sim.state
        self.devices = build_devices(sim.pools, state.pool)
        state.devices = self.devices
        #: Whether any node time-slices its GPUs (node kinds are fixed); without one ``started`` does nothing.
        self.time_sliced = bool((self.devices.kind == TIME_SLICED).any())
        self.alpha = [p.time_slicing.slowdown_per_extra_pod if p.time_slicing else 0.0 for p in sim.pools]
        n_pods = sim.book.n_pods
        self.holdings: dict[int, list[Holding]] = {}
        #: Per pod the GPU indices it last held, as a code into ``gpu_names`` (few distinct strings).
        self.gpu_index = np.zeros(n_pods, dtype=np.int32)
        self.gpu_names: dict[str, int] = {"": 0}
        self._gpu_codes: dict[tuple[int, ...], int] = {}
        self.oom_kills = np.zeros(n_pods, dtype=np.int64)
        self.failed = np.zeros(n_pods, dtype=bool)
        self.runs: dict[int, _Run] = {}
        self.on_gpu: dict[tuple[int, int], set[int]] = {}
        self.to_kill: list[int] = []
        self.meter = FragmentationMeter(sim)
        self.stranded = StrandedMeter(self.meter)
        self.consolidator = Consolidator(sim)
        self.share_view = attach_share_view(sim)

    # -- bind / release ------------------------------------------------------------------------------
    def bind(self, pod: int, node: int, compiled: CompiledPod, whole_gpus: int) -> None:
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
            self.meter.touch(node)
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
        self.meter.touch(node)
        if view is not None:
            view.bound(pod, node)

    def _gpu_code(self, gpus: tuple[int, ...]) -> int:
        """The ``gpu_names`` code of GPU indices as the pods table shows them ("0-1-2"), cached per tuple."""
        code = self._gpu_codes.get(gpus)
        if code is None:
            name = "-".join(str(g) for g in gpus)
            code = self._gpu_codes[gpus] = self.gpu_names.setdefault(name, len(self.gpu_names))
        return code

    def release(self, pod: int, node: int) -> None:
        """Give the pod's GPUs back (it finished, was evicted or OOM-killed)."""
        self.meter.touch(node)
        if self.share_view is not None:
            self.share_view.released(pod, node)
        if self.runs:  # pods computing on time-sliced GPUs
            self._stop_run(pod)
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
        for gpu in gpus:
            used = sum(self.runs[p].memory for p in self.on_gpu.get((node, gpu), ()))
            if used + memory > int(self.devices.mem_cap[node, gpu]) > 0:
                self.oom_kills[pod] += 1
                self.to_kill.append(pod)
                return
        self.runs[pod] = _Run(node, gpus, memory)
        sim.pace.begin(pod, wall_ms, sliced=True)
        for gpu in gpus:
            self.on_gpu.setdefault((node, gpu), set()).add(pod)
        self._retime(node, gpus)

    def _stop_run(self, pod: int) -> None:
        run = self.runs.pop(pod, None)
        if run is None:
            return
        self.sim.pace.end(pod)
        for gpu in run.gpus:
            self.on_gpu[(run.node, gpu)].discard(pod)
        self._retime(run.node, run.gpus)

    def _retime(self, node: int, gpus: tuple[int, ...]) -> None:
        """New speeds for the pods on ``gpus`` of ``node``; reschedule the finish of those that changed."""
        sim = self.sim
        alpha = self.alpha[int(sim.state.pool[node])]
        affected = sorted({p for gpu in gpus for p in self.on_gpu.get((node, gpu), ())})
        for pod in affected:
            run = self.runs[pod]
            k = max(len(self.on_gpu[(node, gpu)]) for gpu in run.gpus)
            sim.pace.set_factors(pod, slicing=1.0 + alpha * (k - 1))

    # -- per step ------------------------------------------------------------------------------------
    def kill_pending(self) -> None:
        """After a simulator step: carry out this step's OOM kills (before the step's samples)."""
        kills, self.to_kill = self.to_kill, []
        for pod in kills:
            self._fail(pod)

    def _fail(self, pod: int) -> None:
        """The OOM-killed pod fails (no retry), with every pod of a gang; Kueue sees the job finish."""
        sim = self.sim
        book = sim.book
        job_index = int(book.job[pod])
        job = sim.jobs[job_index]
        members = list(book.pods_of(job_index)) if job.gang and job.pods > 1 else [pod]
        for p in members:
            if book.end_ms[p] >= 0 or self.failed[p]:
                continue
            if book.node[p] >= 0:
                sim.release(p, evicted=True)
                book.node[p] = -1
                book.attempt[p] += 1
            book.stop_pending(p, sim.now)  # a failed pod waits for nothing any more
            self.failed[p] = True
        if sim.kueue is not None and job.queue is not None:
            sim.kueue.finished(job, sim.now)

    def table(self) -> SharingTable:
        """Per job (scenario order) and per pod what sharing did, plus the fragmentation samples."""
        sim = self.sim
        book = sim.book
        n = len(sim.jobs)
        starts = book.first_pod[:-1]
        inverse = scenario_positions(sim.order)

        def per_job(values: np.ndarray, reduce: np.ufunc) -> np.ndarray:
            return reduce.reduceat(values, starts)[inverse] if n else values[:0]

        table = sim.resolved.jobs  # scenario order; the GPU fields are a template's
        milli = table.per_template(
            lambda job: job.gpu_milli or 0 if job.shares_gpu else 1000 * job.gpus_per_pod, dtype=np.int64
        )
        return SharingTable(
            job_oom_kills=per_job(self.oom_kills, np.add).astype(np.int64),
            job_failed=per_job(self.failed, np.logical_or).astype(bool),
            job_extra_ms=per_job(sim.pace.extra_ms, np.add).astype(np.float64),
            job_sliced_ms=per_job(sim.pace.sliced_ms, np.add).astype(np.float64),
            job_gpu_milli=milli,
            pod_gpus=np.asarray(list(self.gpu_names), dtype=object)[self.gpu_index].tolist(),
            fragmentation=self.meter.rows.rows(),
            consolidation_evictions=self.consolidator.evictions,
            stranded_gpu_milli_end=stranded_gpu_milli(sim),
            stranded=self.stranded.rows.rows(),
        )
