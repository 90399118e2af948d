"""DefaultPreemption from the simulator's side: which bound pods are possible victims, and evicting the
victims kube-scheduler's PostFilter picks (fleetlab.placement.preemption) so a pod can take their node."""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.preemption import Victim, find_preemption
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.handle import EngineHandle


def victims_on(sim: EngineHandle, node: int, below: int) -> list[Victim]:
    """Pods on ``node`` with priority below ``below`` (the only possible victims)."""
    book = sim.book
    out = []
    for p in sorted(sim.node_pods[node]):
        j = int(book.job[p])
        priority = sim.job_priority(j)
        if priority >= below:
            continue
        start = int(book.start_ms[p]) if book.start_ms[p] >= 0 else sim.now
        out.append(Victim(p, priority, start, sim.compiled[sim.spec_of(j)].request))
    return out


def preempt_for(sim: EngineHandle, pod: int, compiled: CompiledPod, scheduler: Scheduler) -> int:
    """Evict the chosen victims now and return the nominated node (or -1)."""
    book, state = sim.book, sim.state
    job_index = book.job_at[pod]
    priority = sim.job_priority(job_index)
    lower: list[int] = []
    for prio, pods in sim.bound_by_priority.items():
        if prio < priority:
            lower.extend(pods)
    if not lower:
        return -1  # nothing of lower priority runs anywhere: preemption cannot help
    if sim.job_columns.preempt_never[job_index]:
        return -1
    reclaimable = np.zeros_like(state.allocatable)
    nodes = np.asarray([int(book.node[p]) for p in lower], dtype=np.int64)
    requests = np.stack([sim.compiled[sim.spec_of(int(book.job[p]))].request for p in lower])
    np.add.at(reclaimable, nodes, requests)
    plan = find_preemption(scheduler, compiled, priority, lambda n: victims_on(sim, n, priority), reclaimable)
    if plan is None:
        return -1
    for victim in plan.victims:
        if book.node[victim] >= 0:
            sim.evict_job_pods(victim)
    fits = scheduler.fits_now(compiled)
    return plan.node if fits[plan.node] else -1
