"""The simulator's side of the interference model (fleetlab.model.interference): per node, the summed
demand of the pods computing there, and their slowdown, re-timed whenever one starts or stops.

Re-timing goes through sim/pod_pace.py, the same mechanism time-slicing uses, so a pod both time-sliced
and contended runs at 1 / (slicing × interference). Work per start or stop is O(pods on that node).

Subscribes to ``start``, ``stop`` and ``run_end``; built only for a scenario with an interference model.
May change: the pace of the pods on a contended node (through pod pace).
"""

from __future__ import annotations

import numpy as np

from fleetlab.model.interference import InterferenceModel
from fleetlab.model.node_demand import RESOURCES
from fleetlab.sim.book import scenario_positions
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.interference_result import InterferenceTable
from fleetlab.sim.pod_pace import PodPace


class Interference:
    """Summed demand per node and resource; pods with a demand slow down while their node is over."""

    def __init__(self, sim: EngineHandle, model: InterferenceModel, pace: PodPace) -> None:
        self.sim = sim
        self.pace = pace
        self.alpha = model.alpha
        self.demand = np.asarray(
            [model.demand_of(job.job_class, job.interference_demand) for job in sim.jobs], dtype=np.float64
        ).reshape(-1, len(RESOURCES))
        capacity = [
            [float(model.capacity.get(pool.name, {}).get(r, 1.0)) for r in RESOURCES] for pool in sim.pools
        ]
        self.capacity = np.asarray(capacity, dtype=np.float64)[np.asarray(sim.state.pool, dtype=np.int64)]
        self.load = np.zeros((sim.state.n, len(RESOURCES)), dtype=np.float64)
        self.on_node: dict[int, set[int]] = {}
        self.node_of: dict[int, int] = {}
        sim.on.start.append(self.started)
        sim.on.stop.append(self.stopped)
        sim.on.run_end.append(self.finish)

    def started(self, pod: int, wall_ms: int) -> None:
        """The pod began computing: add its demand to its node and re-time the node's pods."""
        sim = self.sim
        demand = self.demand[int(sim.book.job[pod])]
        if not demand.any() or pod in sim.failing:  # an OOM-killed pod never computes
            return
        node = int(sim.book.node[pod])
        self.pace.begin(pod, wall_ms, interfered=True)
        self.load[node] += demand
        self.on_node.setdefault(node, set()).add(pod)
        self.node_of[pod] = node
        self._retime(node)

    def stopped(self, pod: int) -> None:
        """The pod stopped computing (or was never counted): take its demand off its node."""
        node = self.node_of.pop(pod, None)
        if node is None:
            return
        self.pace.end(pod)
        self.on_node[node].discard(pod)
        self.load[node] -= self.demand[int(self.sim.book.job[pod])]
        if not self.on_node[node]:
            self.load[node] = 0.0  # no drift left behind by float sums
        self._retime(node)

    def _retime(self, node: int) -> None:
        """Each pod's factor: the largest max(1, load / capacity) ** alpha over resources it uses."""
        over = np.maximum(1.0, self.load[node] / self.capacity[node]) ** self.alpha
        job = self.sim.book.job
        for pod in sorted(self.on_node[node]):
            uses = self.demand[int(job[pod])] > 0
            factor = float(over[uses].max())
            self.pace.set_factors(pod, interference=factor)

    def finish(self, parts: ResultParts) -> None:
        """Per job (scenario order): wall time computed under the model and the extra it cost."""
        sim = self.sim
        n = len(sim.jobs)
        if not n:
            empty = np.zeros(0, dtype=np.float64)
            parts.interference = InterferenceTable(empty, empty)
            return
        starts = sim.book.first_pod[:-1]
        inverse = scenario_positions(sim.order)
        pace = self.pace
        parts.interference = InterferenceTable(
            job_interfered_ms=np.add.reduceat(pace.interfered_ms, starts)[inverse],
            job_extra_ms=np.add.reduceat(pace.interference_extra_ms, starts)[inverse],
        )
