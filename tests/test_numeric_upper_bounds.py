"""The upper bounds of docs/input-limits.md for fields that once took any number: each is refused at load,
naming the field, one step past its limit, and accepted at the limit itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleetlab.model.limits import (
    MAX_ARRIVALS_PER_HOUR,
    MAX_PLUGIN_WEIGHT,
    MAX_PROFILE_STEPS,
    MAX_QUANTITY,
    MAX_TOTAL_PODS,
)
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load
from fleetlab.spec.plan_job import load_plan_job
from test_measured_profile import _job, _profile
from test_spec_errors import minimal, spec_error, write


def _with_quota(**quota: Any) -> dict[str, Any]:
    data = minimal()
    resources = [{"name": "nvidia.com/gpu", **quota}]
    group = {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "f", "resources": resources}]}
    data["kueue"] = [
        {"kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}},
        {"kind": "Cohort", "metadata": {"name": "all"}, "spec": {}},
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "a"},
            "spec": {"cohortName": "all", "resourceGroups": [group]},
        },
        {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "a"}, "spec": {"clusterQueue": "a"}},
    ]
    return data


def test_plugin_weight_over_int32_is_refused_naming_the_plugin(tmp_path: Path) -> None:
    data = minimal()
    data["scheduler"] = {"plugin_weights": {"TaintToleration": MAX_PLUGIN_WEIGHT + 1}}
    message = str(spec_error(write(tmp_path, data)))
    assert "plugin_weights" in message and "TaintToleration" in message
    assert "2147483647" in message


def test_plugin_weight_at_the_limit_and_zero_load(tmp_path: Path) -> None:
    data = minimal()
    data["scheduler"] = {"plugin_weights": {"TaintToleration": MAX_PLUGIN_WEIGHT, "ImageLocality": 0}}
    weights = load(str(write(tmp_path, data))).scenario.scheduler.plugin_weights
    assert weights == {"TaintToleration": MAX_PLUGIN_WEIGHT, "ImageLocality": 0}


def test_negative_plugin_weight_is_refused(tmp_path: Path) -> None:
    data = minimal()
    data["scheduler"] = {"plugin_weights": {"ImageLocality": -1}}
    assert "plugin_weights" in str(spec_error(write(tmp_path, data)))


@pytest.mark.parametrize("field", ["nominalQuota", "borrowingLimit", "lendingLimit"])
def test_kueue_quota_past_2_to_53_is_refused_naming_the_field(tmp_path: Path, field: str) -> None:
    quota = {"nominalQuota": MAX_QUANTITY, field: MAX_QUANTITY + 1}
    message = str(spec_error(write(tmp_path, _with_quota(**quota))))
    assert f"resources[0].{field}:" in message
    assert str(MAX_QUANTITY) in message


def test_kueue_quota_at_2_to_53_loads(tmp_path: Path) -> None:
    quota = {"nominalQuota": MAX_QUANTITY, "borrowingLimit": MAX_QUANTITY, "lendingLimit": MAX_QUANTITY}
    kueue = load(str(write(tmp_path, _with_quota(**quota)))).scenario.kueue
    assert kueue is not None


def _generated(rate: float) -> dict[str, Any]:
    data = minimal()
    data["workload"] = {
        "generator": {
            "classes": [
                {
                    "name": "exp",
                    "class": "experiment",
                    "arrivals_per_hour": rate,
                    "count": 2,
                    "duration": {"kind": "exponential", "mean": 60},
                }
            ]
        }
    }
    return data


def test_arrivals_per_hour_past_one_a_millisecond_is_refused(tmp_path: Path) -> None:
    message = str(spec_error(write(tmp_path, _generated(MAX_ARRIVALS_PER_HOUR * 2))))
    assert "arrivals_per_hour" in message
    assert "3600000" in message


def test_arrivals_per_hour_at_the_limit_loads(tmp_path: Path) -> None:
    generator = load(str(write(tmp_path, _generated(MAX_ARRIVALS_PER_HOUR)))).scenario.workload.generator
    assert generator is not None and generator.classes[0].arrivals_per_hour == MAX_ARRIVALS_PER_HOUR


def test_trace_limit_past_total_pods_is_refused(tmp_path: Path) -> None:
    data = minimal()
    data["workload"] = {"trace": {"path": "jobs.csv", "limit": MAX_TOTAL_PODS + 1}}
    message = str(spec_error(write(tmp_path, data)))
    assert "limit" in message and "5000000" in message


def _profile_job(tmp_path: Path, steps: int) -> Path:
    profile = _profile("H100", {8: 80.0})
    profile["measurements"][0]["steps"] = steps
    (tmp_path / "h100.json").write_text(json.dumps(profile), encoding="utf-8")
    return _job(tmp_path, {"measured_file": "h100.json"})


def test_measured_profile_steps_past_the_limit_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_plan_job(_profile_job(tmp_path, MAX_PROFILE_STEPS + 1))
    message = str(info.value)
    assert "steps" in message and "10000000" in message


def test_measured_profile_steps_at_the_limit_load(tmp_path: Path) -> None:
    job = load_plan_job(_profile_job(tmp_path, MAX_PROFILE_STEPS))
    assert job.profile.measured_table == {"H100": {8: 80.0}}
