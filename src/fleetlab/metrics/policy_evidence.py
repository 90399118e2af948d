"""What the record says about a cluster's queueing policy where the cluster did not record the policy
itself (docs/calibration.md, "Inferred policy"): per-user, per-team and per-queue concurrency ceilings,
the queue's discipline and the order among queues, each with its evidence.

* **Ceiling** of a group (a user, team or queue) for a resource (running jobs, CPU cores, GPUs): the most
  the group ever held at once. Evidence: ``reached_share``, the share of the time the group ran anything
  during which it sat at the ceiling; ``explained_share``, the share of the group's waiting time during
  which starting the waiting job would have taken the group past the ceiling.
* **Overtake rate** of a queue: among pairs of its jobs where the later-submitted one arrived while the
  earlier one was still waiting, the share in which the later one started first. A first-come-first-served
  queue has none.
* **Order** between two queues: how often a job of one started before an earlier-submitted job of the
  other that was waiting when it arrived, in each direction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.metrics.baseline import UNSET, job_columns, job_times
from fleetlab.metrics.intervals import merge, steps, time_short
from fleetlab.model.history import History

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: The groupings ceilings are looked for in, and the resources counted.
CEILING_GROUP_BYS: tuple[str, ...] = ("user", "team", "queue")
CEILING_RESOURCES: tuple[str, ...] = ("jobs", "cpu", "gpu")


@dataclass(frozen=True)
class Ceiling:
    """The most one group held of one resource at once, and how much of its waiting it explains."""

    group_by: str
    group: str
    resource: str
    value: float
    reached_share: float
    explained_share: float | None  # None: the group never waited
    wait_hours: float

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Overtakes:
    """Pairs of a group's jobs where the later one arrived while the earlier waited, and how many of them
    the later one started first."""

    group_by: str
    group: str
    pairs: int
    overtaken: int

    @property
    def rate(self) -> float | None:
        """``overtaken / pairs`` (None without pairs)."""
        return self.overtaken / self.pairs if self.pairs else None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (with the rate)."""
        return {**asdict(self), "rate": self.rate}


@dataclass(frozen=True)
class JobSpans:
    """Per job: waiting window, holding interval and request, for the jobs whose wait is known."""

    submit: FloatArray
    start: FloatArray  # start, or where a never-started job's wait is censored
    started: NDArray[np.bool_]
    held_from: FloatArray
    held_to: FloatArray
    need: FloatArray  # jobs (1), cpu cores, gpus

    @classmethod
    def of(cls, history: History) -> JobSpans:
        """From the history (every job; a job with an unmeasured wait has an empty waiting window)."""
        cols = job_columns(history)
        end = float(history.end_s)
        times = job_times(cols, end)
        walltime = np.asarray(history.jobs.column("walltime_s").to_numpy(zero_copy_only=False), dtype=float)
        stop = np.where(
            ~np.isnan(cols.end),
            np.minimum(cols.end, end),
            np.where(
                times.held_known, end, np.minimum(cols.scheduled + np.nan_to_num(walltime, nan=end), end)
            ),
        )
        started = times.started
        start = np.where(times.wait_known, cols.submit + times.waits, cols.submit)
        return cls(
            submit=cols.submit,
            start=start,
            started=started,
            held_from=np.where(started, cols.scheduled, 0.0),
            held_to=np.where(started, stop, 0.0),
            need=np.column_stack((np.ones(len(start)), np.nan_to_num(cols.cpus), np.nan_to_num(cols.gpus))),
        )


def group_labels(history: History, group_by: str) -> NDArray[np.object_]:
    """The user, team or queue of every job, ``(none)`` where not recorded."""
    return np.asarray([UNSET if v is None else str(v) for v in history.jobs.column(group_by).to_pylist()],
                      dtype=object)  # fmt: skip


