"""The Ray engine against a real local Ray head (``ray start --head`` on 127.0.0.1, tests/ray_head.py),
reached through a ``ray://`` (Ray Client) address: a sweep with a trace workload and a relative ``--out``
gives the local engine's results byte for byte (every Parquet file, manifest.json, run.json but the
run's wall time, and the database's rows), a rerun through Ray resumes, ``--jobs`` caps the runs in
flight, and a failed task raises the task's own error.

Where the head comes from: ``FLEETLAB_TEST_RAY_ADDRESS`` (.ci/run starts one before the suite and sets
it), else ``FLEETLAB_RAY_TESTS=1`` starts one for this module. Without either the head-bound tests skip.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

import ray_head
from fleetlab import cli
from fleetlab.experiment.engines import EngineError, make_engine

ADDRESS_ENV = "FLEETLAB_TEST_RAY_ADDRESS"

SCENARIO = """\
name: ray-tiny
seed: 1
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 10}
workload:
  trace: {path: traces/jobs.csv}
"""

TRACE = """\
id,submit_s,class,pods,cpu,memory,gpus,runtime_s
a,0,training,2,8,64Gi,8,1800
b,10,batch,1,4,32Gi,2,600
c,20,experiment,1,2,16Gi,1,300
d,30,batch,1,4,32Gi,4,1200
e,40,batch,1,4,32Gi,2,900
"""

EXPERIMENT = """\
name: ray-exp
base: tiny.yaml
seeds: [1, 2]
metrics: [completion_mean_s, cost_total]
variants:
  - name: base
  - name: pack
    policy: most-allocated
"""


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``ray://`` address of a running head: CI's, or one started here with FLEETLAB_RAY_TESTS=1."""
    given = os.environ.get(ADDRESS_ENV)
    if not given and os.environ.get("FLEETLAB_RAY_TESTS") != "1":
        pytest.skip(
            f"no Ray head: .ci/run starts one and sets {ADDRESS_ENV}=ray://127.0.0.1:PORT; "
            "or set FLEETLAB_RAY_TESTS=1 to start one here (pip install 'fleetlab[ray]')"
        )
    try:  # a head was asked for: a missing Ray fails rather than skips
        import ray
    except ImportError:
        pytest.fail("Ray is not installed: pip install 'fleetlab[ray]'")
    head = None
    if not given:
        try:
            head = ray_head.start(tmp_path_factory.mktemp("ray"))
        except ray_head.HeadError as exc:
            pytest.fail(str(exc))
    try:
        yield given or head.address  # type: ignore[union-attr]
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if head is not None:
            ray_head.stop(head)


def _experiment(folder: Path) -> Path:
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "jobs.csv").write_text(TRACE)
    (folder / "tiny.yaml").write_text(SCENARIO)
    path = folder / "exp.yaml"
    path.write_text(EXPERIMENT)
    return path


def _result_files(out: Path) -> dict[str, bytes]:
    """Every Parquet file and manifest.json as written; run.json without its wall time."""
    files = {"manifest.json": (out / "manifest.json").read_bytes()}
    for path in sorted((out / "runs").rglob("*")):
        if path.suffix == ".parquet":
            files[str(path.relative_to(out))] = path.read_bytes()
        elif path.name == "run.json":
            record = json.loads(path.read_text())
            record.pop("wall_s")
            files[str(path.relative_to(out))] = json.dumps(record, sort_keys=True).encode()
    return files


