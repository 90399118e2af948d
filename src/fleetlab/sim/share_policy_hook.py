"""Sets up an FGD-paper policy (``--policy fgd`` and its baselines) in the simulator: the target workload
M from the scenario's jobs, the ShareView the SharePolicy plugin scores on, and the policy's GPU choice."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fleetlab.placement.fragmentation import target_workload
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.share_view import ShareView, pod_request
from fleetlab.placement.sharing import PodRequest
from fleetlab.sim.gpu_fragments import POPULARITY
from fleetlab.sim.handle import EngineHandle
from fleetlab.sim.specs import pod_spec


def attach_share_view(sim: EngineHandle) -> ShareView | None:
    """A ShareView on ``sim.state`` when any profile uses a share policy (None otherwise). It also chooses
    the GPU of each share, by the policy of the profile that scheduled the pod (best fit for presets). M
    weighs each job's pod shape by its pods, as upstream counts pods by spec (CPU, per-GPU share, GPU
    count)."""
    policies = [s.profile.share_policy for s in sim.schedulers.values() if s.profile.share_policy]
    if not policies or not sim.jobs:
        return None
    scheduler = sim.scheduler
    first: dict[tuple[int, int, int], PodSpec] = {}
    shapes: list[tuple[int, int, int]] = []
    weights: list[int] = []
    for job in sim.jobs:
        spec = pod_spec(job)
        request: PodRequest = pod_request(sim.state, scheduler.compile(spec))
        key = (request.cpu_milli, request.gpu_milli, request.num_gpu)
        first.setdefault(key, spec)
        shapes.append(key)
        weights.append(job.pods)
    arr = np.repeat(np.asarray(shapes, dtype=np.int64), weights, axis=0)
    target = target_workload(arr[:, 0], arr[:, 2], arr[:, 1], np.zeros(len(arr), dtype=np.int64), POPULARITY)
    specs = [
        first[(int(c), int(m), int(g))]
        for c, m, g in zip(target.cpu_milli, target.gpu_milli, target.num_gpu, strict=True)
    ]

    def eligibility() -> NDArray[np.bool_]:
        return np.stack([scheduler.static_mask(scheduler.compile(s)) for s in specs], axis=1)

    view = ShareView(sim.state, sim.profile.share_policy, target, eligibility, sim.seed)
    sim.state.share_view = view
    if sim.state.devices is not None:
        sim.state.devices.chooser = view.choose_gpu
    return view


def policy_of(sim: EngineHandle, pod: int) -> str:
    """The share policy of the profile that schedules ``pod`` ("" for a preset profile)."""
    spec_id = int(sim.job_spec[int(sim.book.job[pod])])
    key = sim.spec_profile[spec_id] if spec_id >= 0 else ""
    return sim.schedulers[key].profile.share_policy
