"""The numbers behind the experiment report's charts, each read from the sweep's DuckDB store.

Per-run values are averaged over seeds (every seed draws the same workload in every variant). Time series
are step functions sampled on one fixed grid per experiment, so the report's size does not grow with the
number of recorded steps and the same store always gives the same points.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.cost.billing import BACKGROUND, BUCKETS
from fleetlab.experiment.stats import Interval, mean_interval
from fleetlab.experiment.store import DATABASE, TABLES
from fleetlab.spec.errors import SpecError

FloatArray = NDArray[np.float64]
TIMELINE_POINTS = 400
#: Timeline columns read when the store has them (runs recorded before they existed lack them).
OPTIONAL_TIMELINE = ("busy_gpus", "largest_free_block")
GPU_RESOURCE = "nvidia.com/gpu"


def open_store(folder: Path) -> Any:
    """A read-only connection to ``experiment.duckdb``; a SpecError when the sweep has none."""
    import duckdb

    path = folder / DATABASE
    if not path.is_file():
        raise SpecError(str(folder), [f"no {DATABASE}: rerun `fleetlab experiment run` to build it"])
    try:
        con = duckdb.connect(str(path), read_only=True)
        names = {
            str(row[0]) for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise SpecError(
            str(path),
            [
                f"cannot be read ({first}); rerun `fleetlab experiment run` with the same file to rebuild it "
                "from the runs' Parquet files"
            ],
        ) from None
    missing = [name for name in ("runs", *TABLES) if name not in names]
    if missing:
        con.close()
        raise SpecError(
            str(path),
            [f"lacks {', '.join(missing)}; rerun `fleetlab experiment run` with the same file to rebuild it"],
        )
    return con


def _columns(con: Any, table: str) -> set[str]:
    return {str(row[0]) for row in con.execute(f"DESCRIBE {table}").fetchall()}


#: Rows of the jobs table that are jobs: service replica slots are reported per service.
WORKLOAD = "job_id NOT LIKE 'service/%'"


def _known(column: str) -> str:
    """SQL: the column holds a value (unfinished jobs are written as NaN, older stores may hold NULL)."""
    return f"({column} IS NOT NULL AND NOT isnan({column}))"


def completion_by_class(con: Any, confidence: float) -> dict[str, dict[str, Interval]]:
    """Mean completion time (s) of completed jobs per job class and variant, interval over seeds (jobs
    not completed are left out here and counted by ``completion_counts``)."""
    rows = con.execute(
        f"SELECT class, variant, seed, avg(completion_s) FROM jobs WHERE {_known('completion_s')} "
        f"AND {WORKLOAD} GROUP BY class, variant, seed ORDER BY class, variant, seed"
    ).fetchall()
    per_seed: dict[str, dict[str, list[float]]] = {}
    for job_class, variant, _seed, mean in rows:
        per_seed.setdefault(str(job_class), {}).setdefault(str(variant), []).append(float(mean))
    return {
        job_class: {v: mean_interval(values, confidence) for v, values in by_variant.items()}
        for job_class, by_variant in per_seed.items()
    }


def completion_counts(con: Any) -> dict[str, dict[str, tuple[int, int]]]:
    """Per job class and variant: (completed, jobs) over all seeds, to show next to the completion means."""
    rows = con.execute(
        f"SELECT class, variant, count(*) FILTER (WHERE {_known('completion_s')}), count(*) FROM jobs "
        f"WHERE {WORKLOAD} GROUP BY class, variant ORDER BY class, variant"
    ).fetchall()
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for job_class, variant, done, total in rows:
        out.setdefault(str(job_class), {})[str(variant)] = (int(done), int(total))
    return out


STATES = ("completed", "running", "preparing", "pending", "failed")


def state_counts(con: Any) -> dict[str, dict[str, float]]:
    """Per variant, the mean number of jobs per run in each end state (the jobs table's ``state``)."""
    runs = dict(con.execute("SELECT variant, count(DISTINCT seed) FROM jobs GROUP BY variant").fetchall())
    rows = con.execute(
        f"SELECT variant, state, count(*) FROM jobs WHERE {WORKLOAD} GROUP BY variant, state ORDER BY variant"
    ).fetchall()
    out: dict[str, dict[str, float]] = {str(v): dict.fromkeys(STATES, 0.0) for v in sorted(runs)}
    for variant, state, count in rows:
        out[str(variant)][str(state)] = int(count) / int(runs[variant])
    return out


@dataclass(frozen=True)
class TimelineSeries:
    """Cluster GPU state over time per variant, each the mean over seeds on the common grid."""

    t_s: FloatArray
    allocated: dict[str, FloatArray]
    total: dict[str, FloatArray]
    free_on_used_nodes: dict[str, FloatArray] | None
    whole_free_nodes: dict[str, FloatArray]
    gpus_per_node: int | None
    #: GPUs doing useful work and the largest free block (GPUs on one node); None in stores without them.
    busy: dict[str, FloatArray] | None = None
    largest_free_block: dict[str, FloatArray] | None = None


def _uniform_gpus_per_node(con: Any) -> int | None:
    """The GPU count of every GPU node when all have the same, else None."""
    rows = con.execute("SELECT DISTINCT gpus FROM costs WHERE gpus > 0").fetchall()
    return int(rows[0][0]) if len(rows) == 1 else None


def _step_values(t: FloatArray, values: FloatArray, grid: FloatArray) -> FloatArray:
    """A step function (value holds from its time until the next) read at the grid points."""
    index = np.searchsorted(t, grid, side="right") - 1
    return np.where(index >= 0, values[np.maximum(index, 0)], 0.0)


def timeline_series(con: Any, points: int = TIMELINE_POINTS) -> TimelineSeries:
    """GPU allocation, capacity and free-GPU shape over time, sampled at ``points`` fixed times."""
    optional = [c for c in OPTIONAL_TIMELINE if c in _columns(con, "timeline")]
    data = con.execute(
        "SELECT variant, seed, t_s, allocated_gpus, total_gpus, whole_free_gpu_nodes"
        + "".join(f", {c}" for c in optional)
        + " FROM timeline ORDER BY variant, seed, t_s"
    ).fetchnumpy()
    per_node = _uniform_gpus_per_node(con)
    names = np.asarray(data["variant"], dtype=object)
    seeds = np.asarray(data["seed"], dtype=np.int64)
    t = np.asarray(data["t_s"], dtype=np.float64)
    end = float(t.max()) if len(t) else 0.0
    grid = np.linspace(0.0, end, points) if end > 0 else np.zeros(1)
    columns = {k: np.asarray(data[k], dtype=np.float64) for k in ("allocated_gpus", "total_gpus")}
    columns["whole_free"] = np.asarray(data["whole_free_gpu_nodes"], dtype=np.float64)
    for name in optional:
        columns[name] = np.nan_to_num(np.asarray(data[name], dtype=np.float64))
    sums: dict[str, dict[str, FloatArray]] = {}
    counts: dict[str, int] = {}
    new_run = np.ones(len(t), dtype=bool)
    new_run[1:] = (names[1:] != names[:-1]) | (seeds[1:] != seeds[:-1])
    starts = np.flatnonzero(new_run)
    for start, stop in zip(starts, [*starts[1:], len(t)], strict=True):
        variant = str(names[start])
        run = slice(int(start), int(stop))
        sampled = {k: _step_values(t[run], v[run], grid) for k, v in columns.items()}
        acc = sums.setdefault(variant, {k: np.zeros(len(grid)) for k in columns})
        for k, v in sampled.items():
            acc[k] += v
        counts[variant] = counts.get(variant, 0) + 1
    means = {v: {k: s / counts[v] for k, s in acc.items()} for v, acc in sums.items()}
    free_on_used = None
    if per_node is not None:
        free_on_used = {
            v: np.maximum(m["total_gpus"] - m["allocated_gpus"] - m["whole_free"] * per_node, 0.0)
            for v, m in means.items()
        }
    return TimelineSeries(
        t_s=grid,
        allocated={v: m["allocated_gpus"] for v, m in means.items()},
        total={v: m["total_gpus"] for v, m in means.items()},
        free_on_used_nodes=free_on_used,
        whole_free_nodes={v: m["whole_free"] for v, m in means.items()},
        gpus_per_node=per_node,
        busy={v: m["busy_gpus"] for v, m in means.items()} if "busy_gpus" in optional else None,
        largest_free_block={v: m["largest_free_block"] for v, m in means.items()}
        if "largest_free_block" in optional
        else None,
    )


def cost_split(con: Any) -> dict[str, dict[str, float]]:
    """Mean cost per run (USD) of each bill bucket per variant; the buckets add up to what is billed. The
    background bucket is there when some run had a background load (0 in the runs that had none)."""
    columns = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'costs'"
    ).fetchall()
    background = f"cost_{BACKGROUND}_usd" in {str(c[0]) for c in columns}
    buckets = (*BUCKETS, BACKGROUND) if background else BUCKETS
    sums = ", ".join(
        f"coalesce(sum(cost_{b}_usd), 0) AS {b}" if b == BACKGROUND else f"sum(cost_{b}_usd) AS {b}"
        for b in buckets
    )
    means = ", ".join(f"avg({b})" for b in buckets)
    rows = con.execute(
        f"SELECT variant, {means} FROM (SELECT variant, seed, {sums} FROM costs GROUP BY variant, seed) "
        "GROUP BY variant ORDER BY variant"
    ).fetchall()
    return {str(r[0]): {b: float(r[k + 1]) for k, b in enumerate(buckets)} for r in rows}


