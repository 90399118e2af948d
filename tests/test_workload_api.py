"""The Kubernetes v1.36 Workload API (Workload, PodGroup) as a front end for gangs and their topology.

Validation cases: kubernetes/kubernetes ``pkg/apis/scheduling/validation/validation_test.go`` at commit
056a01553e91d6ad2c3d1e82927ea348f6e84887, ``TestValidateWorkload`` (3 valid, 10 invalid) and
``TestValidatePodGroup`` (2 valid, 9 invalid), with upstream's names. That commit still spelled the
constraint ``topologyConstraints[].topologyKey``; the released v1.36 schema (kubernetes-validate 1.36) spells
it ``topology[].key``, which the cases use. Policy rules (exactly one of basic/gang, ``minCount`` ≥ 1, 1–8
templates, unique names) follow the same file's fixtures and the v1.36 types.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from fleetlab.export.write import render
from fleetlab.kube.to_scenario import snapshot_scenario
from fleetlab.model.scenario import Scenario
from fleetlab.model.workload_api import PodGroup, Workload
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_snapshot import load_snapshot
from fleetlab.spec.workload_api import gang_request, read_workload_api
from kube_builders import node, pod, write_list

VERSION = "1.36"


def mk_workload(tweak: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    w: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "controllerRef": {"apiGroup": "group", "kind": "foo", "name": "baz"},
            "podGroupTemplates": [
                {"name": "group1", "schedulingPolicy": {"basic": {}},
                 "schedulingConstraints": {"topology": [{"key": "foo"}]}},
                {"name": "group2", "schedulingPolicy": {"gang": {"minCount": 2}},
                 "schedulingConstraints": {"topology": [{"key": "foo"}]}},
            ],
        },
    }  # fmt: skip
    if tweak is not None:
        tweak(w)
    return w


def mk_pod_group(tweak: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    pg: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t1"}},
            "schedulingPolicy": {"gang": {"minCount": 5}},
            "schedulingConstraints": {"topology": [{"key": "foo"}]},
        },
    }
    if tweak is not None:
        tweak(pg)
    return pg


def tpl(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda w: w["spec"]["podGroupTemplates"][i]


def setter(
    path: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any
) -> Callable[[dict[str, Any]], None]:
    def tweak(obj: dict[str, Any]) -> None:
        target = path(obj)
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value

    return tweak


META = lambda o: o["metadata"]  # noqa: E731
SPEC = lambda o: o["spec"]  # noqa: E731
CONSTRAINTS1 = lambda w: w["spec"]["podGroupTemplates"][1]["schedulingConstraints"]  # noqa: E731
PG_CONSTRAINTS = lambda pg: pg["spec"]["schedulingConstraints"]  # noqa: E731

WORKLOAD_VALID = {
    "basic and gang policies": None,
    "no controllerRef": setter(SPEC, "controllerRef", None),
    "no scheduling constraints": setter(tpl(1), "schedulingConstraints", None),
}
WORKLOAD_INVALID = {
    "no name": setter(META, "name", ""),
    "invalid name": setter(META, "name", ".workload"),
    "too long name": setter(META, "name", "w" * 254),
    "no namespace": setter(META, "namespace", None),
    "invalid namespace": setter(META, "namespace", ".ns"),
    "too long namespace": setter(META, "namespace", "n" * 64),
    "multiple topology constraints": setter(CONSTRAINTS1, "topology", [{"key": "foo"}, {"key": "bar"}]),
    "empty topology key": setter(CONSTRAINTS1, "topology", [{"key": ""}]),
    "no topology constraints": setter(CONSTRAINTS1, "topology", []),
    "invalid topology key": setter(CONSTRAINTS1, "topology", [{"key": "foo-"}]),
    # the policy rules of the same fixtures
    "two policies": setter(tpl(0), "schedulingPolicy", {"basic": {}, "gang": {"minCount": 2}}),
    "no policy set": setter(tpl(0), "schedulingPolicy", {}),
    "zero min count in gang": setter(tpl(1), "schedulingPolicy", {"gang": {"minCount": 0}}),
    "duplicate pod group names": setter(tpl(1), "name", "group1"),
    "no pod groups": setter(SPEC, "podGroupTemplates", []),
    "too many pod group templates": setter(
        SPEC,
        "podGroupTemplates",
        [{"name": f"group-{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)],
    ),
}
POD_GROUP_VALID = {
    "gang policy": None,
    "no scheduling constraints": setter(SPEC, "schedulingConstraints", None),
}
POD_GROUP_INVALID = {
    "no name": setter(META, "name", ""),
    "invalid name": setter(META, "name", ".podGroup"),
    "too long name": setter(META, "name", "w" * 254),
    "no namespace": setter(META, "namespace", None),
    "invalid namespace": setter(META, "namespace", ".ns"),
    "too long namespace": setter(META, "namespace", "n" * 64),
    "multiple topology constraints": setter(PG_CONSTRAINTS, "topology", [{"key": "foo"}, {"key": "bar"}]),
    "empty topology key": setter(PG_CONSTRAINTS, "topology", [{"key": ""}]),
    "no topology constraints": setter(PG_CONSTRAINTS, "topology", []),
    "invalid topology key": setter(PG_CONSTRAINTS, "topology", [{"key": "foo-"}]),
}


@pytest.mark.parametrize("name", sorted(WORKLOAD_VALID))
def test_validate_workload_success(name: str) -> None:
    obj = mk_workload(WORKLOAD_VALID[name])
    Workload.model_validate(obj)
    assert kubernetes_validate.validate(obj, VERSION, strict=True) == VERSION


@pytest.mark.parametrize("name", sorted(WORKLOAD_INVALID))
def test_validate_workload_failure(name: str) -> None:
    with pytest.raises(ValidationError):
        Workload.model_validate(mk_workload(WORKLOAD_INVALID[name]))


@pytest.mark.parametrize("name", sorted(POD_GROUP_VALID))
def test_validate_pod_group_success(name: str) -> None:
    obj = mk_pod_group(POD_GROUP_VALID[name])
    PodGroup.model_validate(obj)
    assert kubernetes_validate.validate(obj, VERSION, strict=True) == VERSION


@pytest.mark.parametrize("name", sorted(POD_GROUP_INVALID))
def test_validate_pod_group_failure(name: str) -> None:
    with pytest.raises(ValidationError):
        PodGroup.model_validate(mk_pod_group(POD_GROUP_INVALID[name]))


RACK = "topology.kubernetes.io/rack"


def group_objects(min_count: int = 4, key: str | None = RACK) -> list[dict[str, Any]]:
    constraints = {"schedulingConstraints": {"topology": [{"key": key}]}} if key else {}
    template = {"name": "workers", "schedulingPolicy": {"gang": {"minCount": min_count}}, **constraints}
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"}, "spec": {"podGroupTemplates": [template]},
    }  # fmt: skip
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
        "metadata": {"name": "train-workers", "namespace": "default"},
        "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}},
                 "schedulingPolicy": template["schedulingPolicy"], **constraints},
    }  # fmt: skip
    return [workload, group]


def members(n: int) -> list[dict[str, Any]]:
    gpu = [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
    return [pod(f"w{i}", gpu, schedulingGroup={"podGroupName": "train-workers"}) for i in range(n)]


def test_snapshot_to_scenario_to_export_round_trip(tmp_path: Path) -> None:
    """Four pods of PodGroup train-workers (gang minCount 4, one rack) become one gang job of 4 pods with
    topology_required: rack; export writes it back as a Workload and PodGroup that the v1.36 schema takes
    and fleetlab reads back to the same gang request."""
    items = [node(f"n{i}") for i in range(2)] + group_objects() + members(4)
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    assert {p.group for p in snap.pods} == {"train-workers"}
    assert {(p.group_size, p.topology.required if p.topology else None) for p in snap.pods} == {(4, RACK)}
    resolved = snapshot_scenario(snap)
    scenario = Scenario.model_validate(json.loads(resolved.scenario.model_dump_json(by_alias=True)))
    jobs = scenario.workload.jobs or ()
    gang = next(j for j in jobs if j.pods == 4)
    assert (gang.gang, gang.topology_required) == (True, RACK)
    docs = list(yaml.safe_load_all(render(scenario)["workload-api.yaml"]))
    assert [d["kind"] for d in docs] == ["Workload", "PodGroup"]
    for doc in docs:
        assert kubernetes_validate.validate(doc, VERSION, strict=True) == VERSION
    back = read_workload_api(docs, "workload-api.yaml")
    (group,) = back.pod_groups.values()
    request = gang_request(group)
    assert (request.min_count, request.topology_key) == (4, RACK)
    assert request.topology is not None and request.topology.required == RACK


def test_kueue_tas_annotations_on_pods_become_the_gang_topology(tmp_path: Path) -> None:
    gpu = [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
    items = [node("n0"), node("n1")]
    for i in range(2):
        p = pod(f"g{i}", gpu)
        p["metadata"]["labels"] = {"kueue.x-k8s.io/pod-group-name": "grp"}
        p["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-preferred-topology": RACK}
        items.append(p)
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    jobs = snapshot_scenario(snap).scenario.workload.jobs or ()
    (gang,) = [j for j in jobs if j.pods == 2]
    assert (gang.topology_required, gang.topology_preferred) == (None, RACK)


def test_pod_group_naming_a_missing_template_is_refused(tmp_path: Path) -> None:
    objs = group_objects()
    bad = copy.deepcopy(objs)
    bad[1]["spec"]["podGroupTemplateRef"]["workload"]["podGroupTemplateName"] = "ps"
    items = [node("n0"), *bad]
    with pytest.raises(SpecError, match='names template "ps", which Workload default/train does not have'):
        load_snapshot([write_list(tmp_path / "snap.json", items)])
