"""The Ray engine against a real local Ray head started with ``ray start --head`` on 127.0.0.1, reached
through a ``ray://`` (Ray Client) address: a sweep with a trace workload and a relative ``--out`` gives
the local engine's results byte for byte (every Parquet file; run.json but the run's wall time).

Runs only with ``FLEETLAB_RAY_TESTS=1`` (and Ray installed: ``pip install 'fleetlab[ray]'``): a Ray head
binds its raylet and object store to the machine's own network address whatever ``--node-ip-address``
says, and its client server can take over a minute to start on a loaded 2-core machine, so the default
suite leaves it out. Skips when the head cannot start.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli

if os.environ.get("FLEETLAB_RAY_TESTS") != "1":
    pytest.skip("set FLEETLAB_RAY_TESTS=1 to start a real Ray head", allow_module_level=True)
ray = pytest.importorskip("ray")

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_client_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``ray start --head --block`` in its own process group; stopped by signalling that group only."""
    exe = Path(sys.executable).with_name("ray")
    if not exe.exists() and shutil.which("ray") is None:
        pytest.skip("the ray command is not installed")
    gcs, client = _free_port(), _free_port()
    temp = Path("/tmp") / f"fl-ray-{os.getpid()}"  # short: Ray's socket paths must stay under 108 bytes
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    head = subprocess.Popen(
        [
            str(exe if exe.exists() else shutil.which("ray")),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={gcs}",
            f"--ray-client-server-port={client}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if head.poll() is not None:
                pytest.skip(f"ray start --head exited with {head.returncode}")
            try:
                socket.create_connection(("127.0.0.1", client), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.skip("the Ray head did not open its client port within 90 s")
        yield f"ray://127.0.0.1:{client}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        try:
            os.killpg(head.pid, signal.SIGTERM)
            head.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


def _experiment(folder: Path) -> Path:
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "jobs.csv").write_text(TRACE)
    (folder / "tiny.yaml").write_text(SCENARIO)
    path = folder / "exp.yaml"
    path.write_text(EXPERIMENT)
    return path


def _run_files(out: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted((out / "runs").rglob("*")):
        if path.suffix == ".parquet":
            files[str(path.relative_to(out))] = path.read_bytes()
        elif path.name == "run.json":
            record = json.loads(path.read_text())
            record.pop("wall_s")
            files[str(path.relative_to(out))] = json.dumps(record, sort_keys=True).encode()
    return files


def test_ray_client_sweep_equals_local_byte_for_byte(
    ray_client_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = _experiment(tmp_path / "inputs")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # relative --out: the driver writes it, workers never see it
    runner = CliRunner()
    local = runner.invoke(cli.app, ["experiment", "run", str(experiment), "--out", "local", "--jobs", "1"])
    assert local.exit_code == 0, local.output
    remote = runner.invoke(
        cli.app,
        [
            "experiment",
            "run",
            str(experiment),
            "--out",
            "remote",
            "--engine",
            "ray",
            "--address",
            ray_client_address,
            "--jobs",
            "2",
        ],
    )
    assert remote.exit_code == 0, remote.output
    want, got = _run_files(work / "local"), _run_files(work / "remote")
    assert len(want) == 4 * 7  # 2 variants x 2 seeds; 6 tables and run.json each
    assert got.keys() == want.keys()
    for name in want:
        assert got[name] == want[name], name
    # Resume: a second run through Ray keeps every finished run.
    again = runner.invoke(
        cli.app,
        [
            "experiment",
            "run",
            str(experiment),
            "--out",
            "remote",
            "--engine",
            "ray",
            "--address",
            ray_client_address,
        ],
    )
    assert again.exit_code == 0, again.output
    assert "0 run(s) executed, 4 already finished" in again.output
