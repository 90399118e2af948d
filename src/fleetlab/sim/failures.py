"""Node failures: per-pool exponential time between failures and a repair time, or a trace of failures.

Each node draws from its own seeded stream (scenario seed, a failure stream id, the node index), so a
node fails at the same times whatever the placement policy did with its pods: pack and spread meet the
same failures and differ only in what each failure hits (its blast radius).

Subscribes to no engine event: the node lifecycle calls it when a node comes up and a failure timer fires.
May change: nothing itself; asks the node lifecycle to fail a node (its pods are evicted).
"""

from __future__ import annotations

import numpy as np

from fleetlab.sim.events import MS_PER_HOUR, to_ms
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.lifecycle_result import FailureRecord
from fleetlab.sim.node_lifecycle import NodeLifecycle, Timer

#: Stream id mixed into the seed for failure draws (distinct from every other generator's stream).
FAILURE_STREAM = 0xFA11
#: Trace failures carry this token: they apply to whatever life of the node is up at that time.
TRACE_TOKEN = -1


class FailureModel:
    """Arms a failure clock per node when it comes up; a failure evicts its pods and starts a repair."""

    def __init__(self, sim: EngineHandle, life: NodeLifecycle) -> None:
        self.life = life
        self.sim = sim
        self.seed = sim.seed
        self._rng: dict[int, np.random.Generator] = {}
        self._repair: dict[int, int] = {}
        by_name = {name: i for i, name in enumerate(sim.state.node_names)}
        for pool in sim.pools:
            if pool.failures is None:
                continue
            for event in pool.failures.trace:
                node = by_name[event.node]
                life.fail_timers.push(to_ms(event.at_s), Timer.FAIL, node, TRACE_TOKEN)
                self._repair[_trace_key(node, to_ms(event.at_s))] = to_ms(event.repair_s)
        for present in np.flatnonzero(life.present).tolist():
            self.arm(present, life.ready_at(present))
        life.on_up = self.arm
        life.on_fail_timer = self.timer_fired

    def timer_fired(self, node: int, token: int) -> None:
        """A failure timer is due: the node fails if it is still the life the timer was drawn for."""
        if self.accepts(node, token):
            self.fail(node)

    def _stream(self, node: int) -> np.random.Generator:
        rng = self._rng.get(node)
        if rng is None:
            rng = np.random.Generator(
                np.random.PCG64(np.random.SeedSequence([self.seed, FAILURE_STREAM, node]))
            )
            self._rng[node] = rng
        return rng

    def arm(self, node: int, up_ms: int) -> None:
        """The node comes up at ``up_ms``: draw its time to failure from the pool's MTBF."""
        sim = self.sim
        failures = sim.pools[int(sim.state.pool[node])].failures
        if failures is None or failures.mtbf is None:
            return
        ttf = max(1, to_ms(float(self._stream(node).exponential(failures.mtbf))))
        self.life.fail_timers.push(up_ms + ttf, Timer.FAIL, node, int(self.life.token[node]))

    def accepts(self, node: int, token: int) -> bool:
        """A trace failure hits whichever life of the node is up; a drawn one only its own life."""
        return bool(self.life.up[node]) and (token == TRACE_TOKEN or token == int(self.life.token[node]))

    def fail(self, node: int) -> None:
        """Fail the node now: evict its pods, record the blast radius, schedule the repair."""
        life, sim = self.life, self.sim
        if not life.up[node]:
            return
        pool = sim.pools[int(sim.state.pool[node])]
        assert pool.failures is not None
        repair = self._repair.pop(_trace_key(node, sim.now), None)
        if repair is None:
            mean = pool.failures.repair_time
            drawn = (
                self._stream(node).exponential(mean)
                if pool.failures.repair_distribution == "exponential"
                else mean
            )
            repair = to_ms(float(drawn))
        before = len(sim.book.segments)
        life.fail(node, max(1, repair))
        new = sim.book.segments[before:]
        jobs = sim.jobs
        lost_gpu_ms = sum(s.lost_ms * jobs[int(sim.book.job[s.pod])].gpus_per_pod for s in new)
        life.record.failures.append(
            FailureRecord(
                t_ms=int(sim.now),
                node=sim.state.node_names[node],
                pool=pool.name,
                pods_evicted=sum(1 for s in new if s.evicted),
                gpu_hours_lost=lost_gpu_ms / MS_PER_HOUR,
                repair_ms=max(1, repair),
            )
        )


def _trace_key(node: int, t_ms: int) -> int:
    return node * (1 << 44) + t_ms
