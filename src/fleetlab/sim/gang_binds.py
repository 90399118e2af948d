"""When a gang's trial binds may stay as its real binds, and what each member's bind then still needs.

The gang placer binds each member in trial to choose the next one's node. Rolling those binds back and
binding the same pods to the same nodes again leaves the state's sums as they were; the binds can stay
when nothing between two members' binds reads those sums: no bind subscriber that reads them for the
spec, and no pod label set (the trial binds count no labels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.state import ClusterState


def trial_binds_stay(
    blind: Sequence[Callable[[CompiledPod], bool]], bind_hooks: int, compiled: CompiledPod, label_set: int
) -> bool:
    """Every one of the ``bind_hooks`` subscribers says it leaves the state's sums alone for the spec
    (``blind``), and the job's pods have no label set."""
    return label_set < 0 and len(blind) == bind_hooks and all(says(compiled) for says in blind)


def gpus_before_each(state: ClusterState, plan: Sequence[int], gpus: int) -> list[int]:
    """Per member of a kept plan, the GPUs its node held before the member's own bind: the node's now,
    less ``gpus`` for this member and each later one on the same node."""
    if not gpus:
        return [0] * len(plan)
    later: dict[int, int] = {}
    for node in plan:
        later[node] = later.get(node, 0) + gpus
    out: list[int] = []
    for node in plan:
        out.append(int(state.requested[node, state.gpu_col]) - later[node])
        later[node] -= gpus
    return out
