"""Multi-node jobs of a history as gangs of node-sized pods (docs/calibration.md, "Jobs wider than any node").

A batch scheduler's record gives a job's total allocation: SWF's processors, Slurm's AllocTRES over
AllocNodes. Replayed as one pod, a 64-processor job on 2-processor nodes never fits anywhere. So a job
whose pod asks for more than every node offers becomes ``k`` identical pods, ``k`` the fewest that fit on
the widest node shape (GPUs split into whole numbers, CPU to the milli-core, memory to the byte, each
rounded up), placed all-or-nothing (``gang: true``), as the batch scheduler placed it. A multi-pod job of
a batch scheduler (SWF, Slurm, Philly) is a gang too; Kubernetes jobs keep independent pods (a history
does not say whether they were gang-scheduled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Owner kinds whose scheduler allocates a job's nodes together (the record's pods are one allocation).
BATCH_OWNERS = frozenset({"SWFJob", "SlurmJob", "PhillyJob"})
#: Node shapes are (CPU cores, GPUs, memory bytes).
Shape = tuple[float, int, int]


@dataclass(frozen=True)
class PodPlan:
    """How a job is replayed: ``pods`` pods of ``cpu`` cores, ``gpus`` GPUs and ``memory`` bytes each."""

    pods: int
    cpu: float
    gpus: int
    memory: int
    gang: bool
    #: The record's pod was wider than any node and was split.
    split: bool = False


def _fits(cpu: float, gpus: int, memory: int, shape: Shape) -> bool:
    return cpu <= shape[0] + 1e-9 and gpus <= shape[1] and memory <= shape[2]


def node_sized(
    pods: int, cpu: float, gpus: int, memory: int, shapes: list[Shape], owner_kind: str | None
) -> PodPlan:
    """The replayed pods of one job whose pods ask ``cpu`` cores, ``gpus`` whole GPUs and ``memory``
    bytes each; ``shapes``: the distinct node shapes (a GPU job only counts shapes with GPUs)."""
    gang = pods > 1 and owner_kind in BATCH_OWNERS
    usable = [s for s in shapes if s[1] > 0] if gpus > 0 else list(shapes)
    if not usable or any(_fits(cpu, gpus, memory, s) for s in usable):
        return PodPlan(pods, cpu, gpus, memory, gang)
    totals = (cpu * pods, gpus * pods, memory * pods)
    best: PodPlan | None = None
    for shape in usable:
        plan = _split(totals, shape)
        if plan is not None and (best is None or plan.pods < best.pods):
            best = plan
    return best or PodPlan(pods, cpu, gpus, memory, gang)


def _split(totals: tuple[float, int, int], shape: Shape) -> PodPlan | None:
    """The fewest identical pods, each fitting ``shape``, that together hold ``totals``; None when even
    one resource per pod does not fit (a GPU job on a shape without GPUs)."""
    cpu, gpus, memory = totals
    need = [cpu / shape[0] if shape[0] > 0 else (math.inf if cpu > 0 else 0.0),
            gpus / shape[1] if shape[1] > 0 else (math.inf if gpus > 0 else 0.0),
            memory / shape[2] if shape[2] > 0 else (math.inf if memory > 0 else 0.0)]  # fmt: skip
    if math.inf in need:
        return None
    k = max(1, math.ceil(max(need) - 1e-9))
    limit = max(k, gpus, 1) * 4
    while k <= limit:
        per_gpu = gpus // k if gpus % k == 0 else None
        per_cpu = math.ceil(cpu * 1000 / k) / 1000
        per_memory = math.ceil(memory / k)
        if per_gpu is not None and _fits(per_cpu, per_gpu, per_memory, shape):
            return PodPlan(k, per_cpu, per_gpu, per_memory, gang=True, split=True)
        k += 1
    return None
