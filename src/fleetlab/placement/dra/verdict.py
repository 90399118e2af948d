"""The DRA part of a pending pod's verdict, for ``diagnose`` and the simulator's pending table: which of
its ResourceClaims cannot be satisfied, and how many devices in the cluster match each request (the
DynamicResources plugin's PreFilter / Filter reasons, plus the counts kube-scheduler does not print)."""

from __future__ import annotations

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import Scheduler


def dra_block(
    scheduler: Scheduler, pod: CompiledPod, first_failing: list[str | None]
) -> tuple[str, str] | None:
    """("dra", detail) when the pod's claims keep it pending: its PreFilter fails, or nodes that pass every
    other filter fail DynamicResources (``first_failing``: per node the first failing plugin's name)."""
    plugin, claims = scheduler.dra, pod.spec.claims
    if plugin is None or claims is None:
        return None
    message = plugin.pre_filter(scheduler.state, pod)
    if message is not None:
        return "dra", f"DynamicResources PreFilter: {message}"
    blocked = [i for i, name in enumerate(first_failing) if name == plugin.name]
    if not blocked:
        return None
    reasons = sorted({plugin.reason_at(scheduler.state, pod, i) for i in blocked})
    counts = "; ".join(
        f"{request} asks {asks}: {matching} matching device(s) in the cluster, {free} free"
        for request, asks, matching, free in plugin.request_counts(claims)
    )
    detail = f"{len(blocked)} node(s) pass every other filter, but: {', '.join(reasons)}"
    return "dra", f"{detail}; {counts}" if counts else detail
