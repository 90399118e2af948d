"""Node windows: planned maintenance (the scenario's ``maintenance:`` list) and the down and drain windows a
history recorded (``recorded.windows``) — cordon, evict what runs, bring the nodes back.

Each window is up to three events of this feature's own kind, scheduled when the run starts: the **cordon**
at its start (the nodes take no new pods; pods on them keep running), the **drain** (every pod still on a
node is evicted through the engine's eviction path, as a node failure evicts: work since its last checkpoint
lost, requeued, a gang with all its pods) and the **uncordon** at its end. A maintenance window drains
``grace_period_s`` after its start and ends at ``start_s + duration_s``. A recorded ``drain`` window never
drains (a cordoned node's pods ran on), a ``down`` one drains at its start (the node was unavailable); one
with no end lasts to the run's end. A recorded window of every node (no node, no pool) holds every node slot;
one of a pool takes, at its start, the pool's first ready node no other window holds (an autoscaled pool's
node has no fixed slot). A node in several windows at once stays cordoned until the last one ends; a pool
that is ``unschedulable`` stays so. The nodes stay billed through the window (they are not removed). The
events are optional: they keep a run going only while a pod is bound, waiting or still to arrive, so a
window after the last job never stretches the run or its bills.

Subscribes to ``run_start`` (the windows' events) and its own event kind (optional).
May change: ``cordon`` the window's nodes; asks ``evict_job_pods`` for the pods still on them at the drain.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle

#: The three events of a window, carried as the event's ``attempt``.
CORDON, DRAIN, UNCORDON = 0, 1, 2


@dataclass
class NodeWindow:
    """One window: its instants (``drain_ms`` / ``end_ms`` None: never) and nodes; ``pool`` (a pool index)
    when it takes one node of that pool at its start."""

    start_ms: int
    drain_ms: int | None
    end_ms: int | None
    nodes: list[int]
    pool: int | None = None


def node_windows(sim: EngineHandle) -> list[NodeWindow]:
    """The scenario's maintenance windows, then its recorded windows, in the order given."""
    by_name = {name: node for node, name in enumerate(sim.state.node_names)}
    pool_index = {pool.name: k for k, pool in enumerate(sim.pools)}
    pool_nodes: dict[str, list[int]] = {}
    for node, info in enumerate(sim.node_infos):
        pool_nodes.setdefault(sim.pools[info.pool].name, []).append(node)
    scenario = sim.resolved.scenario
    windows: list[NodeWindow] = []
    for window in scenario.maintenance:
        nodes = set(pool_nodes[window.pool]) if window.pool is not None else set()
        nodes.update(by_name[name] for name in window.nodes)
        start = to_ms(window.start_s)
        windows.append(
            NodeWindow(
                start, start + to_ms(window.grace_period_s), start + to_ms(window.duration_s), sorted(nodes)
            )
        )
    for recorded in scenario.recorded.windows if scenario.recorded is not None else ():
        start = to_ms(recorded.start_s)
        end = None if recorded.end_s is None else to_ms(recorded.end_s)
        drain = start if recorded.state == "down" else None
        if recorded.node is not None:
            windows.append(NodeWindow(start, drain, end, [by_name[recorded.node]]))
        elif recorded.pool is not None:
            windows.append(NodeWindow(start, drain, end, [], pool_index[recorded.pool]))
        else:
            windows.append(NodeWindow(start, drain, end, list(range(sim.state.n))))
    return windows


class Maintenance:
    """The node windows of one run."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        self.windows = node_windows(sim)
        #: Per node, how many windows hold it cordoned now.
        self.held = [0] * sim.state.n
        self.kind = sim.on.event_kind(self.due, quiet=self.quiet)
        sim.on.run_start.append(self.schedule)

    def schedule(self) -> None:
        """Each window's cordon, drain and uncordon, in window order."""
        for k, window in enumerate(self.windows):
            self.sim.schedule(window.start_ms, self.kind, k, CORDON)
            if window.drain_ms is not None:
                self.sim.schedule(window.drain_ms, self.kind, k, DRAIN)
            if window.end_ms is not None:
                self.sim.schedule(window.end_ms, self.kind, k, UNCORDON)

    def quiet(self) -> bool:
        """Maintenance can change nothing: no pod bound, waiting for a node, or still to arrive, and no node
        booting (a pending pod may be waiting for exactly the node a window gives back)."""
        sim = self.sim
        return sim.submissions_left == 0 and sim.bound_pods == 0 and not len(sim.queue) and sim.booting == 0

    def _pick(self, window: NodeWindow) -> None:
        """A pool window takes the pool's first ready node no window holds (else its first free slot)."""
        sim = self.sim
        slots = [n for n, info in enumerate(sim.node_infos) if info.pool == window.pool and not self.held[n]]
        ready = [n for n in slots if sim.state.ready[n]]
        window.nodes = (ready or slots)[:1]

    def due(self, k: int, phase: int) -> None:
        """One of a window's three events."""
        sim = self.sim
        window = self.windows[k]
        if phase == CORDON:
            if window.pool is not None:
                self._pick(window)
            for node in window.nodes:
                self.held[node] += 1
                sim.cordon(node, True)
        elif phase == DRAIN:
            book = sim.book
            for node in window.nodes:
                for pod in sorted(sim.node_pods[node]):
                    if book.node[pod] == node and book.end_ms[pod] < 0:  # a gang peer may have gone already
                        sim.evict_job_pods(pod)
        else:
            for node in window.nodes:
                self.held[node] -= 1
                if not self.held[node]:
                    sim.cordon(node, sim.pools[sim.node_infos[node].pool].unschedulable)
