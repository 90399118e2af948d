"""Calibrate: replay a measured history and compare the replay with the measurement, metric by metric.

Waits are compared as distributions (Kaplan–Meier on both sides, so jobs pending at the end count as
censored in both), by quantile errors and the Kolmogorov–Smirnov distance; GPU-hours, makespan and cost by
relative error. Each comparison gets a verdict against a stated tolerance (``DEFAULT_TOLERANCES``). The
scheduling latency, which no history records, is fitted by a small deterministic grid search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.experiment.history_scenario import Knobs, has_node_arrivals, history_scenario
from fleetlab.experiment.run import Run, run_one
from fleetlab.metrics.baseline import job_columns, wait_observations
from fleetlab.metrics.baseline_cost import cluster_cost
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.survival import KaplanMeier, kaplan_meier
from fleetlab.model.history import History
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
}
#: Candidate scheduling latencies are these quantiles of the measured positive waits (plus 0).
LATENCY_GRID_QUANTILES = (0.1, 0.25, 0.5, 0.75)
#: Candidate boot times (request to ready) of nodes the replay's autoscaler adds.
BOOT_GRID_S = (30.0, 60.0, 120.0, 300.0, 600.0)
QUANTILES = (0.5, 0.95, 0.99)
DISAGREEMENTS = 10


@dataclass(frozen=True)
class Side:
    """One side (measured or simulated) of a class's comparison."""

    waits: FloatArray
    started: NDArray[np.bool_]
    gpu_hours: float
    makespan_s: float


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
    waits, started = wait_observations(cols, float(history.end_s))
    stop = np.where(np.isnan(cols.end), history.end_s, cols.end)
    held = np.where(started, cols.gpus * np.maximum(stop - np.where(started, cols.scheduled, 0.0), 0.0), 0.0)
    ends = np.where(started, stop, np.nan)
    makespan = float(np.nanmax(ends) - cols.submit.min()) if np.any(started) else 0.0
    return (
        cols.job_id,
        cols.job_class,
        Side(waits, started, float(held.sum()) / 3600, makespan),
        held,
        cols.gpus,
    )


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
    return Side(np.maximum(waits, 0.0), started, float(held.sum()) / 3600, makespan), held


def _rel(measured: float, simulated: float) -> float:
    return abs(simulated - measured) / abs(measured) if measured else (0.0 if simulated == 0 else 1.0)


def compare_class(name: str, m: Side, s: Side, tol: dict[str, float]) -> list[MetricRow]:
    """The rows of one class (or ``all``)."""
    km_m, km_s = kaplan_meier(m.waits, m.started), kaplan_meier(s.waits, s.started)
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
    n = len(m.waits)
    pm, ps = float(np.mean(~m.started)) if n else 0.0, float(np.mean(~s.started)) if n else 0.0
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
    return Side(side.waits[mask], side.started[mask], float(held[mask].sum()) / 3600, side.makespan_s)


def evaluate(history: History, knobs: Knobs, tol: dict[str, float], seed: int | None = None) -> Calibration:
    """Replay once with ``knobs`` and compare with the history."""
    scenario = history_scenario(history, knobs)
    run = run_one(resolve(scenario, label="<calibrated scenario>"), None, seed)
    ids, classes, m, m_held, gpus = measured_side(history)
    s, s_held = simulated_side(run, ids, gpus)
    rows = compare_class("all", m, s, tol)
    for name in sorted(set(classes.tolist())):
        mask = classes == name
        rows.extend(compare_class(str(name), _subset(m, mask, m_held), _subset(s, mask, s_held), tol))
    notes: list[str] = []
    cost = cluster_cost(history)
    simulated_cost = summarize(run.result).cost_total
    if cost.total is None:
        notes.append("cost not compared: the history has no bill and no priced nodes")
    else:
        err = _rel(cost.total, simulated_cost)
        rows.append(MetricRow("all", "cost", cost.total, simulated_cost, err, "rel", tol["cost_rel"],
                              err <= tol["cost_rel"]))  # fmt: skip
    gap = np.abs(s.waits - m.waits)
    worst = np.argsort(-gap, kind="stable")[:DISAGREEMENTS]
    disagreements = [
        {"job_id": ids[i], "job_class": str(classes[i]), "measured_wait_s": float(m.waits[i]),
         "measured_started": bool(m.started[i]), "simulated_wait_s": float(s.waits[i]),
         "simulated_started": bool(s.started[i]), "gap_s": float(gap[i])}
        for i in worst if gap[i] > 0
    ]  # fmt: skip
    return Calibration(rows, knobs, [], disagreements, scenario, run, notes)


def _score(c: Calibration) -> float:
    return next(r.error for r in c.rows if r.job_class == "all" and r.metric == "wait_ks") or 0.0


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
    during the history), each by the lowest KS distance of all waits on a fixed grid (ties: the smaller
    value), then report the replay with the fitted values."""
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    grids: list[tuple[str, list[float]]] = []
    if fit:
        grids.append(("scheduling_latency_s", latency_grid(history)))
        if has_node_arrivals(history):
            grids.append(("node_boot_time_s", list(BOOT_GRID_S)))
    total = sum(len(g) for _, g in grids) or 1
    knobs = Knobs()
    best: Calibration | None = None
    tried: list[dict[str, Any]] = []
    done = 0
    for knob, grid in grids:
        best = None
        for value in grid:
            result = evaluate(history, replace(knobs, **{knob: value}), tol)
            tried.append({"knob": knob, "value": value, "wait_ks": _score(result)})
            if best is None or _score(result) < _score(best) - 1e-12:
                best = result
            done += 1
            if progress is not None:
                progress(done, total)
        assert best is not None
        knobs = best.knobs
    if best is None:
        best = evaluate(history, knobs, tol)
        if progress is not None:
            progress(1, 1)
    best.fit = tried
    best.fitted = [knob for knob, _ in grids]
    return best
