"""Recompute a run's headline figures from its output files alone and compare them with summary.json.

Independent of the code that wrote the summary: it reads jobs, pods, nodes and segments Parquet files
(each stay of a pod on a node, integer ms) and redoes the arithmetic with numpy — each node's bill from its
billed time × price (plus its minimum-billed line), the bucket split adding up to the bill, the compute /
lost / prep / gang-wait GPU-hours from the stays, the summary's cost and GPU-hour totals, every job's end
state and queue wait (Σ pending intervals: submit → first bind, each eviction → next bind, the last one
open to the end), the counts by state, the wait and completion means and percentiles (exact and lower
bounds) and the makespan. Definitions: docs/metrics.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.spec.bounded import read_parquet, read_text_file
from fleetlab.spec.errors import SpecError

MS_PER_HOUR = 3_600_000
#: Service replica slots are not jobs (metrics/services.py): left out of every job figure.
SERVICE_PREFIX = "service/"
BUCKETS = ("compute", "lost", "prep", "wait", "boot", "down", "minimum", "idle")
#: Largest file the checker reads (bytes): run folders of 100k-job scenarios are far below.
MAX_FILE_BYTES = 2 * 1024**3
FILES = ("jobs", "pods", "nodes", "segments")
#: The summary's name for a bucket's GPU-hours where it differs from ``gpu_hours_<bucket>``.
SUMMARY_HOURS = {"compute": "gpu_hours_busy"}

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class CheckReport:
    """What was compared and every mismatch (``name: recomputed vs written``)."""

    folder: str
    checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No figure disagreed."""
        return not self.mismatches

    def same(self, name: str, recomputed: float, written: Any, rel: float = 1e-9, abs_: float = 1e-6) -> None:
        """Compare one figure (None in summary.json stands for NaN)."""
        self.checked += 1
        if written is not None and (not isinstance(written, int | float) or isinstance(written, bool)):
            self.mismatches.append(f"{name}: recomputed {recomputed!r}, written {written!r} (not a number)")
            return
        value = float("nan") if written is None else float(written)
        if math.isnan(recomputed) and math.isnan(value):
            return
        if not math.isclose(recomputed, value, rel_tol=rel, abs_tol=abs_):
            self.mismatches.append(f"{name}: recomputed {recomputed!r}, written {value!r}")


def _read_table(folder: Path, name: str) -> dict[str, Any]:
    file = folder / f"{name}.parquet"
    missing = "not found; write the run with `fleetlab simulate SCENARIO --out DIR`"
    columns: dict[str, Any] = read_parquet(file, missing, max_bytes=MAX_FILE_BYTES).to_pydict()
    return columns


def _column(table: dict[str, Any], name: str, source: str, dtype: Any = np.float64) -> NDArray[Any]:
    if name not in table:
        raise SpecError(
            source, [f"missing column {name!r}; expected the file `fleetlab simulate --out` writes"]
        )
    values = [np.nan if v is None else v for v in table[name]] if dtype is np.float64 else table[name]
    try:
        return np.asarray(values, dtype=dtype)
    except (TypeError, ValueError):
        raise SpecError(source, [f"column {name!r} does not hold {np.dtype(dtype).name} values"]) from None


def pod_jobs(tables: dict[str, Any]) -> IntArray:
    """Per row of pods.parquet, the row of its job in jobs.parquet (the tables are checked in ``_read``)."""
    job_row = {j: i for i, j in enumerate(tables["jobs"]["job_id"])}
    return np.asarray([job_row[j] for j in tables["pods"]["job_id"]], dtype=np.int64)


def _read(folder: Path) -> dict[str, dict[str, Any]]:
    """The four tables, with the cross-references the checks follow made sure of."""
    tables = {name: _read_table(folder, name) for name in FILES}
    needs = {
        "jobs": (
            "job_id",
            "state",
            "submit_s",
            "pods",
            "gpus_per_pod",
            "cpu_milli_per_pod",
            "queue_wait_so_far_s",
        ),
        "pods": ("job_id", "node", "end_s"),
        "nodes": ("node", "gpus", "price_per_hour", "billed_s"),
        "segments": ("pod", "node", "bound_ms", "ready_ms", "start_ms", "end_ms", "lost_ms"),
    }
    for name, columns in needs.items():
        missing = [c for c in columns if c not in tables[name]]
        if missing:
            raise SpecError(str(folder / f"{name}.parquet"), [f"missing column(s) {', '.join(missing)}"])
    ids = set(tables["jobs"]["job_id"])
    unknown = [j for j in tables["pods"]["job_id"] if j not in ids]
    if unknown:
        raise SpecError(str(folder / "pods.parquet"), [f"job_id {unknown[0]!r} is not in jobs.parquet"])
    names = set(tables["nodes"]["node"])
    for name in ("pods", "segments"):
        stray = [n for n in tables[name]["node"] if n and n not in names]
        if stray:
            raise SpecError(str(folder / f"{name}.parquet"), [f"node {stray[0]!r} is not in nodes.parquet"])
    return tables


