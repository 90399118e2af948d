"""``fleetlab plan profile`` (also ``plan record-profile``): time real PyTorch training steps and write a
measured throughput profile that work profiles can name as ``measured_file``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from fleetlab.cli.common import fail, out_console, out_path


def write_profile_file(data: dict[str, object], out: Path) -> None:
    """Write JSON (or YAML for .yaml/.yml) through a temporary file and a rename."""
    import yaml

    text = (
        yaml.safe_dump(data, sort_keys=False)
        if out.suffix in (".yaml", ".yml")
        else json.dumps(data, indent=2) + "\n"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.tmp-", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def profile_cmd(
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="Profile file to write (.json, or .yaml/.yml).")
    ] = Path("measured-profile.json"),
    batch_size: Annotated[
        list[int] | None, typer.Option("--batch-size", min=1, help="Per-device batch size; repeat it.")
    ] = None,
    model: Annotated[str, typer.Option("--model", help="mlp or transformer.")] = "mlp",
    width: Annotated[int, typer.Option("--width", min=8, help="Hidden size.")] = 512,
    layers: Annotated[int, typer.Option("--layers", min=1, help="Blocks.")] = 4,
    sequence: Annotated[int, typer.Option("--sequence", min=1, help="Tokens per sample (transformer).")] = 64,
    warmup: Annotated[int, typer.Option("--warmup", min=0, help="Untimed steps per batch size.")] = 3,
    steps: Annotated[int, typer.Option("--steps", min=1, help="Timed steps per batch size.")] = 10,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
    gpu_model: Annotated[
        str | None, typer.Option("--gpu-model", help="GPU model the figures stand for (default: detected).")
    ] = None,
) -> None:
    """Time forward+backward+optimizer steps of a small model on this machine; write samples/s per batch."""
    from rich.table import Table

    from fleetlab.cost.recorder import BenchConfig, TorchMissingError, record_profile
    from fleetlab.model.gpu_specs import gpu_specs

    if device not in ("auto", "cpu", "cuda"):
        raise fail(f"--device {device}: allowed: auto, cpu, cuda")
    if gpu_model is not None and gpu_model not in gpu_specs():
        raise fail(f"--gpu-model {gpu_model}: unknown; models with a profile: {', '.join(gpu_specs())}")
    if out.exists() and out.is_dir():
        raise fail(f"--out {out}: is a directory; give a file path such as profile.json")
    sizes = tuple(dict.fromkeys(batch_size or [32, 128]))
    config = BenchConfig(model, width, layers, sequence, sizes, warmup, steps, device)
    try:
        profile = record_profile(config, gpu_model)
    except TorchMissingError as exc:
        raise fail(str(exc)) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        write_profile_file(profile.model_dump(mode="json"), out)
    except OSError as exc:
        raise fail(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    table = Table(
        title=f"{profile.workload.get('kind')} ({profile.workload.get('parameters'):,} parameters) on "
        f"{profile.device} {profile.device_name} ({profile.threads} threads)",
        title_justify="left",
    )
    for name in ("batch", "median step", "min", "max", "samples/s"):
        table.add_column(name, justify="right")
    for m in profile.measurements:
        table.add_row(
            str(m.batch_size),
            f"{m.step_s_median * 1000:.2f} ms",
            f"{m.step_s_min * 1000:.2f} ms",
            f"{m.step_s_max * 1000:.2f} ms",
            f"{m.samples_per_s:,.1f}",
        )
    out_console.print(table)
    standing = profile.gpu_model or "no GPU model (set --gpu-model, or measured_gpu where it is used)"
    out_console.print(f"profile for {standing} written to {out}", highlight=False, markup=False)
