"""Per-job columns in submit order: what the event loop reads on every bind, start and release.

Reading ``jobs[i].priority`` on a pydantic model costs an attribute lookup per field per event; the loop
reads these columns instead (as plain lists where it touches one element at a time). ``job_arrays`` is the
one place that walks ``Job`` objects for them, so a columnar job table can build the same columns directly.

The *spec key* groups jobs whose pods get the same placement-facing ``PodSpec``: the simulator builds
and compiles one spec per key, not one per job. Two jobs share a key exactly when every field
``fleetlab.sim.specs.pod_spec`` reads is equal; a job whose spec carries its own labels (pod constraints,
or a scenario where other pods' selectors may match any labels) gets a key of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.job import Job
from fleetlab.model.job_table import JobTable, templates_by
from fleetlab.sim.events import to_ms
from fleetlab.sim.pod_constraints import has_pod_constraints, selects_other_jobs

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
ObjectArray = NDArray[np.object_]

#: ``checkpoint_interval_ms`` of a job that never checkpoints.
NO_CHECKPOINT = -1


@dataclass(frozen=True)
class JobArrays:
    """One entry per job, in submit order (the simulator's job index)."""

    #: Pods of the job.
    pods: IntArray
    #: Pod priority (PriorityClass value applied).
    priority: IntArray
    #: The pods must run together (``gang``), whatever their count.
    gang: BoolArray
    #: JobClass value ("training", "batch", ...): selects a per-class scheduler profile.
    job_class: ObjectArray
    #: Submitted to a Kueue LocalQueue (``queue`` set).
    kueue_managed: BoolArray
    #: Container image name (None: no image) and its size in bytes (0 without an image).
    image_name: ObjectArray
    image_size: IntArray
    #: Bytes downloaded before the pods compute.
    data_size: IntArray
    #: Compute between checkpoints in ms (NO_CHECKPOINT: none) and one checkpoint write in ms.
    checkpoint_interval_ms: IntArray
    checkpoint_write_ms: IntArray
    #: ``preemptionPolicy: Never``: the job's pods never preempt.
    preempt_never: BoolArray
    #: Already running on a node when the run starts (``bound_node`` set, from a cluster snapshot).
    prebound: BoolArray
    #: Node label levels a gang's pods must / should share one domain of (None: no such rule).
    topology_required: ObjectArray
    topology_preferred: ObjectArray
    #: Jobs with equal keys get equal pod specs (numbered 0, 1, ... in order of first appearance).
    spec_key: IntArray

    def __len__(self) -> int:
        return len(self.pods)

    def __repr__(self) -> str:
        return f"JobArrays({len(self)} jobs, {int(self.spec_key.max(initial=-1)) + 1} pod specs)"


def spec_fields(job: Job) -> Hashable:
    """Everything ``pod_spec`` reads of a job without pod constraints: equal values, equal specs."""
    image = job.image
    return (
        tuple(sorted(job.requests.items())),
        job.tolerations,
        tuple(sorted(job.node_selector.items())),
        job.affinity,
        None if image is None else (image.name, image.size),
        job.gpu_milli,
        job.gpu_memory,
        (job.namespace, job.resource_claims) if job.resource_claims else (),
    )


def spec_keys(jobs: Sequence[Job]) -> IntArray:
    """Per job, its spec key: jobs with labels in their spec (``pod_constraints_of``) each get their own."""
    with_labels = selects_other_jobs(jobs)
    if isinstance(jobs, JobTable) and not with_labels and not any(map(has_pod_constraints, jobs.templates)):
        # spec fields are template fields: number each template's key in the order of its first job
        keys_of: dict[Hashable, int] = {}
        per_template = np.zeros(len(jobs.templates), dtype=np.int64)
        for key, templates in templates_by(jobs, spec_fields).items():
            per_template[templates] = keys_of.setdefault(key, len(keys_of))
        out_keys: IntArray = per_template[jobs.column("template")]
        return out_keys
    keys: dict[Hashable, int] = {}
    out = np.empty(len(jobs), dtype=np.int64)
    for j, job in enumerate(jobs):
        fields = ("job", j) if with_labels or has_pod_constraints(job) else spec_fields(job)
        out[j] = keys.setdefault(fields, len(keys))
    return out


def job_arrays(jobs: Sequence[Job]) -> JobArrays:
    """The columns of ``jobs`` (already in submit order); from a JobTable's columns and templates when
    given one, without building a Job per job."""
    if isinstance(jobs, JobTable):
        return _table_arrays(jobs)

    def ints(values: list[int]) -> IntArray:
        return np.asarray(values, dtype=np.int64).reshape(len(jobs))

    def flags(values: list[bool]) -> BoolArray:
        return np.asarray(values, dtype=bool).reshape(len(jobs))

    def objects(values: list[object]) -> ObjectArray:
        out = np.empty(len(jobs), dtype=object)
        out[:] = values
        return out

    return JobArrays(
        pods=ints([job.pods for job in jobs]),
        priority=ints([job.priority for job in jobs]),
        gang=flags([job.gang for job in jobs]),
        job_class=objects([job.job_class.value for job in jobs]),
        kueue_managed=flags([job.queue is not None for job in jobs]),
        image_name=objects([None if job.image is None else job.image.name for job in jobs]),
        image_size=ints([0 if job.image is None else job.image.size for job in jobs]),
        data_size=ints([job.data_size for job in jobs]),
        checkpoint_interval_ms=ints(
            [
                NO_CHECKPOINT
                if job.checkpoint_interval_s is None
                else max(1, to_ms(job.checkpoint_interval_s))
                for job in jobs
            ]
        ),
        checkpoint_write_ms=ints([to_ms(job.checkpoint_write_s) for job in jobs]),
        preempt_never=flags([job.preemption_policy == "Never" for job in jobs]),
        prebound=flags([job.bound_node is not None for job in jobs]),
        topology_required=objects([job.topology_required for job in jobs]),
        topology_preferred=objects([job.topology_preferred for job in jobs]),
        spec_key=spec_keys(jobs),
    )


def _table_arrays(table: JobTable) -> JobArrays:
    """The columns of a JobTable: ``pods`` is its own column, every other field is a template field,
    computed once per template and gathered (the same values ``job_arrays`` reads job by job)."""

    def ints(value: Callable[[Job], int]) -> IntArray:
        return table.per_template(value, np.int64)

    def flags(value: Callable[[Job], bool]) -> BoolArray:
        return table.per_template(value, bool)

    def objects(value: Callable[[Job], object]) -> ObjectArray:
        per = np.empty(len(table.templates), dtype=object)
        per[:] = [value(t) for t in table.templates]
        out: ObjectArray = per[table.column("template")]
        return out

    return JobArrays(
        pods=table.column("pods").astype(np.int64),
        priority=ints(lambda t: t.priority),
        gang=flags(lambda t: t.gang),
        job_class=objects(lambda t: t.job_class.value),
        kueue_managed=flags(lambda t: t.queue is not None),
        image_name=objects(lambda t: None if t.image is None else t.image.name),
        image_size=ints(lambda t: 0 if t.image is None else t.image.size),
        data_size=ints(lambda t: t.data_size),
        checkpoint_interval_ms=ints(
            lambda t: (
                NO_CHECKPOINT if t.checkpoint_interval_s is None else max(1, to_ms(t.checkpoint_interval_s))
            )
        ),
        checkpoint_write_ms=ints(lambda t: to_ms(t.checkpoint_write_s)),
        preempt_never=flags(lambda t: t.preemption_policy == "Never"),
        prebound=flags(lambda t: t.bound_node is not None),
        topology_required=objects(lambda t: t.topology_required),
        topology_preferred=objects(lambda t: t.topology_preferred),
        spec_key=spec_keys(table),
    )
