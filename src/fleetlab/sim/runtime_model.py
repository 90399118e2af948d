"""Runtimes of jobs that declare a work profile, from model.perf and where their pods landed.

A job with ``work`` runs ``steps`` data-parallel steps of ``samples_per_step`` samples. On a node whose GPU
model has a performance profile its runtime is ``model.perf``'s training time for the layout the pods
actually got: k distinct nodes, the busiest node's GPUs of the job as the in-node ring, the pods' GPUs
computing, and the slowest node's network (the pool's instance-type figure, else 100 Gbit/s, or the
job's ``network_gbps``) for the ring across nodes. So the same gang packed on one node finishes sooner
than spread over two. A gang of mixed GPU models runs at its slowest model. Without ``work``, or on a
model without a profile (CPU nodes, unknown models), the job's ``runtime`` is used as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from fleetlab.model.gpu_specs import default_network_gbps, gpu_specs, instance_network_gbps
from fleetlab.model.job import Job
from fleetlab.model.perf import Layout, step_time
from fleetlab.model.plan_job import JobWork
from fleetlab.placement.element_views import int_elements
from fleetlab.placement.state import IntArray
from fleetlab.sim.events import to_ms, transfer_ms
from fleetlab.sim.handle import EngineHandle


def work_seconds(
    work: JobWork, gpu: str, pods_per_node: Sequence[int], gpus_per_pod: int, net: float
) -> float:
    """Seconds of the job's steps with ``pods_per_node[i]`` pods on each of its nodes."""
    busiest = max(pods_per_node) * gpus_per_pod
    layout = Layout(gpu, len(pods_per_node), busiest, net)
    total = sum(pods_per_node) * gpus_per_pod
    return work.steps * step_time(work.profile, work.samples_per_step, layout, total).step_s


#: Runtimes remembered per (job, GPU model) before the memo starts again (a gang's pods ask at once).
RUNTIME_MEMO_LIMIT = 4096


class WorkRuntimes:
    """Runtime lookups for the simulator; reads its live node list (autoscaled nodes included)."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        self.specs = gpu_specs()
        self._gpu_model = sim.state.gpu_model
        self._memo: dict[tuple[int, str | None], int] = {}
        #: Per GPU model, element views of ``_runtime_column``'s array (the arrays are kept by the views).
        self._columns: dict[str | None, memoryview[int]] = {}

    def runtime_ms(self, job: int, node: int) -> int:
        """The job's full runtime on this node's GPU model."""
        return self.runtime_on_ms(job, self._gpu_model[node])

    def longest_on_ms(self, job: int, nodes: Sequence[int]) -> int:
        """The longest of the job's runtimes on ``nodes`` (at least one): ``max(runtime_ms(job, n) for n in
        nodes)``, each distinct GPU model asked once (a gang's members mostly share one)."""
        gpu_model = self._gpu_model
        return max(self.runtime_on_ms(job, model) for model in {gpu_model[n] for n in nodes})

    def runtime_on_ms(self, job: int, model: str | None) -> int:
        """The job's full runtime on GPU ``model`` (None: a node without GPUs)."""
        column = self._columns.get(model)
        if column is None:
            column = self._columns[model] = int_elements(self._runtime_column(model))
        fixed = column[job]
        if fixed > 0:
            return fixed
        key = (job, model)
        value = self._memo.get(key)
        if value is None:
            if len(self._memo) >= RUNTIME_MEMO_LIMIT:
                self._memo.clear()  # a pure function of (job, model): the memo only saves recomputing it
            value = max(1, to_ms(self.pod_seconds(job, model)))
            self._memo[key] = value
        return value

    def _runtime_column(self, model: str | None) -> IntArray:
        """Per job, its runtime in ms on ``model`` read from the job table's columns (``Runtime.on``, then
        ``max(1, to_ms(s))``), or -1 where a work profile decides it."""
        jobs = self.sim.job_table
        seconds = jobs.runtime_on(model)
        column = np.maximum(1, np.floor(seconds * 1000 + 0.5)).astype(np.int64)
        if model in self.specs:
            column[jobs.per_template(lambda t: t.work is not None, dtype=bool)] = -1
        return column

    def _net(self, job: Job, node: int) -> float:
        assert job.work is not None
        if job.work.network_gbps is not None:
            return job.work.network_gbps
        pool = self.sim.pools[self.sim.node_infos[node].pool]
        known = instance_network_gbps(pool.instance_type) if pool.instance_type else None
        return known if known is not None else default_network_gbps()

    def pod_seconds(self, job_index: int, gpu_model: str | None) -> float:
        """One pod computing on its own (not a gang): its GPUs on one node."""
        table = self.sim.job_table
        job = table.template_of(job_index)  # work and GPUs per pod are template fields
        if job.work is None or gpu_model not in self.specs:
            return table.runtime_of(job_index, gpu_model)
        return work_seconds(job.work, gpu_model, [1], job.gpus_per_pod, default_network_gbps())

    def gang_ms(self, job_index: int, nodes: Sequence[int]) -> int | None:
        """The gang's runtime on ``nodes`` (one entry per pod), or None where the job has no work
        profile or a node's GPU model has no performance profile."""
        job = self.sim.job_table.template_of(job_index)  # work and GPUs per pod are template fields
        if job.work is None:
            return None
        models = {self.sim.state.gpu_model[n] for n in nodes}
        if not all(m in self.specs for m in models):
            return None
        per_node = Counter(nodes)
        net = min(self._net(job, n) for n in per_node)
        counts = list(per_node.values())
        seconds = max(work_seconds(job.work, str(m), counts, job.gpus_per_pod, net) for m in models)
        return max(1, to_ms(seconds))

    def longest_ms(self) -> int:
        """The longest a pod may legitimately take without completing, for the progress guard: the longest
        runtime of any job on one node of any model here, plus its image pull and data download at the
        slowest pool's bandwidth (a long download is progress, not a stall)."""
        models = sorted({m for m in self.sim.state.gpu_model if m in self.specs})
        pull_bw = min((p.image_pull_bandwidth for p in self.sim.pools), default=1)
        data_bw = min((p.data_bandwidth for p in self.sim.pools), default=1)
        table = self.sim.job_table
        if not len(table):
            return 0

        def prep_ms(job: Job) -> int:
            image = job.image.size if job.image is not None else 0
            return transfer_ms(image, pull_bw) + transfer_ms(job.data_size, data_bw)

        # to_ms of every runtime (floor(s * 1000 + 0.5)) plus its template's pull and download
        runtime_ms = np.floor(table.column("runtime_s") * 1000 + 0.5).astype(np.int64)
        out = int((runtime_ms + table.per_template(prep_ms, np.int64)).max())
        template = table.column("template")
        for k, job in enumerate(table.templates):
            if job.work is None or not np.any(template == k):
                continue
            sizes = np.unique(table.column("pods")[template == k]).tolist() if job.gang else [1]
            for pods, model in ((p, m) for p in sizes for m in models):
                seconds = work_seconds(job.work, model, [pods], job.gpus_per_pod, default_network_gbps())
                out = max(out, to_ms(seconds))
        return out
