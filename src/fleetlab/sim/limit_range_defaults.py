"""LimitRange defaults on the requests of every job shape, applied before a run as the API server applies
them to every pod it creates (``admission/limit_range.apply_limit_ranges`` on the pod manifest of
``admission/pod_manifest``): a container without a cpu or memory request gets its namespace's default.
The scheduler, Kueue and the quota evaluator then all see the defaulted requests (Kueue, too, adds
LimitRange defaults to a workload's pod sets). A scenario without LimitRanges is returned unchanged.
"""

from __future__ import annotations

from fleetlab.admission.limit_range import apply_limit_ranges
from fleetlab.admission.pod_manifest import container_requests, pod_manifest
from fleetlab.model.job import Job
from fleetlab.model.resource_quota import LimitRange
from fleetlab.model.scenario import ResolvedScenario


def with_limit_range_defaults(resolved: ResolvedScenario) -> ResolvedScenario:
    """The resolved scenario with every job shape's requests defaulted by its namespace's LimitRanges."""
    ranges: dict[str, list[LimitRange]] = {}
    for policy in resolved.scenario.namespace_policies:
        if isinstance(policy, LimitRange):
            ranges.setdefault(policy.metadata.namespace, []).append(policy)
    if not ranges:
        return resolved

    def defaulted(job: Job) -> Job:
        own = ranges.get(job.namespace)
        if not own:
            return job
        manifest, _ = apply_limit_ranges(pod_manifest(job), own)
        requests = container_requests(manifest)
        return job if requests == job.requests else job.model_copy(update={"requests": requests})

    return resolved.model_copy(update={"jobs": resolved.jobs.map_templates(defaulted)})
