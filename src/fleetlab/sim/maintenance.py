"""Node maintenance windows (the scenario's ``maintenance:`` list): cordon, drain after a grace period, bring
the nodes back.

Each window is three events of this feature's own kind, scheduled when the run starts: the **cordon** at
``start_s`` (the nodes take no new pods; pods on them keep running), the **drain** ``grace_period_s`` later
(every pod still on a node is evicted through the engine's eviction path, as a node failure evicts: work
since its last checkpoint lost, requeued, a gang with all its pods) and the **uncordon** at ``start_s +
duration_s``. A node in several windows at once stays cordoned until the last one ends; a pool that is
``unschedulable`` stays so. The nodes stay billed through the window (they are not removed). The events are
optional: they keep a run going only while a pod is bound, waiting or still to arrive, so a window after
the last job never stretches the run or its bills.

Subscribes to ``run_start`` (the windows' events) and its own event kind (optional).
May change: ``cordon`` the drained nodes; asks ``evict_job_pods`` for the pods still on them at the drain.
"""

from __future__ import annotations

from fleetlab.sim.events import to_ms
from fleetlab.sim.handle import EngineHandle

#: The three events of a window, carried as the event's ``attempt``.
CORDON, DRAIN, UNCORDON = 0, 1, 2


class Maintenance:
    """The drain windows of one run."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        by_name = {name: node for node, name in enumerate(sim.state.node_names)}
        pool_nodes: dict[str, list[int]] = {}
        for node, info in enumerate(sim.node_infos):
            pool_nodes.setdefault(sim.pools[info.pool].name, []).append(node)
        #: Per window: (cordon ms, drain ms, uncordon ms, its nodes in index order).
        self.windows: list[tuple[int, int, int, list[int]]] = []
        for window in sim.resolved.scenario.maintenance:
            nodes = set(pool_nodes[window.pool]) if window.pool is not None else set()
            nodes.update(by_name[name] for name in window.nodes)
            start = to_ms(window.start_s)
            drain, end = start + to_ms(window.grace_period_s), start + to_ms(window.duration_s)
            self.windows.append((start, drain, end, sorted(nodes)))
        #: Per node, how many windows hold it cordoned now.
        self.held = [0] * sim.state.n
        self.kind = sim.on.event_kind(self.due, quiet=self.quiet)
        sim.on.run_start.append(self.schedule)

    def schedule(self) -> None:
        """Each window's cordon, drain and uncordon, in window order."""
        for k, (start, drain, end, _) in enumerate(self.windows):
            self.sim.schedule(start, self.kind, k, CORDON)
            self.sim.schedule(drain, self.kind, k, DRAIN)
            self.sim.schedule(end, self.kind, k, UNCORDON)

    def quiet(self) -> bool:
        """Maintenance can change nothing: no pod bound, waiting for a node, or still to arrive, and no node
        booting (a pending pod may be waiting for exactly the node a window gives back)."""
        sim = self.sim
        return sim.submissions_left == 0 and sim.bound_pods == 0 and not len(sim.queue) and sim.booting == 0

    def due(self, window: int, phase: int) -> None:
        """One of a window's three events."""
        sim = self.sim
        nodes = self.windows[window][3]
        if phase == CORDON:
            for node in nodes:
                self.held[node] += 1
                sim.cordon(node, True)
        elif phase == DRAIN:
            book = sim.book
            for node in nodes:
                for pod in sorted(sim.node_pods[node]):
                    if book.node[pod] == node and book.end_ms[pod] < 0:  # a gang peer may have gone already
                        sim.evict_job_pods(pod)
        else:
            for node in nodes:
                self.held[node] -= 1
                if not self.held[node]:
                    sim.cordon(node, sim.pools[sim.node_infos[node].pool].unschedulable)
