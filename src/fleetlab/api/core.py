"""One scenario, one run: load a scenario, run it under a policy, read its tables as Arrow (pandas or polars
on request), write the files ``fleetlab simulate --out`` writes — byte for byte the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa

from fleetlab.api.frames import Frame, to_frame
from fleetlab.cost.ledger_io import ledger_table, run_id_of
from fleetlab.experiment.output import write_results
from fleetlab.experiment.run import Run, compare, run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import job_columns, node_columns, pod_columns, timeline_columns
from fleetlab.model.policy_names import DEFAULT_COMPARE
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.spec.loader import load as _load

__all__ = ["DEFAULT_COMPARE", "Result", "Scenario", "compare_policies", "load", "run"]

#: The tables a run has, by name.
TABLES = ("jobs", "pods", "nodes", "timeline", "ledger")


@dataclass(frozen=True)
class Scenario:
    """A validated scenario with its workload materialised (jobs from inline YAML, a trace or the
    generator); ``resolved`` is what the simulator takes."""

    resolved: ResolvedScenario
    #: The file or built-in name it was loaded from (None: built in Python, e.g. by ``calibrate``).
    source: str | None = None

    @property
    def name(self) -> str:
        """The scenario's ``name``."""
        return self.resolved.scenario.name

    @property
    def seed(self) -> int:
        """The seed runs use unless ``run`` is given another."""
        return self.resolved.scenario.seed

    @property
    def jobs(self) -> int:
        """Jobs in the workload."""
        return len(self.resolved.jobs)

    @property
    def nodes(self) -> int:
        """Node slots over every pool (autoscaled pools count their maximum)."""
        return sum(p.node_slots for p in self.resolved.scenario.cluster.pools)

    def __repr__(self) -> str:
        return f"<fleetlab Scenario {self.name!r}: {self.jobs} jobs, {self.nodes} nodes, seed {self.seed}>"


@dataclass
class Result:
    """One run: its tables as Arrow, its summary as a dict, and ``write`` for the usual files."""

    run_: Run = field(repr=False)

    @property
    def policy(self) -> str:
        """The policy label (the preset name, or the scenario's own profile name)."""
        return self.run_.label

    @property
    def seed(self) -> int:
        """The seed this run used."""
        return self.run_.result.seed

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The comparison table's row for this run (the ``summary`` of summary.json)."""
        return dict(summarize(self.run_.result).as_dict())

    @cached_property
    def jobs(self) -> pa.Table:
        """One row per job (jobs.parquet): waits, prep, compute, lost work, cost, state."""
        return pa.table(job_columns(self.run_.result))

    @cached_property
    def pods(self) -> pa.Table:
        """One row per pod attempt (pods.parquet)."""
        return pa.table(pod_columns(self.run_.result))

    @cached_property
    def nodes(self) -> pa.Table:
        """One row per node slot (nodes.parquet)."""
        return pa.table(node_columns(self.run_.result))

    @cached_property
    def timeline(self) -> pa.Table:
        """The cluster's allocation step function (timeline.parquet)."""
        return pa.table(timeline_columns(self.run_.result))

    @cached_property
    def ledger(self) -> pa.Table:
        """The cost ledger (ledger.parquet): one row per node window and cost category."""
        run = self.run_
        return ledger_table(run.pools, run.result, run_id_of(run.result, run.label))

    @property
    def warnings(self) -> list[str]:
        """What the run wants the user to know (stalls, jobs no node could ever hold, ...)."""
        return list(self.run_.result.warnings)

    @property
    def end_s(self) -> float:
        """When the run ended (seconds): the end of the timeline's last step, for :func:`time_weighted`."""
        return self.run_.result.end_ms / 1000.0

    def dataframe(self, table: str = "jobs", library: str = "pandas") -> Frame:
        """One of the run's tables (jobs, pods, nodes, timeline, ledger) as a pandas or polars DataFrame
        (``pip install 'fleetlab[dataframes]'``), or ``library="arrow"`` for the Arrow table itself."""
        if table not in TABLES:
            raise ValueError(f"table {table!r}: one of {', '.join(TABLES)}")
        return to_frame(getattr(self, table), library)

    def write(self, out: str | Path) -> Path:
        """Write the files ``fleetlab simulate --out`` writes, atomically; returns the folder."""
        folder = Path(out)
        write_results([self.run_], folder, single=True)
        return folder

    def __repr__(self) -> str:
        jobs = self.run_.result.jobs
        done = int(jobs.completed.sum())
        return (
            f"<fleetlab Result {self.run_.result.scenario!r} policy={self.policy!r} seed={self.seed}: "
            f"{len(jobs.completed)} jobs, {done} completed, {len(jobs.completed) - done} not completed>"
        )


def load(path: str | Path | None = None, seed: int | None = None) -> Scenario:
    """A scenario file (or built-in name; None: the built-in default), its workload materialised.

    Bad input raises :class:`fleetlab.spec.errors.SpecError` with the same message the CLI prints."""
    source = None if path is None else str(path)
    return Scenario(_load(source, seed), source or "default")


def _resolved(scenario: Scenario | str | Path | None) -> ResolvedScenario:
    return scenario.resolved if isinstance(scenario, Scenario) else load(scenario).resolved


def run(
    scenario: Scenario | str | Path | None = None, policy: str | None = None, seed: int | None = None
) -> Result:
    """Simulate one scenario under ``policy`` (None: the file's own scheduler section, or a preset name)."""
    return Result(run_one(_resolved(scenario), policy, seed))


def compare_policies(
    scenario: Scenario | str | Path | None = None,
    policies: tuple[str, ...] = DEFAULT_COMPARE,
    seed: int | None = None,
) -> dict[str, Result]:
    """The same workload and seed under each policy, as ``fleetlab compare`` runs them."""
    runs = compare(_resolved(scenario), list(policies), seed)
    return {r.label: Result(r) for r in runs}
