"""Run a scenario under one or several policies: same workload, same seed, one change per run."""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fleetlab.model.cluster import NodePool
from fleetlab.model.job_table import ids_of, templates_by
from fleetlab.model.policy_names import DEFAULT_COMPARE, SCENARIO_POLICY
from fleetlab.model.resources import format_amount
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.feasibility import unsatisfiable
from fleetlab.placement.profiles import (
    PRESETS,
    SHARE_POLICY_DESCRIPTIONS,
    Profile,
    UnknownPolicyError,
    resolve_profile,
)
from fleetlab.services.slo_reach import unreachable_targets
from fleetlab.sim.pod_constraints import has_pod_constraints
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.service_replicas import with_service_replicas
from fleetlab.sim.simulator import Simulator
from fleetlab.sim.specs import build_nodes, gpu_memory_note, largest_gpu_memory_mib, pod_spec

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Run:
    """One policy's result."""

    label: str
    profile: Profile
    result: SimulationResult
    #: The scenario's node pools, for the cost ledger's cloud / region / machine type columns.
    pools: tuple[NodePool, ...] = ()


def profile_for(resolved: ResolvedScenario, policy: str | None) -> Profile:
    """The scenario's own scheduler section (``None`` or ``scenario``), or a preset by name."""
    config = resolved.scenario.scheduler
    if policy is None or policy == SCENARIO_POLICY:
        return resolve_profile(config)
    if policy not in PRESETS and policy not in SHARE_POLICY_DESCRIPTIONS:
        choices = [SCENARIO_POLICY, *PRESETS, *SHARE_POLICY_DESCRIPTIONS]
        raise UnknownPolicyError(f"unknown policy {policy!r}; choose one of: {', '.join(choices)}")
    return resolve_profile(
        SchedulerConfig(
            policy=policy,
            tie_break=config.tie_break,
            kubernetes_version=config.kubernetes_version,
            plugin_weights=config.plugin_weights,
            pod_topology_spread=config.pod_topology_spread,  # plugin args stay the scenario's
        )
    )


def preflight(resolved: ResolvedScenario, profile: Profile) -> list[str]:
    """Warnings for jobs whose pods no node type could ever satisfy."""
    nodes = build_nodes(resolved)
    jobs = resolved.jobs
    toleration = resolved.scenario.cluster.extended_resource_toleration
    if any(has_pod_constraints(t) for t in jobs.templates):  # such a spec names its job: one per job
        bad = unsatisfiable(nodes, [(job.id, pod_spec(job)) for job in jobs], profile, toleration)
    else:  # a spec is a template's: check each distinct one, then name its jobs
        by_spec = templates_by(jobs, pod_spec)
        verdict = unsatisfiable(nodes, [("", spec) for spec in by_spec], profile, toleration)
        bad = {spec: ids_of(jobs, by_spec[spec]) for spec in verdict}
    out: list[str] = []
    for spec, ids in bad.items():
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        req = ", ".join(f"{k}={format_amount(k, v)}" for k, v in spec.requests)
        out.append(f"no node could ever run a pod requesting {req} with its constraints: job(s) {shown}")
    largest = largest_gpu_memory_mib(nodes)
    by_note = templates_by(jobs, lambda job: gpu_memory_note(job, largest))  # template fields only
    for note, templates in by_note.items():
        ids = ids_of(jobs, templates)
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        out.append(f"job(s) {shown}: {note}")
    for service in resolved.scenario.services:
        out.extend(unreachable_targets(service))
    return out


#: Runs at least this large collect the finished simulator at once, so writing the result does not stack
#: its memory on the simulator's (a full collection costs tens of milliseconds, noise at this size).
COLLECT_AFTER_JOBS = 50_000


def run_one(
    resolved: ResolvedScenario,
    policy: str | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> Run:
    """Simulate under one policy."""
    profile = profile_for(resolved, policy)
    result = Simulator(resolved, profile, seed=seed).run(progress)
    if len(resolved.jobs) >= COLLECT_AFTER_JOBS:
        gc.collect()  # the finished simulator's reference cycles hold its per-pod state: free it now
    result.warnings.extend(preflight(with_service_replicas(resolved), profile))
    result.warnings.extend(result.services.warnings if result.services is not None else [])
    label = profile.name if policy in (None, SCENARIO_POLICY) else policy
    return Run(label=label, profile=profile, result=result, pools=tuple(resolved.scenario.cluster.pools))


def compare(
    resolved: ResolvedScenario,
    policies: Sequence[str] = DEFAULT_COMPARE,
    seed: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[Run]:
    """One run per policy on the same jobs and seed."""
    runs: list[Run] = []
    for policy in policies:
        cb: Progress | None = None
        if progress is not None:

            def cb(done: int, total: int, _p: str = policy) -> None:
                progress(_p, done, total)

        run = run_one(resolved, policy, seed, cb)
        label, n = run.label, 2
        while any(r.label == label for r in runs):
            label, n = f"{run.label}#{n}", n + 1
        runs.append(replace(run, label=label))
    return runs
