"""JSON Schema of the YAML files fleetlab reads, for editors (yaml-language-server, VS Code, JetBrains).

Generated from the pydantic models, then adjusted to what a *file* may say where the loader is more
lenient than the model's types: quantities and durations as text (annotated ``x-fleetlab-type``),
``requests`` values as quantities, a runtime given as one duration, Kueue sections as lists of Kueue API
objects, pool shapes a price catalog fills in, and snake_case field names next to their camelCase
aliases (the models accept both). The loader stays the judge: the schema helps, it does not validate
everything (cross-field rules, catalogs, trace files).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from fleetlab.model.scenario import Scenario
from fleetlab.model.units import DURATION_PATTERN, QUANTITY_PATTERN

DIALECT = "https://json-schema.org/draft/2020-12/schema"

QUANTITY: dict[str, Any] = {
    "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": QUANTITY_PATTERN}],
    "description": "a number or a Kubernetes quantity such as '8', '500m' or '16Gi'",
    "x-fleetlab-type": "quantity",
}
DURATION: dict[str, Any] = {
    "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": DURATION_PATTERN}],
    "description": "a duration: seconds, or units ms, s, m, h, d as in '1h30m'",
    "x-fleetlab-type": "duration",
}
KUBE_OBJECTS: dict[str, Any] = {
    "type": "array",
    "description": "Kueue API objects as in kubectl YAML (ResourceFlavor, Cohort, ClusterQueue, LocalQueue, "
    "WorkloadPriorityClass)",
    "items": {
        "type": "object",
        "required": ["kind"],
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}},
    },
}


def _accept_field_names(by_alias: dict[str, Any], by_name: dict[str, Any]) -> None:
    """Models accept a field's name as well as its alias: allow both in every definition."""
    for name, definition in by_alias.get("$defs", {}).items():
        other = by_name.get("$defs", {}).get(name, {})
        props = definition.get("properties")
        if props is None:
            continue
        for field, sub in other.get("properties", {}).items():
            props.setdefault(field, sub)
        # A required field may be given under either name.
        required, by_field = definition.get("required", []), other.get("required", [])
        if len(required) == len(by_field) and required != by_field:
            either = [
                {"anyOf": [{"required": [a]}, {"required": [n]}]}
                for a, n in zip(required, by_field, strict=True)
                if a != n
            ]
            definition["required"] = [a for a, n in zip(required, by_field, strict=True) if a == n]
            definition.setdefault("allOf", []).extend(either)


def editor_schema(model: type[BaseModel], title: str) -> dict[str, Any]:
    """The model's JSON Schema with aliases and field names both allowed, titled for a file kind."""
    schema = model.model_json_schema(by_alias=True)
    _accept_field_names(schema, model.model_json_schema(by_alias=False))
    for field, sub in model.model_json_schema(by_alias=False).get("properties", {}).items():
        schema.setdefault("properties", {}).setdefault(field, sub)
    return {"$schema": DIALECT, **schema, "title": title}


def _job_fixes(defs: dict[str, Any]) -> None:
    job = defs["Job"]["properties"]
    job["requests"] = {
        "type": "object",
        "description": "requests per pod: resource name -> quantity (cpu, memory, nvidia.com/gpu, ...)",
        "additionalProperties": QUANTITY,
    }
    job["runtime"] = {"anyOf": [DURATION, {"$ref": "#/$defs/Runtime"}], "description": "compute time"}


def scenario_schema() -> dict[str, Any]:
    """JSON Schema of a scenario YAML file."""
    schema = editor_schema(Scenario, "fleetlab scenario")
    defs = schema["$defs"]
    _job_fixes(defs)
    pool = defs["NodePool"]
    # With instance_type and a catalog, cpu and memory (and the GPUs) come from the catalog.
    pool["required"] = [r for r in pool.get("required", []) if r not in ("cpu", "memory")]
    for key in ("kueue",):
        schema["properties"][key] = {"anyOf": [KUBE_OBJECTS, copy.deepcopy(schema["properties"][key])]}
    return schema