def _database_rows(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table and view of experiment.duckdb, sorted, without wall times (the file's bytes differ
    between two builds of the same rows)."""
    with duckdb.connect(str(out / "experiment.duckdb"), read_only=True) as con:
        names = [n for (n,) in con.sql("SELECT table_name FROM information_schema.tables").fetchall()]
        rows = {}
        for name in sorted(names):
            columns = [c for c in con.sql(f'SELECT * FROM "{name}" LIMIT 0').columns if c != "wall_s"]
            select = ", ".join(f'"{c}"' for c in columns)
            rows[name] = con.sql(f'SELECT {select} FROM "{name}" ORDER BY ALL').fetchall()
    return rows


def _sweep(experiment: Path, out: str, *extra: str) -> str:
    result = CliRunner().invoke(cli.app, ["experiment", "run", str(experiment), "--out", out, *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_ray_client_sweep_equals_local_byte_for_byte(
    ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = _experiment(tmp_path / "inputs")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # relative --out: the driver writes it, workers never see it
    ray_engine = ("--engine", "ray", "--address", ray_address)
    _sweep(experiment, "local", "--jobs", "1")
    output = _sweep(experiment, "remote", *ray_engine, "--jobs", "2")
    assert "4 run(s) executed, 0 already finished" in output
    want, got = _result_files(work / "local"), _result_files(work / "remote")
    assert len(want) == 1 + 4 * 7  # manifest; 2 variants x 2 seeds with 6 tables and run.json each
    assert got.keys() == want.keys()
    for name in want:
        assert got[name] == want[name], name
    assert _database_rows(work / "remote") == _database_rows(work / "local")

    # Resume through Ray: a rerun keeps every finished run and rewrites none of them.
    written = {p: p.stat().st_mtime_ns for p in (work / "remote" / "runs").rglob("*") if p.is_file()}
    output = _sweep(experiment, "remote", *ray_engine)
    assert "0 run(s) executed, 4 already finished" in output
    assert {p: p.stat().st_mtime_ns for p in written} == written
    # A run lost since is the only one computed again, and comes back the same.
    for path in (work / "remote" / "runs" / "pack" / "seed-2").iterdir():
        path.unlink()
    output = _sweep(experiment, "remote", *ray_engine)
    assert "1 run(s) executed, 3 already finished" in output
    assert _result_files(work / "remote") == want


def _overlaps(spans: list[tuple[int, float, float]]) -> int:
    """The most ``(task, began, ended)`` spans open at one instant."""
    edges = sorted([(b, 1) for _, b, _ in spans] + [(e, -1) for _, _, e in spans])
    most = open_now = 0
    for _, step in edges:
        open_now += step
        most = max(most, open_now)
    return most


# Task functions are defined inside the tests so that Ray pickles them by value: the workers cannot
# import this test module.


def test_ray_jobs_caps_runs_in_flight(ray_address: str) -> None:
    def busy(task: int, shared: Any) -> tuple[int, float, float]:
        began = time.time()  # all workers share this machine's clock
        time.sleep(0.5)
        return task, began, time.time()

    # 4 tasks on a 2-CPU head: at most 2 at once by default (which also starts two workers), and one
    # after another with --jobs 1.
    together = list(make_engine("ray", None, ray_address).map_unordered(busy, [0, 1, 2, 3]))
    assert sorted(t for t, _, _ in together) == [0, 1, 2, 3]
    assert _overlaps(together) <= 2
    one_at_a_time = list(make_engine("ray", 1, ray_address).map_unordered(busy, [0, 1, 2, 3]))
    assert sorted(t for t, _, _ in one_at_a_time) == [0, 1, 2, 3]
    assert _overlaps(one_at_a_time) == 1


def test_ray_task_failure_is_the_tasks_own_error(ray_address: str) -> None:
    def fails(task: int, shared: Any) -> None:
        raise ValueError(f"variant 'base', seed {task}: no such thing")

    def cannot_import(task: int, shared: Any) -> None:
        import fleetlab_module_missing_on_cluster  # noqa: F401

    engine = make_engine("ray", None, ray_address)
    # The worker's exception itself, as the local engine raises it; not Ray's remote traceback.
    with pytest.raises(ValueError) as raised:
        list(engine.map_unordered(fails, [7]))
    assert str(raised.value) == "variant 'base', seed 7: no such thing"
    with pytest.raises(EngineError, match="cannot import fleetlab_module_missing_on_cluster: the cluster"):
        list(engine.map_unordered(cannot_import, [1]))
