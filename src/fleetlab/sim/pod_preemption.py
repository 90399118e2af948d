"""DefaultPreemption from the simulator's side: which bound pods are possible victims, and evicting the
victims kube-scheduler's PostFilter picks (fleetlab.placement.preemption) so a pod can take their node."""

from __future__ import annotations

import itertools

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.preemption import Victim, find_preemption
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import IntArray
from fleetlab.sim.handle import EngineHandle


def victims_on(sim: EngineHandle, node: int, below: int) -> list[Victim]:
    """Pods on ``node`` with priority below ``below`` (the only possible victims)."""
    book = sim.book
    job_at, start_ms_at, compiled, spec_of, now = (
        book.job_at,
        book.start_ms_at,
        sim.compiled,
        sim.spec_of,
        sim.now,
    )
    out = []
    for p in sorted(sim.node_pods[node]):
        j = job_at[p]
        priority = sim.job_priority(j)
        if priority >= below:
            continue
        start = start_ms_at[p]
        out.append(Victim(p, priority, start if start >= 0 else now, compiled[spec_of(j)].request))
    return out


def reclaimable_below(sim: EngineHandle, priority: int) -> IntArray | None:
    """Per node, the summed requests of the bound pods with priority below ``priority`` (None: no such pod).

    Read as columns (the pods' nodes and jobs, the jobs' spec ids) rather than pod by pod: a busy cluster
    has thousands of lower-priority pods, and this runs for every preemption dry run."""
    lower = [pods for prio, pods in sim.bound_by_priority.items() if prio < priority and pods]
    if not lower:
        return None
    book = sim.book
    count = sum(len(pods) for pods in lower)
    bound = np.fromiter(itertools.chain.from_iterable(lower), dtype=np.int64, count=count)
    jobs = book.job[bound]
    specs = sim.job_spec[jobs]
    for k in np.flatnonzero(specs < 0).tolist():  # not interned yet: spec_of interns it, in the pods' order
        specs[k] = sim.spec_of(int(jobs[k]))
    compiled = sim.compiled
    requests = np.stack([compiled[s].request for s in range(int(specs.max()) + 1)])
    reclaimable = np.zeros_like(sim.state.allocatable)
    np.add.at(reclaimable, book.node[bound], requests[specs])
    return reclaimable


def preempt_for(sim: EngineHandle, pod: int, compiled: CompiledPod, scheduler: Scheduler) -> int:
    """Evict the chosen victims now and return the nominated node (or -1)."""
    book = sim.book
    job_index = book.job_at[pod]
    priority = sim.job_priority(job_index)
    if sim.job_columns.preempt_never[job_index]:
        return -1
    reclaimable = reclaimable_below(sim, priority)
    if reclaimable is None:
        return -1  # nothing of lower priority runs anywhere: preemption cannot help
    plan = find_preemption(scheduler, compiled, priority, lambda n: victims_on(sim, n, priority), reclaimable)
    if plan is None:
        return -1
    for victim in plan.victims:
        if book.node[victim] >= 0:
            sim.evict_job_pods(victim)
    fits = scheduler.fits_now(compiled)
    return plan.node if fits[plan.node] else -1