@dataclass(frozen=True)
class QueueBalance:
    """Time-weighted mean quota one ClusterQueue borrowed from / lent to its cohort, mean over seeds."""

    variant: str
    cluster_queue: str
    flavor_resource: str
    borrowed: float
    lent: float


def queue_balances(con: Any) -> list[QueueBalance]:
    """Borrowed vs lent per ClusterQueue (GPU quota where the queues have any, else every resource)."""
    rows = con.execute(
        "SELECT variant, cluster_queue, flavor_resource, avg(borrowed_mean), avg(lent_mean) FROM queues "
        "GROUP BY variant, cluster_queue, flavor_resource ORDER BY cluster_queue, flavor_resource, variant"
    ).fetchall()
    balances = [QueueBalance(str(r[0]), str(r[1]), str(r[2]), float(r[3]), float(r[4])) for r in rows]
    gpu = [b for b in balances if b.flavor_resource.endswith("/" + GPU_RESOURCE)]
    return gpu or balances


@dataclass(frozen=True)
class SloAttainment:
    """Share of a service class's jobs that met their SLO, per variant (mean over seeds)."""

    job_class: str
    variant: str
    attained: float
    #: Services only: the mean of their recorded p99 latency (ms).
    p99_ms: float = float("nan")


def slo_attainment(con: Any) -> list[SloAttainment]:
    """Per job class with an SLO (a non-null ``slo_s`` in the jobs table): share completed within it."""
    if "slo_s" not in _columns(con, "jobs"):
        return []
    rows = con.execute(
        "SELECT class, variant, avg(met) FROM (SELECT class, variant, seed, "
        "avg(CASE WHEN completion_s IS NOT NULL AND completion_s <= slo_s THEN 1.0 ELSE 0.0 END) AS met "
        "FROM jobs WHERE slo_s IS NOT NULL GROUP BY class, variant, seed) GROUP BY class, variant "
        "ORDER BY class, variant"
    ).fetchall()
    return [SloAttainment(str(r[0]), str(r[1]), float(r[2])) for r in rows]


