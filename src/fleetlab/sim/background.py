"""Background load (the scenario's ``background:``, model/background.py): room on a pool's nodes held by
work the history does not list.

Each step of a pool's load is an event of this feature's own kind, scheduled when the run starts (a
``share`` is one step at 0). At a step the pool's held GPUs and CPUs move to the step's figures: room is
given back from the last node slots first, and taken on ready nodes in slot order (packed, as a bin-packing
scheduler would place the unlisted pods). Background work never evicts a pod: room a step wants that pods
hold now is taken as it frees, in the step it frees, before that step's scheduling cycle gives it to a
pending pod. Placement sees held room as requested (``ClusterState.hold``); held whole GPUs are taken on
the node's GPU devices too, and count as allocated in the cluster counters. Per node the billing units held
(GPUs on a GPU node, milli-CPU on a CPU-only node) × ms are summed for the cost split's ``background``
bucket; no pod, job or segment row stands for the load. The events are optional: they never keep a run
going once nothing waits or is still to arrive.

Subscribes to ``run_start`` (the steps), ``tick`` (room freed for a load that is short), ``run_end`` (the
held unit-ms) and its own event kind (optional).
May change: ``ClusterState.hold`` on the pool's nodes, the GPU devices (``state.devices``), the cluster
counters and the step's touched nodes (as GPU tenancy does for shared GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetlab.placement.devices import Holding
from fleetlab.placement.state import IntArray
from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle, ResultParts


@dataclass
class PoolLoad:
    """One pool's load: its node slots, its steps (ms, GPUs, milli-CPU) and what it wants now."""

    nodes: IntArray
    steps: list[tuple[int, int, int]]
    want_gpus: int = 0
    want_cpu: int = 0


def _packed(available: IntArray, need: int) -> IntArray:
    """Per node what to take, filling the nodes in order until ``need`` is met."""
    before = np.cumsum(available) - available
    taken: IntArray = np.minimum(available, np.maximum(need - before, 0))
    return taken


class Background:
    """The background loads of one run."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        state = sim.state
        pool_index = {pool.name: k for k, pool in enumerate(sim.pools)}
        self.loads: list[PoolLoad] = []
        for load in sim.resolved.scenario.background:
            k = pool_index[load.pool]
            nodes = np.flatnonzero(state.pool == k).astype(np.int64)
            steps = [(to_ms(s), g, c) for s, g, c in load.held(sim.pools[k])]
            self.loads.append(PoolLoad(nodes, steps))
        n = state.n
        #: Per node the GPUs and milli-CPU held now, and the GPU devices they took.
        self.gpus = np.zeros(n, dtype=np.int64)
        self.cpu = np.zeros(n, dtype=np.int64)
        self.holdings: dict[int, Holding] = {}
        #: Per node its billing unit held × ms so far, and since when the current amount is held.
        self.gpu_node = state.allocatable[:, state.gpu_col] > 0
        self.unit_ms = np.zeros(n, dtype=np.int64)
        self.since = np.zeros(n, dtype=np.int64)
        #: Loads holding less than they want, and the release generation they were last settled at.
        self.short: set[int] = set()
        self.seen = -1
        on = sim.on
        self.kind = on.event_kind(self.due, quiet=self.quiet)
        on.run_start.append(self.schedule)
        on.tick.append(self.refill)
        on.run_end.append(self.finish)

    def schedule(self) -> None:
        """Every step of every load, in load order."""
        for k, load in enumerate(self.loads):
            for s, (at, _, _) in enumerate(load.steps):
                self.sim.schedule(at, self.kind, k, s)

    def quiet(self) -> bool:
        """A step can change nothing: no pod bound, waiting for a node or still to arrive, no node booting."""
        sim = self.sim
        return sim.submissions_left == 0 and sim.bound_pods == 0 and not len(sim.queue) and sim.booting == 0

    def due(self, k: int, s: int) -> None:
        """Step ``s`` of load ``k``: hold its figures from now on."""
        load = self.loads[k]
        _, load.want_gpus, load.want_cpu = load.steps[s]
        self.settle(k)

    def refill(self, now: int) -> None:
        """Room freed since the last try goes to a load that is short, before any pending pod."""
        state = self.sim.state
        if self.short and state.release_generation != self.seen:
            for k in sorted(self.short):
                self.settle(k)
            self.seen = state.release_generation

    def _target(self, nodes: IntArray, held: IntArray, want: int, col: int) -> IntArray:
        """Per node of the pool what the load should hold: give back from the last nodes, take in order."""
        have = int(held.sum())
        if want < have:
            return held - _packed(held[::-1], have - want)[::-1]
        state = self.sim.state
        room = np.where(state.ready[nodes], np.maximum(state.free[nodes, col], 0), 0)
        return held + _packed(room, want - have)

    def settle(self, k: int) -> None:
        """Move load ``k``'s holdings towards what it wants; note it short when pods hold the rest."""
        load, state = self.loads[k], self.sim.state
        nodes = load.nodes
        gpus = self._target(nodes, self.gpus[nodes], load.want_gpus, state.gpu_col)
        cpu = self._target(nodes, self.cpu[nodes], load.want_cpu, state.cpu_col)
        for i in np.flatnonzero((gpus != self.gpus[nodes]) | (cpu != self.cpu[nodes])).tolist():
            self._hold(int(nodes[i]), int(gpus[i]), int(cpu[i]))
        if int(gpus.sum()) < load.want_gpus or int(cpu.sum()) < load.want_cpu:
            self.short.add(k)
        else:
            self.short.discard(k)

    def _hold(self, node: int, gpus: int, cpu: int) -> None:
        """Hold ``gpus`` whole GPUs and ``cpu`` milli-CPU on ``node`` from now on."""
        sim = self.sim
        state = sim.state
        self._close(node, sim.now)
        dg, dc = gpus - int(self.gpus[node]), cpu - int(self.cpu[node])
        delta = np.zeros(state.width, dtype=np.int64)
        delta[state.gpu_col], delta[state.cpu_col] = dg, dc
        before = int(state.requested[node, state.gpu_col])
        devices = state.devices
        if dg and devices is not None:
            old = self.holdings.pop(node, None)
            if old is not None:
                devices.release(node, old)
            if gpus:
                self.holdings[node] = devices.take_whole(node, gpus)
        state.hold(node, delta)
        if dg > 0:
            sim.counters.gpus_taken(dg, before == 0)
        elif dg < 0:
            sim.counters.gpus_returned(-dg, before + dg == 0)
        self.gpus[node], self.cpu[node] = gpus, cpu
        sim.touched.add(node)

    def _close(self, node: int, now: int) -> None:
        """Bill the amount held on ``node`` up to ``now``."""
        held = self.gpus[node] if self.gpu_node[node] else self.cpu[node]
        self.unit_ms[node] += int(held) * max(0, now - int(self.since[node]))
        self.since[node] = now

    def finish(self, parts: ResultParts) -> None:
        """The held unit-ms per node, up to the end of the run."""
        for node in np.flatnonzero((self.gpus > 0) | (self.cpu > 0)).tolist():
            self._close(node, parts.end_ms)
        parts.background_unit_ms = self.unit_ms
