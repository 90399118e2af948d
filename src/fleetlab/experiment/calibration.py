"""Calibrate: replay a measured history and compare the replay with the measurement, metric by metric.

Waits are compared as distributions (Kaplan–Meier on both sides, so jobs pending at the end count as
censored in both), by quantile errors and the Kolmogorov–Smirnov distance; GPU-hours, makespan and cost by
relative error. Each comparison gets a verdict against a stated tolerance (``DEFAULT_TOLERANCES``). The
scheduling latency, which no history records, the boot time of nodes that joined and the first-pull time of
the image (when the history measured pulls) are fitted by a small deterministic grid search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.experiment.history_scenario import (
    Knobs,
    complete_nodes,
    has_node_arrivals,
    history_jobs,
    history_scenario,
    removal_notes,
)
from fleetlab.experiment.run import Run, run_one
from fleetlab.metrics.baseline import job_columns, job_times
from fleetlab.metrics.baseline_cost import cluster_cost, idle_capacity
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.survival import KaplanMeier, kaplan_meier
from fleetlab.model.history import History
from fleetlab.model.job import Job
from fleetlab.model.scenario import Scenario
from fleetlab.spec.loader import resolve

FloatArray = NDArray[np.float64]

#: Tolerances: KS distance; quantile error as max(seconds, share of the measured value); relative errors.
DEFAULT_TOLERANCES: dict[str, float] = {
    "wait_ks": 0.10,
    "wait_quantile_abs_s": 60.0,
    "wait_quantile_rel": 0.25,
    "gpu_hours_rel": 0.05,
    "makespan_rel": 0.05,
    "cost_rel": 0.10,
    "pending_abs": 0.02,
    "image_pull_ks": 0.10,
}
#: Candidate scheduling latencies are these quantiles of the measured positive waits (plus 0).
LATENCY_GRID_QUANTILES = (0.1, 0.25, 0.5, 0.75)
#: Candidate boot times (request to ready) of nodes the replay's autoscaler adds.
BOOT_GRID_S = (30.0, 60.0, 120.0, 300.0, 600.0)
#: Candidate first-pull times are 0 and these quantiles of the measured positive image pulls.
PULL_GRID_QUANTILES = (0.25, 0.5, 0.75, 1.0)
QUANTILES = (0.5, 0.95, 0.99)
DISAGREEMENTS = 10


@dataclass(frozen=True)
class Side:
    """One side (measured or simulated) of a class's comparison."""

    waits: FloatArray
    started: NDArray[np.bool_]
    gpu_hours: float
    makespan_s: float
    #: Jobs whose measured wait is known (measured or censored); only they enter the wait comparisons.
    known: NDArray[np.bool_]


@dataclass(frozen=True)
class MetricRow:
    """One metric of one class: measured, simulated, the error and the verdict."""

    job_class: str
    metric: str
    measured: float | None
    simulated: float | None
    error: float | None
    error_kind: str  # abs_s | rel | ks | abs_share
    tolerance: float
    within: bool | None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON and Parquet."""
        return asdict(self)


@dataclass
class Calibration:
    """The outcome: rows per metric and class, the fitted knobs, the disagreements, the chosen run."""

    rows: list[MetricRow]
    knobs: Knobs
    fit: list[dict[str, Any]]
    disagreements: list[dict[str, Any]]
    scenario: Scenario
    run: Run
    notes: list[str] = field(default_factory=list)
    #: The knobs that were fitted (the others keep their defaults).
    fitted: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``pass`` when every comparable metric is within tolerance, else ``fail``."""
        return "pass" if all(r.within is not False for r in self.rows) else "fail"


def ks_distance(a: KaplanMeier, b: KaplanMeier) -> float:
    """sup_t |F_a(t) − F_b(t)| of two Kaplan–Meier CDFs (evaluated at every step of either)."""
    times = np.union1d(a.times, b.times)
    if not len(times):
        return 0.0

    def cdf(km: KaplanMeier) -> FloatArray:
        idx = np.searchsorted(km.times, times, side="right") - 1
        surv = np.where(idx >= 0, km.survival[np.clip(idx, 0, None)] if len(km.survival) else 1.0, 1.0)
        return np.asarray(1.0 - surv, dtype=np.float64)

    return float(np.max(np.abs(cdf(a) - cdf(b))))


