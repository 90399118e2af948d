"""Measured throughput tables override the roofline model: a recorded profile (``fleetlab cost profile``
output) named by a work profile replaces the estimate on its GPU model, step time interpolated linearly
in the per-GPU batch between measured points; bad files are named with what was wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.model.perf import Layout, single_gpu_throughput, step_time, table_throughput, time_factor
from fleetlab.model.plan_job import WorkProfile
from fleetlab.spec.errors import SpecError
from fleetlab.spec.plan_job import load_plan_job

runner = CliRunner()


def _profile(gpu_model: str | None, points: dict[int, float], device: str = "cuda") -> dict[str, Any]:
    return {
        "format": "fleetlab-measured-profile/v1",
        "gpu_model": gpu_model,
        "device": device,
        "device_name": "NVIDIA H100 80GB HBM3" if device == "cuda" else "x86_64",
        "gradient_bytes": 2e9,
        "measurements": [
            {"batch_size": b, "warmup_steps": 2, "steps": 5, "step_s_mean": b / r, "step_s_median": b / r,
             "step_s_min": b / r, "step_s_max": b / r, "samples_per_s": r}
            for b, r in points.items()
        ],
    }  # fmt: skip


def _job(tmp_path: Path, profile_extra: dict[str, Any], samples_per_step: float = 256) -> Path:
    job = {
        "name": "measured",
        "kind": "training",
        "profile": {
            "reference_gpu": "A100-80GB",
            "reference_throughput": 100.0,
            "compute_fraction": 0.7,
            "memory_fraction": 0.2,
            **profile_extra,
        },
        "training": {"steps": 1000, "samples_per_step": samples_per_step, "gpus": 8},
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def test_table_throughput_interpolates_step_time_and_clamps() -> None:
    table = {16: 800.0, 64: 1600.0}
    assert table_throughput(table, 16) == 800.0 and table_throughput(table, 64) == 1600.0
    # step time 0.02 s at 16 and 0.04 s at 64: at 40 the step takes 0.03 s
    assert table_throughput(table, 40) == pytest.approx(40 / 0.03)
    assert table_throughput(table, 4) == 800.0 and table_throughput(table, 512) == 1600.0
    assert table_throughput(table, None) == 1600.0


def test_measured_file_overrides_the_model_on_its_gpu_only(tmp_path: Path) -> None:
    (tmp_path / "h100.json").write_text(json.dumps(_profile("H100", {16: 800.0, 64: 1600.0})))
    job = load_plan_job(_job(tmp_path, {"measured_file": "h100.json"}))
    profile = job.profile
    assert profile.measured_table == {"H100": {16: 800.0, 64: 1600.0}}
    assert profile.gradient_bytes == 2e9  # taken from the recording when the job gives none
    # 256 samples on 8 GPUs: 32 per GPU -> step time 0.02 + 0.02 * 16/48
    one_node = step_time(profile, 256, Layout("H100", 1, 8, 100.0))
    assert one_node.compute_s == pytest.approx(0.02 + 0.02 * 16 / 48)
    # other models keep the roofline estimate from the reference GPU
    assert single_gpu_throughput(profile, "H200") == pytest.approx(100.0 / time_factor(profile, "H200"))


def test_plan_gpus_uses_the_measured_table(tmp_path: Path) -> None:
    (tmp_path / "h100.yaml").write_text(yaml.safe_dump(_profile("H100", {32: 10_000.0})))
    path = _job(tmp_path, {"measured_file": "h100.yaml", "gradient_bytes": 0})
    result = runner.invoke(cli.app, ["cost", "gpus", str(path), "--json", "--gpu", "H100", "--cloud", "aws"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert rows and all(r["hours"] == pytest.approx(1000 * 256 / (8 * 10_000.0) / 3600) for r in rows)


def test_cpu_recording_needs_measured_gpu(tmp_path: Path) -> None:
    (tmp_path / "cpu.json").write_text(json.dumps(_profile(None, {8: 50.0}, device="cpu")))
    with pytest.raises(SpecError, match="set measured_gpu next to measured_file"):
        load_plan_job(_job(tmp_path, {"measured_file": "cpu.json"}))
    job = load_plan_job(_job(tmp_path, {"measured_file": "cpu.json", "measured_gpu": "L4"}))
    assert job.profile.measured_table == {"L4": {8: 50.0}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "measured profile not found; record one with `fleetlab plan profile --out FILE`"),
        ("[1, 2]", "the top level must be a mapping"),
        ('{"device": "cpu", "measurements": []}', "measurements"),
        (json.dumps({**_profile("H100", {8: 1.0}), "format": "other"}), "format"),
    ],
)
def test_bad_measured_files_are_named(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "p.json").write_text(content)
    with pytest.raises(SpecError) as info:
        load_plan_job(_job(tmp_path, {"measured_file": "p.json"}))
    assert "p.json" in str(info.value) and message in str(info.value)


def test_inline_table_is_validated() -> None:
    base = {
        "reference_gpu": "H100",
        "reference_throughput": 1,
        "compute_fraction": 0.5,
        "memory_fraction": 0.2,
    }
    with pytest.raises(ValueError, match="unknown GPU model 'X1'"):
        WorkProfile.model_validate({**base, "measured_table": {"X1": {8: 1.0}}})
    with pytest.raises(ValueError, match="must be > 0"):
        WorkProfile.model_validate({**base, "measured_table": {"H100": {8: 0.0}}})
