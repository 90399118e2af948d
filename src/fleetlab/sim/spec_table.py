"""Per job its pod spec, per queue entry its group: built and compiled once, read on every bind and release.

Jobs with equal spec keys (sim/job_arrays.py) share one pod spec per scheduler profile, compiled the first
time a job of the key is placed. Pods placed one by one share a queue group per spec; a gang is a group of
its own (spec, pods left, topology). Each group carries what the scheduling cycle needs to place it, so a
cycle looks nothing up per attempt.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fleetlab.model.job import Job
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.element_views import int_elements
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.gang import GangPlacer, TopologyRequest
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.counters import Group
from fleetlab.sim.job_arrays import JobArrays
from fleetlab.sim.specs import pod_spec

#: What placing one queue group needs: its compiled pod, scheduler and gang placer, its gang size (0: pods
#: placed one by one) and topology, and whether preemption may make room for one of its pods.
GroupPlan = tuple[CompiledPod, Scheduler, GangPlacer, int, TopologyRequest, bool]


class SpecTable:
    """Interns pod specs (per profile) and queue groups; a spec id indexes ``compiled``, ``spec_profile``
    and ``gpus``, a group id ``groups`` and ``plans``."""

    def __init__(
        self,
        jobs: Sequence[Job],
        columns: JobArrays,
        schedulers: dict[str, Scheduler],
        placers: dict[str, GangPlacer],
        config: SchedulerConfig,
        with_labels: bool,
        pods: Sequence[int],
        pods_done_at: memoryview[int],
    ) -> None:
        self.jobs = jobs
        self.columns = columns
        self.schedulers = schedulers
        self.placers = placers
        self.preemption = config.preemption
        self.with_labels = with_labels
        self.gpu_col = schedulers[""].state.gpu_col
        self.spec_ids: dict[tuple[PodSpec, str], int] = {}
        self.compiled: list[CompiledPod] = []
        self.spec_profile: list[str] = []
        #: Per spec id, whole GPUs per pod (its request's nvidia.com/gpu).
        self.gpus: list[int] = []
        #: Per job its spec id, -1 until it is first placed (or after Kueue changed its spec).
        self.job_spec = np.full(len(columns), -1, dtype=np.int64)
        self._job_spec_at = int_elements(self.job_spec)
        #: Per job a spec that replaces the one its columns give (Kueue's admitted flavors), until interned.
        self.override: dict[int, PodSpec] = {}
        self.group_ids: dict[Group, int] = {}
        self.groups: list[Group] = []
        self.plans: list[GroupPlan] = []
        #: (spec key, profile) -> spec id, and spec id -> its queue group for pods placed one by one.
        self._key_spec: dict[tuple[int, str], int] = {}
        self._plain_group: dict[int, int] = {}
        self._profile_key: list[str] = [c if c in schedulers else "" for c in columns.job_class.tolist()]
        self._spec_key: list[int] = columns.spec_key.tolist()
        self._pods = pods
        self._pods_done_at = pods_done_at
        #: Multi-pod gang jobs (their pods start together) and those placed all-or-nothing (``is_gang``).
        self.multi_gang: list[bool] = (columns.gang & (columns.pods > 1)).tolist()
        gangs = config.gang_scheduling
        self.placed_as_gang: list[bool] = [g and gangs for g in self.multi_gang]

    def spec_of(self, job: int) -> int:
        """Intern the job's pod spec; built and compiled once per spec key (see sim/job_arrays.py)."""
        sid = self._job_spec_at[job]
        if sid >= 0:
            return sid
        profile_key = self._profile_key[job]
        override = self.override.pop(job, None)
        if override is None:
            cache_key = (self._spec_key[job], profile_key)
            found = self._key_spec.get(cache_key)
            if found is None:
                found = self._intern(self.base_spec(job), profile_key)
                self._key_spec[cache_key] = found
            sid = found
        else:
            sid = self._intern(override, profile_key)
        self._job_spec_at[job] = sid
        return sid

    def base_spec(self, job: int) -> PodSpec:
        """The pod spec the job's own fields give (before Kueue injects its flavors)."""
        return pod_spec(self.jobs[job], self.with_labels)

    def respec(self, job: int, spec: PodSpec) -> None:
        """From the job's next placement on, its pods use ``spec``."""
        self.override[job] = spec
        self.job_spec[job] = -1

    def _intern(self, spec: PodSpec, profile_key: str) -> int:
        """The spec id of ``spec`` under a profile, compiling it the first time it is seen."""
        sid = self.spec_ids.setdefault((spec, profile_key), len(self.spec_ids))
        if sid == len(self.compiled):
            compiled = self.schedulers[profile_key].compile(spec)
            self.compiled.append(compiled)
            self.spec_profile.append(profile_key)
            self.gpus.append(int(compiled.request[self.gpu_col]))
        return sid

    def group_of(self, job: int) -> int:
        """The queue group of a job's pods."""
        sid = self.spec_of(job)
        if not self.placed_as_gang[job]:
            gid = self._plain_group.get(sid)
            if gid is None:
                gid = self._plain_group[sid] = self._group_id(Group(sid))
            return gid
        left = self._pods[job] - self._pods_done_at[job]  # a resumed gang places only its unfinished pods
        cols = self.columns
        topology = TopologyRequest(cols.topology_required[job], cols.topology_preferred[job])
        return self._group_id(Group(sid, left, topology))

    def _group_id(self, group: Group) -> int:
        gid = self.group_ids.setdefault(group, len(self.group_ids))
        if gid == len(self.groups):
            self.groups.append(group)
            profile_key = self.spec_profile[group.spec_id]
            compiled = self.compiled[group.spec_id]
            preempts = self.preemption and not any(compiled.spec.gpu_share)
            scheduler, placer = self.schedulers[profile_key], self.placers[profile_key]
            self.plans.append((compiled, scheduler, placer, group.gang_size, group.topology, preempts))
        return gid