def _ms(seconds: FloatArray) -> IntArray:
    """Seconds written as ms / 1000 back to integer ms (NaN → -1)."""
    return np.where(np.isnan(seconds), -1, np.round(np.nan_to_num(seconds) * 1000)).astype(np.int64)


def _read_payload(folder: Path) -> dict[str, Any]:
    file = folder / "summary.json"
    if not folder.is_dir():
        raise SpecError(str(folder), ["not a folder; give a run folder written by `fleetlab simulate --out`"])
    if file.is_file() and file.stat().st_size > MAX_FILE_BYTES:
        raise SpecError(str(file), [f"is larger than {MAX_FILE_BYTES} bytes"])
    text = read_text_file(file, "no summary.json in this folder; give a `fleetlab simulate --out` folder")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpecError(str(file), [f"invalid JSON: {exc}"]) from None
    if isinstance(data, dict) and "runs" in data and "summary" not in data:
        raise SpecError(
            str(file), ["holds several runs (from `compare --out`); give one policy's sub-folder"]
        )
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict) or "end_s" not in data:
        raise SpecError(
            str(file), ["no 'summary' and 'end_s'; expected the file `fleetlab simulate --out` writes"]
        )
    return data


def check_run(folder: Path) -> CheckReport:
    """Recompute the headline figures of one run folder and compare them with its summary.json."""
    payload = _read_payload(folder)
    summary: dict[str, Any] = payload["summary"]
    end_s = payload["end_s"]
    if not isinstance(end_s, int | float) or isinstance(end_s, bool) or not 0 <= end_s < 1e12:
        raise SpecError(str(folder / "summary.json"), [f"end_s: {end_s!r} is not a time in seconds >= 0"])
    end_ms = round(float(end_s) * 1000)
    tables = _read(folder)
    report = CheckReport(str(folder))
    _check_bills(report, tables["nodes"], summary, str(folder / "nodes.parquet"))
    _check_stays(report, tables, str(folder / "segments.parquet"))
    _check_jobs(report, tables, summary, end_ms, folder)
    horizon = payload.get("horizon_s")
    report.same("makespan_s", end_ms / 1000.0, summary.get("makespan_s"))
    if horizon is not None:
        report.same("end_s (the horizon)", float(horizon), payload["end_s"])
    return report


def _check_bills(report: CheckReport, nodes: dict[str, Any], summary: dict[str, Any], source: str) -> None:
    """Per node: bill = billed time × price (+ its minimum line); buckets add up to it; summary totals."""
    price = _column(nodes, "price_per_hour", source)
    billed_s = _column(nodes, "billed_s", source)
    bill = _column(nodes, "cost_billed_usd", source)
    gpus = _column(nodes, "gpus", source, np.int64)
    names = list(nodes.get("node", []))
    # A run with a background load (sim/background.py) has its bucket too.
    buckets = (*BUCKETS, "background") if "cost_background_usd" in nodes else BUCKETS
    dollars = {b: _column(nodes, f"cost_{b}_usd", source) for b in buckets}
    hours = {b: _column(nodes, f"gpu_hours_{b}", source) for b in buckets}
    hours_billed = _column(nodes, "gpu_hours_billed", source)
    for i, name in enumerate(names):
        lifetime = price[i] * billed_s[i] / 3600.0
        report.same(
            f"node {name}: bill − minimum = billed_s × price / 3600",
            lifetime,
            bill[i] - dollars["minimum"][i],
        )
        report.same(
            f"node {name}: Σ cost buckets = bill", sum(float(dollars[b][i]) for b in buckets), bill[i]
        )
        report.same(
            f"node {name}: Σ GPU-hour buckets", sum(float(hours[b][i]) for b in buckets), hours_billed[i]
        )
        if gpus[i] > 0:
            expected = gpus[i] * billed_s[i] / 3600.0 + hours["minimum"][i]
            report.same(f"node {name}: GPU-hours billed = GPUs × billed time", expected, hours_billed[i])
    extras = sum(
        float(summary.get(k) or 0.0) for k in ("cost_commitment_unused", "cost_data_transfer", "cost_storage")
    )
    report.same("cost_total", float(bill.sum()) + extras, summary.get("cost_total"))
    for b in buckets:
        report.same(f"cost_{b}", float(dollars[b].sum()), summary.get(f"cost_{b}"))
        key = SUMMARY_HOURS.get(b, f"gpu_hours_{b}")
        if key in summary:
            report.same(key, float(hours[b][gpus > 0].sum()), summary.get(key))
    report.same("gpu_hours_billed", float(hours_billed[gpus > 0].sum()), summary.get("gpu_hours_billed"))


