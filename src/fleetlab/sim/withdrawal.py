"""Pending jobs withdrawn at a given instant (``recorded.withdraw_s``: when a user deleted or cancelled a job
that never started): the job then leaves the scheduling queue, and Kueue, recorded as cancelled.

One timer per such job is set when the run starts, at its withdrawal instant (its submit time when that is
earlier). The job's first bind cancels it: a job the replay started before its user gave up on it runs to
its end. A timer that fires before the job has arrived (a scheduling latency longer than the job waited)
withdraws it then, and the job never reaches the queue. A withdrawn job's wait ends at its withdrawal and
is censored there (it never started) in every wait figure; it counts as cancelled in the jobs by state.

Subscribes to ``run_start`` (the timers), ``arrive`` (a job withdrawn before it arrived stays out) and its
own event kind.
May change: asks ``withdraw_job``.
"""

from __future__ import annotations

from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle


class Withdrawal:
    """The withdrawal timers of one run."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        recorded = sim.resolved.scenario.recorded
        wanted = recorded.withdraw_s if recorded is not None else {}
        submit = sim.submit_ms
        #: (job in submit order, when it is withdrawn), in submit order.
        self.timers = [
            (job, max(to_ms(wanted[job_id]), int(submit[job])))
            for job, job_id in enumerate(sim.job_table.ids.to_pylist())
            if job_id in wanted
        ]
        #: Jobs withdrawn before they arrived: they never join the queue.
        self.before_arrival: set[int] = set()
        self.kind = sim.on.event_kind(self.due, stale=self.stale)
        sim.on.run_start.append(self.schedule)
        sim.on.arrive.append(self.arrived)

    def schedule(self) -> None:
        """Every job's timer."""
        for job, at in self.timers:
            self.sim.schedule(at, self.kind, job)

    def arrived(self, job: int, now: int) -> bool:
        """Hold (for good) a job withdrawn before it arrived."""
        return job in self.before_arrival

    def started(self, job: int) -> bool:
        """Some pod of the job was bound at some time (on a node now, done, evicted or failed)."""
        book = self.sim.book
        return any(
            book.node_at[p] >= 0 or book.end_ms_at[p] >= 0 or book.evictions[p] > 0 or book.failed[p]
            for p in book.pods_of(job)
        )

    def stale(self, job: int, _: int) -> bool:
        """The timer can do nothing: the job started (its bind cancelled it) or is gone already."""
        return job in self.sim.withdrawn or self.started(job)

    def due(self, job: int, _: int) -> None:
        """Withdraw the job unless it started meanwhile."""
        sim = self.sim
        if self.stale(job, 0):
            return
        if job >= len(sim.job_table) - sim.submissions_left:  # jobs arrive in index order
            self.before_arrival.add(job)
        sim.withdraw_job(job)
