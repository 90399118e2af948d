"""``fleetlab cost profile`` / ``plan record-profile``: real PyTorch training steps timed on this machine's
device (CPU here, CUDA where present), written as a measured profile the perf model reads. Without torch
the command says how to install it and exits 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cost.recorder import gpu_model_for
from fleetlab.spec.measured_profile import read_measured_profile
from fleetlab.spec.plan_job import load_plan_job

runner = CliRunner()
TINY = ["--width", "32", "--layers", "1", "--warmup", "1", "--steps", "3", "--device", "cpu"]


def test_records_a_tiny_mlp_on_cpu_and_the_perf_model_reads_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "p.json"
    args = ["cost", "profile", "--out", str(out), "--batch-size", "8", "--batch-size", "64", *TINY]
    result = runner.invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    profile = read_measured_profile(out)
    assert profile.device == "cpu" and profile.gpu_model is None
    # one block: Linear(32, 128) + Linear(128, 32) = 32*128 + 128 + 128*32 + 32 parameters, float32 gradients
    assert profile.workload["parameters"] == 8352 and profile.gradient_bytes == 8352 * 4
    assert [m.batch_size for m in profile.measurements] == [8, 64]
    for m in profile.measurements:
        assert m.steps == 3 and m.warmup_steps == 1
        assert m.step_s_min <= m.step_s_median <= m.step_s_max
        assert m.samples_per_s == pytest.approx(m.batch_size / m.step_s_median)
    job = {
        "name": "mlp",
        "profile": {"reference_gpu": "L4", "reference_throughput": 1.0, "compute_fraction": 0.5,
                    "memory_fraction": 0.2, "measured_file": "p.json", "measured_gpu": "L4"},
        "training": {"steps": 10, "samples_per_step": 64, "gpus": 1},
    }  # fmt: skip
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    loaded = load_plan_job(tmp_path / "job.yaml")
    assert loaded.profile.measured_table["L4"][64] == profile.measurements[1].samples_per_s


def test_plan_record_profile_alias_writes_yaml_for_a_transformer_block(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "p.yaml"
    args = ["plan", "record-profile", "--out", str(out), "--model", "transformer", "--sequence", "8",
            "--batch-size", "4", "--gpu-model", "H100", *TINY]  # fmt: skip
    result = runner.invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(out.read_text())
    assert data["gpu_model"] == "H100" and data["workload"]["kind"] == "transformer"
    assert data["workload"]["sequence"] == 8 and data["measurements"][0]["samples_per_s"] > 0
    assert "profile for H100 written to" in result.stdout


def test_without_torch_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` sees when it is not installed
    result = runner.invoke(cli.app, ["cost", "profile", "--out", str(tmp_path / "p.json")])
    assert result.exit_code == 2
    assert "pip install 'fleetlab[profile]'" in result.output
    assert "download.pytorch.org/whl/cpu" in result.output
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "tpu"], "--device tpu: allowed: auto, cpu, cuda"),
        (["--gpu-model", "X9"], "--gpu-model X9: unknown"),
        (["--model", "cnn"], "--model cnn: allowed: mlp, transformer"),
    ],
)
def test_bad_flags_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    if args[0] == "--model":
        pytest.importorskip("torch")
    result = runner.invoke(cli.app, ["cost", "profile", "--out", str(tmp_path / "p.json"), *args])
    assert result.exit_code == 2 and message in result.output, result.output


def test_cuda_device_names_map_to_gpu_models() -> None:
    assert gpu_model_for("NVIDIA H200") == "H200"
    assert gpu_model_for("NVIDIA A100-SXM4-80GB") == "A100-80GB"
    assert gpu_model_for("NVIDIA H100 80GB HBM3") == "H100"
    assert gpu_model_for("NVIDIA A100-PCIE") is None  # 40 or 80 GB: not guessed
    assert gpu_model_for("Quadro RTX 6000") is None


def test_records_on_cuda_when_present(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    out = tmp_path / "p.json"
    result = runner.invoke(
        cli.app,
        ["cost", "profile", "--out", str(out), "--device", "cuda", "--batch-size", "64", "--steps", "3"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["device"] == "cuda" and data["device_name"]
