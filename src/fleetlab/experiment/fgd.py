"""The FGD paper's main experiment (Weng et al., USENIX ATC 2023, Fig. 9 and 11-14): how much GPU capacity
each placement policy leaves unallocated as GPU-sharing workload arrives, on the openb trace.

Protocol, as the authors' simulator runs it (``Simulate`` in ``pkg/simulator/core.go``): compute the target
workload M once from the pod list (the most popular specs covering 95 % of pods); sort pods by name and
shuffle them with the seed; inflate by sampling pods with replacement until the total GPU request would
exceed 130 % of the cluster's GPU capacity (or drop random pods when it is already above); submit pods one
by one with no departures and no retries. Nodes are tried in the order of the names upstream gives them
(``syncClusterResourceList`` prefixes each name-sorted node with a random ``%04d-``), which is the order
kube-scheduler's smallest-name tie-break follows. After every arrival record the arrived GPU request, the
allocated GPU share and the cluster fragmentation F_N(M). Per whole percent of arrived workload the
unallocated GPU share is 100 − allocated % (upstream ``analysis_allo_discrete``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fleetlab.placement.fragmentation import TargetWorkload, target_workload
from fleetlab.placement.share_policies import known_policies, place
from fleetlab.placement.sharing import PodRequest, ShareState
from fleetlab.spec.openb_share import ShareNodes, SharePods

INFLATION = 1.3
POPULARITY = 0.95
TOP_PERCENT = 130


@dataclass(frozen=True)
class Trajectory:
    """One run: per arrival, the arrived and allocated GPU milli and the cluster fragmentation (milli)."""

    variant: str
    policy: str
    seed: int
    arrived_milli: NDArray[np.int64]
    allocated_milli: NDArray[np.int64]
    frag_milli: NDArray[np.float64]
    failed: int
    capacity_milli: int
    wall_s: float

    def by_percent(self, top: int = TOP_PERCENT) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per whole percent of arrived workload 0..top: unallocated GPU % and fragmentation % of capacity
        after the last arrival in that bin (carried forward over empty bins; NaN before the first)."""
        percent = np.floor(self.arrived_milli * 100.0 / self.capacity_milli + 0.5).astype(np.int64)
        unalloc = np.full(top + 1, np.nan)
        frag = np.full(top + 1, np.nan)
        inside = percent <= top
        last = np.full(top + 1, -1)
        last[percent[inside]] = np.flatnonzero(inside)  # later arrivals overwrite earlier ones
        idx = np.maximum.accumulate(last)
        ok = idx >= 0
        unalloc[ok] = 100.0 - self.allocated_milli[idx[ok]] * 100.0 / self.capacity_milli
        frag[ok] = self.frag_milli[idx[ok]] * 100.0 / self.capacity_milli
        return unalloc, frag


def arrival_order(
    names: Sequence[str], demand: NDArray[np.int64], capacity_milli: int, seed: int
) -> NDArray[np.int64]:
    """Upstream ``SortClusterPods`` + ``TunePodsByNodeTotalResource``: indices of the pods in arrival order,
    sorted by name and shuffled with the seed, then clones sampled with replacement until the total GPU
    request would pass 130 % of capacity, or random pods dropped while it is above."""
    rng = np.random.default_rng(seed)
    by_name = np.asarray(sorted(range(len(names)), key=lambda i: names[i]), dtype=np.int64)
    order = by_name[rng.permutation(len(by_name))]
    target = INFLATION * capacity_milli
    total = int(demand.sum())
    if total > target:
        keep = np.ones(len(order), dtype=bool)
        for drop in rng.permutation(len(order)):
            if total <= target:
                break
            keep[drop] = False
            total -= int(demand[order[drop]])
        return order[keep]
    extra: list[int] = []
    while total < target:
        pick = int(rng.integers(len(names)))
        if total + int(demand[pick]) > target:
            break
        total += int(demand[pick])
        extra.append(pick)
    return np.concatenate([order, np.asarray(extra, dtype=np.int64)])


def renamed_prefixes(count: int, seed: int) -> NDArray[np.int64]:
    """The ``%04d-`` prefix upstream's ``syncClusterResourceList`` puts before each node's name, nodes taken
    in name order: a random permutation (Go ``rand.Perm``), drawn here from its own stream of the seed."""
    return np.random.default_rng([seed, 2]).permutation(count).astype(np.int64)


