"""Runtime of a job on a GPU model and layout: roofline-style scaling plus a ring all-reduce.

Single-GPU throughput on model g, from the reference GPU r (c = compute_fraction, m = memory_fraction):

    time factor  f(g) = c * TFLOPS(r)/TFLOPS(g) + m * BW(r)/BW(g) + (1 - c - m)
    throughput   X(g) = reference_throughput / f(g)          (or the measured figure for g)

A measured table (``measured_table``, from ``fleetlab plan profile``) gives X(g) per per-GPU batch size
instead; the step's per-GPU batch B / n picks the point (see ``table_throughput``).

A data-parallel step of B samples on n = k nodes x p GPUs computes B / (n X(g)) seconds and all-reduces
G gradient bytes hierarchically: a ring inside each node over NVLink (per-direction bandwidth L), then a
ring across the k nodes over the node's network (N, all NICs together), each stage moving 2(s-1)/s of
the data:

    comm = 2(p-1)/p * G / L  +  2(k-1)/k * G / N

On one node this is the flat ring formula 2(n-1)/n * G / L. ``overlap`` hides communication behind that
share of the compute time: step = compute + max(0, comm - overlap * compute).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.model.gpu_specs import GpuSpec, gpu_specs
from fleetlab.model.plan_job import WorkProfile

GB = 1e9


@dataclass(frozen=True)
class Layout:
    """Where a job runs: ``nodes`` nodes of ``gpus_per_node`` GPUs of one model, nodes linked at
    ``network_gbps`` Gbit/s (all NICs of one node together)."""

    gpu: str
    nodes: int
    gpus_per_node: int
    network_gbps: float

    @property
    def gpus(self) -> int:
        """GPUs the job computes on."""
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class StepTime:
    """One training step's seconds: compute, communication, and what is left exposed after overlap."""

    compute_s: float
    comm_s: float
    step_s: float


def spec(name: str) -> GpuSpec:
    """The profile of a GPU model, or a ValueError naming the models that have one."""
    specs = gpu_specs()
    if name not in specs:
        raise ValueError(f"unknown GPU model {name!r}; models with a profile: {', '.join(sorted(specs))}")
    return specs[name]


def time_factor(profile: WorkProfile, gpu: str) -> float:
    """How many times longer the reference GPU's work takes on ``gpu`` (roofline estimate)."""
    ref, target = spec(profile.reference_gpu), spec(gpu)
    c, m = profile.compute_fraction, profile.memory_fraction
    return (
        c * ref.dense_tflops / target.dense_tflops
        + m * ref.memory_bandwidth_tbps / target.memory_bandwidth_tbps
        + (1.0 - c - m)
    )


def single_gpu_throughput(profile: WorkProfile, gpu: str, per_gpu_batch: float | None = None) -> float:
    """Samples per second on one GPU of ``gpu``: the measured table where it has the model (at the
    per-GPU batch), else a measured figure, else the roofline estimate."""
    if gpu in profile.measured_table:
        return table_throughput(profile.measured_table[gpu], per_gpu_batch)
    if gpu in profile.measured_throughput:
        return profile.measured_throughput[gpu]
    return profile.reference_throughput / time_factor(profile, gpu)


def table_throughput(table: dict[int, float], batch: float | None) -> float:
    """Samples/s at ``batch`` from measured (batch size -> samples/s) points.

    Between two points the step time is interpolated linearly in the batch (a fixed cost per step plus a
    cost per sample); outside them the nearest point's samples/s is kept. Without a batch: the largest
    batch's figure (the best-amortised one).
    """
    sizes = sorted(table)
    if batch is None or batch >= sizes[-1]:
        return table[sizes[-1]]
    if batch <= sizes[0]:
        return table[sizes[0]]
    upper = next(i for i, b in enumerate(sizes) if b >= batch)
    b0, b1 = sizes[upper - 1], sizes[upper]
    t0, t1 = b0 / table[b0], b1 / table[b1]
    step = t0 + (t1 - t0) * (batch - b0) / (b1 - b0)
    return batch / step


def allreduce_s(gradient_bytes: float, layout: Layout) -> float:
    """Seconds of a hierarchical ring all-reduce of ``gradient_bytes`` on ``layout``."""
    if gradient_bytes <= 0 or layout.gpus <= 1:
        return 0.0
    p, k = layout.gpus_per_node, layout.nodes
    seconds = 0.0
    if p > 1:
        seconds += 2 * (p - 1) / p * gradient_bytes / (spec(layout.gpu).interconnect_gbps * GB)
    if k > 1:
        if layout.network_gbps <= 0:
            raise ValueError("a multi-node layout needs a network bandwidth > 0 Gbit/s")
        seconds += 2 * (k - 1) / k * gradient_bytes / (layout.network_gbps / 8 * GB)
    return seconds


def step_time(
    profile: WorkProfile, samples_per_step: float, layout: Layout, gpus: int | None = None
) -> StepTime:
    """One data-parallel step of ``samples_per_step`` samples on ``layout``; ``gpus`` computing GPUs when
    the nodes hold unequal shares (default: ``layout.gpus``, the busiest node's count on every node)."""
    n = layout.gpus if gpus is None else gpus
    per_gpu = samples_per_step / n
    compute = samples_per_step / (n * single_gpu_throughput(profile, layout.gpu, per_gpu))
    comm = allreduce_s(profile.gradient_bytes, layout)
    exposed = max(0.0, comm - profile.overlap * compute)
    return StepTime(compute_s=compute, comm_s=comm, step_s=compute + exposed)


def training_seconds(profile: WorkProfile, steps: int, samples_per_step: float, layout: Layout) -> float:
    """Wall seconds to run ``steps`` steps on ``layout``."""
    return steps * step_time(profile, samples_per_step, layout).step_s


def runtime_by_gpu(
    profile: WorkProfile, steps: int, samples_per_step: float, gpus_per_node: int, nodes: int = 1
) -> dict[str, float]:
    """Seconds per GPU model for a scenario job's ``runtime.by_gpu`` (network: 100 Gbit/s if multi-node)."""
    return {
        name: training_seconds(profile, steps, samples_per_step, Layout(name, nodes, gpus_per_node, 100.0))
        for name in gpu_specs()
    }


def fits(profile: WorkProfile, gpu: str) -> bool:
    """Whether one GPU of ``gpu`` holds what the profile needs per GPU."""
    return profile.memory_gb_per_gpu is None or profile.memory_gb_per_gpu <= spec(gpu).memory_gb
