"""``fleetlab export`` for time-sliced and MPS pools: the device plugin config gains ``sharing.timeSlicing``
(or ``sharing.mps``) in the
NVIDIA k8s-device-plugin's config file format (``api/config/v1``: Config, Sharing, ReplicatedResources,
ReplicatedResource), the ConfigMap passes ``kubernetes-validate``, and what the plugin would advertise from
it equals what fleetlab's pool advertises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from builders import pool
from fleetlab.export.scheduler_config import kube_scheduler_configuration
from fleetlab.export.write import export_scenario
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduler import SchedulerConfig

#: Field names per type of the device plugin's v1 config (k8s-device-plugin api/config/v1 json tags).
FIELDS: dict[str, set[str]] = {
    "Config": {"version", "flags", "resources", "sharing", "imex"},
    "Flags": {"migStrategy", "failOnInitError", "mpsRoot", "nvidiaDriverRoot", "gdsEnabled", "plugin", "gfd"},
    "Sharing": {"timeSlicing", "mps"},
    "ReplicatedResources": {"renameByDefault", "failRequestsGreaterThanOne", "resources"},
    "ReplicatedResource": {"name", "rename", "devices", "replicas"},
}


def _check_fields(config: dict[str, Any]) -> None:
    assert set(config) <= FIELDS["Config"]
    assert set(config["flags"]) <= FIELDS["Flags"]
    if "sharing" in config:
        assert set(config["sharing"]) <= FIELDS["Sharing"]
        (sliced,) = config["sharing"].values()
        assert set(sliced) <= FIELDS["ReplicatedResources"]
        for resource in sliced["resources"]:
            assert set(resource) <= FIELDS["ReplicatedResource"]
            assert isinstance(resource["replicas"], int) and resource["replicas"] >= 1


def _advertised(config: dict[str, Any], gpus: int) -> dict[str, int]:
    """What the plugin advertises per node from a config: each listed resource × replicas, renamed
    ``<name>.shared`` under renameByDefault (or to ``rename``); plain GPUs otherwise."""
    sharing = config.get("sharing", {})
    sliced = sharing.get("timeSlicing") or sharing.get("mps")
    if sliced is None:
        return {"nvidia.com/gpu": gpus}
    out: dict[str, int] = {}
    for resource in sliced["resources"]:
        name = resource.get("rename") or (
            f"{resource['name']}.shared" if sliced.get("renameByDefault") else resource["name"]
        )
        out[name] = gpus * resource["replicas"]
    return out


def test_time_sliced_pools_export_their_sharing_config(tmp_path: Path) -> None:
    pools = [
        pool("plain", count=1, gpus=8),
        pool("sliced", count=2, gpus=4, time_slicing={"replicas": 4}),
        pool(
            "renamed",
            count=1,
            gpus=2,
            time_slicing={"replicas": 3, "renameByDefault": True, "failRequestsGreaterThanOne": True},
        ),
        pool("mps", count=1, gpus=2, mps={"replicas": 4}),
    ]
    scenario = Scenario.model_validate({"cluster": {"pools": pools}, "workload": {"jobs": []}})
    export_scenario(scenario, tmp_path / "out")
    (doc,) = [
        d for d in yaml.safe_load_all((tmp_path / "out" / "nvidia-device-plugin-config.yaml").read_text())
    ]
    version = scenario.scheduler.kubernetes_version
    assert kubernetes_validate.validate(doc, version, strict=True) == version
    configs = {name: yaml.safe_load(text) for name, text in doc["data"].items()}
    for config in configs.values():
        _check_fields(config)
    assert "sharing" not in configs["plain"]
    assert configs["sliced"]["sharing"]["timeSlicing"] == {
        "renameByDefault": False,
        "failRequestsGreaterThanOne": False,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
    }
    assert configs["renamed"]["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
    # MPS (device plugin v0.15+): no failRequestsGreaterThanOne to set, the plugin forces it on
    assert configs["mps"]["sharing"] == {
        "mps": {"renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    }
    for node_pool in scenario.cluster.pools:
        expected = {k: v for k, v in node_pool.device_resources().items() if v}
        assert _advertised(configs[node_pool.name], node_pool.gpus_per_node) == expected


def test_an_fgd_policy_exports_the_authors_plugin_name() -> None:
    """scheduler.policy: fgd scores with the FGD authors' out-of-tree FGDScore plugin (weight 10) in place
    of NodeResourcesFit and BalancedAllocation, which are disabled."""
    config = SchedulerConfig(policy="fgd")
    (profile,) = kube_scheduler_configuration(config)["profiles"]
    score = profile["plugins"]["score"]
    assert {"name": "FGDScore", "weight": 10} in score["enabled"]
    assert {"name": "NodeResourcesFit"} in score["disabled"]
    assert all(p["name"] != "SharePolicy" for p in score["enabled"])
