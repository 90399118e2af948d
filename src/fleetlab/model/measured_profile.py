"""A measured throughput profile: samples/s of one training step at several batch sizes on one device.

``fleetlab plan profile`` records one by timing a real PyTorch step (forward, backward, optimizer step);
a work profile that names the file (``measured_file``) or carries the table inline (``measured_table``)
has its roofline estimate replaced by the measurement on that GPU model (model/perf.py).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, field_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.limits import MAX_PROFILE_STEPS, Float, Int

FORMAT: Final = "fleetlab-measured-profile/v1"


class Measurement(SpecModel):
    """One batch size: the timed steps after warm-up and the throughput they give."""

    batch_size: Int = Field(gt=0)
    warmup_steps: Int = Field(ge=0, le=MAX_PROFILE_STEPS)
    steps: Int = Field(gt=0, le=MAX_PROFILE_STEPS)
    step_s_mean: Float = Field(gt=0)
    step_s_median: Float = Field(gt=0)
    step_s_min: Float = Field(gt=0)
    step_s_max: Float = Field(gt=0)
    #: batch_size / step_s_median.
    samples_per_s: Float = Field(gt=0)


class MeasuredProfile(SpecModel):
    """What the recorder writes (JSON or YAML)."""

    format: Literal["fleetlab-measured-profile/v1"] = FORMAT
    #: The GPU model the figures stand for (a name from gpu_specs), or None for a CPU recording.
    gpu_model: str | None = None
    #: torch device type: cpu or cuda.
    device: str
    device_name: str = ""
    torch_version: str = ""
    threads: Int = Field(default=1, ge=1)
    dtype: str = "float32"
    #: What was trained: kind (mlp, transformer), sizes and parameter count.
    workload: dict[str, int | float | str] = Field(default_factory=dict)
    #: Bytes of gradients one step produces (parameters x element size): what data parallelism all-reduces.
    gradient_bytes: Float = Field(default=0.0, ge=0)
    recorded_at: str = ""
    measurements: list[Measurement] = Field(min_length=1)

    @field_validator("measurements")
    @classmethod
    def _distinct(cls, value: list[Measurement]) -> list[Measurement]:
        sizes = [m.batch_size for m in value]
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"batch sizes {sizes} repeat; record each batch size once")
        return sorted(value, key=lambda m: m.batch_size)

    def table(self) -> dict[int, float]:
        """Per-GPU batch size -> samples/s."""
        return {m.batch_size: m.samples_per_s for m in self.measurements}