def ceilings(history: History, spans: JobSpans | None = None) -> list[Ceiling]:
    """Every group's ceiling per resource it used, with its evidence (groups of ``(none)`` left out)."""
    spans = spans or JobSpans.of(history)
    out: list[Ceiling] = []
    for group_by in CEILING_GROUP_BYS:
        labels = group_labels(history, group_by)
        for group in sorted(set(labels.tolist()) - {UNSET}):
            mine = labels == group
            out.extend(_group_ceilings(group_by, group, spans, mine))
    return out


def _group_ceilings(
    group_by: str,
    group: str,
    spans: JobSpans,
    mine: NDArray[np.bool_],
    levels: dict[str, float] | None = None,
) -> list[Ceiling]:
    """The group's ceiling per resource it used: ``levels[resource]`` where given, else the most it held."""
    held = steps(spans.held_from[mine], spans.held_to[mine], spans.need[mine])
    if not len(held.times):
        return []
    width = np.diff(held.times)
    busy = held.levels[:-1, 0] > 0
    busy_time = float(width[busy].sum())
    a, b = spans.submit[mine], spans.start[mine]
    waited = float(np.maximum(b - a, 0.0).sum())
    out = []
    for r, name in enumerate(CEILING_RESOURCES):
        if not np.any(spans.need[mine, r] > 0) or (levels is not None and name not in levels):
            continue
        top = float(held.levels[:, r].max()) if levels is None else levels[name]
        at_top = busy & (held.levels[:-1, r] >= top - 1e-9)
        reached = float(width[at_top].sum()) / busy_time if busy_time > 0 else 0.0
        need = np.zeros((int(mine.sum()), 1))
        need[:, 0] = spans.need[mine, r]
        free = (top - held.levels[:, r]).reshape(-1, 1)
        explained = float(time_short(held.times, free, need, a, b).sum()) / waited if waited > 0 else None
        out.append(Ceiling(group_by, group, name, top, reached, explained, waited / 3600))
    return out


def ceilings_at(
    history: History, group_by: str, levels: dict[str, dict[str, float]], spans: JobSpans | None = None
) -> list[Ceiling]:
    """The evidence for given levels (group -> resource -> level) of one grouping."""
    spans = spans or JobSpans.of(history)
    labels = group_labels(history, group_by)
    out: list[Ceiling] = []
    for group, wanted in sorted(levels.items()):
        out.extend(_group_ceilings(group_by, group, spans, labels == group, wanted))
    return out


def _while_waiting(
    spans: JobSpans, mine: NDArray[np.bool_], resource: int
) -> tuple[float, FloatArray, FloatArray]:
    """The most a group ever held of ``resource``, and what it held over the pieces of time it had a job
    waiting with their lengths (both empty when it never waited)."""
    held = steps(spans.held_from[mine], spans.held_to[mine], spans.need[mine])
    empty = np.zeros(0)
    if not len(held.times):
        return 0.0, empty, empty
    top = float(held.levels[:, resource].max())
    waiting = steps(spans.submit[mine], spans.start[mine])
    if not len(waiting.times):
        return top, empty, empty
    times, (level, queued) = merge(held, waiting)
    pieces = queued[:-1] > 0
    return top, level[:-1, resource][pieces], np.diff(times)[pieces]


def level_while_waiting(spans: JobSpans, mine: NDArray[np.bool_], resource: int, q: float) -> float:
    """The q-quantile of what a group held of ``resource`` over the time it had a job waiting (time-
    weighted); the most it ever held for q = 1 or when it never waited."""
    top, values, weights = _while_waiting(spans, mine, resource)
    if q >= 1.0 or not len(values):
        return top
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order]) / weights.sum()
    return float(values[order][min(int(np.searchsorted(cumulative, q - 1e-12)), len(values) - 1)])


def peak_while_waiting(spans: JobSpans, mine: NDArray[np.bool_], resource: int) -> float:
    """The most a group held of ``resource`` at any time it had a job waiting (0 when it never held any
    while waiting: its waits show no limit of its own)."""
    _, values, _ = _while_waiting(spans, mine, resource)
    return float(values.max()) if len(values) else 0.0


