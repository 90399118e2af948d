"""Why jobs waited, from the record alone, before anything is fitted (docs/calibration.md, "Why they
waited").

For every job whose wait is known (started, or censored because it never started) the waiting window is
``[submit, start)`` (``[submit, min(end, H))`` when it never started). Over the sum of those windows:

* ``capacity_explained_wait_share``: the share during which the recorded running work left no room for
  the job on its eligible nodes — some resource it asks for (CPU cores, GPUs, memory, summed over its pods)
  exceeded what those nodes (alive, not in a recorded down or drain window) had free. Resources are pooled
  over the eligible nodes, and a running job whose nodes are not recorded counts against every set of nodes
  it could have run on, so the share is an upper bound on what capacity explains;
* ``same_user_running_share`` / ``same_team_running_share``: the share during which another job of the
  same user / team was running (a per-user or per-team limit would show here);
* ``behind_earlier_share``: the share during which an earlier-submitted job of the same queue (the whole
  cluster when queues are not recorded) was still waiting (first-come-first-served order);
* ``nothing_running_share``: the share during which no job at all was running (an outage, a reservation,
  a hold);
* ``node_down_share``: the share during which some of the job's eligible nodes were in a recorded down or
  drain window (None when the history records none);
* ``cancelled_pending_jobs`` and their share of the waiting time (they waited until they were deleted).

The causes overlap; each share is its own. Jobs wider than any node (as recorded: one pod with more than
any node has) and jobs whose wait was not measured are counted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.metrics.baseline import UNSET, JobColumns, job_columns, job_times
from fleetlab.metrics.baseline_cost import node_lifetimes
from fleetlab.metrics.intervals import Steps, merge, steps, time_short, time_where
from fleetlab.model.history import History

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Groupings of the rows, in order.
CAUSE_GROUP_BYS: tuple[str, ...] = ("all", "job_class", "team", "user", "queue")
#: Resources compared for room: CPU cores, GPUs, memory bytes.
RESOURCES = ("cpu", "gpu", "memory")


@dataclass(frozen=True)
class CauseRow:
    """One group's waiting time and the share of it each visible cause covers (None: not measurable)."""

    group_by: str
    group: str
    jobs: int  # jobs whose wait is known (measured or censored)
    waited: int  # of which waited longer than 0
    wait_hours: float
    capacity_explained_wait_share: float | None
    same_user_running_share: float | None
    same_team_running_share: float | None
    behind_earlier_share: float | None
    nothing_running_share: float | None
    node_down_share: float | None
    cancelled_pending_jobs: int
    cancelled_pending_share: float | None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class WaitCauses:
    """The rows (``all`` first) and what the record shows beyond them."""

    rows: list[CauseRow]
    #: Whether capacity could be measured (the history has a node list).
    capacity_known: bool
    wider_than_any_node: int
    wait_unmeasured: int
    #: The fewest users (teams) that together carry 95 % of the waiting time, and how many waited.
    concentration: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: The most the listed jobs held at once of the nodes' GPUs (CPUs when no job used a GPU), as a share
    #: of what the nodes offer; None without a node list.
    peak_use_share: float | None = None
    peak_use_resource: str = "gpu"

    def row(self, group_by: str = "all", group: str = "all") -> CauseRow | None:
        """The row of one group."""
        return next((r for r in self.rows if r.group_by == group_by and r.group == group), None)

    def as_dict(self) -> dict[str, Any]:
        """What calibration.json holds under ``wait_causes``."""
        return {
            "capacity_known": self.capacity_known,
            "wider_than_any_node": self.wider_than_any_node,
            "wait_unmeasured": self.wait_unmeasured,
            "concentration": {k: {"carry_95": v[0], "waited": v[1]} for k, v in self.concentration.items()},
            "peak_use_share": self.peak_use_share,
            "peak_use_resource": self.peak_use_resource,
            "rows": [r.as_dict() for r in self.rows],
        }


