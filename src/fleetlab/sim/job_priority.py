"""Slurm's multifactor job priority beyond fair share and age, and its recalculation period
(``scheduler.fair_share``: ``weight_job_size``, ``weight_partition``, ``weight_qos``, ``calc_period_s``).

After Slurm's priority/multifactor plugin (https://slurm.schedmd.com/priority_multifactor.html;
SchedMD/slurm src/plugins/priority/multifactor/priority_multifactor.c @01551acc, ``set_priority_factors``
and ``_get_priority_internal``), with ``N`` the cluster's nodes and ``C`` its CPU cores:

* **job size**, a job of ``n`` nodes (its pods) and ``c`` cores in all: ``(n / N + c / C) / 2``;
  ``favor_small`` (PriorityFavorSmall): ``((N − n) / N + (C − c) / C) / 2``; ``small_relative_to_time``
  (PriorityFlags SMALL_RELATIVE_TO_TIME): ``max(n · C / N, c) / T / C`` with ``T`` the job's time limit in
  whole minutes (at least 1), ``1 −`` that with ``favor_small``; clamped to 0..1;
* **partition**: the ``PriorityJobFactor`` of the job's partition over the largest one;
* **QOS**: the ``Priority`` of the job's QOS over the largest one;
* **TRES** (PriorityWeightTRES, ``tres_weights``): per weighted TRES (``cpu``, ``mem``, ``node``,
  ``gres/gpu``) the job's amount (its pods' requests; its pods as nodes) over its partition's — the
  nodes labelled ``partition.slurm.fleetlab.io/NAME`` for its ``fleetlab.io/partition`` label, else the
  whole cluster (Slurm's one default partition) — ``set_priority_factors``'s ``priority_tres``, added up
  unclamped;

each times its weight. These parts do not change while a job waits, so they are worked out once per job
when the run starts (O(jobs)); fair share and age change (sim/fair_share.py). Nice is not replayed (no
trace records it).

With ``calc_period_s`` (PriorityCalcPeriod) the priority is Slurm's stored one: a whole number, at least 1
(``(uint32_t)`` of the sum), set when the job is first queued (``priority_p_set`` at submit) and recomputed
for every waiting job at each whole multiple of the period since the run began (the decay thread), so the
queue order changes only then. The run wakes at a recalculation only while jobs wait and something else is
still due (an idle queue never keeps the run going). Each scheduling cycle reads the stored numbers
(O(1) per waiting entry, the sort's own cost); each recalculation costs O(waiting jobs).

Subscribes (with ``calc_period_s``) to ``tick`` and ``next_time``.
May change: nothing (the queueing discipline reads ``priorities``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fleetlab.model.batch_policy import PARTITION_LABEL, QOS_LABEL, partition_key
from fleetlab.model.batch_policy import FairShare as FairShareConfig
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.sim.events import to_ms
from fleetlab.sim.fair_share import FairShare
from fleetlab.sim.handle import EngineHandle

#: Slurm's priority is a uint32; 0 is kept for held jobs.
MAX_PRIORITY = 0xFFFFFFFF


def job_size_factor(
    nodes: int, cores: float, cluster_nodes: int, cluster_cores: float, config: FairShareConfig,
    limit_minutes: float,
) -> float:  # fmt: skip
    """The job-size factor of a job of ``nodes`` nodes and ``cores`` cores (module docstring)."""
    if cluster_nodes <= 0 or cluster_cores <= 0:
        return 0.0
    if config.small_relative_to_time:
        size = max(nodes * cluster_cores / cluster_nodes, cores) / max(limit_minutes, 1.0) / cluster_cores
        factor = 1.0 - size if config.favor_small else size
    elif config.favor_small:
        factor = (cluster_nodes - nodes) / cluster_nodes
        if cores:
            factor = (factor + (cluster_cores - cores) / cluster_cores) / 2
    else:
        factor = nodes / cluster_nodes
        if cores:
            factor = (factor + cores / cluster_cores) / 2
    return min(max(factor, 0.0), 1.0)


def _minutes(limit_s: float | None) -> float:
    """A time limit as Slurm keeps it, in whole minutes (a limit in seconds rounds up; none: 1)."""
    return float(max(math.ceil(limit_s / 60.0 - 1e-9), 1)) if limit_s is not None else 1.0


def tres_totals(sim: EngineHandle, partition: str) -> dict[str, float]:
    """Per TRES the amount the partition's present nodes hold (the cluster's where no node is labelled for it
    or ``partition`` is empty): CPUs in millicores, memory in bytes, nodes, GPUs."""
    state = sim.state
    present = sim.initially_present
    if partition:
        key = partition_key(partition)
        member = np.asarray([info.labels.get(key) == "true" for info in sim.node_infos], dtype=bool) & present
        if member.any():
            present = member
    column = state.column
    allocatable = state.allocatable[present]
    return {
        "cpu": float(allocatable[:, column[CPU]].sum()),
        "mem": float(allocatable[:, column[MEMORY]].sum()),
        "node": float(np.count_nonzero(present)),
        "gres/gpu": float(allocatable[:, column[GPU]].sum()) if GPU in column else 0.0,
    }


def tres_part(
    requests: dict[str, int], pods: int, weights: dict[str, float], totals: dict[str, float]
) -> float:
    """The weighted TRES factors of a job of ``pods`` pods, each asking ``requests`` (module docstring)."""
    amounts = {"cpu": requests.get(CPU, 0) * pods, "mem": requests.get(MEMORY, 0) * pods, "node": pods,
               "gres/gpu": requests.get(GPU, 0) * pods}  # fmt: skip
    part = 0.0
    for name, weight in weights.items():
        total = totals[name]
        if amounts[name] and total > 0:
            part += weight * (amounts[name] / total)
    return part


def normalised(table: dict[str, int]) -> dict[str, float]:
    """Each value over the largest (Slurm's ``norm_priority`` of partitions and QOSes); all 0 when it is 0."""
    top = max(table.values(), default=0)
    return {name: (value / top if top > 0 else 0.0) for name, value in table.items()}


class JobPriority:
    """The multifactor priority of waiting jobs: fair share and age (``FairShare``) plus the fixed parts."""

    def __init__(self, sim: EngineHandle, fair_share: FairShare, limits_s: list[float | None]) -> None:
        self.sim = sim
        self.fair_share = fair_share
        config = fair_share.config
        table = sim.job_table
        state = sim.state
        present = sim.initially_present
        cluster_nodes = int(np.count_nonzero(present))
        cluster_cores = float(state.allocatable[present, state.cpu_col].sum()) / 1000.0
        partitions = normalised(config.partition_job_factors)
        qos = normalised(config.qos_priorities)
        templates = table.templates
        pods = table.column("pods").tolist()
        tres = config.tres_weights
        totals: dict[str, dict[str, float]] = {}
        fixed: list[float] = []
        for job, template in enumerate(table.column("template").tolist()):
            spec = templates[template]
            part = 0.0
            if config.weight_job_size:
                cores = spec.requests.get("cpu", 0) / 1000.0 * int(pods[job])
                part += config.weight_job_size * job_size_factor(
                    int(pods[job]), cores, cluster_nodes, cluster_cores, config, _minutes(limits_s[job])
                )
            if config.weight_partition:
                part += config.weight_partition * partitions.get(spec.labels.get(PARTITION_LABEL, ""), 0.0)
            if config.weight_qos:
                part += config.weight_qos * qos.get(spec.labels.get(QOS_LABEL, ""), 0.0)
            if tres:
                name = spec.labels.get(PARTITION_LABEL, "")
                if name not in totals:
                    totals[name] = tres_totals(sim, name)
                part += tres_part(spec.requests, int(pods[job]), tres, totals[name])
            fixed.append(part)
        #: Per job (submit order) its job-size, partition, QOS and TRES parts, weighted.
        self.fixed = fixed
        period = config.calc_period_s
        self.period_ms = None if period is None else to_ms(period)
        #: Stored priorities (with a calculation period): job -> whole-number priority.
        self.stored: dict[int, int] = {}
        self.next_calc_ms = self.period_ms or 0
        #: Recalculations run (``calc_period_s``).
        self.recalculations = 0
        #: Runs a scheduling cycle in the new order after a recalculation (the queueing discipline's).
        self.recalculated: Callable[[int], int] | None = None
        if self.period_ms is not None:
            sim.on.tick.append(self.tick)
            sim.on.next_time.append(self.next_time)

    def current(self, jobs: list[int], now: int) -> list[float]:
        """The priority of each of ``jobs`` worked out at ``now`` (floats, as the fair-share ordering)."""
        values = self.fair_share.priorities(jobs, now)
        fixed = self.fixed
        return [v + fixed[j] for v, j in zip(values, jobs, strict=True)]

    def priorities(self, jobs: list[int], now: int) -> list[float]:
        """The priority the queue orders ``jobs`` by: worked out now, or as stored at the last
        recalculation (a job first seen gets its own at once)."""
        if self.period_ms is None:
            return self.current(jobs, now)
        stored = self.stored
        new = [j for j in jobs if j not in stored]
        if new:
            self._store(new, now)
        return [float(stored[j]) for j in jobs]

    def _store(self, jobs: list[int], now: int) -> None:
        for job, value in zip(jobs, self.current(jobs, now), strict=True):
            self.stored[job] = min(int(max(value, 1.0)), MAX_PRIORITY)  # C's cast: toward zero

    def tick(self, now: int) -> None:
        """A recalculation when one is due: every waiting job's priority anew."""
        period = self.period_ms
        if period is None or now < self.next_calc_ms:
            return
        self.next_calc_ms = (now // period + 1) * period
        job_at = self.sim.book.job_at
        waiting = sorted({job_at[key[2]] for key, _ in self.sim.queue.entries()})
        self.stored = {}
        self.recalculations += 1
        if waiting:
            self._store(waiting, now)
            if self.recalculated is not None:
                self.recalculated(0)

    def next_time(self, t_event: int | None, t_job: int | None) -> int | None:
        """The next recalculation, while jobs wait and something else (an event, an arrival) is still due."""
        due = min((t for t in (t_event, t_job) if t is not None), default=None)
        if due is None or due <= self.next_calc_ms or not len(self.sim.queue):
            return t_event
        return self.next_calc_ms
