"""Bad scenario files get one paragraph naming the file, the place inside it, the bad value and what is allowed.

Every test writes a small scenario into ``tmp_path`` and checks the SpecError that ``load`` raises.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetlab.model.gpus import known_gpu_models
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load


def minimal() -> dict[str, Any]:
    """The smallest valid scenario: one 8×H100 pool and one inline job."""
    return {
        "name": "mini",
        "seed": 1,
        "cluster": {
            "pools": [
                {
                    "name": "gpu",
                    "count": 2,
                    "gpu_model": "H100",
                    "gpus_per_node": 8,
                    "cpu": "64",
                    "memory": "512Gi",
                }
            ]
        },
        "workload": {
            "jobs": [
                {
                    "id": "j1",
                    "submit_s": 0,
                    "class": "training",
                    "pods": 1,
                    "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
                    "runtime": "1h30m",
                }
            ]
        },
    }


def write(tmp_path: Path, data: Any, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_text(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def spec_error(path: Path | str) -> SpecError:
    """The SpecError loading ``path`` raises, after checking it is one paragraph that starts with the file."""
    with pytest.raises(SpecError) as info:
        load(str(path))
    err = info.value
    message = str(err)
    assert err.source == str(path)
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message, message
    assert err.problems, message
    return err


def job0(data: dict[str, Any]) -> dict[str, Any]:
    return data["workload"]["jobs"][0]


def pool0(data: dict[str, Any]) -> dict[str, Any]:
    return data["cluster"]["pools"][0]


# --- valid input -----------------------------------------------------------------------------------------


def test_minimal_scenario_loads(tmp_path: Path) -> None:
    resolved = load(str(write(tmp_path, minimal())))
    assert resolved.scenario.name == "mini"
    assert resolved.scenario.cluster.node_count == 2
    assert [job.id for job in resolved.jobs] == ["j1"]
    job = resolved.jobs[0]
    assert job.gpus_per_pod == 1
    assert job.requests["cpu"] == 1000
    assert job.requests["memory"] == 1024**3
    assert resolved.warnings == ()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h30m", 5400.0), ("90m", 5400.0), ("1.5h", 5400.0), ("5400s", 5400.0), ("2d", 172800.0), (45, 45.0)],
)
def test_runtime_durations_parse_to_seconds(tmp_path: Path, text: Any, seconds: float) -> None:
    data = minimal()
    job0(data)["runtime"] = text
    job = load(str(write(tmp_path, data))).jobs[0]
    assert job.runtime.default == seconds


def test_runtime_by_gpu_durations_parse(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["runtime"] = {"default": "1h30m", "by_gpu": {"H100": "45m"}}
    job = load(str(write(tmp_path, data))).jobs[0]
    assert job.runtime.on("H100") == 2700.0
    assert job.runtime.on("A100-80GB") == 5400.0


# --- missing and out-of-range values ------------------------------------------------------------------------


def test_missing_required_field(tmp_path: Path) -> None:
    data = minimal()
    del pool0(data)["cpu"]
    message = str(spec_error(write(tmp_path, data)))
    assert "cluster.pools[0].cpu: required field is missing" in message


def test_missing_top_level_section(tmp_path: Path) -> None:
    data = minimal()
    del data["workload"]
    message = str(spec_error(write(tmp_path, data)))
    assert "workload: required field is missing" in message


def test_negative_node_count(tmp_path: Path) -> None:
    data = minimal()
    pool0(data)["count"] = -1
    message = str(spec_error(write(tmp_path, data)))
    assert "cluster.pools[0].count" in message
    assert "greater than or equal to 0" in message
    assert "(got -1)" in message


def test_unknown_gpu_model_lists_known_models(tmp_path: Path) -> None:
    data = minimal()
    second = copy.deepcopy(pool0(data))
    second.update(name="gpu-b", gpu_model="Z100")
    data["cluster"]["pools"].append(second)
    err = spec_error(write(tmp_path, data))
    message = str(err)
    assert "cluster.pools[1].gpu_model" in message
    assert "'Z100'" in message
    assert "known models:" in message
    for model in known_gpu_models():
        assert model in message
    assert len(err.problems) == 1


def test_single_bad_pool_reports_only_its_own_problem(tmp_path: Path) -> None:
    # Regression: pydantic also reported "cluster.pools: Tuple should have at least 1 item ..., not 0".
    data = minimal()
    pool0(data)["gpu_model"] = "Z100"
    err = spec_error(write(tmp_path, data))
    assert "at least 1 item" not in str(err)
    assert len(err.problems) == 1


# --- quantities ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("resource", "text"), [("memory", "16GG"), ("cpu", "1.2.3"), ("memory", "16GB")])
def test_malformed_request_quantity(tmp_path: Path, resource: str, text: str) -> None:
    data = minimal()
    job0(data)["requests"][resource] = text
    message = str(spec_error(write(tmp_path, data)))
    assert "workload.jobs[0].requests" in message
    assert re.search(rf"workload\.jobs\[0\]\.requests(\.|: ){resource}: ", message), (
        message
    )  # names the resource
    assert f'invalid quantity "{text}"' in message
    assert "Ki Mi Gi" in message  # says what is allowed


def test_byte_unit_gets_a_did_you_mean(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["requests"]["memory"] = "16GB"
    message = str(spec_error(write(tmp_path, data)))
    assert 'did you mean "G"?' in message


def test_malformed_pool_quantity(tmp_path: Path) -> None:
    data = minimal()
    pool0(data)["memory"] = "16GG"
    message = str(spec_error(write(tmp_path, data)))
    assert "cluster.pools[0].memory" in message
    assert '"16GG"' in message
    assert 'unknown suffix "GG"' in message


@pytest.mark.parametrize("amount", [0.5, "0.5", "1500m"])
def test_fractional_gpu_request(tmp_path: Path, amount: Any) -> None:
    data = minimal()
    job0(data)["requests"]["nvidia.com/gpu"] = amount
    message = str(spec_error(write(tmp_path, data)))
    assert "workload.jobs[0].requests" in message
    assert "nvidia.com/gpu" in message
    assert "must be an integer" in message
    assert str(amount) in message


def test_whole_gpu_request_in_milli_units_is_fine(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["requests"]["nvidia.com/gpu"] = "2000m"
    assert load(str(write(tmp_path, data))).jobs[0].gpus_per_pod == 2


# --- jobs ---------------------------------------------------------------------------------------------------


def test_duplicate_job_id(tmp_path: Path) -> None:
    data = minimal()
    data["workload"]["jobs"].append(copy.deepcopy(job0(data)))
    err = spec_error(write(tmp_path, data))
    message = str(err)
    assert "'j1'" in message
    assert "used twice" in message
    assert "unique" in message


def test_invalid_duration(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["runtime"] = "1h30x"
    message = str(spec_error(write(tmp_path, data)))
    assert "workload.jobs[0].runtime" in message
    assert "'1h30x'" in message
    assert "1h30m" in message  # the example of what is allowed


def test_invalid_toleration_exists_with_value(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["tolerations"] = [{"key": "gpu", "operator": "Exists", "value": "yes"}]
    message = str(spec_error(write(tmp_path, data)))
    assert "workload.jobs[0].tolerations[0]" in message
    assert "operator Exists must not have a value" in message
    assert "'value': 'yes'" in message


# --- files and YAML -----------------------------------------------------------------------------------------


def test_file_does_not_exist(tmp_path: Path) -> None:
    message = str(spec_error(tmp_path / "nope.yaml"))
    assert "file not found" in message
    assert "default" in message  # names the built-in scenarios one could use instead


def test_directory_instead_of_file(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    message = str(spec_error(folder))
    assert "is a directory" in message


def test_yaml_syntax_error_has_line_number(tmp_path: Path) -> None:
    text = "name: broken\ncluster:\n  pools: [\n    - a\n  b: c\n"
    message = str(spec_error(write_text(tmp_path, text)))
    assert "invalid YAML" in message
    assert "line 4" in message


@pytest.mark.parametrize("text", ["- cluster\n- workload\n", "just a string\n", "42\n", ""])
def test_top_level_not_a_mapping(tmp_path: Path, text: str) -> None:
    message = str(spec_error(write_text(tmp_path, text)))
    assert "top level must be a mapping" in message


# --- unknown fields and scheduler section -------------------------------------------------------------------


def test_unknown_field_in_pool(tmp_path: Path) -> None:
    data = minimal()
    pool0(data)["gpus_per_nod"] = 8
    message = str(spec_error(write(tmp_path, data)))
    assert "cluster.pools[0].gpus_per_nod" in message
    assert "unknown field" in message


def test_requested_to_capacity_ratio_without_shape(tmp_path: Path) -> None:
    data = minimal()
    data["scheduler"] = {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}
    message = str(spec_error(write(tmp_path, data)))
    assert "scheduler.scoringStrategy" in message
    assert "requestedToCapacityRatio.shape" in message


def test_requested_to_capacity_ratio_with_shape_loads(tmp_path: Path) -> None:
    data = minimal()
    data["scheduler"] = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        }
    }
    strategy = load(str(write(tmp_path, data))).scenario.scheduler.scoring_strategy
    assert strategy is not None and strategy.type == "RequestedToCapacityRatio"


def test_plugin_weight_for_unknown_plugin(tmp_path: Path) -> None:
    data = minimal()
    data["scheduler"] = {"plugin_weights": {"NodeResourcesFitt": 2}}
    message = str(spec_error(write(tmp_path, data)))
    assert "scheduler" in message
    assert "unknown score plugin 'NodeResourcesFitt'" in message
    assert "allowed:" in message
    assert "NodeResourcesFit," in message
    assert "TaintToleration" in message


def test_workload_with_jobs_and_generator(tmp_path: Path) -> None:
    data = minimal()
    data["workload"]["generator"] = {
        "classes": [
            {
                "name": "exp",
                "class": "experiment",
                "arrivals_per_hour": 10,
                "count": 3,
                "duration": {"kind": "fixed", "median": "10m"},
            }
        ]
    }
    message = str(spec_error(write(tmp_path, data)))
    assert "workload:" in message
    assert "exactly one of jobs, trace or generator" in message
    assert "jobs, generator" in message


def test_workload_with_nothing(tmp_path: Path) -> None:
    data = minimal()
    data["workload"] = {}
    message = str(spec_error(write(tmp_path, data)))
    assert "exactly one of jobs, trace or generator" in message
    assert "got none" in message