def measured_side(history: History) -> tuple[list[str], NDArray[np.object_], Side, FloatArray, FloatArray]:
    """Job ids, classes, the measured side, GPU-seconds held per job, and GPUs per job."""
    cols = job_columns(history)
    end_s = float(history.end_s)
    times = job_times(cols, end_s)
    held = cols.gpus * times.held
    stop = np.where(np.isnan(cols.end), end_s, cols.end)
    ends = np.where(times.started, stop, np.nan)
    makespan = float(np.nanmax(ends) - cols.submit.min()) if np.any(times.started) else 0.0
    side = Side(times.waits, times.started, float(held.sum()) / 3600, makespan, times.wait_known)
    return cols.job_id, cols.job_class, side, held, cols.gpus


def simulated_side(run: Run, ids: Sequence[str], gpus: FloatArray) -> tuple[Side, FloatArray]:
    """The replay's waits (pending jobs censored at the run's end) in the history's job order."""
    jobs = run.result.jobs
    position = {job_id: i for i, job_id in enumerate(jobs.ids)}
    order = np.asarray([position[j] for j in ids], dtype=np.int64)
    submit = jobs.submit_ms[order] / 1000.0
    bound = jobs.last_bound_ms[order]
    started = bound >= 0
    end = run.result.end_ms / 1000.0
    waits = np.where(started, bound / 1000.0 - submit, end - submit)
    stop = np.where(jobs.end_ms[order] >= 0, jobs.end_ms[order] / 1000.0, end)
    held = np.where(started, gpus * np.maximum(stop - bound / 1000.0, 0.0), 0.0)
    makespan = float(stop[started].max() - submit.min()) if np.any(started) else 0.0
    known = np.ones(len(ids), dtype=bool)
    return Side(np.maximum(waits, 0.0), started, float(held.sum()) / 3600, makespan, known), held


def simulated_pulls(run: Run, ids: Sequence[str]) -> FloatArray:
    """Per job (in the history's order) the replay's image pull: the longest wait for the image of any of
    its pods, as kubelet's Pulled events give a job's pull (the importers keep the largest over its pods);
    NaN for a job no pod of which was bound."""
    pods = run.result.pods
    jobs = run.result.jobs
    pull = np.full(len(jobs.ids), -1.0)
    bound = pods.bound_ms >= 0
    np.maximum.at(pull, pods.job[bound], pods.image_wait_ms[bound] / 1000.0)
    position = {job_id: i for i, job_id in enumerate(jobs.ids)}
    out = pull[np.asarray([position[j] for j in ids], dtype=np.int64)]
    return np.where(out >= 0, out, np.nan)


def pull_row(
    history: History, run: Run, ids: Sequence[str], knobs: Knobs, tol: dict[str, float]
) -> MetricRow:
    """KS distance between the measured image pulls and the replay's, over jobs with a measured pull that
    the replay started. No verdict when pulls are not modelled (``image_pull_s`` 0): each job's measured
    preparation, pull included, is then replayed whole as a download."""
    measured = job_columns(history).image_pull
    simulated = simulated_pulls(run, ids)
    both = ~np.isnan(measured) & ~np.isnan(simulated)
    ks = ks_distance(
        kaplan_meier(measured[both], np.ones(int(both.sum()), dtype=bool)),
        kaplan_meier(simulated[both], np.ones(int(both.sum()), dtype=bool)),
    )
    within = ks <= tol["image_pull_ks"] if knobs.image_pull_s > 0 else None
    return MetricRow("all", "image_pull_ks", None, None, ks, "ks", tol["image_pull_ks"], within)


def _rel(measured: float, simulated: float) -> float:
    return abs(simulated - measured) / abs(measured) if measured else (0.0 if simulated == 0 else 1.0)


