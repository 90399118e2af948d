"""Fair-share priority with decay (``scheduler.fair_share``; Slurm's priority/multifactor, sshare's figures).

Each owner (a job's user, or its team) accrues usage while its pods compute: per pod ``cpu_weight`` per CPU
core plus ``gpu_weight`` per GPU, per second. Usage decays continuously with the half-life:
``U(t) = U(t0) · 2^(-(t - t0)/h) + r · (1 - 2^(-(t - t0)/h)) / λ`` while the owner's usage rate ``r`` stays
the same, ``λ = ln 2 / h`` (``h`` 0: no decay, ``U(t) = U(t0) + r · (t - t0)``); it is brought up to date
only when the owner's rate changes or a factor is read, so the cost is O(1) per pod start and stop. The
fair-share factor is Slurm's classic ``F = 2^(-(U / ΣU) / S)``, ``S`` the owner's normalised share (1 when
nobody used anything yet); a job's multifactor priority is ``weight_fairshare · F + weight_age · min(age /
max_age, 1)``. The queueing discipline orders the queue by it (sim/queue_discipline.py).

Subscribes to ``start`` and ``stop`` (a pod's usage accrues while it computes).
May change: nothing (the queueing discipline and the job-limit gate read ``priorities``).
"""

from __future__ import annotations

import math

import numpy as np

from fleetlab.model.batch_policy import FairShare as FairShareConfig
from fleetlab.sim.handle import EngineHandle

#: The owner of jobs that name no user (fair share per user).
NO_OWNER = "(none)"


class FairShare:
    """Decayed usage per owner and the multifactor priority of pending jobs."""

    def __init__(self, sim: EngineHandle, config: FairShareConfig) -> None:
        self.sim = sim
        self.config = config
        table = sim.job_table  # submit order
        if config.by == "user":
            names = table.per_template(lambda job: job.user or NO_OWNER, dtype=object)
        else:
            names = table.per_template(lambda job: job.team, dtype=object)
        self.owners: list[str] = sorted(set(names.tolist()))
        index = {name: k for k, name in enumerate(self.owners)}
        #: Per job its owner's index.
        self.owner_of: list[int] = [index[name] for name in names.tolist()]
        cpu = table.per_template(lambda job: job.requests.get("cpu", 0), dtype=np.float64) / 1000.0
        gpus = table.per_template(lambda job: job.gpus_per_pod, dtype=np.float64)
        #: Per job, one pod's usage per second.
        self.units: list[float] = (cpu * config.cpu_weight + gpus * config.gpu_weight).tolist()
        raw = np.asarray([config.shares.get(name, 1.0) for name in self.owners], dtype=np.float64)
        self.shares = raw / raw.sum()
        n = len(self.owners)
        self.usage = [0.0] * n
        self.rate = [0.0] * n
        self.since = [0] * n
        half_life_ms = config.half_life_s * 1000.0
        self.decay = math.log(2) / half_life_ms if half_life_ms > 0 else 0.0  # per ms
        self.submit_ms = sim.submit_ms
        sim.on.start.append(self.started)
        sim.on.stop.append(self.stopped)

    def _usage_at(self, owner: int, now: int) -> float:
        """The owner's decayed usage (unit-seconds) at ``now``."""
        dt = now - self.since[owner]
        rate_per_ms = self.rate[owner] / 1000.0
        if self.decay == 0.0:
            return self.usage[owner] + rate_per_ms * dt
        kept = math.exp(-self.decay * dt)
        return self.usage[owner] * kept + rate_per_ms * (1.0 - kept) / self.decay

    def _change(self, job: int, sign: int) -> None:
        owner, now = self.owner_of[job], self.sim.now
        self.usage[owner] = self._usage_at(owner, now)
        self.since[owner] = now
        self.rate[owner] += sign * self.units[job]

    def started(self, pod: int, _: int) -> None:
        """A pod starts computing: its owner's usage rate rises."""
        self._change(self.sim.book.job_at[pod], 1)

    def stopped(self, pod: int) -> None:
        """A pod stops: a computing one takes its rate off its owner's (a preparing one never added it)."""
        book = self.sim.book
        if book.start_ms_at[pod] >= 0:
            self._change(book.job_at[pod], -1)

    def factors(self, now: int) -> list[float]:
        """Per owner its fair-share factor ``2^(-(U / ΣU) / S)`` at ``now`` (1 while nobody used anything)."""
        usage = [self._usage_at(o, now) for o in range(len(self.owners))]
        total = math.fsum(usage)
        if total <= 0:
            return [1.0] * len(usage)
        return [2.0 ** (-(u / total) / float(s)) for u, s in zip(usage, self.shares, strict=True)]

    def priorities(self, jobs: list[int], now: int) -> list[float]:
        """The multifactor priority of each of ``jobs`` at ``now``."""
        config = self.config
        factors = self.factors(now)
        weight_fs, weight_age = float(config.weight_fairshare), float(config.weight_age)
        max_age_ms = config.max_age_s * 1000.0
        submit, owner_of = self.submit_ms, self.owner_of
        return [
            weight_fs * factors[owner_of[j]] + weight_age * min((now - int(submit[j])) / max_age_ms, 1.0)
            for j in jobs
        ]
