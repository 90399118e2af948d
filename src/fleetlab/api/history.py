"""A cluster's own record from Python: import it, measure today's baseline, calibrate a replay — the steps of
``fleetlab import``, ``baseline`` and ``calibrate``, with the same results and the same files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from fleetlab.api.core import Scenario
from fleetlab.api.frames import Frame, records_table, to_frame
from fleetlab.experiment.calibration import Calibration as CalibrationResult
from fleetlab.experiment.calibration import calibrate as _calibrate
from fleetlab.metrics.baseline import Baseline as BaselineResult
from fleetlab.metrics.baseline import compute_baseline
from fleetlab.model.history import History as HistoryRecord
from fleetlab.report.baseline_files import (
    baseline_payload,
    calibration_payload,
    write_baseline_files,
    write_calibration_files,
    write_staged,
)
from fleetlab.report.baseline_report import history_title
from fleetlab.spec.history.checks import check_history
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.store import history_meta, load_history, write_history
from fleetlab.spec.loader import resolve

__all__ = [
    "Baseline",
    "Calibration",
    "History",
    "baseline",
    "calibrate",
    "import_history",
    "load_history_folder",
]


@dataclass(frozen=True)
class History:
    """An imported record: jobs, nodes and bill lines as Arrow tables (see docs/history-import.md)."""

    record: HistoryRecord = field(repr=False)

    @property
    def jobs(self) -> pa.Table:
        """One row per job (jobs.parquet of a history folder)."""
        return self.record.jobs

    @property
    def nodes(self) -> pa.Table:
        """One row per node."""
        return self.record.nodes

    @property
    def bill(self) -> pa.Table:
        """One row per bill line (FOCUS, GCP export, OpenCost), in the bill's own currency."""
        return self.record.bill

    @property
    def summary(self) -> dict[str, Any]:
        """What history.json holds: epoch, end, sources, jobs by state, rows left out by reason."""
        return history_meta(self.record)

    def write(self, out: str | Path) -> Path:
        """The history folder ``fleetlab import --out`` writes, atomically; returns the folder."""
        folder = Path(out)
        write_history(self.record, folder)
        return folder

    def __repr__(self) -> str:
        return (
            f"<fleetlab History from {self.record.epoch}: {self.jobs.num_rows} jobs, {self.nodes.num_rows} "
            f"nodes, {self.bill.num_rows} bill lines, {self.record.end_s / 3600:.1f} h>"
        )


def import_history(
    sources: Sequence[str | Path],
    *,
    end: float | None = None,
    out: str | Path | None = None,
    swf_processors: str = "cpus",
) -> History:
    """Read files (``[FORMAT:]PATH``: kubectl JSON, Kueue Workloads, events, Slurm, FOCUS, GCP billing,
    OpenCost, Philly, SWF) into one history, as ``fleetlab import`` does; ``end`` (Unix seconds) is when the
    record ends (default: the latest time any source mentions). With ``out``, the folder is written too.

    Bad input raises :class:`fleetlab.spec.errors.SpecError` with the message the command line prints."""
    history = History(import_sources(list(sources), None, end, swf_processors))
    if out is not None:
        history.write(out)
    return history


def load_history_folder(folder: str | Path) -> History:
    """A history folder written by ``fleetlab import`` (or :meth:`History.write`), checked."""
    return History(check_history(load_history(Path(folder)), str(folder)))


def _record(history: History | str | Path) -> HistoryRecord:
    return history.record if isinstance(history, History) else load_history_folder(history).record


