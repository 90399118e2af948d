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
from typing import TYPE_CHECKING

from fleetlab.model.gpu_specs import default_network_gbps, gpu_specs, instance_network_gbps
from fleetlab.model.job import Job
from fleetlab.model.perf import Layout, step_time
from fleetlab.model.plan_job import JobWork
from fleetlab.sim.events import to_ms, transfer_ms

if TYPE_CHECKING:
    from fleetlab.sim.simulator import Simulator


def work_seconds(
    work: JobWork, gpu: str, pods_per_node: Sequence[int], gpus_per_pod: int, net: float
) -> float:
    """Seconds of the job's steps with ``pods_per_node[i]`` pods on each of its nodes."""
    busiest = max(pods_per_node) * gpus_per_pod
    layout = Layout(gpu, len(pods_per_node), busiest, net)
    total = sum(pods_per_node) * gpus_per_pod
    return work.steps * step_time(work.profile, work.samples_per_step, layout, total).step_s


class WorkRuntimes:
    """Runtime lookups for the simulator; reads its live node list (autoscaled nodes included)."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.specs = gpu_specs()

    def _net(self, job: Job, node: int) -> float:
        assert job.work is not None
        if job.work.network_gbps is not None:
            return job.work.network_gbps
        pool = self.sim.pools[self.sim.node_infos[node].pool]
        known = instance_network_gbps(pool.instance_type) if pool.instance_type else None
        return known if known is not None else default_network_gbps()

    def pod_seconds(self, job_index: int, gpu_model: str | None) -> float:
        """One pod computing on its own (not a gang): its GPUs on one node."""
        job = self.sim.jobs[job_index]
        if job.work is None or gpu_model not in self.specs:
            return job.runtime.on(gpu_model)
        return work_seconds(job.work, gpu_model, [1], job.gpus_per_pod, default_network_gbps())

    def gang_ms(self, job_index: int, nodes: Sequence[int]) -> int | None:
        """The gang's runtime on ``nodes`` (one entry per pod), or None where the job has no work
        profile or a node's GPU model has no performance profile."""
        job = self.sim.jobs[job_index]
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
        out = 0
        for job in self.sim.jobs:
            image = job.image.size if job.image is not None else 0
            prep = transfer_ms(image, pull_bw) + transfer_ms(job.data_size, data_bw)
            out = max(out, to_ms(job.runtime.default) + prep)
            if job.work is not None:
                pods = [job.pods if job.gang else 1]
                for model in models:
                    seconds = work_seconds(job.work, model, pods, job.gpus_per_pod, default_network_gbps())
                    out = max(out, to_ms(seconds))
        return out
