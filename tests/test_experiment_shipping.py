"""Workloads shipped to workers (the Ray engine's path, run here in-process): each distinct trace is
materialised once by the driver, workers read no file, and the driver alone writes — the results equal
the local engine's byte for byte."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.sweep import execute_run, plan_tasks, run_sweep, ship_workloads

SCENARIO = """\
name: ship
seed: 1
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 10}
workload:
  trace: {path: jobs.csv}
"""

TRACE = """\
id,submit_s,class,pods,cpu,memory,gpus,runtime_s
a,0,training,2,8,64Gi,8,1800
b,10,batch,1,4,32Gi,2,600
c,20,experiment,1,2,16Gi,1,300
"""

EXPERIMENT = """\
name: ship-exp
base: ship.yaml
seeds: [1, 2]
metrics: [completion_mean_s]
variants:
  - name: base
  - name: pack
    policy: most-allocated
  - name: bigger
    set:
      cluster.pools[gpu].count: 3
"""


class InProcessShipping:
    """An engine like Ray's (workloads shipped, results returned) that runs tasks in this process."""

    name = "ship"
    ships_workloads = True

    def __init__(self) -> None:
        self.shared: list[Any] = []

    def map_unordered(
        self, fn: Callable[[Any, Any], Any], tasks: Sequence[Any], shared: Sequence[Any] | None = None
    ) -> Iterator[Any]:
        self.shared = list(shared or [])
        for i, task in enumerate(tasks):
            yield fn(task, None if shared is None else shared[i])


def _experiment(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text(TRACE)
    (folder / "ship.yaml").write_text(SCENARIO)
    (folder / "exp.yaml").write_text(EXPERIMENT)
    return folder / "exp.yaml"


def test_one_materialisation_per_distinct_workload_and_no_file_read_by_workers(tmp_path: Path) -> None:
    experiment = load_experiment(_experiment(tmp_path))
    tasks = plan_tasks(experiment, tmp_path / "out")
    before = {t.key: execute_run(t) for t in tasks}
    shipped, shared = ship_workloads(experiment, tasks)
    # Three variants x two seeds, one trace and no change to the jobs: one shared jobs tuple.
    assert len(shared) == 6 and all(s is shared[0] for s in shared)
    (tmp_path / "jobs.csv").unlink()  # a worker on another machine cannot read the driver's trace
    for task, jobs in zip(shipped, shared, strict=True):
        files = execute_run(task, jobs)
        want = before[task.key]
        assert files.tables.keys() == want.tables.keys()
        for name, table in files.tables.items():
            assert table.equals(want.tables[name]), (task.key, name)
        assert {k: v for k, v in files.record.items() if k != "wall_s"} == {
            k: v for k, v in want.record.items() if k != "wall_s"
        }


def test_shipping_engine_writes_what_the_local_engine_writes(tmp_path: Path) -> None:
    experiment = load_experiment(_experiment(tmp_path / "in"))
    run_sweep(experiment, tmp_path / "local", LocalEngine(1))
    engine = InProcessShipping()
    outcome = run_sweep(experiment, tmp_path / "shipped", engine)
    assert len(outcome.executed) == 6 and all(s is engine.shared[0] for s in engine.shared)
    local = sorted((tmp_path / "local" / "runs").rglob("*.parquet"))
    assert len(local) == 6 * 6
    for path in local:
        other = tmp_path / "shipped" / path.relative_to(tmp_path / "local")
        assert other.read_bytes() == path.read_bytes(), path


def test_a_sweep_in_one_process_parses_its_trace_once(tmp_path: Path, monkeypatch: Any) -> None:
    """Three variants x two seeds on the local engine in this process: the driver's workload check and
    the six runs all resolve the same trace, and the file is parsed once (spec/traces.py keeps it)."""
    import fleetlab.spec.traces as traces

    traces.clear_trace_cache()
    calls: list[Path] = []
    parse = traces.load_native_trace

    def counted(path: Path, limit: int | None = None, time_scale: float = 1.0) -> Any:
        calls.append(path)
        return parse(path, limit, time_scale)

    monkeypatch.setattr(traces, "load_native_trace", counted)
    experiment = load_experiment(_experiment(tmp_path / "in"))
    outcome = run_sweep(experiment, tmp_path / "out", LocalEngine(1))
    assert len(outcome.executed) == 6
    assert calls == [tmp_path / "in" / "jobs.csv"]
    traces.clear_trace_cache()