def compare_class(name: str, m: Side, s: Side, tol: dict[str, float]) -> list[MetricRow]:
    """The rows of one class (or ``all``)."""
    known = m.known
    km_m = kaplan_meier(m.waits[known], m.started[known])
    km_s = kaplan_meier(s.waits[known], s.started[known])
    rows: list[MetricRow] = []
    for q in QUANTILES:
        qm, qs = km_m.quantile(q), km_s.quantile(q)
        err = None if qm.value is None or qs.value is None else abs(qs.value - qm.value)
        limit = max(tol["wait_quantile_abs_s"], tol["wait_quantile_rel"] * (qm.value or 0.0))
        rows.append(
            MetricRow(name, f"wait_p{round(q * 100)}_s", qm.value, qs.value, err, "abs_s", limit,
                      None if err is None or qm.lower_bound or qs.lower_bound else err <= limit)
        )  # fmt: skip
    ks = ks_distance(km_m, km_s)
    rows.append(MetricRow(name, "wait_ks", None, None, ks, "ks", tol["wait_ks"], ks <= tol["wait_ks"]))
    n = int(known.sum())
    pm = float(np.mean(~m.started[known])) if n else 0.0
    ps = float(np.mean(~s.started[known])) if n else 0.0
    rows.append(
        MetricRow(name, "never_started_share", pm, ps, abs(ps - pm), "abs_share", tol["pending_abs"],
                  abs(ps - pm) <= tol["pending_abs"])
    )  # fmt: skip
    err = _rel(m.gpu_hours, s.gpu_hours)
    rows.append(
        MetricRow(name, "gpu_hours_allocated", m.gpu_hours, s.gpu_hours, err, "rel", tol["gpu_hours_rel"],
                  err <= tol["gpu_hours_rel"])
    )  # fmt: skip
    if name == "all":
        err = _rel(m.makespan_s, s.makespan_s)
        rows.append(
            MetricRow(name, "makespan_s", m.makespan_s, s.makespan_s, err, "rel", tol["makespan_rel"],
                      err <= tol["makespan_rel"])
        )  # fmt: skip
    return rows


def _subset(side: Side, mask: NDArray[np.bool_], held: FloatArray) -> Side:
    return Side(
        side.waits[mask],
        side.started[mask],
        float(held[mask].sum()) / 3600,
        side.makespan_s,
        side.known[mask],
    )


def evaluate(
    history: History, knobs: Knobs, tol: dict[str, float], jobs: tuple[Job, ...] | None = None
) -> Calibration:
    """Replay once with ``knobs`` and compare with the history (``jobs``: the replay's jobs, built once)."""
    scenario = history_scenario(history, knobs, jobs=jobs)
    run = run_one(resolve(scenario, label="<calibrated scenario>"), None)
    ids, classes, m, m_held, gpus = measured_side(history)
    s, s_held = simulated_side(run, ids, gpus)
    s = replace(s, known=m.known)
    rows = compare_class("all", m, s, tol)
    for name in sorted(set(classes.tolist())):
        mask = classes == name
        rows.extend(compare_class(str(name), _subset(m, mask, m_held), _subset(s, mask, s_held), tol))
    cols = job_columns(history)
    held = job_times(cols, float(history.end_s)).held
    _, notes = idle_capacity(history, cols.scheduled, held, cols.gpus, cols.nodes)
    notes = [n for n in notes if "node list" in n] + complete_nodes(history)[1] + removal_notes(history)
    skipped = sum(history.skipped.values())
    if skipped:
        notes.append(
            f"the import left out {skipped} record(s) (counts by reason in history.json); not replayed"
        )
    if has_measured_pulls(history):
        rows.append(pull_row(history, run, ids, knobs, tol))
    cost = cluster_cost(history)
    simulated_cost = summarize(run.result).cost_total
    if cost.total is None:
        notes.append("cost not compared: the history has no bill and no priced nodes")
    elif not any(p.price_per_hour > 0 for p in scenario.cluster.pools):
        notes.append(
            "cost not compared: no node has an instance type in the price catalogs, so the replay is free"
        )
    else:
        err = _rel(cost.total, simulated_cost)
        rows.append(MetricRow("all", "cost", cost.total, simulated_cost, err, "rel", tol["cost_rel"],
                              err <= tol["cost_rel"]))  # fmt: skip
    gap = np.where(m.known, np.abs(s.waits - m.waits), 0.0)
    worst = np.argsort(-gap, kind="stable")[:DISAGREEMENTS]
    disagreements = [
        {"job_id": ids[i], "job_class": str(classes[i]), "measured_wait_s": float(m.waits[i]),
         "measured_started": bool(m.started[i]), "simulated_wait_s": float(s.waits[i]),
         "simulated_started": bool(s.started[i]), "gap_s": float(gap[i])}
        for i in worst if gap[i] > 0
    ]  # fmt: skip
    return Calibration(rows, knobs, [], disagreements, scenario, run, notes)


