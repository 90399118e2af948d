"""The comparison at the heart of calibration: a replay against its history, metric by metric, on a set
of the history's jobs (docs/calibration.md, "Comparisons").

Waits are compared as distributions (Kaplan–Meier on both sides, so jobs pending at the end count as
censored on both), by quantile errors and the Kolmogorov–Smirnov distance; GPU- and CPU-hours and makespan
by relative error. Each comparison gets a verdict against a stated tolerance (``DEFAULT_TOLERANCES``), or
none where there is nothing to judge (no measured wait, no GPU work on either side, a lower bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.experiment.run import Run
from fleetlab.metrics.baseline import job_columns, job_times
from fleetlab.metrics.survival import KaplanMeier, kaplan_meier
from fleetlab.model.history import History

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Tolerances: KS distance; quantile error as max(seconds, share of the measured value); relative errors.
DEFAULT_TOLERANCES: dict[str, float] = {
    "wait_ks": 0.10,
    "wait_quantile_abs_s": 60.0,
    "wait_quantile_rel": 0.25,
    "gpu_hours_rel": 0.05,
    "cpu_hours_rel": 0.05,
    "makespan_rel": 0.05,
    "cost_rel": 0.10,
    "pending_abs": 0.02,
    "image_pull_ks": 0.10,
}
QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class Side:
    """One side (measured or simulated) of a comparison, one value per job of the set."""

    waits: FloatArray
    started: BoolArray
    gpu_hours: float
    makespan_s: float | None
    #: Jobs whose measured wait is known (measured or censored); only they enter the wait comparisons.
    known: BoolArray
    cpu_hours: float = 0.0


@dataclass(frozen=True)
class MetricRow:
    """One metric of one class: measured, simulated, the error and the verdict (None: not judged)."""

    job_class: str
    metric: str
    measured: float | None
    simulated: float | None
    error: float | None
    error_kind: str  # abs_s | rel | ks | abs_share
    tolerance: float
    within: bool | None
    #: The measured / simulated value is only a lower bound (a quantile the censored curve never reached).
    measured_lower_bound: bool = False
    simulated_lower_bound: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON and Parquet."""
        return asdict(self)


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


@dataclass(frozen=True)
class Measured:
    """The history's side for every job, computed once: waits, starts, held GPU- and CPU-seconds."""

    ids: list[str]
    classes: NDArray[np.object_]
    submit: FloatArray
    waits: FloatArray
    started: BoolArray
    known: BoolArray
    gpus: FloatArray
    cpus: FloatArray
    gpu_held: FloatArray
    cpu_held: FloatArray
    #: Where the job stopped holding (end, or the record's end); NaN where not known.
    stop: FloatArray
    #: Whether its held time is known (an ended job with no recorded end has none).
    held_known: BoolArray

    @classmethod
    def of(cls, history: History) -> Measured:
        """The measured side of ``history``."""
        cols = job_columns(history)
        end_s = float(history.end_s)
        times = job_times(cols, end_s)
        open_ = np.isin(cols.state, ("running", "pending"))
        stop = np.where(~np.isnan(cols.end), cols.end, np.where(open_, end_s, np.nan))
        return cls(
            ids=cols.job_id, classes=cols.job_class, submit=cols.submit, waits=times.waits,
            started=times.started, known=times.wait_known, gpus=np.nan_to_num(cols.gpus),
            cpus=np.nan_to_num(cols.cpus), gpu_held=np.nan_to_num(cols.gpus) * times.held,
            cpu_held=np.nan_to_num(cols.cpus) * times.held, stop=np.where(times.started, stop, np.nan),
            held_known=times.held_known,
        )  # fmt: skip

    def side(self, mask: BoolArray) -> Side:
        """The measured side of the jobs in ``mask`` (hours over jobs whose held time is known)."""
        return _side(self, mask, self)


@dataclass(frozen=True)
class Simulated:
    """The replay's side for every job, in the history's job order."""

    waits: FloatArray
    started: BoolArray
    submit: FloatArray
    stop: FloatArray
    gpu_held: FloatArray
    cpu_held: FloatArray

    @classmethod
    def of(cls, run: Run, ids: Sequence[str], gpus: FloatArray, cpus: FloatArray) -> Simulated:
        """The replay's waits (pending jobs censored at the run's end, withdrawn ones at their withdrawal)
        and held resources per job."""
        jobs = run.result.jobs
        position = {job_id: i for i, job_id in enumerate(jobs.ids)}
        order = np.asarray([position[j] for j in ids], dtype=np.int64)
        submit = jobs.submit_ms[order] / 1000.0
        bound = jobs.last_bound_ms[order]
        started = bound >= 0
        end = run.result.end_ms / 1000.0
        withdrawn = jobs.withdrawn_ms[order]
        censored_at = np.where(withdrawn >= 0, withdrawn / 1000.0, end)
        waits = np.maximum(np.where(started, bound / 1000.0 - submit, censored_at - submit), 0.0)
        stop = np.where(jobs.end_ms[order] >= 0, jobs.end_ms[order] / 1000.0, end)
        held = np.where(started, np.maximum(stop - bound / 1000.0, 0.0), 0.0)
        return cls(waits, started, submit, np.where(started, stop, np.nan), gpus * held, cpus * held)

    def side(self, mask: BoolArray, measured: Measured) -> Side:
        """The replay's side of the jobs in ``mask`` (hours over the jobs the measured side counts)."""
        return _side(self, mask, measured)


