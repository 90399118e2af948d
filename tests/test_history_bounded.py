"""History importers read through ``spec.bounded``: only regular files, a size cap enforced while streaming,
the CSV field cap and strict, depth-bounded JSON. Each case is one paragraph naming the file, never a
traceback, a hang or unbounded memory."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from fleetlab.spec.bounded import MAX_CSV_FIELD, MAX_DEPTH, open_stream
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.store import load_history, write_history
from kube_history_builders import kube_list, pod, write_json

DATA = Path(__file__).parent / "data" / "history"
FOCUS_HEADER = (DATA / "focus.csv").read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.parametrize("prefix", ["", "kubectl:", "slurm:", "focus:", "swf:", "philly:"])
def test_dev_zero_as_a_history_input_is_refused(prefix: str) -> None:
    with pytest.raises(SpecError) as info:
        import_sources([f"{prefix}/dev/zero"])
    assert str(info.value) == "/dev/zero: is not a regular file (a device, pipe or socket); give a saved file"


def test_focus_csv_field_over_the_cap_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bill.csv"
    cells = ["1"] * len(FOCUS_HEADER.split(","))
    cells[-1] = "x" * (MAX_CSV_FIELD + 1)
    path.write_text(FOCUS_HEADER + "\n" + ",".join(cells) + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        import_sources([f"focus:{path}"])
    message = str(info.value)
    assert message.startswith(f"{path}: line 2: not valid CSV")
    assert f"({MAX_CSV_FIELD})" in message


def test_philly_summary_csv_field_over_the_cap_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text("timestamp,duration,num_gpus\n" + "1" * (MAX_CSV_FIELD + 1) + ",1,1\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"line 2: not valid CSV: field larger than field limit \(131072\)"):
        import_sources([f"philly:{path}"])


def test_reading_focus_leaves_the_csv_field_cap_at_the_documented_limit() -> None:
    import_sources([f"focus:{DATA / 'focus.csv'}"])
    assert csv.field_size_limit() == MAX_CSV_FIELD


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def _deep_pod(tmp_path: Path, levels: int) -> Path:
    """A finished pod whose ``spec.extra`` holds ``levels`` nested lists: the pod is nested 2 + levels deep."""
    item = pod("ns", "p", "10:00:00", scheduled="10:00:01", started="10:00:02", finished="10:30:00",
               phase="Succeeded")  # fmt: skip
    item["spec"]["extra"] = json.loads(_nested(levels))
    return write_json(tmp_path / "pods.json", kube_list([item]))


def test_kubectl_object_nested_too_deep_is_refused(tmp_path: Path) -> None:
    path = _deep_pod(tmp_path, MAX_DEPTH - 1)
    with pytest.raises(SpecError) as info:
        import_sources([f"kubectl:{path}"])
    assert str(info.value) == f"{path}: line 4: JSON nested deeper than 64 levels"


def test_kubectl_object_at_the_depth_limit_imports(tmp_path: Path) -> None:
    history = import_sources([f"kubectl:{_deep_pod(tmp_path, MAX_DEPTH - 2)}"])
    assert history.jobs.column("job_id").to_pylist() == ["ns/Pod/p"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [('{"kind": "Pod", "x": NaN}', "NaN is not valid JSON"),
     ('{"kind": "Pod", "kind": "Node"}', "key 'kind' appears twice"),
     ('{"kind": "Pod", "x": ' + "9" * 40 + "}", "integer with 40 digits")],
)  # fmt: skip
def test_kubectl_stream_is_strict_json(tmp_path: Path, body: str, problem: str) -> None:
    path = tmp_path / "pods.json"
    path.write_text('{"kind": "List", "items": [' + body + "]}", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        import_sources([f"kubectl:{path}"])
    assert problem in str(info.value)
    assert "truncated" not in str(info.value)


def test_focus_tags_nested_too_deep_are_refused(tmp_path: Path) -> None:
    lines = (DATA / "focus.csv").read_text(encoding="utf-8").splitlines()
    deep = '{""a"": ' + _nested(20) + "}"
    row = lines[1].replace('"{""team"": ""research""}"', f'"{deep}"')
    assert row != lines[1]
    path = tmp_path / "bill.csv"
    path.write_text(lines[0] + "\n" + row + "\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"line 2, column Tags: Tags must be a JSON object .*nested deeper"):
        import_sources([f"focus:{path}"])


def test_history_json_nested_too_deep_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "hist"
    write_history(import_sources([str(DATA / "tiny.swf")]), folder)
    meta = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    meta["extra"] = json.loads(_nested(MAX_DEPTH + 1))
    (folder / "history.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(SpecError, match=r"history\.json: nested deeper than 64 levels"):
        load_history(folder)


def test_open_stream_refuses_a_file_that_grows_past_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "growing.txt"
    path.write_text("12345", encoding="utf-8")
    with open_stream(path, max_bytes=10) as handle:
        with path.open("a", encoding="utf-8") as writer:
            writer.write("x" * 20)
        with pytest.raises(SpecError, match=r"grew past 10 bytes while being read"):
            handle.read()


def test_open_stream_refuses_a_file_over_the_cap_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 11, encoding="utf-8")
    with pytest.raises(SpecError, match=r"is 11 bytes; the most fleetlab reads is 10"):
        open_stream(path, max_bytes=10)


@pytest.mark.parametrize(
    ("change", "problem"),
    [(lambda spec: spec.update(containers=[7]), "spec.containers[0]: expected a container (a mapping)"),
     (lambda spec: spec["containers"][0].update(resources=["cpu"]), "spec.containers[0].resources: expected a mapping"),
     (lambda spec: spec.update(initContainers={"a": 1}), "spec.initContainers: expected a list of containers")],
)  # fmt: skip
def test_kubectl_pod_with_containers_of_the_wrong_shape_is_one_paragraph(
    tmp_path: Path, change: Any, problem: str
) -> None:
    item = pod("ns", "p", "10:00:00", scheduled="10:00:01", started="10:00:02", finished="10:30:00",
               phase="Succeeded")  # fmt: skip
    change(item["spec"])
    path = write_json(tmp_path / "pods.json", kube_list([item]))
    with pytest.raises(SpecError) as info:
        import_sources([f"kubectl:{path}"])
    assert problem in str(info.value)
