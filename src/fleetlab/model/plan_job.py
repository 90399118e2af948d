"""A job described for planning: how fast it runs on a reference GPU and what must be done.

A planning job is independent of any cluster: a work profile (throughput on one reference GPU, the
fractions of that time bound by tensor compute and by memory bandwidth, gradient bytes exchanged per step)
plus either a training goal (steps) or an inference goal (a throughput to sustain for some hours, with an
optional latency bound). ``fleetlab.model.perf`` turns it into a runtime per GPU model and layout.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.gpu_specs import gpu_specs
from fleetlab.model.limits import Float, Int


def _known(name: str) -> str:
    specs = gpu_specs()
    if name not in specs:
        raise ValueError(f"unknown GPU model {name!r}; models with a profile: {', '.join(sorted(specs))}")
    return name


class WorkProfile(SpecModel):
    """How the work scales: throughput on one reference GPU split into compute-, memory- and other time."""

    reference_gpu: str
    #: Samples (tokens, images, requests) per second on ONE reference GPU.
    reference_throughput: Float = Field(gt=0)
    #: Share of the reference time that scales with dense tensor TFLOPS.
    compute_fraction: Float = Field(ge=0, le=1)
    #: Share that scales with memory bandwidth; the rest (input pipeline, host work) does not scale.
    memory_fraction: Float = Field(ge=0, le=1)
    #: Bytes all-reduced per step across data-parallel GPUs (e.g. parameters x 2 for BF16 gradients).
    gradient_bytes: Float = Field(default=0.0, ge=0)
    #: Share of the compute time that can hide communication (backward pass overlap); 0 = none.
    overlap: Float = Field(default=0.0, ge=0, le=1)
    #: Memory one GPU needs; models with less are not offered.
    memory_gb_per_gpu: Float | None = Field(default=None, gt=0)
    #: Measured samples/s on one GPU of a model; replaces the roofline estimate for that model.
    measured_throughput: dict[str, float] = Field(default_factory=dict)
    #: Measured samples/s on one GPU of a model per per-GPU batch size (a recorded profile, see
    #: model/measured_profile.py); replaces both the estimate and measured_throughput for that model.
    measured_table: dict[str, dict[int, float]] = Field(default_factory=dict)

    @field_validator("reference_gpu")
    @classmethod
    def _reference(cls, value: str) -> str:
        return _known(value)

    @field_validator("measured_throughput")
    @classmethod
    def _measured(cls, value: dict[str, float]) -> dict[str, float]:
        for name, rate in value.items():
            _known(name)
            if not rate > 0:
                raise ValueError(f"measured_throughput[{name}]: {rate} must be > 0 samples/s")
        return value

    @field_validator("measured_table")
    @classmethod
    def _table(cls, value: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
        for name, rates in value.items():
            _known(name)
            if not rates:
                raise ValueError(f"measured_table[{name}]: give at least one batch size: samples/s")
            for batch, rate in rates.items():
                if batch <= 0 or not rate > 0:
                    raise ValueError(
                        f"measured_table[{name}][{batch}]: {rate}; batch sizes and samples/s must be > 0"
                    )
        return value

    @model_validator(mode="after")
    def _fractions(self) -> WorkProfile:
        if self.compute_fraction + self.memory_fraction > 1 + 1e-9:
            raise ValueError(
                f"compute_fraction + memory_fraction = {self.compute_fraction + self.memory_fraction:g}; "
                "they are shares of one step time and must add up to at most 1"
            )
        return self


class TrainingGoal(SpecModel):
    """Train for ``steps`` steps of ``samples_per_step`` samples (the global batch) on ``gpus`` GPUs."""

    steps: Int = Field(gt=0)
    samples_per_step: Float = Field(gt=0)
    gpus: Int = Field(default=8, ge=1)


class JobWork(SpecModel):
    """A scenario job's work for the runtime model: its profile and ``steps`` steps of
    ``samples_per_step`` samples (the global batch over all the job's GPUs)."""

    profile: WorkProfile
    steps: Int = Field(gt=0)
    samples_per_step: Float = Field(gt=0)
    #: Node-to-node Gbit/s for the all-reduce; default: the pool's instance type figure, else 100.
    network_gbps: float | None = Field(default=None, gt=0)
    #: A recorded profile (``fleetlab plan profile``), relative to the scenario file; read into
    #: ``profile.measured_table`` under its GPU model (or ``measured_gpu``) when the scenario is loaded.
    measured_file: str | None = None
    measured_gpu: str | None = None


class InferenceGoal(SpecModel):
    """Serve ``target_throughput`` samples/s for ``hours`` with replicas of ``gpus_per_replica`` GPUs."""

    target_throughput: Float = Field(gt=0)
    hours: Float = Field(gt=0)
    gpus_per_replica: Int = Field(default=1, ge=1)
    #: Latency of one request on the reference GPU, scaled like the step time; with max_latency_ms,
    #: models slower than the bound are not offered.
    latency_ms: Float | None = Field(default=None, gt=0)
    max_latency_ms: Float | None = Field(default=None, gt=0)


class PlanJob(SpecModel):
    """One job to price across GPU models, clouds, regions and capacity types."""

    name: str = "job"
    kind: Literal["training", "inference"] = "training"
    profile: WorkProfile
    training: TrainingGoal | None = None
    inference: InferenceGoal | None = None

    @model_validator(mode="after")
    def _goal(self) -> PlanJob:
        if self.kind == "training" and self.training is None:
            raise ValueError("kind training needs a training section (steps, samples_per_step, gpus)")
        if self.kind == "inference" and self.inference is None:
            raise ValueError("kind inference needs an inference section (target_throughput, hours)")
        return self
