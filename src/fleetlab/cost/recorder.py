"""Record a measured throughput profile by timing real PyTorch training steps on this machine's device.

One step is forward, loss, backward and an optimizer (AdamW) step on a synthetic batch, the way a
data-parallel worker spends its time between all-reduces. A few warm-up steps (allocator, kernel
selection, lazy init) are run and dropped; the timed steps give the median step time, and samples/s is
batch / median. On CUDA the device is synchronised around each step so the clock sees the kernels' work.
torch is an optional dependency (``pip install 'fleetlab[profile]'``); it is imported only here.
"""

from __future__ import annotations

import platform
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fleetlab.model.gpu_specs import gpu_specs
from fleetlab.model.measured_profile import FORMAT, MeasuredProfile, Measurement

INSTALL_HINT = (
    "PyTorch is not installed; install the optional extra with `pip install 'fleetlab[profile]'` "
    "(CPU-only wheel: `pip install torch --index-url https://download.pytorch.org/whl/cpu`)"
)
MODELS = ("mlp", "transformer")


class TorchMissingError(RuntimeError):
    """torch cannot be imported."""


@dataclass(frozen=True)
class BenchConfig:
    """What to train and how long to time it."""

    model: str = "mlp"
    width: int = 512
    layers: int = 4
    #: Tokens per sample (transformer only).
    sequence: int = 64
    batch_sizes: tuple[int, ...] = (32, 128)
    warmup_steps: int = 3
    steps: int = 10
    device: str = "auto"
    seed: int = 0


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise TorchMissingError(INSTALL_HINT) from None
    return torch


def pick_device(torch: Any, wanted: str) -> Any:
    """``cuda`` when asked for or when present under ``auto``, else ``cpu``."""
    if wanted == "auto":
        wanted = "cuda" if torch.cuda.is_available() else "cpu"
    if wanted == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is visible to PyTorch here; use cpu or auto")
    return torch.device(wanted)


def gpu_model_for(device_name: str) -> str | None:
    """The gpu_specs model a CUDA device name stands for ('NVIDIA H200' -> 'H200', 'NVIDIA
    A100-SXM4-80GB' -> 'A100-80GB'); None when no model, or more than one, matches."""
    tokens = re.split(r"[\s\-_]+", device_name.upper())
    found = []
    for name in gpu_specs():
        base, *memory = name.upper().split("-")
        if base in tokens and (not memory or memory[0] in tokens):
            found.append(name)
    return found[0] if len(found) == 1 else None


def build_model(torch: Any, config: BenchConfig) -> Any:
    """The network to train: a ReLU MLP or a stack of transformer encoder blocks."""
    nn = torch.nn
    if config.model == "mlp":
        layers: list[Any] = []
        for _ in range(config.layers):
            layers += [
                nn.Linear(config.width, config.width * 4),
                nn.ReLU(),
                nn.Linear(config.width * 4, config.width),
            ]
        return nn.Sequential(*layers)
    heads = max(1, config.width // 64)
    block = nn.TransformerEncoderLayer(config.width, heads, config.width * 4, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(block, config.layers, enable_nested_tensor=False)


def _inputs(torch: Any, config: BenchConfig, batch: int, device: Any) -> tuple[Any, Any]:
    shape = (batch, config.width) if config.model == "mlp" else (batch, config.sequence, config.width)
    return torch.randn(*shape, device=device), torch.randn(*shape, device=device)


def time_steps(torch: Any, model: Any, config: BenchConfig, batch: int, device: Any) -> list[float]:
    """Seconds of each timed step at ``batch`` (warm-up steps run first and are dropped)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, target = _inputs(torch, config, batch, device)
    sync: Callable[[], None] = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    out: list[float] = []
    for i in range(config.warmup_steps + config.steps):
        sync()
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        sync()
        if i >= config.warmup_steps:
            out.append(time.perf_counter() - started)
    return out


def measure(seconds: Sequence[float], batch: int, warmup: int) -> Measurement:
    """Summary of one batch size's timed steps."""
    median = statistics.median(seconds)
    return Measurement(
        batch_size=batch,
        warmup_steps=warmup,
        steps=len(seconds),
        step_s_mean=statistics.fmean(seconds),
        step_s_median=median,
        step_s_min=min(seconds),
        step_s_max=max(seconds),
        samples_per_s=batch / median,
    )


def record_profile(config: BenchConfig, gpu_model: str | None = None) -> MeasuredProfile:
    """Train ``config``'s model on the chosen device at each batch size and return the profile."""
    if config.model not in MODELS:
        raise ValueError(f"--model {config.model}: allowed: {', '.join(MODELS)}")
    torch = _torch()
    device = pick_device(torch, config.device)
    torch.manual_seed(config.seed)
    model = build_model(torch, config).to(device)
    measurements = [
        measure(time_steps(torch, model, config, batch, device), batch, config.warmup_steps)
        for batch in config.batch_sizes
    ]
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        detected = gpu_model_for(name)
    else:
        name, detected = platform.processor() or platform.machine(), None
    params = sum(p.numel() for p in model.parameters())
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    workload: dict[str, int | float | str] = {
        "kind": config.model,
        "width": config.width,
        "layers": config.layers,
        "parameters": params,
    }
    if config.model == "transformer":
        workload["sequence"] = config.sequence
    return MeasuredProfile(
        format=FORMAT,
        gpu_model=gpu_model or detected,
        device=device.type,
        device_name=name,
        torch_version=str(torch.__version__),
        threads=int(torch.get_num_threads()),
        dtype="float32",
        workload=workload,
        gradient_bytes=float(grad_bytes),
        recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        measurements=measurements,
    )
