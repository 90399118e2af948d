"""What a run recorded: per-job, per-pod and per-node columns, the cluster timeline, pending reasons.

Columnar numpy arrays keep 100k-job results cheap to hold, summarise and write to Parquet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fleetlab.sim.interference_result import InterferenceTable
from fleetlab.sim.interruption_log import InterruptionLog
from fleetlab.sim.lifecycle_result import LifecycleRecord
from fleetlab.sim.service_record import ServiceRecord
from fleetlab.sim.step_columns import StepColumns

IntArray = NDArray[np.int64]

#: Sentinel for "never happened" in time columns.
NEVER = -1


def names_at(names: Sequence[str], index: NDArray[np.int64]) -> list[str]:
    """``names[i]`` for each i of ``index`` ("" where i is -1, e.g. an unplaced pod's node): a name column
    of a result table gathered in one array step instead of a Python loop over rows."""
    table = np.empty(len(names) + 1, dtype=object)
    table[: len(names)] = names
    table[-1] = ""
    return list(table[np.asarray(index, dtype=np.int64)].tolist())


@dataclass(frozen=True)
class PendingJob:
    """A job with pods still unplaced when the run ended, and kube-scheduler's words for why."""

    job_id: str
    pods_pending: int
    message: str
    blocked_by: str
    detail: str


@dataclass
class JobTable:
    """One row per job; times in ms, NEVER where the job did not get that far."""

    ids: Sequence[str]  # an IdColumn from a run (sim/id_column.py)
    job_class: list[str]
    team: list[str]
    priority: IntArray
    pods: IntArray
    gpus_per_pod: IntArray
    cpu_milli_per_pod: IntArray
    submit_ms: IntArray
    last_bound_ms: IntArray
    running_ms: IntArray
    end_ms: IntArray
    completed: NDArray[np.bool_]
    evictions: IntArray
    #: When Kueue last admitted the job (its submit time for jobs not managed by Kueue).
    admitted_ms: IntArray
    cluster_queue: list[str]
    #: Queue wait: per pod the time spent pending (not bound) summed over its attempts, the job's the
    #: largest of its pods'. For a job still waiting at the end it runs to the end: a lower bound.
    queue_wait_ms: IntArray
    #: Some unfinished pod of the job was still waiting for a node when the run ended (its wait censored).
    waiting_at_end: NDArray[np.bool_]
    #: An OOM kill failed the job (time-sliced GPUs; no retry).
    failed: NDArray[np.bool_]
    #: Kueue: time spent waiting for admission, summed over admissions; a wait still open runs to the end
    #: (0 for jobs not managed by Kueue). Part of queue_wait_ms.
    quota_wait_ms: IntArray
    #: When the job was withdrawn before it started (cancelled: sim/withdrawal.py, sim/job_limits.py);
    #: NEVER for the others. Its queue wait ends there, censored.
    withdrawn_ms: IntArray
    #: Kueue admission checks: time from quota reservation to admission (ProvisioningRequests), summed;
    #: None when the run has no admission checks. Part of queue_wait_ms.
    provisioning_wait_ms: IntArray | None = None
    #: Namespace ResourceQuota / LimitRange: the longest time one of the job's pods was refused at creation;
    #: None when the run has no namespace policies. Part of queue_wait_ms.
    namespace_quota_wait_ms: IntArray | None = None

    def node_wait_ms(self) -> IntArray:
        """The queue wait left once the job could have pods on nodes: minus the Kueue quota wait, the
        admission-check (provisioning) wait and the namespace-quota wait."""
        wait = self.queue_wait_ms - self.quota_wait_ms
        for part in (self.provisioning_wait_ms, self.namespace_quota_wait_ms):
            if part is not None:
                wait = wait - part
        return np.asarray(wait, dtype=np.int64)


@dataclass
class PodTable:
    """One row per pod: its job, node (-1 unplaced) and lifecycle times."""

    job: IntArray
    node: IntArray
    bound_ms: IntArray
    running_ms: IntArray
    end_ms: IntArray
    image_wait_ms: IntArray
    data_ms: IntArray
    evictions: IntArray


@dataclass
class NodeTable:
    """One row per node: identity, capacity, price and billed window."""

    names: list[str]
    pool: list[str]
    gpu_model: list[str]
    capacity_type: list[str]
    gpus: IntArray
    cpu_milli: IntArray
    price_per_hour: NDArray[np.float64]
    billed_start_ms: IntArray
    billed_end_ms: IntArray
    ready_ms: IntArray
    #: Billed ms in all (a node removed and requested again has several windows); None: end - start.
    billed_ms: IntArray | None = None
    #: Billed ms spent booting (requested, not yet ready) and down for repair after a failure.
    boot_ms: IntArray | None = None
    down_ms: IntArray | None = None
    #: Billing units (GPUs; milli-CPU on a CPU-only node) × ms held by the background load (work the
    #: history does not list, sim/background.py); None: the scenario has none.
    background_unit_ms: IntArray | None = None


@dataclass
class Timeline:
    """Cluster totals after each time step that changed them (step functions)."""

    t_ms: IntArray
    allocated_gpus: IntArray
    total_gpus: IntArray
    whole_free_gpu_nodes: IntArray
    gpu_nodes: IntArray
    #: Busy milli-GPU and free-block counts (sim/usage_meter.py COLUMNS), same rows.
    usage: dict[str, IntArray] = field(default_factory=dict)


@dataclass
class SegmentTable:
    """Each stay of a pod on a node: bound → ready (prep done) → start (computing) → end; lost compute.

    Stays still open when the run ended are closed at its end. Cost and lost work are computed from these,
    so a pod evicted and placed again is billed for every stay.
    """

    pod: IntArray
    node: IntArray
    bound_ms: IntArray
    ready_ms: IntArray
    start_ms: IntArray
    end_ms: IntArray
    lost_ms: IntArray
    evicted: NDArray[np.bool_]


@dataclass
class QueueSamples:
    """ClusterQueue usage after each change: columns are (ClusterQueue, "flavor/resource") pairs."""

    keys: list[tuple[str, str]]
    nominal: IntArray
    #: nominalQuota + borrowingLimit, or -1 where the ClusterQueue may borrow whatever its cohort lends.
    max_allowed: IntArray
    subtree_quota: IntArray
    t_ms: IntArray
    #: Per column, the usage and what the ClusterQueue lent at each sample, kept as their changes: a report
    #: writes out one column at a time (``column(k)``).
    usage_steps: StepColumns
    lent_steps: StepColumns

    @property
    def usage(self) -> IntArray:
        """Usage per sample and column (samples × columns), written out whole."""
        return self.usage_steps.matrix()

    @property
    def lent(self) -> IntArray:
        """What each ClusterQueue lent per sample and column (samples × columns), written out whole."""
        return self.lent_steps.matrix()


@dataclass
class SharingTable:
    """What GPU sharing did: per job (scenario order) OOM kills, failure and time-slicing slowdown; per pod
    (PodTable order) the GPU indices it last held (``"2-3"``); the fragmentation samples (gpu_fragments)."""

    job_oom_kills: IntArray
    job_failed: NDArray[np.bool_]
    job_extra_ms: NDArray[np.float64]
    job_sliced_ms: NDArray[np.float64]
    job_gpu_milli: IntArray
    pod_gpus: list[str]
    #: Rows of (t_ms, idle, stranded, partial GPUs, frag, allocated), milli-GPU but the GPU count.
    fragmentation: IntArray
    #: Pods evicted by consolidation moves (also counted in the jobs' evictions).
    consolidation_evictions: int = 0
    #: At the end: free milli-GPU that no pending job and no typical pod shape can use (sim/stranded.py).
    stranded_gpu_milli_end: int = 0
    #: Rows of (t_ms, free milli-GPU no typical pod shape can use) over the run (sim/stranded.py).
    stranded: IntArray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))


