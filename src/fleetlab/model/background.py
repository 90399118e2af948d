"""Background load: room on a pool's nodes held by work the history does not list.

A job history often lists only part of what ran on the cluster (a pod list of one tenant, a Slurm log of
one partition). ``background:`` declares, per pool, the GPUs and CPUs that other work held, as a step
function over time (``steps``: from each ``start_s`` on, ``gpus`` and ``cpus`` are held, until the next
step) or as a constant ``share`` of the pool's billing unit (its GPUs, or its CPUs on a CPU-only pool) held
from the start. Placement sees the room as used; the cost split bills it as its own ``background`` bucket,
never as the jobs' compute; no job or pod row stands for it. The simulator's side is sim/background.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, model_validator

from fleetlab.model.cluster import NodePool, SpecModel
from fleetlab.model.limits import Float, Int
from fleetlab.model.units import MilliCpu, Seconds

#: Steps one pool's background may have (a reader's bound, not a modelling limit).
MAX_BACKGROUND_STEPS = 100_000


class BackgroundStep(SpecModel):
    """From ``start_s`` on (until the next step) the unlisted work holds ``gpus`` whole GPUs and ``cpus``."""

    start_s: Seconds = Field(ge=0)
    gpus: Int = Field(default=0, ge=0, le=10_000_000)
    #: CPUs held (``'16'`` or ``'500m'``), counted in milli-CPU.
    cpus: MilliCpu = Field(default=0, ge=0)


class BackgroundLoad(SpecModel):
    """One pool's unlisted work: a step function or a constant share (exactly one of them)."""

    pool: str = Field(min_length=1)
    #: Held from the start to the end of the run: this share (0-1) of the pool's GPUs (of its CPUs on a
    #: CPU-only pool), rounded down to whole GPUs (milli-CPU).
    share: Float | None = Field(default=None, ge=0.0, le=1.0)
    steps: tuple[BackgroundStep, ...] = Field(default=(), max_length=MAX_BACKGROUND_STEPS)

    @model_validator(mode="after")
    def _shape(self) -> BackgroundLoad:
        if (self.share is None) == (not self.steps):
            raise ValueError("a background load gives either share or steps (exactly one of them)")
        starts = [step.start_s for step in self.steps]
        for k in range(1, len(starts)):
            if starts[k] <= starts[k - 1]:
                raise ValueError(
                    f"steps[{k}].start_s {starts[k]:g} is not after steps[{k - 1}].start_s "
                    f"{starts[k - 1]:g}: steps are given in increasing start_s"
                )
        return self

    def held(self, pool: NodePool) -> list[tuple[float, int, int]]:
        """(start_s, GPUs, milli-CPU) held from each instant on; a share is one step at 0."""
        if self.share is None:
            return [(step.start_s, step.gpus, step.cpus) for step in self.steps]
        if pool.gpus_per_node:
            return [(0.0, int(self.share * pool.count * pool.gpus_per_node), 0)]
        return [(0.0, 0, int(self.share * pool.count * pool.cpu))]


def check_background(loads: Sequence[BackgroundLoad], pools: Sequence[NodePool]) -> None:
    """Every load names a fixed pool of the cluster, at most once, and holds no more than the pool has."""
    by_name = {pool.name: pool for pool in pools}
    seen: set[str] = set()
    for k, load in enumerate(loads):
        pool = by_name.get(load.pool)
        where = f"background[{k}]"
        if pool is None:
            raise ValueError(
                f"{where}.pool {load.pool!r} is not a pool of the cluster "
                f"(pools: {', '.join(sorted(by_name))})"
            )
        if load.pool in seen:
            raise ValueError(f"{where}.pool {load.pool!r} has a background load already: give one per pool")
        seen.add(load.pool)
        if pool.autoscaling is not None or pool.failures is not None or pool.interruptions is not None:
            raise ValueError(
                f"{where}.pool {load.pool!r} adds or removes nodes (autoscaling, failures or interruptions); "
                "a background load is modelled on pools of fixed nodes only"
            )
        shared = pool.replicated is not None or pool.mig is not None
        gpus = pool.count * pool.gpus_per_node
        for start, held_gpus, held_cpu in load.held(pool):
            if held_gpus and shared:
                raise ValueError(
                    f"{where}.pool {load.pool!r} shares its GPUs (time-slicing, MPS or MIG); a background "
                    "load holds whole GPUs, so it is modelled on plain GPU pools only"
                )
            if held_gpus > gpus or held_cpu > pool.count * pool.cpu:
                raise ValueError(
                    f"{where} holds {held_gpus} GPUs and {held_cpu / 1000:g} CPUs from {start:g} s, more "
                    f"than pool {load.pool!r} has ({gpus} GPUs, {pool.count * pool.cpu / 1000:g} CPUs)"
                )
