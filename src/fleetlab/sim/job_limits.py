"""Job-count limits (the scenario's ``job_limits``: Slurm MaxJobs / MaxJobsPU / GrpJobs / MaxSubmit, Maui
MAXJOB): an admission gate in front of Kueue and the scheduling queue.

A job arriving is counted under every limit that covers it (its user, team, LocalQueue, namespace, the
cluster). Over a ``max_submitted`` it is refused — withdrawn at once, cancelled, never started. Otherwise it
is *admitted* when every ``max_running`` covering it has room, and goes on to Kueue or the scheduling
queue; else it waits here, in order of pod priority then submission, behind the first limit that is full.
An admitted job holds its place under each limit until it ends (succeeds, fails, or is withdrawn); a job
evicted and requeued keeps it. Counting from admission, as Kueue counts quota, differs from Slurm's count of
running jobs only while admitted jobs wait for nodes. When a job ends, the jobs waiting behind the limits
it held are offered again, first come first served. The work is O(limits) per job, nothing per pod.

Subscribes to ``arrive`` (before Kueue), ``job_done``, ``job_failed`` and ``withdraw``.
May change: holds jobs at arrival and hands them on (``hand_on``); refuses jobs (``withdraw_job``).
"""

from __future__ import annotations

import heapq

from fleetlab.model.batch_policy import JobLimit
from fleetlab.sim.handle import EngineHandle

#: A limit and whom it counts: (limit index, the user / team / queue / namespace name, "" for the cluster).
LimitKey = tuple[int, str]


def _scope_value(
    limit: JobLimit, user: str | None, team: str, namespace: str, queue: str | None
) -> str | None:
    """Whom of ``limit``'s scope a job belongs to (None: the limit does not cover it)."""
    value = {
        "user": user,
        "team": team,
        "namespace": namespace,
        "queue": f"{namespace}/{queue}" if queue is not None else None,
        "cluster": "",
    }[limit.per]
    if value is None or (limit.name is not None and value != limit.name):
        return None
    return value


class JobLimitGate:
    """Counts admitted and submitted jobs per limit key and holds the jobs over a limit."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        self.limits = sim.resolved.scenario.job_limits
        table = sim.job_table
        keys_of_template: list[tuple[LimitKey, ...]] = []
        for template in table.templates:
            keys = []
            for k, limit in enumerate(self.limits):
                value = _scope_value(limit, template.user, template.team, template.namespace, template.queue)
                if value is not None:
                    keys.append((k, value))
            keys_of_template.append(tuple(keys))
        #: Per job (submit order) the limit keys covering it.
        self.keys: list[tuple[LimitKey, ...]] = [
            keys_of_template[t] for t in table.column("template").tolist()
        ]
        self.running: dict[LimitKey, int] = {}
        self.submitted: dict[LimitKey, int] = {}
        #: Per full limit key, the jobs waiting behind it: (-priority, submit ms, job).
        self.waiting: dict[LimitKey, list[tuple[int, int, int]]] = {}
        #: Jobs waiting here, and admitted jobs not yet ended.
        self.held: set[int] = set()
        self.admitted: set[int] = set()
        sim.on.arrive.append(self.arrived)
        sim.on.job_done.append(self.ended)
        sim.on.job_failed.append(self.ended)
        sim.on.withdraw.append(self.withdrawn)

    def _full(self, job: int) -> LimitKey | None:
        """The first ``max_running`` covering the job that has no room, or None."""
        for key in self.keys[job]:
            cap = self.limits[key[0]].max_running
            if cap is not None and self.running.get(key, 0) >= cap:
                return key
        return None

    def _admit(self, job: int) -> None:
        self.admitted.add(job)
        for key in self.keys[job]:
            self.running[key] = self.running.get(key, 0) + 1

    def _wait(self, job: int, key: LimitKey) -> None:
        self.held.add(job)
        sim = self.sim
        heapq.heappush(
            self.waiting.setdefault(key, []), (-sim.job_priority(job), int(sim.submit_ms[job]), job)
        )

    def arrived(self, job: int, now: int) -> bool:
        """Refuse the job over a ``max_submitted``; admit it (pass it on) or hold it."""
        keys = self.keys[job]
        if not keys:
            return False
        for key in keys:
            cap = self.limits[key[0]].max_submitted
            if cap is not None and self.submitted.get(key, 0) >= cap:
                self.sim.withdraw_job(job)  # refused at submit: never counted
                return True
        for key in keys:
            self.submitted[key] = self.submitted.get(key, 0) + 1
        full = self._full(job)
        if full is None:
            self._admit(job)
            return False
        self._wait(job, full)
        return True

    def ended(self, job: int) -> None:
        """An admitted job ended: its places are free; offer them to the jobs waiting behind them."""
        if job not in self.admitted:
            return
        self.admitted.discard(job)
        keys = self.keys[job]
        for key in keys:
            self.running[key] -= 1
            self.submitted[key] -= 1
        for key in keys:
            self._offer(key)

    def withdrawn(self, job: int) -> None:
        """A job withdrawn while waiting here (or admitted and still waiting for nodes) leaves its counts."""
        if job in self.held:
            self.held.discard(job)  # its heap entry is dropped when reached
            for key in self.keys[job]:
                self.submitted[key] -= 1
        elif job in self.admitted:
            self.ended(job)

    def _offer(self, key: LimitKey) -> None:
        """Admit the jobs waiting behind ``key`` while they fit every limit; one blocked by another limit
        moves behind that one."""
        queue = self.waiting.get(key)
        sim = self.sim
        while queue:
            job = queue[0][2]
            if job not in self.held:
                heapq.heappop(queue)
                continue
            full = self._full(job)
            if full == key:
                return
            heapq.heappop(queue)
            if full is not None:
                self._wait(job, full)
                continue
            self.held.discard(job)
            self._admit(job)
            sim.hand_on(job, self.arrived)
