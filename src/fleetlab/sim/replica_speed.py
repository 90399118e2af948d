"""How fast a service replica serves on the GPU it holds now: the co-tenancy GPU tenancy knows, turned into
a speed by ``services/sharing.replica_speed``.

Read at each evaluation step of a service (sim/services.py), for the ready replicas only:

* a replica on a time-sliced GPU runs at 1/(1 + α·(k−1)) with k the pods computing on that GPU now (the
  same k and α GPU tenancy paces batch pods with);
* on an MPS GPU (``sharing.mps`` with n replicas) at 1/n whatever the other clients do;
* on a share of a plain GPU (``gpu_milli``, KAI fractions) at 1/k with k the pods computing on a share of
  that GPU (compute is time-shared, α = 1 — shares are not slowed otherwise in fleetlab);
* on a MIG instance at g/7 of the whole GPU for a ``g``g profile, whatever runs on the other instances;
* on whole GPUs of its own at full speed. A replica on several GPUs runs at its slowest one's speed.

Not a feature of its own: the service controller builds it from GPU tenancy and asks it per replica.
"""

from __future__ import annotations

from fleetlab.model.cluster import NodePool
from fleetlab.model.mig import profiles
from fleetlab.placement.devices import MIG, TIME_SLICED, Holding
from fleetlab.services.sharing import replica_speed
from fleetlab.sim.gpu_tenancy import GpuTenancy
from fleetlab.sim.handle import EngineHandle

MIG_PREFIX = "nvidia.com/mig-"


def shares_gpus(sim: EngineHandle) -> bool:
    """Whether a replica of this run can ever share a GPU or hold part of one: some pool time-slices,
    runs MPS or MIG, or some pod asks for a share of a GPU."""
    if any(p.replicated is not None or p.mig is not None for p in sim.pools):
        return True
    return any(job.shares_gpu for job in sim.job_table.templates)


class ReplicaSpeeds:
    """Per ready replica its speed now, from what GPU tenancy holds for it."""

    def __init__(self, sim: EngineHandle, tenancy: GpuTenancy) -> None:
        self.sim = sim
        self.tenancy = tenancy
        self._mig_slices: dict[tuple[int, str], int] = {}

    def speed(self, pod: int) -> float:
        """The pod's speed relative to a GPU of its own (1.0 without sharing)."""
        holdings = self.tenancy.holdings.get(pod)
        if not holdings:
            return 1.0
        node = int(self.sim.book.node[pod])
        pool_index = int(self.sim.state.pool[node])
        return min(self._holding_speed(h, node, pool_index) for h in holdings)

    def _holding_speed(self, holding: Holding, node: int, pool_index: int) -> float:
        pool = self.sim.pools[pool_index]
        if holding.kind == TIME_SLICED:
            if pool.mps is not None:
                return replica_speed("mps", mps_replicas=pool.mps.replicas)
            alpha = pool.time_slicing.slowdown_per_extra_pod if pool.time_slicing is not None else 1.0
            k = max(self.tenancy.pods_on(node, gpu) for gpu in set(holding.gpus))
            return replica_speed("time-slicing", max(k, 1), alpha)
        if holding.kind == MIG:
            return replica_speed("mig", mig_compute_slices=self._slices(pool_index, pool, holding.resource))
        if holding.shared:
            return replica_speed("fraction", max(self._computing_on_share(node, holding.gpus[0]), 1))
        return 1.0

    def _computing_on_share(self, node: int, gpu: int) -> int:
        """Pods computing now on a share of plain GPU ``gpu`` of ``node``."""
        book, holdings = self.sim.book, self.tenancy.holdings
        count = 0
        for pod in self.sim.node_pods[node]:
            if book.start_ms[pod] < 0 or book.end_ms[pod] >= 0:
                continue
            if any(h.shared and h.gpus[0] == gpu for h in holdings.get(pod, ())):
                count += 1
        return count

    def _slices(self, pool_index: int, pool: NodePool, resource: str) -> int:
        """Compute slices of the MIG instances a resource stands for on this pool."""
        key = (pool_index, resource)
        slices = self._mig_slices.get(key)
        if slices is None:
            assert pool.mig is not None and pool.gpu_model is not None
            if resource.startswith(MIG_PREFIX):
                name = resource[len(MIG_PREFIX) :]
            else:  # the single strategy: every instance has the layout's one profile
                name = pool.mig.layout[0].partition("@")[0].strip()
            slices = self._mig_slices[key] = profiles(pool.gpu_model)[name].compute_slices
        return slices
