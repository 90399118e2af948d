"""Consolidation as KAI scheduler does it: move running preemptible pods to open room for a pending pod.

When a pod fits no node, look for a node where evicting some preemptible pods (smallest GPU request first)
would let it fit, and check on a copy of the free-capacity arrays that every evicted pod fits again on
another node (bin-packed: the node left with the fewest free GPUs). Only if all of them do is the move
committed: the pods are evicted (counted as evictions, their work since the last checkpoint lost), go back
to the queue and the pending pod is bound. Moved pods are single, non-gang pods not managed by Kueue and
without GPU shares; the pending pod must not want a share either. Enabled by
``scheduler.consolidation: true``. Against churn, a pod consolidation moved is not moved again within
``scheduler.consolidation_cooldown_s`` (10 min by default). The candidate search is one array pass over the
running movable pods (grouped by node, cumulative freed capacity), not a loop over nodes.

Subscribes to ``make_room`` and ``run_end``; built only when ``scheduler.consolidation`` is on.
May change: nothing itself; asks to evict the pods it moves (``evict_job_pods``).
"""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts

#: Nodes tried per pending pod (those that need the fewest evicted GPUs first).
MAX_CANDIDATES = 16
#: moved_ms of a pod consolidation never moved.
NEVER_MOVED = np.iinfo(np.int64).min // 2


class Consolidator:
    """Plans and commits consolidation moves for one simulator."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        self.evictions = 0
        self._hopeless: dict[int, tuple[int, int]] = {}
        self.cooldown_ms = to_ms(sim.config.consolidation_cooldown_s)
        #: Per pod, when consolidation last evicted it (churn guard).
        self.moved_ms = np.full(sim.book.n_pods, NEVER_MOVED, dtype=np.int64)
        #: Per job (submit order): preemptible, not a multi-pod gang, not managed by Kueue.
        columns = sim.job_columns
        preemptible = sim.resolved.jobs.per_template(lambda job: job.preemptible, dtype=bool)
        self.movable_job = (
            preemptible[sim.order] & ~(columns.gang & (columns.pods > 1)) & ~columns.kueue_managed
        )
        self._spec_rows = 0
        self._spec_request = np.zeros((0, len(sim.state.resource_names)), dtype=np.int64)
        self._spec_shares = np.zeros(0, dtype=bool)
        sim.on.make_room.append(self.make_room)
        sim.on.run_end.append(self.finish)

    def finish(self, parts: ResultParts) -> None:
        """The pods consolidation moved (also counted in the jobs' evictions)."""
        parts.consolidation_evictions = self.evictions

    def _spec_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Per interned spec id: its request vector and whether it wants a GPU share (grown lazily)."""
        compiled = self.sim.compiled
        if self._spec_rows < len(compiled):
            new = compiled[self._spec_rows :]
            self._spec_request = np.vstack([self._spec_request, *[c.request[None, :] for c in new]])
            shares = np.asarray([any(c.spec.gpu_share) for c in new], dtype=bool)
            self._spec_shares = np.concatenate([self._spec_shares, shares])
            self._spec_rows = len(compiled)
        return self._spec_request, self._spec_shares

    def _victims(self, static: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Movable running pods on ``static`` nodes, past their cool-down: (pods, nodes, requests), ordered
        by node, then GPU request, then pod index (the order victims are taken in on one node)."""
        sim, book = self.sim, self.sim.book
        bound = np.flatnonzero((book.node >= 0) & (book.end_ms < 0))
        nodes = book.node[bound]
        jobs = book.job[bound]
        requests, shares = self._spec_arrays()
        spec = sim.job_spec[jobs]
        keep = (
            static[nodes]
            & self.movable_job[jobs]
            & (spec >= 0)
            & (sim.now - self.moved_ms[bound] >= self.cooldown_ms)
        )
        pods, nodes, spec = bound[keep], nodes[keep], spec[keep]
        keep = ~shares[spec]
        pods, nodes, req = pods[keep], nodes[keep], requests[spec[keep]]
        order = np.lexsort((pods, req[:, sim.state.gpu_col], nodes))
        return pods[order], nodes[order], req[order]

    def candidates(self, compiled: CompiledPod, static: np.ndarray) -> list[tuple[int, int, int, list[int]]]:
        """(GPUs evicted, pods evicted, node, victims) for every node where evicting its smallest movable pods
        in turn makes ``compiled`` fit, fewest GPUs first; one array pass over all nodes' victims."""
        state = self.sim.state
        pods, nodes, req = self._victims(static)
        if len(pods) == 0:
            return []
        cols = compiled.request_cols
        want = compiled.request[cols]
        starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]])
        group = np.cumsum(np.r_[True, nodes[1:] != nodes[:-1]]) - 1
        cum = np.cumsum(req, axis=0)
        before = np.vstack([np.zeros((1, req.shape[1]), dtype=np.int64), cum])[starts][group]
        freed = cum - before  # per victim: what its node frees with it and the victims before it
        free = state.free[nodes]
        fits_now = (free[:, cols] >= want).all(axis=1)
        ok = ((free[:, cols] + freed[:, cols]) >= want).all(axis=1) & ~fits_now
        hits = np.flatnonzero(ok)
        if len(hits) == 0:
            return []
        first = hits[np.r_[True, group[hits][1:] != group[hits][:-1]]]
        gpu = state.gpu_col
        out = [
            (
                int(freed[i, gpu]),
                int(i - starts[group[i]] + 1),
                int(nodes[i]),
                pods[starts[group[i]] : i + 1].tolist(),
            )
            for i in first.tolist()
        ]
        out.sort()
        return out

    def make_room(self, pod: int, compiled: CompiledPod, scheduler: Scheduler) -> int:
        """Evict and re-queue pods so that ``pod`` fits; returns its node, or -1 when no move works."""
        sim = self.sim
        state = sim.state
        if any(compiled.spec.gpu_share):
            return -1
        stamp = (state.release_generation, state.topology_generation)
        if self._hopeless.get(id(compiled)) == stamp:
            return -1
        static = scheduler.static_mask(compiled)
        if compiled.spec.pod_dependent:  # inter-pod (anti-)affinity and spread, judged as the cluster is now
            for plugin in scheduler.pod_filters:
                static = static & plugin.passes(state, compiled)
        for _, _, node, chosen in self.candidates(compiled, static)[:MAX_CANDIDATES]:
            if self._replaceable(node, chosen, compiled):
                for v in chosen:
                    sim.evict_job_pods(v)
                    self.moved_ms[v] = sim.now
                    self.evictions += 1
                if scheduler.fits_now(compiled)[node]:
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
