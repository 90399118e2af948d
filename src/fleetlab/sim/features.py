"""Which features a run has, built in the order their subscriptions run: the engine's plugin registry.

Each feature gets the engine's handle (sim/handle.py) and subscribes, while it is built, to the lifecycle
events it needs; a feature the scenario does not use is not built, so it is never called. Subscribers of
one event run in the order built here (``run_end`` in reverse), which is why, for example, the usage meter
comes first: it must count a starting pod before GPU tenancy or interference slow it down. Adding a feature
is a module with its class and a line here (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.sim.admission_checks import AdmissionChecks, provisioning_checks
from fleetlab.sim.autoscaler import Autoscaler
from fleetlab.sim.background import Background
from fleetlab.sim.batch_preemption import BatchPreemption
from fleetlab.sim.consolidation import Consolidator
from fleetlab.sim.dra_claims import DraClaims, uses_dra
from fleetlab.sim.failures import FailureModel
from fleetlab.sim.fair_share import FairShare
from fleetlab.sim.gpu_fragments import FragmentationMeter
from fleetlab.sim.gpu_tenancy import GpuTenancy
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.interference import Interference
from fleetlab.sim.interruptions import Interruptions
from fleetlab.sim.job_limits import JobLimitGate
from fleetlab.sim.job_priority import JobPriority
from fleetlab.sim.kueue_bridge import KueueBridge
from fleetlab.sim.kueue_dra import DraQuota
from fleetlab.sim.kueue_tas import KueueTopology, uses_tas
from fleetlab.sim.maintenance import Maintenance
from fleetlab.sim.namespace_quota import NamespaceQuota
from fleetlab.sim.node_lifecycle import NodeLifecycle
from fleetlab.sim.pod_pace import PodPace
from fleetlab.sim.queue_discipline import QueueDiscipline
from fleetlab.sim.scheduling_delay import DrawnDelay
from fleetlab.sim.services import ServiceController
from fleetlab.sim.stranded import StrandedMeter
from fleetlab.sim.time_limits import TimeLimitGate, job_time_limits_s
from fleetlab.sim.timeline import TimelineRecorder
from fleetlab.sim.usage_meter import UsageMeter
from fleetlab.sim.withdrawal import Withdrawal


@dataclass
class Features:
    """The features of one run (None: not used by the scenario, never built)."""

    usage: UsageMeter
    dra: DraClaims | None
    pace: PodPace | None
    tenancy: GpuTenancy
    interference: Interference | None
    fragmentation: FragmentationMeter
    stranded: StrandedMeter
    consolidation: Consolidator | None
    timeline: TimelineRecorder
    lifecycle: NodeLifecycle | None
    autoscaler: Autoscaler | None
    failures: FailureModel | None
    spot: Interruptions | None
    maintenance: Maintenance | None
    withdrawal: Withdrawal | None
    job_limits: JobLimitGate | None
    fair_share: FairShare | None
    discipline: QueueDiscipline | None
    services: ServiceController | None
    topology: KueueTopology | None
    kueue: KueueBridge | None
    namespace_quota: NamespaceQuota | None = None
    admission_checks: AdmissionChecks | None = None
    background: Background | None = None
    batch_preemption: BatchPreemption | None = None
    scheduling_delay: DrawnDelay | None = None
    job_priority: JobPriority | None = None
    time_limits: TimeLimitGate | None = None


def build_features(sim: EngineHandle) -> Features:
    """Build the features the scenario uses, each subscribing to what it needs."""
    scenario = sim.resolved.scenario
    usage = UsageMeter(sim)
    dra = DraClaims(sim, usage) if uses_dra(sim) else None  # right after the meter: it counts DRA GPUs busy
    paced = scenario.interference is not None or any(p.replicated is not None for p in sim.pools)
    pace = PodPace(sim, usage.set_slowdown) if paced else None
    tenancy = GpuTenancy(sim, pace)
    interference = (
        Interference(sim, scenario.interference, pace)
        if scenario.interference is not None and pace is not None
        else None
    )
    fragmentation = FragmentationMeter(sim)  # after GPU tenancy: it reads the GPU devices
    stranded = StrandedMeter(sim, fragmentation)
    consolidation = Consolidator(sim) if sim.config.consolidation else None
    rules = scenario.batch_preemption  # after consolidation: its make_room is tried first
    batch_preemption = BatchPreemption(sim, rules) if rules is not None else None
    timeline = TimelineRecorder(sim, usage)
    pools = sim.pools
    dynamic = any(p.autoscaling or p.failures or p.interruptions for p in pools)
    lifecycle = NodeLifecycle(sim) if dynamic else None  # only such pools pay for node timers
    autoscaler = failures = spot = None
    if lifecycle is not None:
        autoscaler = Autoscaler(sim, lifecycle) if any(p.autoscaling for p in pools) else None
        failures = FailureModel(sim, lifecycle) if any(p.failures for p in pools) else None
        spot = Interruptions(sim, lifecycle) if any(p.interruptions for p in pools) else None
    recorded = scenario.recorded
    windows = scenario.maintenance or (recorded is not None and recorded.windows)
    maintenance = Maintenance(sim) if windows else None
    background = Background(sim) if scenario.background else None  # after GPU tenancy: it takes devices
    # The first ``arrive`` subscriber: no one sees a job before its drawn delay has passed.
    delay = sim.config.scheduling_delay
    scheduling_delay = DrawnDelay(sim, delay) if delay is not None else None
    # Before Kueue: their ``arrive`` holds a job before Kueue sees it.
    withdrawal = Withdrawal(sim) if recorded is not None and recorded.withdraw_s else None
    time_limits = TimeLimitGate(sim, pace is not None) if scenario.time_limits is not None else None
    job_limits = JobLimitGate(sim) if scenario.job_limits else None
    fair = sim.config.fair_share
    fair_share = FairShare(sim, fair) if fair is not None else None
    job_priority = None
    if (
        fair is not None
        and fair_share is not None
        and (
            fair.weight_job_size
            or fair.weight_partition
            or fair.weight_qos
            or fair.tres_weights
            or fair.calc_period_s is not None
        )
    ):
        job_priority = JobPriority(sim, fair_share, job_time_limits_s(sim))
    ordered = fair_share is not None or sim.config.queueing != "best-effort-fifo"
    discipline = QueueDiscipline(sim, job_priority or fair_share) if ordered else None
    if job_priority is not None and discipline is not None:
        job_priority.recalculated = discipline.cycle
    services = ServiceController(sim, tenancy) if scenario.services else None
    topology = kueue = None
    if scenario.kueue is not None and scenario.kueue.cluster_queues:  # no ClusterQueue: nothing to admit
        if uses_tas(scenario.kueue):  # before the bridge: its tick syncs the trees before admission
            topology = KueueTopology(
                sim, scenario.kueue, None if lifecycle is None else lambda: lifecycle.leaving
            )
        resources = scenario.kueue_configuration.resources
        mapped = dra is not None and resources is not None and bool(resources.device_class_mappings)
        quota = DraQuota(dra.objects, resources.resource_of()) if mapped and dra and resources else None
        kueue = KueueBridge(scenario.kueue, sim, topology, quota)
    namespace_quota = NamespaceQuota(sim) if scenario.namespace_policies else None
    checks = provisioning_checks(scenario.kueue) if kueue is not None and scenario.kueue is not None else {}
    admission_checks = AdmissionChecks(sim, kueue, checks, autoscaler) if kueue and checks else None
    return Features(
        usage=usage,
        dra=dra,
        pace=pace,
        tenancy=tenancy,
        interference=interference,
        fragmentation=fragmentation,
        stranded=stranded,
        consolidation=consolidation,
        timeline=timeline,
        lifecycle=lifecycle,
        autoscaler=autoscaler,
        failures=failures,
        spot=spot,
        maintenance=maintenance,
        withdrawal=withdrawal,
        job_limits=job_limits,
        fair_share=fair_share,
        discipline=discipline,
        services=services,
        topology=topology,
        kueue=kueue,
        namespace_quota=namespace_quota,
        admission_checks=admission_checks,
        background=background,
        batch_preemption=batch_preemption,
        scheduling_delay=scheduling_delay,
        job_priority=job_priority,
        time_limits=time_limits,
    )
