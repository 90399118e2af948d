"""``fleetlab schema scenario|experiment``: the JSON Schema of a YAML file kind, for editors."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from fleetlab.cli.common import fail

KINDS = ("scenario", "experiment")


def schema_of(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind`` (one of KINDS)."""
    from fleetlab.spec.json_schema import editor_schema, scenario_schema

    if kind == "scenario":
        return scenario_schema()
    from fleetlab.experiment.plan import ExperimentSpec

    return editor_schema(ExperimentSpec, "fleetlab experiment")


def schema_cmd(
    kind: Annotated[str, typer.Argument(help="scenario or experiment.")],
) -> None:
    """Print the JSON Schema of scenario or experiment YAML files (save it and point your editor at it)."""

    if kind not in KINDS:
        raise fail(f"unknown file kind {kind!r}; choose one of: {', '.join(KINDS)}")
    typer.echo(json.dumps(schema_of(kind), indent=2, sort_keys=True))