def _has_table(con: Any, name: str) -> bool:
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchone()
    return bool(rows and rows[0])


#: The services time series a run may record: one row per service and sample time.
SERVICE_COLUMNS = ("variant", "seed", "time_s", "service", "slo_met", "p99_ms")


def service_slo(con: Any) -> list[SloAttainment]:
    """Per service and variant: the share of samples meeting the SLO (mean over seeds), from a
    ``services`` table (``SERVICE_COLUMNS``); empty when the store has none."""
    if not _has_table(con, "services"):
        return []
    missing = sorted(set(SERVICE_COLUMNS) - _columns(con, "services"))
    if missing:
        raise SpecError("services", [f"missing column(s) {', '.join(missing)}; expected {SERVICE_COLUMNS}"])
    rows = con.execute(
        "SELECT service, variant, avg(met), avg(p99) FROM (SELECT service, variant, seed, "
        "avg(CASE WHEN slo_met THEN 1.0 ELSE 0.0 END) AS met, avg(p99_ms) AS p99 FROM services "
        "GROUP BY service, variant, seed) GROUP BY service, variant ORDER BY service, variant"
    ).fetchall()
    return [SloAttainment(str(r[0]), str(r[1]), float(r[2]), float(r[3])) for r in rows]


def queue_waits(con: Any) -> tuple[dict[str, FloatArray], list[tuple[Any, ...]]]:
    """Every job's known queue wait per variant (sorted), and each variant's five longest waits as
    (variant, seed, job, wait, censored): a job still pending at the end counts with its wait so far,
    a lower bound (stores written before that column existed list known waits only)."""
    rows = con.execute(
        f"SELECT variant, queue_wait_s FROM jobs WHERE {_known('queue_wait_s')} AND {WORKLOAD}"
    ).fetchnumpy()
    so_far = "queue_wait_so_far_s" in _columns(con, "jobs")
    wait = "coalesce(nullif(queue_wait_s, 'NaN'::DOUBLE), queue_wait_so_far_s)" if so_far else "queue_wait_s"
    censored = "NOT " + _known("queue_wait_s")
    slow = con.execute(
        "SELECT variant, seed, job_id, w, c FROM "
        f"(SELECT variant, seed, job_id, {wait} AS w, {censored} AS c FROM jobs WHERE {WORKLOAD}) "
        f"WHERE {_known('w')} "
        "QUALIFY row_number() OVER (PARTITION BY variant ORDER BY w DESC, seed, job_id) <= 5 "
        "ORDER BY variant, w DESC"
    ).fetchall()
    names = np.asarray(rows["variant"], dtype=object)
    waits = np.asarray(rows["queue_wait_s"], dtype=np.float64)
    return {str(v): np.sort(waits[names == v]) for v in dict.fromkeys(names.tolist())}, slow