@dataclass(frozen=True)
class _Nodes:
    """The node list as arrays: groups of identical eligibility, lifetimes, capacity."""

    group: NDArray[np.int64]  # per node: its eligibility group
    models: list[str | None]  # per group: GPU model
    has_gpu: BoolArray  # per group
    start: FloatArray
    stop: FloatArray
    capacity: FloatArray  # per node: cpu, gpu, memory
    index: dict[str, int]  # node name -> row


def _nodes(history: History) -> _Nodes:
    t = history.nodes
    models = t.column("gpu_model").to_pylist()
    gpus = np.asarray(t.column("gpus").to_numpy(zero_copy_only=False), dtype=np.float64)
    keys = [(m if g > 0 else None, bool(g > 0)) for m, g in zip(models, gpus, strict=True)]
    distinct = sorted(set(keys), key=lambda k: (k[1], k[0] or ""))
    position = {k: i for i, k in enumerate(distinct)}
    start, stop = node_lifetimes(history)
    capacity = np.column_stack(
        (
            np.asarray(t.column("cpu").to_numpy(zero_copy_only=False), dtype=np.float64),
            gpus,
            np.asarray(t.column("memory").to_numpy(zero_copy_only=False), dtype=np.float64),
        )
    ) if t.num_rows else np.zeros((0, 3))  # fmt: skip
    return _Nodes(
        group=np.asarray([position[k] for k in keys], dtype=np.int64),
        models=[k[0] for k in distinct],
        has_gpu=np.asarray([k[1] for k in distinct], dtype=bool),
        start=start,
        stop=stop,
        capacity=capacity,
        index={str(n): i for i, n in enumerate(t.column("node").to_pylist())},
    )


def _eligible(cols: JobColumns, gpu_model: list[str | None], nodes: _Nodes) -> list[int]:
    """Per job, the bitmask of node groups it may run on: GPU jobs on GPU nodes of their model (any
    model when none is named or the nodes name none), other jobs anywhere."""
    everything = (1 << len(nodes.models)) - 1
    gpu_groups = sum(1 << g for g in range(len(nodes.models)) if nodes.has_gpu[g])
    named = {m for m in nodes.models if m}
    cache: dict[tuple[bool, str | None], int] = {}
    out = []
    for gpus, wanted in zip(cols.gpus, gpu_model, strict=True):
        key = (bool(gpus > 0), wanted if gpus > 0 else None)
        mask = cache.get(key)
        if mask is None:
            if not key[0]:
                mask = everything
            else:
                models = {m.strip() for m in (wanted or "").split("|") if m.strip()}
                chosen = sum(
                    1 << g
                    for g in range(len(nodes.models))
                    if nodes.has_gpu[g] and (not models or not named or nodes.models[g] in models)
                )
                mask = chosen or gpu_groups
            cache[key] = mask
        out.append(mask)
    return out


def _placed(cols: JobColumns, eligible: list[int], nodes: _Nodes) -> list[int]:
    """Per job, the node groups it held: those of its recorded nodes, else every group it was eligible for."""
    out = []
    for mask, names in zip(eligible, cols.nodes, strict=True):
        rows = [nodes.index[n.strip()] for n in (names or "").split(",") if n.strip() in nodes.index]
        out.append(sum(1 << int(nodes.group[r]) for r in set(rows)) if rows else mask)
    return out


def _down_steps(history: History, nodes: _Nodes, mask: int) -> tuple[Steps, Steps]:
    """Capacity lost to down/drain windows on the groups of ``mask`` (cpu, gpu, memory), and the count of
    such nodes down at once."""
    down = history.node_down
    end = float(history.end_s)
    starts: list[float] = []
    stops: list[float] = []
    lost: list[FloatArray] = []
    for name, a, b in zip(
        down.column("node").to_pylist(),
        down.column("start_s").to_pylist(),
        down.column("end_s").to_pylist(),
        strict=True,
    ):
        rows = range(len(nodes.group)) if name is None else [nodes.index.get(str(name), -1)]
        for r in rows:
            if r >= 0 and mask >> int(nodes.group[r]) & 1:
                starts.append(max(float(a), nodes.start[r]))
                stops.append(min(end if b is None else float(b), nodes.stop[r]))
                lost.append(nodes.capacity[r])
    s, e = np.asarray(starts, dtype=np.float64), np.asarray(stops, dtype=np.float64)
    weights = np.asarray(lost, dtype=np.float64).reshape(-1, 3)
    return steps(s, e, weights), steps(s, e)


