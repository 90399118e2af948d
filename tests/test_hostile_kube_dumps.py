"""Wrong types in real-world kubectl dumps and Kueue objects: one clear error naming the object and field.

Each case is the minimal damage of a real dump (the shapes of tests/test_snapshot_secrets.py); the error
must be a SpecError (exit 2 in the CLI) and must never echo a value of the object.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fleetlab.kube.queues import KueueView
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_snapshot import load_snapshot
from test_snapshot_secrets import NODE, POD, WORKLOAD

CQ: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "cq"},
}
WL: dict[str, Any] = {**copy.deepcopy(WORKLOAD), "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload"}


def write_list(tmp_path: Path, items: list[Any]) -> Path:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    return path


SNAPSHOT_CASES: list[tuple[str, list[Any], str]] = [
    ("kind_is_an_object", [{**NODE, "kind": {"x": 1}}], "items[0]: `kind` is a dict; it must be a string"),
    ("metadata_is_a_list", [{**NODE, "metadata": [1]}], "Node `metadata` is a list; it must be a mapping"),
    ("spec_is_a_list", [NODE, {**POD, "spec": []}], "Pod `spec` is a list; it must be a mapping"),
    (
        "labels_is_a_list",
        [{**NODE, "metadata": {"name": "n", "labels": ["a"]}}],
        "Node n: `metadata.labels` must map strings to strings",
    ),
    (
        "node_name_is_a_number",
        [NODE, {**POD, "spec": {**POD["spec"], "nodeName": 5}}],
        "Pod ml/train-0: `spec.nodeName` must be a string",
    ),
]


@pytest.mark.parametrize(("name", "items", "words"), SNAPSHOT_CASES, ids=[c[0] for c in SNAPSHOT_CASES])
def test_wrong_type_in_snapshot_is_a_clear_error(
    tmp_path: Path, name: str, items: list[Any], words: str
) -> None:
    path = write_list(tmp_path, items)
    with pytest.raises(SpecError) as exc:
        load_snapshot([path])
    assert words in str(exc.value)
    assert exc.value.source == str(path)


KUEUE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("workload_podsets_is_5", {**WL, "spec": {"podSets": 5}}, "`spec.podSets` must be a list of mappings"),
    ("workload_podsets_null_item", {**WL, "spec": {"podSets": [None]}}, "must be a list of mappings"),
    (
        "workload_podsets_over_kueue_max_8",
        {**WL, "spec": {"podSets": [{"name": f"p{i}", "count": 1} for i in range(9)]}},
        "has 9 items; at most 8",
    ),
    (
        "workload_count_is_text",
        {**WL, "spec": {"podSets": [{"name": "p", "count": "many"}]}},
        "`spec.podSets[0].count` must be a whole number",
    ),
    (
        "workload_template_containers_is_a_number",
        {**WL, "spec": {"podSets": [{"name": "p", "count": 1, "template": {"spec": {"containers": 5}}}]}},
        "Workload ml/job-train.spec.podSets[0].template.spec.containers: expected a list of containers",
    ),
    ("workload_without_spec", {k: v for k, v in WL.items() if k != "spec"}, "Workload ml/job-train: has no"),
    ("cluster_queue_without_spec", CQ, "ClusterQueue cq: has no `spec` mapping"),
]


@pytest.mark.parametrize(("name", "obj", "words"), KUEUE_CASES, ids=[c[0] for c in KUEUE_CASES])
def test_wrong_type_in_kueue_objects_is_a_clear_error(name: str, obj: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecError) as exc:
        KueueView([obj])
    assert words in str(exc.value)


def test_secret_values_are_never_echoed_in_shape_errors(tmp_path: Path) -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["nodeName"] = {"password": "hunter2"}
    path = write_list(tmp_path, [NODE, pod])
    with pytest.raises(SpecError) as exc:
        load_snapshot([path])
    assert "hunter2" not in str(exc.value)


def test_bound_node_that_does_not_exist_is_refused_at_load(tmp_path: Path) -> None:
    from fleetlab.spec.loader import load
    from test_spec_errors import minimal, write

    data = minimal()
    data["workload"]["jobs"][0]["bound_node"] = "gpu-7"  # the pool has nodes gpu-0 and gpu-1
    with pytest.raises(SpecError) as exc:
        load(str(write(tmp_path, data)))
    assert "job 'j1': bound_node 'gpu-7' is not a node of the cluster" in str(exc.value)
    assert "e.g. gpu-0" in str(exc.value)