@dataclass(frozen=True)
class Baseline:
    """Today's cluster measured from its history: one row per group (all, each class, team, queue) and the
    cluster-wide figures — the content of baseline.json (docs/baseline.md)."""

    result: BaselineResult = field(repr=False)
    title: str

    @property
    def payload(self) -> dict[str, Any]:
        """baseline.json as a dict: ``rows``, ``cluster``, ``notes``."""
        return baseline_payload(self.result)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The per-group rows (waits, states, prep, compute, GPU-hours, cost per completed job)."""
        return list(self.payload["rows"])

    @property
    def cluster(self) -> dict[str, Any]:
        """Cluster-wide figures: node-hours, idle capacity, allocation ratio, cost and its source."""
        return dict(self.payload["cluster"])

    @property
    def notes(self) -> list[str]:
        """What the measurement wants the reader to know (censoring, unpriced nodes, ...)."""
        return list(self.result.notes)

    def dataframe(self, library: str = "pandas") -> Frame:
        """The per-group rows as a pandas or polars DataFrame (or ``library="arrow"``)."""
        return to_frame(records_table(self.rows), library)

    def write(self, out: str | Path) -> Path:
        """baseline.json, baseline.parquet and baseline.html, as ``fleetlab baseline --out`` writes them."""
        folder = Path(out)
        write_staged(folder, lambda staging: write_baseline_files(self.result, staging, self.title))
        return folder

    def __repr__(self) -> str:
        all_row = self.rows[0] if self.rows else {}
        return f"<fleetlab Baseline {self.title!r}: {all_row.get('jobs_submitted', 0)} jobs>"


def baseline(history: History | str | Path, *, out: str | Path | None = None) -> Baseline:
    """Measure waits, prep, compute, failures, idle capacity and cost from a history (or a history folder),
    as ``fleetlab baseline`` does; with ``out``, its files are written too."""
    record = _record(history)
    result = Baseline(compute_baseline(record), history_title(record, "measured baseline"))
    if out is not None:
        result.write(out)
    return result


@dataclass
class Calibration:
    """A replay of the history compared with the measurement, metric by metric, with the fitted knobs and
    the calibrated scenario (docs/baseline.md, "Calibration")."""

    result: CalibrationResult = field(repr=False)
    title: str
    #: Where :meth:`write` put the calibrated scenario (scenario.yaml), once written.
    scenario_file: Path | None = None

    @property
    def verdict(self) -> str:
        """``pass`` when every comparable metric is within its tolerance, else ``fail``."""
        return self.result.verdict

    @property
    def payload(self) -> dict[str, Any]:
        """calibration.json as a dict: verdict, fitted knobs and the search, rows, disagreements, notes."""
        return calibration_payload(self.result)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One row per metric and job class: measured, simulated, error, tolerance, within."""
        return [r.as_dict() for r in self.result.rows]

    @property
    def scenario(self) -> Scenario:
        """The calibrated scenario, ready for :func:`fleetlab.api.run` (its file once written)."""
        source = None if self.scenario_file is None else str(self.scenario_file)
        return Scenario(resolve(self.result.scenario), source)

    def dataframe(self, library: str = "pandas") -> Frame:
        """The metric rows as a pandas or polars DataFrame (or ``library="arrow"``)."""
        return to_frame(records_table(self.rows), library)

    def write(self, out: str | Path) -> Path:
        """The files of ``fleetlab calibrate --out``; ``scenario.yaml`` in them is the calibrated scenario."""
        folder = Path(out)
        write_staged(folder, lambda staging: write_calibration_files(self.result, staging, self.title))
        self.scenario_file = folder / "scenario.yaml"
        return folder

    def __repr__(self) -> str:
        return f"<fleetlab Calibration {self.title!r}: {self.verdict}, {len(self.result.rows)} metric rows>"


def calibrate(
    history: History | str | Path,
    *,
    tolerances: dict[str, float] | None = None,
    fit: bool = True,
    out: str | Path | None = None,
) -> Calibration:
    """Replay the history on its own nodes and compare, as ``fleetlab calibrate`` does (``tolerances``
    override the defaults by key, e.g. ``{"wait_ks": 0.2}``; ``fit=False`` replays once with no fitted
    knob); with ``out``, its files are written and :attr:`Calibration.scenario_file` names scenario.yaml."""
    record = _record(history)
    result = Calibration(_calibrate(record, tolerances, fit=fit), history_title(record, "calibration"))
    if out is not None:
        result.write(out)
    return result