@dataclass(frozen=True)
class DraTable:
    """What Dynamic Resource Allocation did (sim/dra_claims.py): per job (scenario order) the whole GPUs its
    pods' own claims held, per pod the devices its claims held at its last binding, per node the devices
    its ResourceSlices publish and the device-milliseconds allocated there."""

    job_gpus: IntArray
    pod_devices: list[str]
    node_devices: IntArray
    node_device_ms: IntArray


@dataclass
class BillingInputs:
    """Per node: minimum billed ms per VM start; per pool: unused committed nodes and their rate; per job
    (scenario order): data transfer and storage dollars."""

    node_minimum_ms: IntArray
    unused_committed_nodes: IntArray
    committed_rate: NDArray[np.float64]
    job_transfer_usd: NDArray[np.float64]
    job_storage_usd: NDArray[np.float64]


@dataclass
class SimulationResult:
    """Everything one run produced; ``cost`` and ``metrics`` read it, never change it."""

    scenario: str
    policy: str
    policy_description: str
    seed: int
    end_ms: int
    jobs: JobTable
    pods: PodTable
    nodes: NodeTable
    timeline: Timeline
    segments: SegmentTable
    pending: list[PendingJob] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    placements: int = 0
    wall_s: float = 0.0
    #: ClusterQueue usage over time; None without Kueue.
    queue_samples: QueueSamples | None = None
    #: Spot interruptions and their replacements; None when no pool has interruptions.
    interruptions: InterruptionLog | None = None
    #: Minimum billed time, commitments and data charges of pools with a billing section (else None).
    billing: BillingInputs | None = None
    #: Autoscaler decisions, node windows and failures; None when every node is fixed.
    lifecycle: LifecycleRecord | None = None
    sharing: SharingTable | None = None
    #: Interference of co-located pods (sim/interference.py); None when the scenario has no model.
    interference: InterferenceTable | None = None
    #: Inference services' samples (sim/services.py); None without services.
    services: ServiceRecord | None = None
    #: Devices DRA allocated (sim/dra_claims.py); None when the scenario has no ``dra:`` section.
    dra: DraTable | None = None
    #: The scenario's horizon (the run's end when set); None: the run ended at its last live event.
    horizon_ms: int | None = None
