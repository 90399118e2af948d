"""Preflight: pod specs that no node of the cluster could ever hold, even empty.

Run before a simulation so a request like 16 GPUs per pod on 8-GPU nodes is warned about up front,
with the job ids, instead of silently staying pending.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fleetlab.placement.framework import PodSpec
from fleetlab.placement.profiles import Profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo


def unsatisfiable(
    nodes: Sequence[NodeInfo],
    specs: Sequence[tuple[str, PodSpec]],
    profile: Profile,
    extended_resource_toleration: bool = False,
) -> dict[PodSpec, list[str]]:
    """Specs (with the ids of jobs using them) that fit on no node: static filters plus allocatable."""
    extra = sorted({name for _, spec in specs for name, _ in spec.requests})
    state = ClusterState(nodes, extra_resources=extra)
    for i in range(state.n):
        state.set_ready(i)
    scheduler = Scheduler(state, profile, extended_resource_toleration=extended_resource_toleration)
    verdict: dict[PodSpec, bool] = {}
    out: dict[PodSpec, list[str]] = {}
    for job_id, spec in specs:
        ok = verdict.get(spec)
        if ok is None:
            pod = scheduler.compile(spec)
            mask = scheduler.static_mask(pod)
            cols = pod.request_cols
            fits = (state.allocatable[:, cols] >= pod.request[cols]).all(axis=1)
            ok = bool(np.any(mask & fits))
            verdict[spec] = ok
        if not ok:
            out.setdefault(spec, []).append(job_id)
    return out
