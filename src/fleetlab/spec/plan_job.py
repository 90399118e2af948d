"""Read a planning job (YAML) into a PlanJob; errors name the file, the field and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleetlab.model.plan_job import PlanJob
from fleetlab.spec.bounded import load_yaml, read_text_file
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.measured_profile import resolve_measured_file


def plan_job_from_data(label: str, data: Any) -> PlanJob:
    """Validate an already parsed mapping."""
    if not isinstance(data, dict):
        raise SpecError(
            label, ["the top level must be a mapping with name, kind, profile and training/inference"]
        )
    try:
        return PlanJob.model_validate(data)
    except ValidationError as exc:
        raise SpecError(label, problems_from_validation(exc, docs=lambda _: "docs/planning.md")) from None


def load_plan_job(path: str | Path) -> PlanJob:
    """A planning job file."""
    file = Path(path)
    text = read_text_file(file, "job file not found (give a YAML file with profile and training/inference)")
    data = load_yaml(str(file), text)
    if isinstance(data, dict) and isinstance(data.get("profile"), dict):
        data = {**data, "profile": resolve_measured_file(data["profile"], file.parent, str(file))}
    return plan_job_from_data(str(file), data)