def _stay_units(tables: dict[str, Any], source: str) -> tuple[dict[str, NDArray[Any]], IntArray]:
    """The stays as columns and per stay the billing units its pod held (GPUs, or CPU milli on CPU nodes)."""
    seg = tables["segments"]
    cols = {
        c: _column(seg, c, source, np.int64)
        for c in ("pod", "bound_ms", "ready_ms", "start_ms", "end_ms", "lost_ms")
    }
    cols["node"] = np.asarray(seg.get("node", []), dtype=object)
    jobs, nodes = tables["jobs"], tables["nodes"]
    pod_job = pod_jobs(tables)
    node_gpus = dict(zip(nodes["node"], nodes["gpus"], strict=True))
    gpus_per_pod = _column(jobs, "gpus_per_pod", source, np.int64)
    cpu_per_pod = _column(jobs, "cpu_milli_per_pod", source, np.int64)
    if len(cols["pod"]) and (cols["pod"].min() < 0 or cols["pod"].max() >= len(pod_job)):
        raise SpecError(source, ["column 'pod' names a pod that pods.parquet does not have"])
    job_of = pod_job[cols["pod"]]
    on_gpu = np.asarray([node_gpus.get(n, 0) > 0 for n in cols["node"]], dtype=bool)
    units = np.where(on_gpu, gpus_per_pod[job_of], cpu_per_pod[job_of]).astype(np.int64)
    return cols, units


def _check_stays(report: CheckReport, tables: dict[str, Any], source: str) -> None:
    """Per GPU node: compute, lost, prep and gang-wait GPU-hours are what its stays held."""
    cols, units = _stay_units(tables, source)
    computing = np.maximum(cols["end_ms"] - cols["start_ms"], 0)
    lost = np.minimum(cols["lost_ms"], computing)
    held = {
        "compute": units * (computing - lost),
        "lost": units * lost,
        "prep": units * np.maximum(cols["ready_ms"] - cols["bound_ms"], 0),
        "wait": units * np.maximum(cols["start_ms"] - cols["ready_ms"], 0),
    }
    nodes = tables["nodes"]
    for i, name in enumerate(nodes["node"]):
        if nodes["gpus"][i] <= 0:
            continue
        mine = cols["node"] == name
        for bucket, values in held.items():
            recomputed = float(values[mine].sum()) / MS_PER_HOUR
            report.same(
                f"node {name}: gpu_hours_{bucket} from its stays", recomputed, nodes[f"gpu_hours_{bucket}"][i]
            )


def pod_waits(tables: dict[str, Any], end_ms: int, source: str) -> IntArray:
    """Per pod, Σ pending intervals: submit → first bind, each eviction → the next bind, and, for a pod
    still unplaced at the end (not done, its job not failed), the last one open to the end."""
    jobs, pods, seg = tables["jobs"], tables["pods"], tables["segments"]
    pod_job = pod_jobs(tables)
    submit = _ms(_column(jobs, "submit_s", source))
    failed = np.asarray([s == "failed" for s in jobs["state"]], dtype=bool)
    pod_end = _ms(_column(pods, "end_s", source))
    placed = np.asarray([bool(n) for n in pods["node"]], dtype=bool)
    free_from = submit[pod_job].copy()
    waited = np.zeros(len(pod_job), dtype=np.int64)
    order = np.lexsort((_column(seg, "bound_ms", source, np.int64), _column(seg, "pod", source, np.int64)))
    for k in order.tolist():
        pod = int(seg["pod"][k])
        waited[pod] += max(0, int(seg["bound_ms"][k]) - int(free_from[pod]))
        free_from[pod] = int(seg["end_ms"][k])
    still = ~placed & (pod_end < 0) & ~failed[pod_job]
    waited[still] += np.maximum(end_ms - free_from[still], 0)
    return waited


