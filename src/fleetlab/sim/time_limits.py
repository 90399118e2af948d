"""Slurm's partition time limits (the scenario's ``time_limits``; model/batch_policy.py).

Slurm (slurm.conf(5), ``PartitionName`` ``MaxTime`` / ``DefaultTime`` and ``EnforcePartLimits``;
https://slurm.schedmd.com/resource_limits.html): a job's time limit is the one it asked for, else its
partition's ``DefaultTime``, else its ``MaxTime``. A job asking for more than ``MaxTime`` is rejected at
submission when ``EnforcePartLimits`` is ALL, ANY or YES; with NO (the default) it is accepted and stays
pending, reason ``PartitionTimeLimit``, until the partition's limit changes (here: for good). A running job
is ended when its time limit has passed since it started (``TIMEOUT``; ``OverTimeLimit`` 0).

Here: a job over its partition's ``MaxTime`` is refused when it arrives (withdrawn, cancelled, never
started) or held for the whole run (pending, censored). With ``kill_at_limit`` a pod that starts computing
and needs longer than its job's limit — or any pod of such a job where pods can slow down after they start
(interference, time-sliced GPUs) — gets one event at its start plus the limit; if it is still computing
then, it fails with its gang. O(1) per job at arrival and per pod at start; nothing for jobs without a
limit. ``plan_ms`` of EASY backfill uses the same limits (``job_time_limits_s``).

Subscribes to ``arrive`` (before the job limits and Kueue), ``start`` and ``run_end``; registers an event
kind.
May change: refuses jobs (``withdraw_job``); fails pods at their limit (``fail``).
"""

from __future__ import annotations

from fleetlab.model.batch_policy import PartitionTime
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.result import PendingJob

PARTITION_TIME_LIMIT = "PartitionTimeLimit"


def _partition_of(sim: EngineHandle) -> list[PartitionTime | None]:
    """Per job (submit order) its partition's time limits (None: no ``time_limits`` or no partition)."""
    rules = sim.resolved.scenario.time_limits
    if rules is None:
        return [None] * len(sim.job_table)
    by_name = {p.name: p for p in rules.partitions}
    of_template = [by_name.get(t.labels.get(rules.label, "")) for t in sim.job_table.templates]
    return [of_template[t] for t in sim.job_table.column("template").tolist()]


def job_time_limits_s(sim: EngineHandle) -> list[float | None]:
    """Per job (submit order) its time limit: the wall time it asked for (``recorded.walltime_s``), else
    its partition's ``DefaultTime``, else ``MaxTime`` (``time_limits``); None: no limit known."""
    recorded = sim.resolved.scenario.recorded
    walltime = recorded.walltime_s if recorded is not None else {}
    partitions = _partition_of(sim)
    out: list[float | None] = []
    for job, job_id in enumerate(sim.job_table.ids.to_pylist()):
        limit = walltime.get(job_id)
        part = partitions[job]
        if limit is None and part is not None:
            limit = part.default_time_s if part.default_time_s is not None else part.max_time_s
        out.append(limit)
    return out


class TimeLimitGate:
    """Refuses or holds jobs over their partition's ``MaxTime`` and ends pods at their job's limit."""

    def __init__(self, sim: EngineHandle, paced: bool) -> None:
        self.sim = sim
        rules = sim.resolved.scenario.time_limits
        assert rules is not None
        self.rules = rules
        recorded = sim.resolved.scenario.recorded
        walltime = recorded.walltime_s if recorded is not None else {}
        partitions = _partition_of(sim)
        ids = sim.job_table.ids.to_pylist()
        #: Jobs that asked for more than their partition's MaxTime.
        self.over: set[int] = {
            job for job, part in enumerate(partitions)
            if part is not None and part.max_time_s is not None
            and walltime.get(ids[job], 0.0) > part.max_time_s
        }  # fmt: skip
        #: Per job its limit in ms (-1: none).
        self.limit_ms: list[int] = [-1 if s is None else to_ms(s) for s in job_time_limits_s(sim)]
        self.paced = paced
        #: Jobs refused at submit, held for good, and pods ended at their limit.
        self.refused = 0
        self.held: list[int] = []
        self.timeouts = 0
        self.timed_out_jobs: set[int] = set()
        sim.on.arrive.append(self.arrived)
        if rules.kill_at_limit:
            self._kill = sim.on.event_kind(self.limit_reached, stale=self.is_stale)
            sim.on.start.append(self.started)
        sim.on.run_end.append(self.close)

    def arrived(self, job: int, _: int) -> bool:
        """A job over its partition's MaxTime: refused (``enforce_at_submit``) or held for good."""
        if job not in self.over:
            return False
        if self.rules.enforce_at_submit:
            self.refused += 1
            self.sim.withdraw_job(job)
        else:
            self.held.append(job)
        return True

    def started(self, pod: int, wall_ms: int) -> None:
        """A pod starts computing: its end at the job's limit, if it may run past it."""
        sim = self.sim
        limit = self.limit_ms[sim.book.job_at[pod]]
        if limit >= 0 and (wall_ms > limit or self.paced):
            sim.schedule(sim.now + limit, self._kill, pod, int(sim.book.attempt_at[pod]))

    def is_stale(self, pod: int, attempt: int) -> bool:
        """The pod was evicted or restarted since, or it ended."""
        book = self.sim.book
        return attempt != book.attempt_at[pod] or book.end_ms_at[pod] >= 0 or bool(book.failed[pod])

    def limit_reached(self, pod: int, attempt: int) -> None:
        """The pod's job ran for its whole limit: ended (TIMEOUT), with its gang."""
        if self.is_stale(pod, attempt):
            return
        self.timeouts += 1
        self.timed_out_jobs.add(self.sim.book.job_at[pod])
        self.sim.fail(pod)

    def close(self, parts: ResultParts) -> None:
        """Jobs held for good are pending at the end, with Slurm's reason."""
        ids = self.sim.job_table.ids.to_pylist()
        pods = self.sim.job_table.column("pods").tolist()
        for job in self.held:
            parts.pending.append(
                PendingJob(
                    str(ids[job]), int(pods[job]), PARTITION_TIME_LIMIT, PARTITION_TIME_LIMIT,
                    "its requested time limit exceeds its partition's MaxTime (EnforcePartLimits=NO)",
                )
            )  # fmt: skip
