"""The engine's asks for jobs that features hold at arrival or withdraw before they start (the handle's
``hand_on`` and ``withdraw_job``), kept out of the engine core: they read only what the handle shows."""

from __future__ import annotations

from collections.abc import Callable

from fleetlab.sim.handle import EngineHandle


def hand_on(sim: EngineHandle, job: int, holder: Callable[[int, int], bool]) -> None:
    """A job the ``arrive`` subscriber ``holder`` held goes on: to the subscribers after it (Kueue), else
    to the scheduling queue."""
    chain = sim.on.arrive
    for hold in chain[chain.index(holder) + 1 :]:
        if hold(job, sim.now):
            return
    sim.enqueue(job)


def withdraw_job(sim: EngineHandle, job: int) -> None:
    """The job leaves before any pod of it was bound (its user deleted it while pending, or it was refused
    at submit): its pods leave the scheduling queue and stop waiting, never started and not requeued;
    ``withdraw`` subscribers hear it (Kueue drops the workload)."""
    book, now = sim.book, sim.now
    pods = book.pods_of(job)
    if sim.job_spec[job] >= 0:
        sim.queue.remove(sim.group_of(job), set(pods))
    for p in pods:
        book.stop_pending(p, now)
        book.attempt_at[p] += 1
    sim.withdrawn[job] = now
    for hook in sim.on.withdraw:
        hook(job)