def _capacity_blocked(
    history: History,
    cols: JobColumns,
    windows: tuple[FloatArray, FloatArray],
    held: tuple[FloatArray, FloatArray],
    need: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Per job, the time of its window with no room on its eligible nodes, and with some of them down."""
    nodes = _nodes(history)
    models = history.jobs.column("gpu_model").to_pylist()
    eligible = _eligible(cols, models, nodes)
    placed = np.asarray(_placed(cols, eligible, nodes), dtype=np.int64)
    a, b = windows
    blocked = np.zeros(len(a))
    downed = np.zeros(len(a))
    eligible_arr = np.asarray(eligible, dtype=np.int64)
    for mask in sorted(set(eligible)):
        jobs = np.nonzero((eligible_arr == mask) & (b > a))[0]
        if not len(jobs):
            continue
        in_mask = (np.right_shift(mask, nodes.group) & 1).astype(bool)
        alive = steps(nodes.start[in_mask], nodes.stop[in_mask], nodes.capacity[in_mask])
        lost, down_count = _down_steps(history, nodes, mask)
        users = (placed & mask) != 0
        running = steps(held[0][users], held[1][users], need[users])
        times, (cap, gone, used) = merge(alive, lost, running)
        free = cap - gone - used
        blocked[jobs] = time_short(times, free, need[jobs], a[jobs], b[jobs])
        if len(down_count.times):
            downed[jobs] = time_where(down_count.times, down_count.levels > 0, a[jobs], b[jobs])
    return blocked, downed


def time_while_running(
    labels: NDArray[np.object_], held: tuple[FloatArray, FloatArray], a: FloatArray, b: FloatArray
) -> tuple[FloatArray, bool]:
    """Per job, the time of its window during which a job with the same label was running; False when
    no job has a label (the share is then not measurable)."""
    out = np.zeros(len(a))
    known = labels != UNSET
    for label in sorted(set(labels[known].tolist())):
        mine = labels == label
        running = steps(held[0][mine], held[1][mine])
        out[mine] = time_where(running.times, running.levels > 0, a[mine], b[mine])
    return out, bool(np.any(known))


def _behind_earlier(queues: NDArray[np.object_], a: FloatArray, b: FloatArray) -> FloatArray:
    """Per job, how long an earlier-submitted job of its queue was still waiting: the job is behind until
    every job submitted before it in its queue has left the queue (a prefix maximum of their wait ends)."""
    out = np.zeros(len(a))
    for queue in sorted(set(queues.tolist())):
        jobs = np.nonzero(queues == queue)[0]
        order = jobs[np.argsort(a[jobs], kind="stable")]
        left = np.maximum.accumulate(b[order])
        ahead = np.concatenate(([-np.inf], left[:-1]))
        out[order] = np.clip(np.minimum(ahead, b[order]) - a[order], 0.0, None)
    return out


@dataclass(frozen=True)
class _Windows:
    """Per job its waiting window ``[a, b)``, when it held its resources and how much of each it asked."""

    cols: JobColumns
    known: BoolArray
    started: BoolArray
    a: FloatArray
    b: FloatArray
    held: tuple[FloatArray, FloatArray]
    need: FloatArray
    #: Every job's wait: to its start, or censored at its end or the record's end when it never started.
    waits: FloatArray


def _windows(history: History) -> _Windows:
    cols = job_columns(history)
    end = float(history.end_s)
    times = job_times(cols, end)
    known = times.wait_known
    started = times.started
    walltime = _floats(history, "walltime_s")
    stop = np.where(
        ~np.isnan(cols.end),
        np.minimum(cols.end, end),
        np.where(times.held_known, end, np.minimum(cols.scheduled + np.nan_to_num(walltime, nan=end), end)),
    )
    memory = _floats(history, "pods") * _floats(history, "memory_per_pod")
    return _Windows(
        cols, known, started, cols.submit, np.where(known, cols.submit + times.waits, cols.submit),
        (np.where(started, cols.scheduled, 0.0), np.where(started, stop, 0.0)),
        np.column_stack((np.nan_to_num(cols.cpus), np.nan_to_num(cols.gpus), memory)), times.waits,
    )  # fmt: skip


def unexplained_waits(history: History, grouping: str | None = None) -> FloatArray | None:
    """The measured waits of the started jobs that capacity and a per-group limit leave unexplained: for
    their whole wait the recorded running work left room on their eligible nodes and no other job of the
    same user (nor of the same ``grouping``: ``team`` or ``queue``, where recorded) was running. Jobs that
    started at once are among them (a wait of 0). None without a node list (room is not measurable)."""
    free = free_waits(history, grouping)
    return None if free is None else free[0][free[1]]


def free_waits(history: History, grouping: str | None = None) -> tuple[FloatArray, BoolArray] | None:
    """The unexplained waits (``unexplained_waits``) with the censored ones beside them: every job that
    had room and no job of its group running for its whole wait, started or not, and whether it started.
    A job that never started waited at least to its end (a cancellation) or the record's end: dropping
    it would leave only the waits that ended in time, a sample biased short. None without a node list."""
    if not history.nodes.num_rows:
        return None
    w = _windows(history)
    stop = w.a + w.waits  # to the start, or censored at the job's end or the record's end
    blocked, _ = _capacity_blocked(history, w.cols, (w.a, stop), w.held, w.need)
    free = blocked <= 0
    labels = [_labels(history, "user")]
    if grouping in ("team", "queue"):
        labels.append(np.asarray(getattr(w.cols, grouping), dtype=object))
    for label in labels:
        running, _ = time_while_running(label, w.held, w.a, stop)
        free &= running <= 0
    return np.asarray(w.waits[free], dtype=np.float64), np.asarray(w.started[free], dtype=bool)


def diagnose_waits(history: History) -> WaitCauses:
    """The causes of waiting the record itself shows, overall and per class, team, user and queue."""
    w = _windows(history)
    cols, known, started, a, b, held, need = w.cols, w.known, w.started, w.a, w.b, w.held, w.need
    n = len(cols.job_id)
    capacity_known = history.nodes.num_rows > 0
    blocked, downed = (
        _capacity_blocked(history, cols, (a, b), held, need) if capacity_known else (np.zeros(len(a)),) * 2
    )
    users = _labels(history, "user")
    same_user, users_known = time_while_running(users, held, a, b)
    same_team, teams_known = time_while_running(cols.team, held, a, b)
    everyone = steps(held[0], held[1])
    origin = min(float(a.min()) if n else 0.0, float(everyone.times[0]) if len(everyone.times) else 0.0) - 1
    idle = np.concatenate(([origin], everyone.times)), np.concatenate(([0.0], everyone.levels)) <= 0
    nothing = time_where(idle[0], idle[1], a, b)
    behind = _behind_earlier(np.where(known, cols.queue, "(unknown)"), a, np.where(known, b, a))
    cancelled = known & ~started & (cols.state == "cancelled")
    per_job = {
        "capacity_explained_wait_share": blocked if capacity_known else None,
        "same_user_running_share": same_user if users_known else None,
        "same_team_running_share": same_team if teams_known else None,
        "behind_earlier_share": behind,
        "nothing_running_share": nothing,
        "node_down_share": downed if history.node_down.num_rows and capacity_known else None,
        "cancelled_pending_share": np.where(cancelled, b - a, 0.0),
    }
    waited = np.where(known, b - a, 0.0)
    rows: list[CauseRow] = []
    for group_by in CAUSE_GROUP_BYS:
        labels = (
            np.full(n, "all", dtype=object) if group_by == "all" else _group_labels(history, cols, group_by)
        )
        for group in sorted(set(labels.tolist())) if n else (["all"] if group_by == "all" else []):
            mask = (labels == group) & known
            total = float(waited[mask].sum())
            shares = {
                key: None if values is None or total <= 0 else float(values[mask].sum()) / total
                for key, values in per_job.items()
            }
            rows.append(
                CauseRow(group_by=group_by, group=str(group), jobs=int(mask.sum()),
                         waited=int(np.count_nonzero(waited[mask] > 0)), wait_hours=total / 3600,
                         cancelled_pending_jobs=int((mask & cancelled).sum()), **shares)
            )  # fmt: skip
    resource = 1 if np.any(need[:, 1] > 0) else 0
    peak = _peak_share(history, held, need[:, resource], resource) if capacity_known else None
    return WaitCauses(
        rows=rows,
        peak_use_share=peak,
        peak_use_resource=RESOURCES[resource],
        capacity_known=capacity_known,
        wider_than_any_node=_wider_than_any_node(history),
        wait_unmeasured=int(np.count_nonzero(~known)),
        concentration={
            name: _carry_95(waited, labels)
            for name, labels in (("user", users), ("team", cols.team))
            if np.any(labels != UNSET)
        },
    )


def _floats(history: History, name: str) -> FloatArray:
    column = history.jobs.column(name).to_numpy(zero_copy_only=False)
    return np.asarray(column, dtype=np.float64)


def _labels(history: History, name: str) -> NDArray[np.object_]:
    return np.asarray(
        [UNSET if v is None else v for v in history.jobs.column(name).to_pylist()], dtype=object
    )


def _group_labels(history: History, cols: JobColumns, group_by: str) -> NDArray[np.object_]:
    return (
        _labels(history, "user") if group_by == "user" else np.asarray(getattr(cols, group_by), dtype=object)
    )


def _carry_95(waited: FloatArray, labels: NDArray[np.object_]) -> tuple[int, int]:
    """The fewest labels whose jobs together waited at least 95 % of all waiting time, and how many
    labels waited at all."""
    totals: dict[str, float] = {}
    for label, w in zip(labels.tolist(), waited.tolist(), strict=True):
        totals[label] = totals.get(label, 0.0) + w
    ranked = sorted((w for w in totals.values() if w > 0), reverse=True)
    whole = sum(ranked)
    running = 0.0
    for count, w in enumerate(ranked, start=1):
        running += w
        if running >= 0.95 * whole - 1e-9:
            return count, len(ranked)
    return len(ranked), len(ranked)


def _wider_than_any_node(history: History) -> int:
    """Jobs one of whose pods (as recorded) asks for more CPU, GPUs or memory than any node has."""
    if not history.nodes.num_rows:
        return 0
    jobs = history.jobs
    per_pod = np.column_stack(
        [_floats(history, c) for c in ("cpu_per_pod", "gpus_per_pod", "memory_per_pod")]
    )
    nodes = history.nodes
    node_caps = np.column_stack(
        [np.asarray(nodes.column(c).to_numpy(zero_copy_only=False), dtype=np.float64)
         for c in ("cpu", "gpus", "memory")]
    )  # fmt: skip
    fits = np.zeros(jobs.num_rows, dtype=bool)
    for cap in np.unique(node_caps, axis=0):
        fits |= np.all(per_pod <= cap + 1e-9, axis=1)
    return int(np.count_nonzero(~fits))


def _peak_share(
    history: History, held: tuple[FloatArray, FloatArray], amount: FloatArray, resource: int
) -> float | None:
    """The most of one resource the jobs held at once over what the nodes offer (their total)."""
    column = ("cpu", "gpus")[resource]
    total = float(
        np.asarray(history.nodes.column(column).to_numpy(zero_copy_only=False), dtype=np.float64).sum()
    )
    level = steps(held[0], held[1], amount)
    if total <= 0:
        return None
    return float(level.levels.max()) / total if len(level.times) else 0.0
