"""Consolidation as KAI scheduler does it: move running preemptible pods to open room for a pending pod.

When a pod fits no node, look for a node where evicting some preemptible pods (smallest GPU request first)
would let it fit, and check on a copy of the free-capacity arrays that every evicted pod fits again on
another node (bin-packed: the node left with the fewest free GPUs). Only if all of them do is the move
committed: the pods are evicted (counted as evictions, their work since the last checkpoint lost), go back
to the queue and the pending pod is bound. Moved pods are single, non-gang pods not managed by Kueue and
without GPU shares; the pending pod must not want a share either. Enabled by
``scheduler.consolidation: true``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fleetlab.placement.framework import CompiledPod
    from fleetlab.placement.scheduler import Scheduler
    from fleetlab.sim.simulator import Simulator

#: Nodes tried per pending pod (those that need the fewest evicted GPUs first).
MAX_CANDIDATES = 16


class Consolidator:
    """Plans and commits consolidation moves for one simulator."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.evictions = 0
        self._hopeless: dict[int, tuple[int, int]] = {}

    def _movable(self, pod: int) -> bool:
        sim = self.sim
        job = sim.jobs[int(sim.book.job[pod])]
        spec = sim.compiled[sim.spec_of(int(sim.book.job[pod]))].spec
        return (
            job.preemptible
            and not (job.gang and job.pods > 1)
            and job.queue is None
            and not any(spec.gpu_share)
        )

    def make_room(self, pod: int, compiled: CompiledPod, scheduler: Scheduler) -> int:
        """Evict and re-queue pods so that ``pod`` fits; returns its node, or -1 when no move works."""
        sim = self.sim
        state = sim.state
        if any(compiled.spec.gpu_share):
            return -1
        stamp = (state.release_generation, state.topology_generation)
        if self._hopeless.get(id(compiled)) == stamp:
            return -1
        cols = compiled.request_cols
        want = compiled.request[cols]
        static = scheduler.static_mask(compiled)
        candidates = []
        for node in np.flatnonzero(static).tolist():
            victims = sorted(
                (p for p in sim.node_pods[node] if self._movable(p)),
                key=lambda p: (int(self._request(p)[state.gpu_col]), p),
            )
            if not victims:
                continue
            free = state.free[node, cols].copy()
            chosen: list[int] = []
            for v in victims:
                if (free >= want).all():
                    break
                free += self._request(v)[cols]
                chosen.append(v)
            if chosen and (free >= want).all():
                gpus = sum(int(self._request(v)[state.gpu_col]) for v in chosen)
                candidates.append((gpus, len(chosen), node, chosen))
        candidates.sort()
        for _, _, node, chosen in candidates[:MAX_CANDIDATES]:
            if self._replaceable(node, chosen, compiled):
                for v in chosen:
                    sim.evict_job_pods(v)
                    self.evictions += 1
                if scheduler._incremental(compiled).fits[node]:
                    return int(node)
                return -1
        self._hopeless[id(compiled)] = stamp
        return -1

    def _request(self, pod: int) -> np.ndarray:
        sim = self.sim
        return sim.compiled[sim.spec_of(int(sim.book.job[pod]))].request

    def _replaceable(self, node: int, victims: list[int], pending: CompiledPod) -> bool:
        """Whether, with ``pending`` on ``node``, every victim fits on another node (largest first)."""
        sim = self.sim
        state = sim.state
        free = state.free.copy()
        for v in victims:
            free[node] += self._request(v)
        free[node] -= pending.request
        gpu = state.gpu_col
        for v in sorted(victims, key=lambda p: (-int(self._request(p)[gpu]), p)):
            spec_id = sim.spec_of(int(sim.book.job[v]))
            compiled = sim.compiled[spec_id]
            scheduler = sim.schedulers[sim.spec_profile[spec_id]]
            cols = compiled.request_cols
            fits = scheduler.static_mask(compiled) & (free[:, cols] >= compiled.request[cols]).all(axis=1)
            fits[node] = False
            options = np.flatnonzero(fits)
            if not len(options):
                return False
            left = free[options, gpu] - compiled.request[gpu]
            target = int(options[np.lexsort((options, left))[0]])
            free[target] -= compiled.request
        return True
