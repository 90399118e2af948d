"""Room the nodes' recorded allocation shows held by work the job record does not list (docs/calibration.md,
"Work the record does not list").

A node-usage import (``scontrol show node`` snapshots: the history's ``node_usage``) records, per node and
instant, what was allocated on the node, whoever held it. The listed jobs' share of it at that instant is
what the jobs running then held on that node: a job with a recorded node list, started (``scheduled_s``)
at or before the instant and not ended (``end_s``) by it, holds its per-node request (``gpus_per_pod``
GPUs, else ``cpu_per_pod`` cores) on each node of its list. Then, in the history's billing resource (GPUs
when its nodes have any, else CPUs), over every sample of a node the history knows, up to its end:

    unlisted_share = Σ max(allocated − listed, 0) / Σ node capacity
    recorded_share = Σ allocated / Σ node capacity,   listed_share = Σ min(listed, allocated) / Σ capacity

each sample counting once (snapshots taken at a steady pace weigh time evenly). A sample where the listed
jobs hold more than was recorded (a snapshot between a job's recorded end and the allocation's release)
counts no unlisted room.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetlab.model.history import History


@dataclass(frozen=True)
class UnlistedUse:
    """The shares of the nodes' capacity recorded allocated, held by listed jobs, and held by others."""

    resource: str  # gpu | cpu
    samples: int
    nodes: int
    recorded_share: float
    listed_share: float
    unlisted_share: float


def _held_by_listed(history: History, resource: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per node the listed jobs' (start, end, amount) on it, sorted by start."""
    jobs = history.jobs
    end_s = float(history.end_s)
    column = "gpus_per_pod" if resource == "gpu" else "cpu_per_pod"
    spans: dict[str, list[tuple[float, float, float]]] = {}
    for nodes, start, end, amount in zip(
        jobs.column("nodes").to_pylist(), jobs.column("scheduled_s").to_pylist(),
        jobs.column("end_s").to_pylist(), jobs.column(column).to_pylist(), strict=True,
    ):  # fmt: skip
        if not nodes or start is None or not amount:
            continue
        stop = end_s if end is None else float(end)
        for name in {n.strip() for n in str(nodes).split(",") if n.strip()}:
            spans.setdefault(name, []).append((float(start), stop, float(amount)))
    out = {}
    for name, rows in spans.items():
        arr = np.asarray(sorted(rows), dtype=np.float64)
        out[name] = (arr[:, 0], arr[:, 1], arr[:, 2])
    return out


def _held_at(spans: tuple[np.ndarray, np.ndarray, np.ndarray], times: np.ndarray) -> np.ndarray:
    """What the spans hold at each of ``times`` (started at or before, not ended by)."""
    starts, ends, amounts = spans
    order = np.argsort(ends, kind="stable")
    started = np.concatenate([[0.0], np.cumsum(amounts)])[np.searchsorted(starts, times, side="right")]
    ended = np.concatenate([[0.0], np.cumsum(amounts[order])])[
        np.searchsorted(ends[order], times, side="right")
    ]
    held: np.ndarray = started - ended
    return held


def unlisted_use(history: History) -> UnlistedUse | None:
    """The shares of the module docstring; None without node-usage samples of known nodes."""
    usage = history.node_usage
    if not usage.num_rows or not history.nodes.num_rows:
        return None
    names = history.nodes.column("node").to_pylist()
    gpus = np.asarray(history.nodes.column("gpus").to_numpy(zero_copy_only=False), dtype=np.float64)
    cpus = np.asarray(history.nodes.column("cpu").to_numpy(zero_copy_only=False), dtype=np.float64)
    resource = "gpu" if gpus.sum() > 0 else "cpu"
    capacity_of = dict(zip(names, (gpus if resource == "gpu" else cpus).tolist(), strict=True))
    sample_node = usage.column("node").to_pylist()
    times = np.asarray(usage.column("time_s").to_numpy(), dtype=np.float64)
    allocated = np.asarray(usage.column("gpus" if resource == "gpu" else "cpu").to_numpy(), dtype=np.float64)
    capacity = np.asarray([capacity_of.get(n, 0.0) for n in sample_node], dtype=np.float64)
    keep = (capacity > 0) & (times <= float(history.end_s))
    if not keep.any():
        return None
    listed = np.zeros(len(times))
    spans = _held_by_listed(history, resource)
    by_node: dict[str, list[int]] = {}
    for i in np.flatnonzero(keep).tolist():
        by_node.setdefault(sample_node[i], []).append(i)
    for name, rows in by_node.items():
        if name in spans:
            listed[rows] = _held_at(spans[name], times[rows])
    allocated = np.minimum(allocated, capacity)
    total = float(capacity[keep].sum())
    return UnlistedUse(
        resource=resource,
        samples=int(keep.sum()),
        nodes=len(by_node),
        recorded_share=float(allocated[keep].sum()) / total,
        listed_share=float(np.minimum(listed, allocated)[keep].sum()) / total,
        unlisted_share=float(np.maximum(allocated - listed, 0.0)[keep].sum()) / total,
    )