def _check_jobs(
    report: CheckReport, tables: dict[str, Any], summary: dict[str, Any], end_ms: int, folder: Path
) -> None:
    """States, counts by state, per-job waits and the wait and completion figures of the summary."""
    source = str(folder / "jobs.parquet")
    jobs, pods = tables["jobs"], tables["pods"]
    ids = list(jobs["job_id"])
    pod_job = pod_jobs(tables)
    n = len(ids)
    pod_end = _ms(_column(pods, "end_s", str(folder / "pods.parquet")))
    placed = np.asarray([bool(x) for x in pods["node"]], dtype=bool)
    completed = np.ones(n, dtype=bool)
    np.logical_and.at(completed, pod_job, pod_end >= 0)
    unplaced = np.zeros(n, dtype=bool)
    np.logical_or.at(unplaced, pod_job, ~placed & (pod_end < 0))
    written_state = [str(s) for s in jobs["state"]]
    failed = np.asarray([s == "failed" for s in written_state], dtype=bool) & ~completed
    # A withdrawn job never had a pod placed: the files say when only through its written wait.
    ever_placed = np.zeros(n, dtype=bool)
    np.logical_or.at(ever_placed, pod_job, placed | (pod_end >= 0))
    seg_pods = np.asarray(tables["segments"]["pod"], dtype=np.int64)
    ever_placed[pod_job[seg_pods]] = True
    cancelled = np.asarray([s == "cancelled" for s in written_state], dtype=bool) & ~ever_placed & ~failed
    state = np.where(
        completed,
        "completed",
        np.where(
            failed, "failed", np.where(cancelled, "cancelled", np.where(unplaced, "pending", "running"))
        ),
    )
    workload = np.asarray([not i.startswith(SERVICE_PREFIX) for i in ids], dtype=bool)
    for i in np.flatnonzero(workload).tolist():
        written = "running" if written_state[i] == "preparing" else written_state[i]
        if written != state[i]:
            report.mismatches.append(
                f"job {ids[i]}: state recomputed {state[i]!r}, written {written_state[i]!r}"
            )
    report.checked += int(workload.sum())
    counts = {
        s: int(np.count_nonzero(workload & (state == s)))
        for s in ("completed", "running", "pending", "failed", "cancelled")
    }
    report.same("jobs", float(workload.sum()), summary.get("jobs"))
    report.same("jobs_completed", counts["completed"], summary.get("jobs_completed"))
    report.same("jobs_running_at_end", counts["running"], summary.get("jobs_running_at_end"))
    report.same("jobs_pending_at_end", counts["pending"], summary.get("jobs_pending_at_end"))
    report.same("jobs_failed", counts["failed"], summary.get("jobs_failed"))
    report.same("jobs_cancelled", counts["cancelled"], summary.get("jobs_cancelled", 0))
    waits_pod = pod_waits(tables, end_ms, str(folder / "segments.parquet"))
    wait_ms = np.zeros(n, dtype=np.int64)
    np.maximum.at(wait_ms, pod_job, waits_pod)
    written_wait = _ms(_column(jobs, "queue_wait_so_far_s", source))
    wait_ms[cancelled] = np.minimum(written_wait[cancelled], wait_ms[cancelled])  # ended at the withdrawal
    for i in np.flatnonzero(workload & (wait_ms != written_wait)).tolist():
        report.mismatches.append(
            f"job {ids[i]}: queue wait recomputed {wait_ms[i]} ms, written {written_wait[i]} ms"
        )
    report.checked += int(workload.sum())
    waits = wait_ms / 1000.0
    known = workload & (state != "pending") & (state != "cancelled")
    _stat(report, "queue_wait_mean_s", waits[known], None, summary)
    for q in (50, 95, 99):
        _stat(report, f"queue_wait_p{q}_s", waits[known], q, summary)
        _stat(report, f"queue_wait_p{q}_s_lower_bound", waits[workload], q, summary)
    _stat(report, "queue_wait_mean_s_lower_bound", waits[workload], None, summary)
    submit = _ms(_column(jobs, "submit_s", source))
    last_end = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_end, pod_job, pod_end)
    done = workload & completed
    _stat(report, "completion_mean_s", (last_end - submit)[done] / 1000.0, None, summary)
    _stat(report, "completion_p95_s", (last_end - submit)[done] / 1000.0, 95, summary)
    so_far = np.where(completed, last_end, np.maximum(end_ms, submit)) - submit
    may_complete = workload & ~failed & ~cancelled
    _stat(report, "completion_mean_s_lower_bound", so_far[may_complete] / 1000.0, None, summary)
    _stat(report, "completion_p95_s_lower_bound", so_far[may_complete] / 1000.0, 95, summary)
    if end_ms < int(last_end.max(initial=-1)):
        report.mismatches.append(f"makespan_s: a pod ended at {last_end.max() / 1000} s, after the run's end")


def _stat(
    report: CheckReport, name: str, values: FloatArray, q: float | None, summary: dict[str, Any]
) -> None:
    if not len(values):
        recomputed = 0.0
    elif q is None:
        recomputed = float(values.mean())
    else:
        recomputed = float(np.percentile(values, q))
    report.same(name, recomputed, summary.get(name))