def tie_order(prefixes: NDArray[np.int64]) -> NDArray[np.int64]:
    """Node indices sorted by their renamed names ``%04d-<name>``: the first is the one the simulator's
    patched ``selectHost`` (smallest name among equal scores) picks when every node ties, which is what
    decides where GpuPacking and GpuClustering put CPU-only pods."""
    return np.argsort(prefixes, kind="stable").astype(np.int64)


def ordered_state(nodes: ShareNodes, target: TargetWorkload, order: NDArray[np.int64]) -> ShareState:
    """The replay's node state with node ``order[k]`` at index k, so that the lowest index, which wins a
    tie in :func:`~fleetlab.placement.share_policies.place`, is the node upstream's tie-break picks."""
    return ShareState(
        nodes.cpu_milli[order], nodes.memory_mib[order], nodes.gpus[order], nodes.model[order], target
    )


def workload_target(pods: SharePods) -> TargetWorkload:
    """M for a pod list: the typical pods upstream derives before inflation."""
    return target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.model_mask, POPULARITY)


def run_policy(
    nodes: ShareNodes,
    pods: SharePods,
    policy: str,
    seed: int,
    variant: str = "",
    target: TargetWorkload | None = None,
) -> Trajectory:
    """Replay one seed's inflated arrivals under one policy. Nodes are indexed in upstream's renamed order
    (:func:`tie_order`, prefixes drawn from the seed) so that the lowest index wins a tie as the smallest
    name does there."""
    if policy not in known_policies():
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(known_policies())}")
    started = time.perf_counter()
    target = target if target is not None else workload_target(pods)
    state = ordered_state(nodes, target, tie_order(renamed_prefixes(len(nodes.names), seed)))
    demand = pods.num_gpu * pods.gpu_milli
    order = arrival_order(pods.names, demand, state.capacity_milli, seed)
    rng = np.random.default_rng([seed, 1])
    n = len(order)
    arrived = np.cumsum(demand[order])
    allocated = np.zeros(n, dtype=np.int64)
    frag = np.zeros(n, dtype=np.float64)
    frag_total = float(state.frag.sum())
    failed = 0
    cpu, mem, gpus, milli, mask = (
        a.tolist() for a in (pods.cpu_milli, pods.memory_mib, pods.num_gpu, pods.gpu_milli, pods.model_mask)
    )
    for i, p in enumerate(order.tolist()):
        pod = PodRequest(cpu[p], mem[p], gpus[p], milli[p], mask[p])
        choice = place(state, pod, policy, rng)
        if choice is None:
            failed += 1
        else:
            before = float(state.frag[choice.node])
            state.bind(pod, choice.node, choice.gpu)
            frag_total += float(state.frag[choice.node]) - before
        allocated[i] = state.allocated_milli
        frag[i] = frag_total
    wall = time.perf_counter() - started
    return Trajectory(variant, policy, seed, arrived, allocated, frag, failed, state.capacity_milli, wall)


@dataclass(frozen=True)
class RunSpec:
    """One cell of the grid: which pod list, policy and seed."""

    variant: str
    policy: str
    seed: int


def _run_cell(args: tuple[ShareNodes, SharePods, TargetWorkload, RunSpec]) -> Trajectory:
    nodes, pods, target, spec = args
    return run_policy(nodes, pods, spec.policy, spec.seed, spec.variant, target)


def run_grid(
    nodes: ShareNodes,
    workloads: dict[str, SharePods],
    policies: Sequence[str],
    seeds: Sequence[int],
    jobs: int = 1,
    progress: Callable[[int, int, RunSpec], None] | None = None,
) -> list[Trajectory]:
    """Every variant × policy × seed; results come back in grid order whatever ``jobs`` is."""
    targets = {name: workload_target(pods) for name, pods in workloads.items()}
    specs = [RunSpec(v, p, s) for v in workloads for p in policies for s in seeds]
    cells = [(nodes, workloads[s.variant], targets[s.variant], s) for s in specs]
    out: list[Trajectory] = []
    if jobs <= 1:
        for cell in cells:
            out.append(_run_cell(cell))
            if progress is not None:
                progress(len(out), len(cells), cell[3])
        return out
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(_run_cell, cells):
            out.append(result)
            if progress is not None:
                progress(len(out), len(cells), specs[len(out) - 1])
    return out
