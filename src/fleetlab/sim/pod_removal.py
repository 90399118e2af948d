"""Pods leaving their nodes other than by succeeding: evicted (requeued), failed (with their gang) or deleted.

Kept out of the engine core (sim/engine.py), whose ``release`` each of them calls; they change the pod
book as the engine's lifecycle methods do and tell the same subscribers (``gone``, ``job_failed``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from fleetlab.placement.state import IntArray
from fleetlab.sim.book import PodBook
from fleetlab.sim.handle import PodHook, TakeHook
from fleetlab.sim.queue import SchedulingQueue
from fleetlab.sim.result import NEVER


class Engine(Protocol):
    """What these read and change of the engine (sim/engine.py's ``Engine``, which calls them)."""

    book: PodBook
    now: int
    evictions: int
    queue: SchedulingQueue
    _on_gone: tuple[PodHook, ...]
    _on_job_failed: tuple[PodHook, ...]
    _multi_gang: list[bool]

    job_spec: IntArray
    _on_evict: tuple[TakeHook, ...]

    def release(self, pod: int, evicted: bool) -> int: ...

    def is_gang(self, job: int) -> bool: ...

    def enqueue(self, job: int, pods: list[int] | None = None) -> None: ...

    def group_of(self, job: int) -> int: ...


def evict_job(sim: Engine, job: int) -> None:
    """Take every unfinished pod of a job off its node or out of the scheduling queue; they are not
    requeued (Kueue requeues the workload in its ClusterQueue)."""
    book = sim.book
    if sim.job_spec[job] >= 0:
        sim.queue.remove(sim.group_of(job), set(book.pods_of(job)))
    evict(sim, book.pods_of(job), drop_unbound=True)
    book.job_ready[job] = 0


def evict_job_pods(sim: Engine, pod: int) -> None:
    """Evict a pod (and, for a gang job, every pod of its job) and requeue what was evicted."""
    for take in sim._on_evict:
        if take(pod):
            return  # evicted its own way (Kueue evicts the whole workload)
    book = sim.book
    job_index = int(book.job[pod])
    multi_gang = sim._multi_gang[job_index]
    members = list(book.pods_of(job_index)) if multi_gang else [pod]
    requeue = evict(sim, members, drop_unbound=multi_gang)
    if multi_gang:
        book.job_ready[job_index] = 0
        if sim.is_gang(job_index):
            sim.enqueue(job_index)
            return
    if requeue:
        sim.enqueue(job_index, requeue)


def evict(sim: Engine, pods: Iterable[int], drop_unbound: bool) -> list[int]:
    """Take the unfinished ones of ``pods`` off their nodes (work since the last checkpoint lost; each
    pending again from now) and return them; ``drop_unbound``: the others' pending events go too."""
    book, evicted = sim.book, []
    for p in pods:
        if book.end_ms[p] >= 0:
            continue
        if book.node[p] >= 0:
            sim.release(p, evicted=True)
            book.reset_for_requeue(p, sim.now)
            sim.evictions += 1
            evicted.append(p)
        elif drop_unbound:
            book.attempt[p] += 1
        else:
            continue
        for gone in sim._on_gone:  # deleted; its controller creates it again when requeued
            gone(p)
    return evicted


def fail_now(sim: Engine, failing: list[int]) -> None:
    """Fail ``failing`` (this step's pods whose allocation failed): a failed pod is not retried (a Job with
    ``backoffLimit: 0``); every pod of a gang job fails with it."""
    book = sim.book
    for pod in failing:
        job_index = book.job_at[pod]
        members = list(book.pods_of(job_index)) if sim._multi_gang[job_index] else [pod]
        for p in members:
            if book.end_ms[p] >= 0 or book.failed[p]:
                continue
            if book.node[p] >= 0:
                sim.release(p, evicted=True)
                book.node[p] = -1
                book.attempt[p] += 1
            book.stop_pending(p, sim.now)  # a failed pod waits for nothing any more
            book.failed[p] = True
            for gone in sim._on_gone:
                gone(p)
        for hook in sim._on_job_failed:
            hook(job_index)


def delete_pod(sim: Engine, pod: int) -> None:
    """Take a pod off its node (not an eviction: nothing is requeued) or out of the queue."""
    book = sim.book
    if book.node[pod] >= 0:
        sim.release(pod, evicted=False)
        book.node[pod] = -1
        for column in (book.bound_ms, book.ready_ms, book.start_ms):
            column[pod] = NEVER
    else:
        sim.queue.remove(sim.group_of(book.job_at[pod]), {pod})
    book.stop_pending(pod, sim.now)  # a deleted pod waits for nothing
    book.attempt[pod] += 1  # drops the pod's pending prep-done / finish events
    for gone in sim._on_gone:
        gone(pod)
