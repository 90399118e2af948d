"""Which features a run has, built in the order their subscriptions run: the engine's plugin registry.

Each feature gets the engine's handle (sim/handle.py) and subscribes, while it is built, to the lifecycle
events it needs; a feature the scenario does not use is not built, so it is never called. Subscribers of
one event run in the order built here (``run_end`` in reverse), which is why, for example, the usage meter
comes first: it must count a starting pod before GPU tenancy or interference slow it down. Adding a feature
is a module with its class and a line here (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.sim.consolidation import Consolidator
from fleetlab.sim.gpu_fragments import FragmentationMeter
from fleetlab.sim.gpu_tenancy import GpuTenancy
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.interference import Interference
from fleetlab.sim.kueue_bridge import KueueBridge
from fleetlab.sim.pod_pace import PodPace
from fleetlab.sim.stranded import StrandedMeter
from fleetlab.sim.timeline import TimelineRecorder
from fleetlab.sim.usage_meter import UsageMeter


@dataclass
class Features:
    """The features of one run (None: not used by the scenario, never built)."""

    usage: UsageMeter
    pace: PodPace | None
    tenancy: GpuTenancy
    interference: Interference | None
    fragmentation: FragmentationMeter
    stranded: StrandedMeter
    consolidation: Consolidator | None
    timeline: TimelineRecorder
    kueue: KueueBridge | None


def build_features(sim: EngineHandle) -> Features:
    """Build the features the scenario uses, each subscribing to what it needs."""
    scenario = sim.resolved.scenario
    usage = UsageMeter(sim)
    paced = scenario.interference is not None or any(p.time_slicing is not None for p in sim.pools)
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
    timeline = TimelineRecorder(sim, usage)
    kueue = KueueBridge(scenario.kueue, sim) if scenario.kueue is not None else None
    return Features(
        usage=usage,
        pace=pace,
        tenancy=tenancy,
        interference=interference,
        fragmentation=fragmentation,
        stranded=stranded,
        consolidation=consolidation,
        timeline=timeline,
        kueue=kueue,
    )
