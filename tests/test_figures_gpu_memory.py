"""A job that declares more GPU memory than a GPU has never runs on it: whole-GPU pods with ``gpu_memory``
carry GPU Feature Discovery's ``nvidia.com/gpu.memory Gt`` requirement, the pending reason names the
memory, and ``validate`` warns with the job ids."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from builders import by_job, job, pool
from builders import scenario as build
from fleetlab.cli import app
from fleetlab.experiment.run import run_one


def test_a_60gi_job_never_runs_on_40gb_gpus() -> None:
    """One A100-40GB node (40,960 MiB per GPU): big (60Gi = 61,440 MiB) stays pending with the memory
    named as the reason; small (30Gi) runs. It used to run and 'complete' there."""
    jobs = [job("big", runtime=600, gpu_memory="60Gi"), job("small", runtime=600, gpu_memory="30Gi")]
    result = run_one(build([pool(gpu_model="A100-40GB")], jobs), "default").result
    assert by_job(result, "state") == {"big": "pending", "small": "completed"}
    [pending] = result.pending
    assert pending.job_id == "big" and pending.blocked_by == "gpu-memory"
    assert "61440 MiB" in pending.detail and "40960 MiB" in pending.detail
    assert any(w.startswith("job(s) big: the pods use gpu_memory 61440 MiB") for w in result.warnings)


def test_the_job_goes_to_the_gpus_that_have_the_memory() -> None:
    """An idle A100-40GB node listed first and an H100 (80 GB) node: big runs on the H100 node."""
    jobs = [job("big", runtime=600, gpu_memory="60Gi")]
    pools = [pool("a100", gpu_model="A100-40GB"), pool("h100")]
    result = run_one(build(pools, jobs), "default").result
    node = result.nodes.names[int(result.pods.node[0])]
    assert node.startswith("h100") and by_job(result, "state") == {"big": "completed"}


def test_validate_warns_with_the_job_ids(tmp_path: Path) -> None:
    data = {
        "cluster": {"pools": [pool(gpu_model="A100-40GB")]},
        "workload": {"jobs": [job("big", runtime=600, gpu_memory="60Gi"), job("ok", runtime=600)]},
    }
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(data))
    out = CliRunner().invoke(app, ["validate", str(file)])
    assert out.exit_code == 0
    assert "warning: job(s) big: the pods use gpu_memory 61440 MiB" in out.stderr