def _score(c: Calibration, metric: str = "wait_ks") -> float:
    return next(r.error for r in c.rows if r.job_class == "all" and r.metric == metric) or 0.0


def has_measured_pulls(history: History) -> bool:
    """Whether some job has a measured image pull longer than 0 (only then is a pull time worth fitting)."""
    pulls = job_columns(history).image_pull
    return bool(np.any(pulls[~np.isnan(pulls)] > 0))


def pull_grid(history: History) -> list[float]:
    """0 and a few quantiles (the largest included) of the measured positive image pulls, to the
    millisecond (the simulator's clock; a pull time is compared as a distribution of exact values, so a
    rounded candidate would miss them all): under the first-pull-then-cached model a full pull is the
    longest one seen, a shorter positive one a pod that joined a pull under way."""
    pulls = job_columns(history).image_pull
    pulls = pulls[~np.isnan(pulls) & (pulls > 0)]
    return sorted({0.0, *(round(float(np.quantile(pulls, q)), 3) for q in PULL_GRID_QUANTILES)})


def latency_grid(history: History) -> list[float]:
    """0 and a few quantiles of the measured positive waits, rounded to whole seconds, deduplicated."""
    cols = job_columns(history)
    waits = (cols.scheduled - cols.submit)[~np.isnan(cols.scheduled)]
    waits = waits[waits > 0]
    grid = {0.0}
    if len(waits):
        grid.update(float(round(np.quantile(waits, q))) for q in LATENCY_GRID_QUANTILES)
    return sorted(grid)


def calibrate(
    history: History,
    tolerances: dict[str, float] | None = None,
    fit: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Calibration:
    """Fit the hidden knobs one after the other (scheduling latency, then the boot time of nodes that joined
    during the history, each by the lowest KS distance of all waits; then the first-pull time of the image
    when the history measured pulls, by the lowest KS distance of the pulls) on fixed grids (ties: the
    smaller value), then report the replay with the fitted values."""
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    grids: list[tuple[str, list[float], str]] = []
    if fit:
        grids.append(("scheduling_latency_s", latency_grid(history), "wait_ks"))
        if has_node_arrivals(history):
            grids.append(("node_boot_time_s", list(BOOT_GRID_S), "wait_ks"))
        if has_measured_pulls(history):
            grids.append(("image_pull_s", pull_grid(history), "image_pull_ks"))
    total = sum(len(g) for _, g, _ in grids) or 1
    knobs = Knobs()
    jobs = tuple(history_jobs(history))
    best: Calibration | None = None
    tried: list[dict[str, Any]] = []
    done = 0
    for knob, grid, metric in grids:
        best = None
        for value in grid:
            result = evaluate(history, replace(knobs, **{knob: value}), tol, jobs)
            row = {"knob": knob, "value": value, "wait_ks": _score(result)}
            if metric != "wait_ks":
                row[metric] = _score(result, metric)
            tried.append(row)
            if best is None or _score(result, metric) < _score(best, metric) - 1e-12:
                best = result
            done += 1
            if progress is not None:
                progress(done, total)
        assert best is not None
        knobs = best.knobs
    if best is None:
        best = evaluate(history, knobs, tol, jobs)
        if progress is not None:
            progress(1, 1)
    best.fit = tried
    best.fitted = [knob for knob, _, _ in grids]
    return best