def _side(values: Measured | Simulated, mask: BoolArray, measured: Measured) -> Side:
    """One side of the jobs in ``mask``: waits and starts, hours over the jobs whose measured held time is
    known, makespan from the first submit to the last known stop (None when no stop is known)."""
    hours = mask & measured.held_known
    ends = values.stop[mask]
    makespan = float(np.nanmax(ends) - values.submit[mask].min()) if np.any(~np.isnan(ends)) else None
    return Side(
        values.waits[mask], values.started[mask], float(values.gpu_held[hours].sum()) / 3600, makespan,
        measured.known[mask], float(values.cpu_held[hours].sum()) / 3600,
    )  # fmt: skip


def rel_error(measured: float, simulated: float) -> float:
    """|simulated − measured| / |measured| (0 when both are 0, 1 when only the measured one is)."""
    return abs(simulated - measured) / abs(measured) if measured else (0.0 if simulated == 0 else 1.0)


def _hours_row(name: str, metric: str, m: float, s: float, tol: float) -> MetricRow:
    """GPU- or CPU-hours; no verdict when neither side used any (a CPU-only history's GPU-hours)."""
    if m == 0 and s == 0:
        return MetricRow(name, metric, m, s, None, "rel", tol, None)
    err = rel_error(m, s)
    return MetricRow(name, metric, m, s, err, "rel", tol, err <= tol)


def compare_class(name: str, m: Side, s: Side, tol: dict[str, float]) -> list[MetricRow]:
    """The rows of one class (or ``all``)."""
    known = m.known
    n = int(known.sum())
    km_m = kaplan_meier(m.waits[known], m.started[known])
    km_s = kaplan_meier(s.waits[known], s.started[known])
    rows: list[MetricRow] = []
    for q in QUANTILES:
        qm, qs = km_m.quantile(q), km_s.quantile(q)
        err = None if qm.value is None or qs.value is None else abs(qs.value - qm.value)
        limit = max(tol["wait_quantile_abs_s"], tol["wait_quantile_rel"] * (qm.value or 0.0))
        rows.append(
            MetricRow(name, f"wait_p{round(q * 100)}_s", qm.value, qs.value, err, "abs_s", limit,
                      None if err is None or qm.lower_bound or qs.lower_bound else err <= limit,
                      qm.lower_bound, qs.lower_bound)
        )  # fmt: skip
    ks = ks_distance(km_m, km_s) if n else None
    rows.append(
        MetricRow(
            name,
            "wait_ks",
            None,
            None,
            ks,
            "ks",
            tol["wait_ks"],
            None if ks is None else ks <= tol["wait_ks"],
        )
    )
    pm = float(np.mean(~m.started[known])) if n else None
    ps = float(np.mean(~s.started[known])) if n else None
    gap = None if pm is None or ps is None else abs(ps - pm)
    rows.append(
        MetricRow(name, "never_started_share", pm, ps, gap, "abs_share", tol["pending_abs"],
                  None if gap is None else gap <= tol["pending_abs"])
    )  # fmt: skip
    rows.append(_hours_row(name, "gpu_hours_allocated", m.gpu_hours, s.gpu_hours, tol["gpu_hours_rel"]))
    rows.append(_hours_row(name, "cpu_hours_allocated", m.cpu_hours, s.cpu_hours, tol["cpu_hours_rel"]))
    if name == "all":
        if m.makespan_s is None or s.makespan_s is None:
            rows.append(MetricRow(name, "makespan_s", m.makespan_s, s.makespan_s, None, "rel",
                                  tol["makespan_rel"], None))  # fmt: skip
        else:
            err = rel_error(m.makespan_s, s.makespan_s)
            rows.append(
                MetricRow(name, "makespan_s", m.makespan_s, s.makespan_s, err, "rel", tol["makespan_rel"],
                          err <= tol["makespan_rel"])
            )  # fmt: skip
    return rows


def compare(
    measured: Measured, simulated: Simulated, mask: BoolArray, tol: dict[str, float]
) -> list[MetricRow]:
    """The rows for ``all`` and each class, over the jobs in ``mask``."""
    rows = compare_class("all", measured.side(mask), simulated.side(mask, measured), tol)
    for name in sorted(set(measured.classes[mask].tolist())):
        part = mask & (measured.classes == name)
        rows.extend(compare_class(str(name), measured.side(part), simulated.side(part, measured), tol))
    return rows


def verdict(rows: Sequence[MetricRow]) -> str:
    """``pass`` when every judged row is within tolerance, else ``fail``."""
    return "pass" if all(r.within is not False for r in rows) else "fail"
