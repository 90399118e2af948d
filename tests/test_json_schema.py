"""JSON Schema for scenario and experiment YAML (``fleetlab schema``): a valid draft 2020-12 schema that
accepts every shipped example and rejects what the loader rejects in the shapes editors can check."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.cli.schema import schema_of
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted([*ROOT.glob("examples/**/*.yaml"), *ROOT.glob("src/fleetlab/scenarios/*.yaml")], key=str)


def _files(kind: str) -> list[Path]:
    out = []
    for path in SCENARIOS:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and ("cluster" in data if kind == "scenario" else "base" in data):
            out.append(path)
    return out


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.Draft202012Validator]:
    out = {}
    for kind in ("scenario", "experiment"):
        schema = schema_of(kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        out[kind] = jsonschema.Draft202012Validator(schema)
    return out


@pytest.mark.parametrize("kind", ["scenario", "experiment"])
def test_every_example_validates(kind: str, validators: dict[str, Any]) -> None:
    files = _files(kind)
    assert len(files) >= (25 if kind == "scenario" else 5)
    for path in files:
        errors = list(validators[kind].iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))))
        assert not errors, f"{path}: {errors[0].message[:200]}"


BASE = yaml.safe_load((ROOT / "examples" / "two-teams" / "baseline.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("cluster", "pools", 0, "memory"), "16GG"),  # not a quantity
        (("cluster", "pools", 0, "boot_time_s"), "5 minutes"),  # not a duration
        (("cluster", "pools", 0, "count"), -1),
        (("cluster", "pools", 0, "colour"), "red"),  # unknown field
        (("nonsense",), 1),
    ],
)
def test_schema_and_loader_both_refuse(
    where: tuple[Any, ...], value: Any, validators: dict[str, Any], tmp_path: Path
) -> None:
    data = copy.deepcopy(BASE)
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    assert list(validators["scenario"].iter_errors(data)), f"schema accepted {where}={value!r}"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecError):
        load(str(path))


def test_quantities_and_durations_are_annotated() -> None:
    pool = schema_of("scenario")["$defs"]["NodePool"]["properties"]
    assert pool["memory"]["x-fleetlab-type"] == "quantity"
    assert pool["cpu"]["x-fleetlab-type"] == "quantity"
    assert pool["boot_time_s"]["x-fleetlab-type"] == "duration"


def test_cli_prints_the_schema_and_refuses_unknown_kinds() -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["schema", "experiment"])
    assert out.exit_code == 0 and json.loads(out.output)["title"] == "fleetlab experiment"
    bad = runner.invoke(app, ["schema", "nonsense"])
    assert bad.exit_code == 2 and "choose one of: scenario, experiment" in bad.output
