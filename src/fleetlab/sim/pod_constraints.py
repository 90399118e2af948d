"""A job's pod labels, spread constraints and anti-affinity as placement sees them.

Every pod carries ``fleetlab.io/job``, ``fleetlab.io/team`` and ``fleetlab.io/class`` (and
``fleetlab.io/service`` when a service selects it) plus the job's own labels. A constraint or term without a
labelSelector is resolved here to the job's own pods (the service's pods when ``service`` is set).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fleetlab.model.job import Job
from fleetlab.model.job_table import JobTable
from fleetlab.model.pod_constraints import (
    CLASS_LABEL,
    JOB_LABEL,
    SERVICE_LABEL,
    TEAM_LABEL,
    LabelSelector,
)
from fleetlab.placement.state import ClusterState, IntArray


def pod_labels(job: Job) -> dict[str, str]:
    """Labels of the job's pods."""
    labels = {JOB_LABEL: job.id, TEAM_LABEL: job.team, CLASS_LABEL: job.job_class.value}
    if job.service is not None:
        labels[SERVICE_LABEL] = job.service
    labels.update(job.labels)
    return labels


def own_selector(job: Job) -> LabelSelector:
    """The selector of "this job's pods" (or its service's)."""
    if job.service is not None:
        return LabelSelector(match_labels={SERVICE_LABEL: job.service})
    return LabelSelector(match_labels={JOB_LABEL: job.id})


def has_pod_constraints(job: Job) -> bool:
    """Whether the job's placement depends on other pods."""
    return bool(job.topology_spread or job.anti_affinity or job.pod_affinity or job.service is not None)


def selects_other_jobs(jobs: Sequence[Job]) -> bool:
    """Whether some anti-affinity or pod-affinity term names its own selector: then every pod's labels
    matter to placement (the existing pods' anti-affinity check and symmetric score), not only the pods of
    jobs with constraints."""
    shapes = jobs.templates if isinstance(jobs, JobTable) else jobs  # the terms are template fields
    return any(
        t.label_selector is not None for job in shapes for t in (*job.anti_affinity, *job.pod_affinity)
    )


def pod_constraints_of(job: Job, with_labels: bool = False) -> dict[str, Any]:
    """PodSpec fields for spread and anti-affinity (empty for jobs without, so their specs stay shared,
    unless ``with_labels``)."""
    if not has_pod_constraints(job):
        if with_labels:
            return {"labels": tuple(sorted(pod_labels(job).items())), "namespace": job.namespace}
        return {}
    own = own_selector(job)
    return {
        "labels": tuple(sorted(pod_labels(job).items())),
        "namespace": job.namespace,
        "topology_spread": tuple(
            c if c.label_selector is not None else c.model_copy(update={"label_selector": own})
            for c in job.topology_spread
        ),
        "anti_affinity": tuple(
            t if t.label_selector is not None else t.model_copy(update={"label_selector": own})
            for t in job.anti_affinity
        ),
        "pod_affinity": tuple(
            t if t.label_selector is not None else t.model_copy(update={"label_selector": own})
            for t in job.pod_affinity
        ),
        "default_spread_selector": own if job.service is not None else None,
    }


def job_label_sets(state: ClusterState, jobs: Sequence[Job]) -> IntArray:
    """Per job, its pods' label set in ``state.pod_labels``; all -1 when no job has pod constraints, so a
    scenario without them pays nothing on bind."""
    out = np.full(len(jobs), -1, dtype=np.int64)
    if not any(has_pod_constraints(job) for job in (jobs.templates if isinstance(jobs, JobTable) else jobs)):
        return out
    for j, job in enumerate(jobs):
        fields = pod_constraints_of(job)
        out[j] = state.pod_labels.intern(
            pod_labels(job), job.namespace, fields.get("anti_affinity", ()), fields.get("pod_affinity", ())
        )
    return out