def limit_level(spans: JobSpans, mine: NDArray[np.bool_], resource: int, q: float) -> float | None:
    """The level of a group's inferred limit on ``resource``: ``level_while_waiting`` at q, or, where that
    is 0 (for a q share of its waiting it held none), the most it held while waiting; None when it never
    held any while it had a job waiting — its waits were not made by a limit of its own (a group that
    only ever ran one job at a time and never waited behind it shows its demand, not a limit)."""
    peak = peak_while_waiting(spans, mine, resource)
    if peak <= 0:
        return None
    level = level_while_waiting(spans, mine, resource, q)
    return level if level > 0 else peak


def overtakes(labels: NDArray[np.object_], spans: JobSpans) -> dict[str, Overtakes]:
    """Per group of ``labels``, its jobs' overtakes (see the module docstring)."""
    out: dict[str, Overtakes] = {}
    for group in sorted(set(labels.tolist())):
        jobs = np.nonzero(labels == group)[0]
        sub, start = spans.submit[jobs], spans.start[jobs]
        pairs, _ = _overtakes(sub, start, sub, start)
        order = np.lexsort((start, sub))
        every = np.ones(len(jobs), dtype=bool)
        out[str(group)] = Overtakes("", str(group), pairs, _dominance(start[order], every, every))
    return out


def _overtakes(
    sub_a: FloatArray, start_a: FloatArray, sub_b: FloatArray, start_b: FloatArray
) -> tuple[int, int]:
    """Pairs (i of a, j of b) with ``sub_a[i] < sub_b[j] < start_a[i]`` (j arrived while i waited), and how
    many of them have ``start_b[j] < start_a[i]`` (j started first; such a j necessarily arrived while i
    waited). Both counted in O(n log² n) with sorted arrays."""
    sb = np.sort(sub_b)
    pairs = int(
        np.maximum(
            np.searchsorted(sb, start_a, side="left") - np.searchsorted(sb, sub_a, side="right"), 0
        ).sum()
    )
    submit = np.concatenate((sub_a, sub_b))
    start = np.concatenate((start_a, start_b))
    first = np.concatenate((np.ones(len(sub_a), dtype=bool), np.zeros(len(sub_b), dtype=bool)))
    # Submit order, ties broken by start (tied submits never count as one overtaking the other).
    order = np.lexsort((start, submit))
    return pairs, _dominance(start[order], first[order], ~first[order])


def _dominance(start: FloatArray, first: NDArray[np.bool_], second: NDArray[np.bool_]) -> int:
    """#{(i, j): i < j, first[i], second[j], start[j] < start[i]} by halving: at each level, elements
    of the left half of a block are compared with the right half of the same block."""
    n = len(start)
    if n < 2:
        return 0
    values, rank = np.unique(start, return_inverse=True)
    span = len(values) + 1
    position = np.arange(n, dtype=np.int64)
    total = 0
    width = 1
    while width < n:
        run = position // width
        block = run // 2
        right = (run % 2 == 1) & second
        left = (run % 2 == 0) & first
        keys = np.sort(block[right] * span + rank[right])
        base = block[left] * span
        total += int(
            (
                np.searchsorted(keys, base + rank[left], side="left")
                - np.searchsorted(keys, base, side="left")
            ).sum()
        )
        width *= 2
    return total


def order_between(labels: NDArray[np.object_], spans: JobSpans) -> list[dict[str, Any]]:
    """For each ordered pair of groups (A, B): how often a job of B started before an earlier-submitted job
    of A that was waiting when it arrived (B jumped A), out of how many chances."""
    groups = sorted(set(labels.tolist()))
    out = []
    for first in groups:
        a = labels == first
        for second in groups:
            if second == first:
                continue
            b = labels == second
            pairs, jumped = _overtakes(spans.submit[a], spans.start[a], spans.submit[b], spans.start[b])
            if pairs:
                out.append(
                    {"waiting": str(first), "arriving": str(second), "pairs": pairs, "started_first": jumped}
                )
    return out
