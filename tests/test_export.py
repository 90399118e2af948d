"""``fleetlab export``: the files are what real components accept, and they mean what the scenario means.

* Core objects (the GPU Operator ConfigMaps) pass ``kubernetes-validate`` in strict mode for the scenario's
  Kubernetes version.
* Kueue objects pass the v1beta2 CRD schemas vendored in tests/data/kueue_crds (see SOURCE.md there), with
  unknown fields refused, and read back into fleetlab's model with the same quotas and policies.
* KubeSchedulerConfiguration has no published schema: every field is checked against the field names of
  k8s.io/kube-scheduler/config/v1 (tests/data/kube_scheduler_v1_types.json), and the profile read back
  from the file equals the one the simulator schedules with.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.export.scheduler_config import class_profiles, kube_scheduler_configuration
from fleetlab.export.write import export_scenario
from fleetlab.model.queues import queue_config_from_objects
from fleetlab.model.scenario import Scenario
from fleetlab.placement.profiles import PRESETS, Profile, resolve_profile
from fleetlab.spec.loader import load_scenario
from fleetlab.spec.out_folder import MARKER, mark

DATA = Path(__file__).parent / "data"
PLATFORM = Path(__file__).parent / "fixtures" / "export" / "platform.yaml"
CRD_FILES = {
    "ResourceFlavor": "resourceflavors.v1beta2.yaml",
    "ClusterQueue": "clusterqueues.v1beta2.yaml",
    "Cohort": "cohorts.v1beta2.yaml",
    "LocalQueue": "localqueues.v1beta2.yaml",
}


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return load_scenario(str(PLATFORM))[0]


@pytest.fixture(scope="module")
def exported(scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "config"
    export_scenario(scenario, out)
    return out


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused wherever properties are listed (strict field validation)."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def crd_validator(kind: str) -> jsonschema.Draft7Validator:
    schema = yaml.safe_load((DATA / "kueue_crds" / CRD_FILES[kind]).read_text())
    return jsonschema.Draft7Validator(strict(schema))


def test_every_file_is_written_and_an_old_folder_is_replaced_whole(
    scenario: Scenario, tmp_path: Path
) -> None:
    out = tmp_path / "config"
    out.mkdir()
    (out / "stale.yaml").write_text("old")
    mark(out)  # an earlier export: fleetlab's own folder, so it may be replaced
    result = export_scenario(scenario, out)
    assert sorted(p.name for p in out.iterdir()) == sorted([*result.files, MARKER])
    assert set(result.files) == {
        "kube-scheduler-config.yaml",
        "fleetlab-scheduler.yaml",
        "kueue.yaml",
        "nvidia-device-plugin-config.yaml",
        "nvidia-mig-parted-config.yaml",
        "placement-rules.md",
        "README.md",
    }
    assert [p.name for p in tmp_path.iterdir()] == ["config"]  # no staging or old folder left behind
    readme = (out / "README.md").read_text()
    assert "tie_break: first" in readme
    assert "models topology spread, pod affinity and pod anti-affinity" in readme  # all three are simulated


def test_gpu_operator_configmaps_pass_kubernetes_validate(scenario: Scenario, exported: Path) -> None:
    version = scenario.scheduler.kubernetes_version
    for name in ("nvidia-device-plugin-config.yaml", "nvidia-mig-parted-config.yaml"):
        (doc,) = documents(exported / name)
        assert kubernetes_validate.validate(doc, version, strict=True) == version
        broken = copy.deepcopy(doc)
        broken["metadata"]["namez"] = "x"  # the validator does refuse what the API server would
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, version, strict=True)


def kueue_docs(exported: Path) -> list[dict[str, Any]]:
    return documents(exported / "kueue.yaml")


def test_kueue_objects_pass_the_v1beta2_crd_schemas(exported: Path) -> None:
    docs = kueue_docs(exported)
    kinds = [d["kind"] for d in docs]
    assert (
        kinds
        == ["Topology", "ResourceFlavor", "ResourceFlavor", "Cohort", "Cohort"]
        + ["ClusterQueue"] * 2
        + ["LocalQueue"] * 2
    )
    for doc in docs:
        assert doc["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        if doc["kind"] in CRD_FILES:
            errors = [e.message for e in crd_validator(doc["kind"]).iter_errors(doc)]
            assert errors == [], (doc["metadata"]["name"], errors)


def test_the_crd_schema_check_catches_what_kueue_would_refuse(exported: Path) -> None:
    cq = next(d for d in kueue_docs(exported) if d["kind"] == "ClusterQueue")
    validator = crd_validator("ClusterQueue")
    typo = copy.deepcopy(cq)
    typo["spec"]["cohort_name"] = typo["spec"].pop("cohortName")
    bad_enum = copy.deepcopy(cq)
    bad_enum["spec"]["queueingStrategy"] = "FIFO"
    bad_quota = copy.deepcopy(cq)
    bad_quota["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "8 GPUs"
    for doc in (typo, bad_enum, bad_quota):
        assert list(validator.iter_errors(doc))


def test_queues_round_trip_into_the_model(scenario: Scenario, exported: Path) -> None:
    docs = [d for d in kueue_docs(exported) if d["kind"] != "Topology"]
    back = queue_config_from_objects(docs)
    original = scenario.kueue
    assert original is not None
    quotas = lambda cfg: {  # noqa: E731
        (kind, obj.name): obj.spec.resource_groups
        for kind, objs in (("cq", cfg.cluster_queues), ("cohort", cfg.cohorts))
        for obj in objs
    }
    assert quotas(back) == quotas(original)
    team_a = next(c for c in back.cluster_queues if c.name == "team-a")
    gpu = team_a.spec.resource_groups[0].flavors[0].resources[2]
    assert (gpu.nominal_quota, gpu.borrowing_limit, gpu.lending_limit) == (16, 8, 4)
    assert team_a.spec.resource_groups[0].flavors[0].resources[0].nominal_quota == 380500  # milli-cpu
    # Everything else comes back too, except the namespaceSelector made explicit ({} = all namespaces).
    for cq_back, cq in zip(back.cluster_queues, original.cluster_queues, strict=True):
        assert cq_back.spec.namespace_selector == {}
        assert cq_back.spec.model_copy(update={"namespace_selector": None}) == cq.spec
    assert back.cohorts == original.cohorts
    assert back.local_queues == original.local_queues
    # Flavors come back whole except nodeLabels: fleetlab.io/pool becomes the label GFD writes on the
    # pool's nodes (the product tells the H100 pool and the A100 pool apart from every other pool).
    real = {"h100": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
    real["a100-mig"] = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    for f_back, f in zip(back.resource_flavors, original.resource_flavors, strict=True):
        assert f_back.spec.node_labels == real[f.name]
        assert f_back.spec.model_copy(update={"node_labels": f.spec.node_labels}) == f.spec


def walk(value: Any, type_name: str, types: dict[str, dict[str, str]], where: str) -> Iterator[str]:
    """Paths in ``value`` that are not fields of ``type_name`` (kube-scheduler's strict decoding)."""
    if type_name.startswith("[]"):
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            yield from walk(item, type_name[2:], types, f"{where}[{i}]")
        return
    if type_name not in types:
        assert not isinstance(value, (dict, list)), f"{where}: scalar {type_name} expected"
        return
    assert isinstance(value, dict), where
    fields = types[type_name]
    for key, item in value.items():
        if key not in fields:
            yield f"{where}.{key}"
            continue
        field_type = fields[key]
        if field_type == "RawExtension":  # plugin args decode as <Plugin>Args
            yield from walk(item, f"{value['name']}Args", types, f"{where}.{key}")
        else:
            yield from walk(item, field_type, types, f"{where}.{key}")


def read_profile(
    profile: dict[str, Any],
) -> tuple[str, tuple[tuple[str, int], ...], tuple[tuple[int, int], ...], tuple[str, ...], dict[str, int]]:
    """What a scheduling profile in the file configures, in fleetlab's terms."""
    args = {c["name"]: c["args"] for c in profile["pluginConfig"]}
    strategy = args["NodeResourcesFit"]["scoringStrategy"]
    shape = tuple(
        (p["utilization"], p["score"]) for p in strategy.get("requestedToCapacityRatio", {}).get("shape", [])
    )
    score = profile["plugins"]["score"]
    weights = {p["name"]: p["weight"] for p in score["enabled"]} | {
        p["name"]: 0 for p in score.get("disabled", [])
    }
    return (
        strategy["type"],
        tuple((r["name"], r["weight"]) for r in strategy["resources"]),
        shape,
        tuple(r["name"] for r in args["NodeResourcesBalancedAllocation"]["resources"]),
        weights,
    )


def as_read(profile: Profile) -> tuple[Any, ...]:
    return (
        profile.strategy,
        profile.resources,
        profile.shape,
        profile.balanced_resources,
        profile.plugin_weights,
    )


def test_scheduler_configuration_uses_only_v1_fields(exported: Path) -> None:
    reference = json.loads((DATA / "kube_scheduler_v1_types.json").read_text())
    (config,) = documents(exported / "kube-scheduler-config.yaml")
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    unknown = list(walk(config, config["kind"], reference["types"], ""))
    assert unknown == []
    for profile in config["profiles"]:
        strategy = profile["pluginConfig"][0]["args"]["scoringStrategy"]
        assert strategy["type"] in reference["enums"]["ScoringStrategyType"]
        assert all(1 <= r["weight"] <= 100 for r in strategy["resources"])  # v1 validation range
        for plugin in profile["plugins"]["score"]["enabled"] + profile["plugins"]["score"].get(
            "disabled", []
        ):
            assert plugin["name"] in reference["default_score_plugins"]
        assert all(p["weight"] > 0 for p in profile["plugins"]["score"]["enabled"])  # 0 would default to 1
    bad = {**config, "profiles": [{**config["profiles"][0], "plugin": {}}]}
    assert list(walk(bad, "KubeSchedulerConfiguration", reference["types"], "")) == [".profiles[0].plugin"]


def test_scheduler_profiles_mean_what_the_simulator_runs(scenario: Scenario, exported: Path) -> None:
    (config,) = documents(exported / "kube-scheduler-config.yaml")
    by_name = {p["schedulerName"]: p for p in config["profiles"]}
    assert set(by_name) == {"default-scheduler", "fleetlab-batch", "fleetlab-inference"}
    main = resolve_profile(scenario.scheduler)
    assert read_profile(by_name["default-scheduler"]) == as_read(main)
    assert main.strategy == "RequestedToCapacityRatio" and main.shape == ((0, 0), (100, 10))
    assert by_name["default-scheduler"]["plugins"]["score"]["disabled"] == [{"name": "ImageLocality"}]
    for job_class, profile in class_profiles(scenario.scheduler).items():
        assert read_profile(by_name[f"fleetlab-{job_class}"]) == as_read(profile)
    for profile in by_name.values():
        assert profile["plugins"]["postFilter"] == {
            "disabled": [{"name": "DefaultPreemption"}]
        }  # preemption: false
        assert profile["percentageOfNodesToScore"] == 100  # fleetlab scores every feasible node


def test_mig_parted_and_device_plugin_configs_match_the_pools(scenario: Scenario, exported: Path) -> None:
    (mig_cm,) = documents(exported / "nvidia-mig-parted-config.yaml")
    mig = yaml.safe_load(mig_cm["data"]["config.yaml"])
    assert mig["version"] == "v1" and mig["mig-configs"]["all-disabled"] == [
        {"devices": "all", "mig-enabled": False}
    ]
    (plugin_cm,) = documents(exported / "nvidia-device-plugin-config.yaml")
    for pool in scenario.cluster.pools:
        if pool.gpu_model is None:
            assert pool.name not in plugin_cm["data"]
            continue
        flags = yaml.safe_load(plugin_cm["data"][pool.name])
        assert flags == {
            "version": "v1",
            "flags": {"migStrategy": "none" if pool.mig is None else pool.mig.strategy},
        }
        if pool.mig is None:
            assert f"fleetlab-{pool.name}" not in mig["mig-configs"]
            continue
        # What the device plugin then advertises equals what fleetlab's pool advertises.
        advertised: dict[str, int] = {}
        whole = 0
        for entry in mig["mig-configs"][f"fleetlab-{pool.name}"]:
            gpus = pool.gpus_per_node if entry["devices"] == "all" else len(entry["devices"])
            if not entry["mig-enabled"]:
                whole += gpus
                continue
            for profile, count in entry["mig-devices"].items():
                key = "nvidia.com/gpu" if pool.mig.strategy == "single" else f"nvidia.com/mig-{profile}"
                advertised[key] = advertised.get(key, 0) + count * gpus
        if pool.mig.strategy == "mixed":
            advertised["nvidia.com/gpu"] = whole
        assert advertised == pool.device_resources()


def test_cli_export_and_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "two-teams"
    result = runner.invoke(cli.app, ["export", "two-teams", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "kueue.yaml").exists() and not (out / "nvidia-mig-parted-config.yaml").exists()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    result = runner.invoke(cli.app, ["export", "two-teams", "--out", str(a_file)])
    assert result.exit_code == 2 and "not a directory" in result.stderr
    result = runner.invoke(cli.app, ["export", str(tmp_path / "missing.yaml"), "--out", str(out)])
    assert result.exit_code == 2 and "file not found" in result.stderr
    assert (out / "kueue.yaml").exists()  # a failed export leaves the previous folder alone


@pytest.mark.parametrize("policy", list(PRESETS))
def test_every_preset_reads_back_as_the_profile_fleetlab_runs(policy: str, scenario: Scenario) -> None:
    config = scenario.scheduler.model_copy(
        update={
            "policy": policy,
            "plugin_weights": {},
            "class_profiles": {},
            "balanced_allocation_resources": None,
        }
    )
    (profile,) = kube_scheduler_configuration(config)["profiles"]
    assert read_profile(profile) == as_read(resolve_profile(config))


def test_export_is_deterministic(scenario: Scenario, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    export_scenario(scenario, first)
    export_scenario(scenario, second)
    for path in first.iterdir():
        assert path.read_bytes() == (second / path.name).read_bytes()
