"""Read a measured throughput profile (``fleetlab plan profile`` output, JSON or YAML) and fold the files a
work profile names (``measured_file``) into its inline ``measured_table``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleetlab.model.gpu_specs import gpu_specs
from fleetlab.model.job import Job
from fleetlab.model.job_table import JobTable
from fleetlab.model.measured_profile import MeasuredProfile
from fleetlab.model.plan_job import WorkProfile
from fleetlab.spec.bounded import load_json, load_yaml, read_text_file
from fleetlab.spec.errors import SpecError, problems_from_validation

RECORD_HINT = "record one with `fleetlab plan profile --out FILE`"


def read_measured_profile(path: Path) -> MeasuredProfile:
    """One recorded profile file, validated."""
    text = read_text_file(path, f"measured profile not found; {RECORD_HINT}")
    data = load_json(str(path), text) if path.suffix == ".json" else load_yaml(str(path), text)
    if not isinstance(data, dict):
        raise SpecError(str(path), [f"the top level must be a mapping; {RECORD_HINT}"])
    try:
        return MeasuredProfile.model_validate(data)
    except ValidationError as exc:
        raise SpecError(str(path), problems_from_validation(exc)) from None


def resolve_measured_file(profile: dict[str, Any], base: Path | None, where: str) -> dict[str, Any]:
    """``profile`` (a work profile mapping) with its ``measured_file`` read into ``measured_table``
    under the file's GPU model; the path is relative to ``base`` (the file naming it)."""
    name = profile.get("measured_file")
    if name is None:
        return profile
    if not isinstance(name, str):
        raise SpecError(where, [f"measured_file: expected a file path, got {name!r}"])
    path = Path(name) if base is None or Path(name).is_absolute() else base / name
    measured = read_measured_profile(path)
    gpu = profile.get("measured_gpu") or measured.gpu_model
    if gpu is None:
        raise SpecError(
            str(path),
            [
                f"recorded on {measured.device} ({measured.device_name or 'no GPU'}), not on a GPU model; "
                "set measured_gpu next to measured_file to say which GPU model it stands for, "
                f"one of: {', '.join(gpu_specs())}"
            ],
        )
    table = dict(profile.get("measured_table") or {})
    table[gpu] = {**measured.table(), **(table.get(gpu) or {})}
    out = {k: v for k, v in profile.items() if k not in ("measured_file", "measured_gpu")}
    out["measured_table"] = table
    if "gradient_bytes" not in out and measured.gradient_bytes:
        out["gradient_bytes"] = measured.gradient_bytes
    return out


def resolve_job_work_files(jobs: JobTable, base: Path | None, source: str) -> JobTable:
    """Jobs whose ``work.measured_file`` is read into their profile's measured table (others as given);
    ``work`` is a template field, so each template's file is read once."""
    return jobs.map_templates(lambda job: _job_work_file(job, base, source))


def _job_work_file(job: Job, base: Path | None, source: str) -> Job:
    work = job.work
    if work is None or work.measured_file is None:
        return job
    data = work.profile.model_dump(exclude_unset=True)
    data.update(measured_file=work.measured_file, measured_gpu=work.measured_gpu)
    resolved = resolve_measured_file(data, base, f"{source}: job {job.id}")
    try:
        profile = WorkProfile.model_validate(resolved)
    except ValidationError as exc:
        raise SpecError(f"{source}: job {job.id}", problems_from_validation(exc)) from None
    new_work = work.model_copy(update={"profile": profile, "measured_file": None, "measured_gpu": None})
    return job.model_copy(update={"work": new_work})
