"""Why pods are still pending: kube-scheduler's message plus what it cannot say (shortage vs fragmentation,
and which rule keeps a pod off free room).

The message comes from the same filters that made the decision (``Scheduler.explain``); the
classification looks at free capacity on the nodes that pass the static filters, and free room that only
a rule keeps away (a taint, a selector, a cordon) is blamed on that rule (``placement.rule_blame``), not
reported as a shortage.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fleetlab.model.job import Job
from fleetlab.model.resources import format_amount
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.rule_blame import room_rule_block
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.result import PendingJob
from fleetlab.sim.share_pending import classify_share, other_mig_note, whole_gpu_verdict


def classify(scheduler: Scheduler, spec: PodSpec) -> tuple[str, str]:
    """("constraints" | "too-large" | "shortage" | "fragmentation" | "none", a one-line detail)."""
    state = scheduler.state
    pod = scheduler.compile(spec)
    static = scheduler.static_mask(pod)
    nodes = np.flatnonzero(static)
    if len(nodes) == 0:
        return "constraints", "no ready node passes the taint, selector, affinity and cordon filters"
    share = classify_share(state, pod, nodes)
    if share is not None:
        return share
    short: list[tuple[str, str]] = []
    fragmented: list[tuple[str, str]] = []
    for col in pod.request_cols:
        want = int(pod.request[col])
        free = state.free[nodes, col]
        name = state.resource_names[int(col)]
        total = int(free.clip(min=0).sum())
        best = int(free.max())
        if best >= want:
            continue
        holding = int(np.count_nonzero(free > 0))
        what = "pod slots" if name == "pods" else name
        largest = int(state.allocatable[nodes, col].max())
        if largest < want:
            excluded = _excluded_big_nodes(scheduler, pod, static)
            if excluded is not None:
                return "constraints", excluded
            return "too-large", (
                f"the pod needs {format_amount(name, want)} {what} but the largest eligible node has "
                f"{format_amount(name, largest)}"
            )
        if col == state.gpu_col:
            verdict = whole_gpu_verdict(state, nodes, want, total, best)
            (short if verdict[0] == "shortage" else fragmented).append(verdict)
        elif total < want:
            short.append(
                (
                    "shortage",
                    f"{format_amount(name, total)} {what} free in total on {len(nodes)} eligible node(s)"
                    f"{other_mig_note(state, nodes, name)}; the pod needs {format_amount(name, want)}",
                )
            )
        else:
            fragmented.append(
                (
                    "fragmentation",
                    f"{format_amount(name, total)} {what} free across {holding} node(s), at most "
                    f"{format_amount(name, best)} on one node; the pod needs {format_amount(name, want)}",
                )
            )
    if short or fragmented:  # a total shortage of any resource outranks fragmentation of another
        return (short or fragmented)[0]
    if len(scheduler.feasible_nodes(pod)):
        return "none", "a node fits now; the pod would be placed at the next scheduling cycle"
    if pod.spec.pod_dependent and scheduler._incremental(pod).fits.any():
        return "constraints", (
            "nodes have room, but the pod's topology spread or anti-affinity rules keep it off them"
        )
    return "fragmentation", "no single node has every requested resource free at once"


def classify_blamed(scheduler: Scheduler, spec: PodSpec) -> tuple[str, str, str]:
    """:func:`classify`, then the constraint whose removal opens room: when the nodes the pod may use are
    short or fragmented but a ready node has its requests free and only rules keep the pod off it, the
    verdict is that rule (``taint``, ``cordoned``, ``selector/affinity``...) with the capacity verdict
    appended to the detail. Returns (blocked_by, detail, the capacity verdict a rule replaced or "")."""
    blocked_by, detail = classify(scheduler, spec)
    if blocked_by not in ("shortage", "fragmentation"):
        return blocked_by, detail, ""
    opened = room_rule_block(scheduler, scheduler.compile(spec))
    if opened is None:
        return blocked_by, detail, ""
    return opened[0], f"{opened[1]}; on the nodes it may use: {blocked_by}, {detail}", blocked_by


def _excluded_big_nodes(scheduler: Scheduler, pod: CompiledPod, static: BoolArray) -> str | None:
    """When only filtered-out nodes are big enough: which filter keeps the pod off them (else None)."""
    state = scheduler.state
    cols = pod.request_cols
    big = state.ready & ~static & (state.allocatable[:, cols] >= pod.request[cols]).all(axis=1)
    if not big.any():
        return None
    remaining = big.copy()
    parts: list[str] = []
    for plugin in scheduler.filters:
        if not plugin.static:
            continue
        failing = remaining & ~plugin.passes(state, pod)
        n = int(np.count_nonzero(failing))
        if n:
            parts.append(f"{n} by {plugin.name}")
        remaining &= ~failing
    return (
        f"{int(np.count_nonzero(big))} node(s) are large enough but filtered out ({', '.join(parts)}); "
        "the nodes that pass the filters are too small"
    )


def classify_gang(
    scheduler: Scheduler, spec: PodSpec, count: int, required_level: str | None = None
) -> tuple[str, str] | None:
    """For a gang whose single pod would fit: how many of its pods fit at once (per domain if required)."""
    from fleetlab.placement.gang import pods_that_fit

    state = scheduler.state
    pod = scheduler.compile(spec)
    nodes = np.flatnonzero(scheduler.static_mask(pod))
    fit = pods_that_fit(state, pod, nodes) if len(nodes) else np.zeros(0, dtype=np.int64)
    room = int(fit.sum())
    if room < count:
        return "gang", f"all {count} pods must start together; the cluster has room for {room} of them now"
    if required_level is not None:
        codes = state.labels.codes(required_level)[nodes]
        keep = codes >= 0
        best = int(np.bincount(codes[keep], weights=fit[keep]).max()) if keep.any() else 0
        return "topology", (
            f"all {count} pods must share one {required_level} domain; the roomiest has room for {best}"
        )
    return None


def explain_pending(
    scheduler: Scheduler,
    groups: dict[PodSpec, list[int]],
    jobs: Sequence[Job],
    pod_job: np.ndarray,
    gangs: bool = True,
) -> list[PendingJob]:
    """One entry per job with unplaced pods, sorted by job id."""
    per_job: dict[int, tuple[int, PodSpec]] = {}
    for group, pods in groups.items():
        for pod in pods:
            j = int(pod_job[pod])
            count, _ = per_job.get(j, (0, group))
            per_job[j] = (count + 1, group)
    explained: dict[PodSpec, tuple[str, str, str]] = {}
    out: list[PendingJob] = []
    for j, (count, spec) in per_job.items():
        if spec not in explained:
            error = scheduler.explain(scheduler.compile(spec))
            blocked_by, detail, _ = classify_blamed(scheduler, spec)
            explained[spec] = (error.message, blocked_by, detail)
        message, blocked_by, detail = explained[spec]
        job = jobs[j]
        if blocked_by == "none" and gangs and job.gang and job.pods > 1:
            verdict = classify_gang(scheduler, spec, job.pods, job.topology_required)
            if verdict is not None:
                blocked_by, detail = verdict
                message = f"pod group {job.id}: {job.pods} pods wait for room to start together"
        out.append(PendingJob(job.id, count, message, blocked_by, detail))
    out.sort(key=lambda p: p.job_id)
    return out


def pending_at_end(sim: EngineHandle, parts: ResultParts) -> list[PendingJob]:
    """Every job still waiting when the run ends, explained by the profile that schedules it (and by
    Kueue for workloads it has not admitted), in job-id order, with the features' notes (the autoscaler's
    reasons) added last."""
    by_id = {sid: key for key, sid in sim.spec_ids.items()}
    per_profile: dict[str, dict[PodSpec, list[int]]] = {}
    book = sim.book
    for gid, pods in sim.queue.pending().items():
        spec, profile_key = by_id[sim.groups[gid].spec_id]
        members = [p for first in pods for p in sim.entry_pods(gid, first)]
        per_profile.setdefault(profile_key, {}).setdefault(spec, []).extend(members)
    pending: list[PendingJob] = []
    for profile_key, groups in per_profile.items():
        pending.extend(
            explain_pending(
                sim.schedulers[profile_key], groups, sim.jobs, book.job, gangs=sim.config.gang_scheduling
            )
        )
    pending.extend(parts.pending)  # what features know is waiting (Kueue's unadmitted workloads)
    pending.sort(key=lambda p: p.job_id)
    if pending:
        pending = _with_gpu_memory_notes(sim, pending)
    for note in parts.pending_notes:
        pending = note(pending)
    return pending


def _with_gpu_memory_notes(sim: EngineHandle, pending: list[PendingJob]) -> list[PendingJob]:
    """Name the GPU memory as the reason where a job's declared gpu_memory exceeds every node's GPUs."""
    from dataclasses import replace

    import pyarrow as pa
    import pyarrow.compute as pc  # imported here: a run that leaves no job pending never needs it

    from fleetlab.sim.specs import gpu_memory_note, largest_gpu_memory_mib

    largest = largest_gpu_memory_mib(sim.node_infos)
    # Only the pending jobs are looked up (materialising every job of a large run would cost seconds).
    wanted = sorted({p.job_id for p in pending})
    at = pc.index_in(pa.array(wanted, pa.large_string()), value_set=sim.job_table.ids).to_pylist()
    by_id = {job_id: sim.jobs[i] for job_id, i in zip(wanted, at, strict=True) if i is not None}
    out = []
    for p in pending:
        note = gpu_memory_note(by_id[p.job_id], largest) if p.job_id in by_id else None
        out.append(p if note is None else replace(p, blocked_by="gpu-memory", detail=note))
    return out
