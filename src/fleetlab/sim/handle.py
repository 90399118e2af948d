"""What a feature may read of the engine and ask of it, and the lifecycle events it may subscribe to.

A feature (the autoscaler, node failures, spot interruptions, consolidation, GPU tenancy, interference,
services, the Kueue bridge, the meters and the recorders behind the result tables) is handed an
``EngineHandle`` — as a kube-scheduler plugin is handed ``framework.Handle``, never the scheduler — and
imports nothing of the engine but this module. It reads the clock, the cluster, the pod book and the job
columns; it changes them only by asking (an event at a time, an eviction, a node ready or gone, a pod
failed or deleted). It subscribes, while it is built, to the lifecycle events it needs
(``Subscriptions``); the engine turns each list into a tuple when the run starts, so an event nobody
subscribed to costs no call. docs/architecture.md lists every feature's events and what it may change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.cluster import NodePool
from fleetlab.model.job_table import JobTable
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.profiles import Profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray, ClusterState, IntArray, NodeInfo
from fleetlab.sim.book import PodBook
from fleetlab.sim.counters import Counters, Group
from fleetlab.sim.interference_result import InterferenceTable
from fleetlab.sim.interruption_log import InterruptionLog
from fleetlab.sim.job_arrays import JobArrays
from fleetlab.sim.lifecycle_result import LifecycleRecord
from fleetlab.sim.queue import SchedulingQueue
from fleetlab.sim.result import DraTable, PendingJob, QueueSamples, Timeline
from fleetlab.sim.service_record import ServiceRecord

FloatArray = NDArray[np.float64]

#: The engine's own event kinds (sim/events.py); a feature's kinds are numbered after them.
CORE_EVENT_KINDS = 3

BindHook = Callable[[int, int, CompiledPod, int], None]
PodHook = Callable[[int], None]
PodNodeHook = Callable[[int, int], None]
TakeHook = Callable[[int], bool]
MakeRoom = Callable[[int, CompiledPod, Scheduler], int]
MakeGangRoom = Callable[[int, int, CompiledPod, Scheduler], bool]
NextTime = Callable[[int | None, int | None], int | None]
TimeHook = Callable[[int], None]
EventHandler = Callable[[int, int], None]
CreateHook = Callable[[int, list[int]], list[int]]
StaleTest = Callable[[int, int], bool]


class Subscriptions:
    """Per lifecycle event, the callables subscribed to it, called in the order they subscribed (the
    features' order in sim/features.py). Subscribe while the feature is built; the run copies the lists."""

    def __init__(self) -> None:
        #: A job arrives: ``(job, now) -> True`` when the subscriber holds it (Kueue keeps its jobs until it
        #: admits them); a job nobody holds has its pods queued.
        self.arrive: list[Callable[[int, int], bool]] = []
        #: Pods are created (their controller creates them, or creates them again after an eviction) and
        #: are about to join the scheduling queue: ``(job, pods) -> the pods the API server admits now``.
        #: The subscriber holds the others and queues them later (``enqueue``); a gang is admitted whole or
        #: not at all (the namespace ResourceQuota refuses pods over the quota).
        self.create: list[CreateHook] = []
        #: A pod object is gone: it succeeded or failed, or was evicted or deleted, bound or not: ``(pod)``.
        self.gone: list[PodHook] = []
        #: A pod was bound: ``(pod, node, compiled pod, whole GPUs per pod)``.
        self.bind: list[BindHook] = []
        #: Per ``bind`` subscriber that can run between a gang's binds, ``(compiled pod) -> True`` when its
        #: hook neither reads nor changes the cluster state's sums for a pod of that spec. A gang's trial
        #: binds stay as its real binds only when every ``bind`` subscriber answers here, with True.
        self.bind_state_blind: list[Callable[[CompiledPod], bool]] = []
        #: A pod starts computing: ``(pod, wall ms it needs at full speed)``.
        self.start: list[PodNodeHook] = []
        #: A pod stops computing or never will (it finished, was evicted, deleted or failed): ``(pod)``.
        self.stop: list[PodHook] = []
        #: A pod gives its node back, after ``stop``: ``(pod, node)``.
        self.release: list[PodNodeHook] = []
        #: A pod is to be evicted: ``(pod) -> True`` when the subscriber evicted it its own way (Kueue evicts
        #: the whole workload and requeues it in its ClusterQueue).
        self.evict: list[TakeHook] = []
        #: The last pod of a job succeeded: ``(job)``.
        self.job_done: list[PodHook] = []
        #: A job's pods failed (a pod was OOM-killed; a gang fails with it): ``(job)``.
        self.job_failed: list[PodHook] = []
        #: No node fits a pod and preemption found none: ``(pod, compiled, scheduler) -> node`` made room on
        #: (its victims evicted), or -1. The first that finds one wins.
        self.make_room: list[MakeRoom] = []
        #: No plan holds a gang: ``(pod, members, compiled, scheduler) -> True`` when room for the members
        #: was made now (its victims off), so the gang is planned again at once.
        self.make_gang_room: list[MakeGangRoom] = []
        #: Before each step: ``(next event time, next arrival) -> next event time`` with the subscriber's own
        #: timers merged in (None: nothing due). A subscriber's timers keep the run going only as it says.
        self.next_time: list[NextTime] = []
        #: Each step, after its events and before its scheduling cycle: ``(now)``.
        self.tick: list[TimeHook] = []
        #: After each step, its scheduling cycle included: ``(now)``. Meters and recorders sample here.
        self.after_step: list[TimeHook] = []
        #: A job left before any pod of it was bound — withdrawn by its user, refused at submit: ``(job)``.
        self.withdraw: list[PodHook] = []
        #: A queueing discipline that runs each scheduling cycle instead of the queue's own (at most one;
        #: ``take_cycle``): ``(release generation) -> pods bound``.
        self.scheduling_cycle: Callable[[int], int] | None = None
        #: The run starts, before the first node is ready: ``()``. The first events are scheduled here.
        self.run_start: list[Callable[[], None]] = []
        #: The run ended: ``(parts)``, in reverse order (a feature closes before those it was built on).
        self.run_end: list[Callable[[ResultParts], None]] = []
        #: Per event kind its handler ``(index, attempt)`` and its staleness test (None: never stale).
        self.handlers: list[EventHandler | None] = [None] * CORE_EVENT_KINDS
        self.stale: list[StaleTest | None] = [None] * CORE_EVENT_KINDS
        #: Kinds whose events alone never keep the run going while every ``quiet()`` says they could change
        #: nothing (spot interruptions on an idle cluster).
        self.optional_kinds: set[int] = set()
        self.quiet: list[Callable[[], bool]] = []

    def take_cycle(self, cycle: Callable[[int], int]) -> None:
        """Run the scheduling cycles with ``cycle`` (a queueing discipline); only one feature may."""
        if self.scheduling_cycle is not None:
            raise RuntimeError("internal error: two queueing disciplines for one run")
        self.scheduling_cycle = cycle

    def event_kind(
        self, handler: EventHandler, stale: StaleTest | None = None, quiet: Callable[[], bool] | None = None
    ) -> int:
        """A new event kind, handled by ``handler(index, attempt)`` when one is due. ``stale(index, attempt)``
        says an event can no longer do anything: the engine drops it before it moves the clock. With
        ``quiet`` the kind is optional: its events alone do not keep the run going while ``quiet()``."""
        kind = len(self.handlers)
        self.handlers.append(handler)
        self.stale.append(stale)
        if quiet is not None:
            self.optional_kinds.add(kind)
            if quiet not in self.quiet:
                self.quiet.append(quiet)
        return kind


class EngineHandle(Protocol):
    """What a feature may read and ask. Arrays and lists it reads are the engine's own: read them, change
    them only through the asks below (and the few fields the feature's docstring names)."""

    # -- the run -----------------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        """The clock, in ms."""

    @property
    def seed(self) -> int:
        """The run's seed: a feature draws from its own stream of it."""

    @property
    def resolved(self) -> ResolvedScenario:
        """The scenario (each feature reads its own section) and its jobs in scenario order."""

    @property
    def profile(self) -> Profile:
        """The scheduler profile of the run."""

    @property
    def config(self) -> SchedulerConfig:
        """The scenario's scheduler section."""

    @property
    def pools(self) -> Sequence[NodePool]:
        """The node pools; ``node_infos[n].pool`` indexes them."""

    @property
    def node_infos(self) -> list[NodeInfo]:
        """One entry per node slot."""

    @property
    def horizon_ms(self) -> int | None:
        """The scenario's horizon in ms (None: the run ends at its last live event)."""

    @property
    def on(self) -> Subscriptions:
        """Where a feature subscribes to lifecycle events (while it is built)."""

    # -- cluster and pods ----------------------------------------------------------------------------------
    @property
    def state(self) -> ClusterState:
        """The cluster as placement sees it."""

    @property
    def counters(self) -> Counters:
        """Cluster GPU totals for the timeline (GPU tenancy corrects them for shared GPUs)."""

    @property
    def book(self) -> PodBook:
        """Per pod where it is and how far it got; per job its pods."""

    @property
    def node_pods(self) -> list[set[int]]:
        """Per node the pods bound to it."""

    @property
    def touched(self) -> set[int]:
        """Nodes a bind or release touched in this step (cleared after the step's samples)."""

    @property
    def failing(self) -> list[int]:
        """Pods that fail at the end of this step (``fail``)."""

    @property
    def ready_ms(self) -> IntArray:
        """Per node when it last became ready (-1: never)."""

    @property
    def initially_present(self) -> BoolArray:
        """Per node slot, whether its node exists when the run starts (a pool's first ``count`` slots)."""

    @property
    def bound_by_priority(self) -> defaultdict[int, set[int]]:
        """Bound pods by their priority."""

    @property
    def placements(self) -> int:
        """Binds so far."""

    @property
    def evictions(self) -> int:
        """Pods evicted so far."""

    @property
    def bound_pods(self) -> int:
        """Pods bound now."""

    #: Nodes booting now (requested, not yet ready); the node lifecycle counts the nodes it boots.
    booting: int

    # -- jobs ------------------------------------------------------------------------------------------------
    @property
    def jobs(self) -> JobTable:
        """The jobs in submit order (the engine's job index); ``jobs[i]`` builds one Job."""

    @property
    def job_table(self) -> JobTable:
        """The same table, for its columns."""

    @property
    def job_columns(self) -> JobArrays:
        """Per-job columns in submit order."""

    @property
    def order(self) -> IntArray:
        """``order[i]``: the scenario position of the i-th job submitted."""

    @property
    def submit_ms(self) -> IntArray:
        """Per job its submit time."""

    @property
    def pods_done(self) -> IntArray:
        """Per job its pods that succeeded."""

    @property
    def submissions_left(self) -> int:
        """Jobs still to arrive."""

    @property
    def withdrawn(self) -> dict[int, int]:
        """Per job withdrawn before it started (``withdraw_job``), when."""

    @property
    def last_completion_ms(self) -> int:
        """When a pod last succeeded."""

    @property
    def stall_warning(self) -> str:
        """Why the run stopped early ("" while it goes on)."""

    # -- scheduling ------------------------------------------------------------------------------------------
    @property
    def queue(self) -> SchedulingQueue:
        """Pods waiting for a node, by queue group."""

    @property
    def scheduler(self) -> Scheduler:
        """The run profile's scheduler."""

    @property
    def schedulers(self) -> dict[str, Scheduler]:
        """Per job-class profile its scheduler ("" the run's)."""

    @property
    def spec_ids(self) -> dict[tuple[PodSpec, str], int]:
        """(pod spec, profile) -> spec id."""

    @property
    def compiled(self) -> list[CompiledPod]:
        """Per spec id its compiled pod."""

    @property
    def spec_profile(self) -> list[str]:
        """Per spec id the profile that schedules it."""

    @property
    def job_spec(self) -> IntArray:
        """Per job its spec id (-1 until first placed)."""

    @property
    def groups(self) -> list[Group]:
        """Per queue group id its group."""

    def spec_of(self, job: int) -> int:
        """The job's spec id (interned on first use)."""

    def group_of(self, job: int) -> int:
        """The queue group of the job's pods."""

    def job_priority(self, job: int) -> int:
        """The job's pod priority."""

    def entry_pods(self, group_id: int, first: int) -> list[int]:
        """The pods one queue entry stands for (a gang entry: its job's unfinished pods)."""

    def base_spec(self, job: int) -> PodSpec:
        """The pod spec the job's own fields give."""

    def try_place(self, group_id: int, pod: int) -> bool:
        """One scheduling attempt for a queue entry (a pod, or a whole gang); True when it was bound."""

    def try_place_on(self, group_id: int, pod: int, allowed: BoolArray) -> bool:
        """``try_place`` on the ``allowed`` nodes only, without preemption (a backfill that leaves a
        reservation's nodes alone)."""

    # -- asks ------------------------------------------------------------------------------------------------
    def schedule(self, time_ms: int, kind: int, index: int, attempt: int = 0) -> None:
        """An event of a kind the feature registered (``Subscriptions.event_kind``) at ``time_ms``."""

    def enqueue(self, job: int, pods: list[int] | None = None) -> None:
        """Queue the job's unfinished pods (or ``pods``) for placement."""

    def hand_on(self, job: int, holder: Callable[[int, int], bool]) -> None:
        """A job the ``arrive`` subscriber ``holder`` held goes on: to the subscribers after it (Kueue),
        else to the scheduling queue."""

    def withdraw_job(self, job: int) -> None:
        """The job, no pod of it ever bound, leaves: out of the queue, done waiting, never started
        (``withdraw`` subscribers hear it)."""

    def evict_job_pods(self, pod: int) -> None:
        """Evict a pod (a gang job's: every pod of its job) and requeue what was evicted."""

    def evict_job(self, job: int) -> None:
        """Take every unfinished pod of the job off its node or out of the queue (not requeued)."""

    def fail(self, pod: int) -> None:
        """The pod fails at the end of this step, with every pod of a gang job (no retry)."""

    def delete_pod(self, pod: int) -> None:
        """Take the pod off its node or out of the queue; it is not requeued (a ReplicaSet scaled down)."""

    def retime_finish(self, pod: int, finish_ms: int) -> None:
        """The computing pod now finishes at ``finish_ms`` (its speed changed)."""

    def respec(self, job: int, spec: PodSpec) -> None:
        """From its next placement on, the job's pods use ``spec``."""

    def node_ready(self, node: int) -> None:
        """The node registers with the scheduler."""

    def node_down(self, node: int) -> None:
        """The (empty) node leaves the scheduler and the cluster totals."""

    def forget_images(self, node: int) -> None:
        """The node's image cache is empty (a new or rebuilt node)."""

    def cordon(self, node: int, unschedulable: bool) -> None:
        """Mark the node unschedulable (no new pods) or schedulable again."""

    def halt(self, reason: str) -> None:
        """Stop the run after this step, with ``reason`` as its warning."""


@dataclass
class ResultParts:
    """What the features recorded, handed to each ``run_end`` subscriber to fill in its part; the result
    tables are built from these and the pod book (sim/tables.py). Per-pod and per-job arrays are in the
    engine's order (jobs in submit order)."""

    end_ms: int
    #: The cluster timeline (sim/timeline.py).
    timeline: Timeline | None = None
    #: Jobs waiting for something other than a node (Kueue's unadmitted workloads).
    pending: list[PendingJob] = field(default_factory=list)
    #: Rewrites of the pending list once every job in it is explained (the autoscaler adds its reasons).
    pending_notes: list[Callable[[list[PendingJob]], list[PendingJob]]] = field(default_factory=list)
    #: Kueue, per job: when it was last admitted (-1: never), its quota wait up to the end, its ClusterQueue.
    admitted_ms: IntArray | None = None
    quota_wait_ms: IntArray | None = None
    #: Kueue admission checks, per job: time from quota reservation to admission, summed, a wait still
    #: open running to the end (sim/admission_checks.py); None without admission checks.
    provisioning_wait_ms: IntArray | None = None
    #: Namespace ResourceQuota / LimitRange, per job: the longest time one of its pods was refused at
    #: creation (sim/namespace_quota.py); None without namespace policies.
    namespace_quota_wait_ms: IntArray | None = None
    #: Kueue: per job (submit order), the ClusterQueue of its last admission ("": never admitted), an
    #: object array of the few names (a list built through ``tolist`` held an int per job on the way).
    cluster_queue_of: NDArray[np.object_] | None = None
    queue_samples: QueueSamples | None = None
    interruptions: InterruptionLog | None = None
    #: Node slots whose first node was replaced (spot reclaims): when the first one became ready.
    first_ready_ms: dict[int, int] = field(default_factory=dict)
    lifecycle: LifecycleRecord | None = None
    interference: InterferenceTable | None = None
    services: ServiceRecord | None = None
    #: GPU tenancy, per pod: OOM kills and the GPU indices it last held.
    oom_kills: IntArray | None = None
    pod_gpus: list[str] | None = None
    #: Per pod: wall time on time-sliced GPUs and the extra it cost (sim/pod_pace.py).
    sliced_ms: FloatArray | None = None
    sliced_extra_ms: FloatArray | None = None
    #: The fragmentation and stranded series and the stranded figure at the end (sim/gpu_fragments.py,
    #: sim/stranded.py).
    fragmentation: IntArray | None = None
    stranded: IntArray | None = None
    stranded_end: int = 0
    consolidation_evictions: int = 0
    #: What DRA allocated (sim/dra_claims.py); its job GPUs count in ``gpus_per_pod``.
    dra: DraTable | None = None
    #: Per node the billing units (GPUs, or milli-CPU on a CPU-only node) × ms held by the background
    #: load (sim/background.py); None without one.
    background_unit_ms: IntArray | None = None
