"""fleetlab's native job table (fleetlab.spec.native_trace) and the trace dispatcher (fleetlab.spec.traces)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleetlab.model.job import Job, JobClass
from fleetlab.model.workload import TraceSource
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load
from fleetlab.spec.native_trace import MAX_PROBLEMS, load_native_trace
from fleetlab.spec.native_trace_writer import write_native_trace
from fleetlab.spec.traces import load_trace

GPU_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "fleetlab.io/gpu-model", "operator": "In", "values": ["H100"]}]}
            ]
        }
    }
}


def job(**fields: Any) -> Job:
    spec: dict[str, Any] = {
        "id": "j",
        "submit_s": 0.0,
        "requests": {"cpu": "4", "memory": "16Gi"},
        "runtime": 60.0,
    }
    spec.update(fields)
    return Job.model_validate(spec)


def sample_jobs() -> list[Job]:
    return [
        job(
            id="train-1",
            submit_s=0.0,
            **{"class": "training"},
            priority=100,
            team="vision",
            pods=4,
            requests={"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8},
            runtime={"default": 36000.5, "by_gpu": {"H100": 18000.25, "A100-80GB": 30000}},
            tolerations=[
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
                {"key": "spot", "operator": "Exists"},
                {"key": "team", "operator": "Equal", "value": ""},
            ],
            nodeSelector={"fleetlab.io/pool": "h100", "topology.kubernetes.io/zone": "zone-a"},
            affinity=GPU_AFFINITY,
            image={"name": "ghcr.io/acme/train:1.2", "size": "12Gi"},
            data_size="1500Gi",
            preemptible=True,
        ),
        job(
            id="infer-1",
            submit_s=60.125,
            **{"class": "inference"},
            requests={"cpu": "500m", "memory": "1.5G"},
        ),
        job(id="etl-1", submit_s=120.0, requests={}, runtime=0.001),
        job(id="zero", submit_s=1e7, requests={"cpu": 0, "memory": 0}, tolerations=[{"operator": "Exists"}]),
        job(
            id="odd-mem",
            submit_s=3.0,
            requests={"memory": 123456789, "cpu": "1234m"},
            image={"name": "busybox"},
        ),
    ]


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_native_trace(path)
    return info.value


# --- round trip -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".pq"])
def test_round_trip_gives_equal_jobs(tmp_path: Path, suffix: str) -> None:
    jobs = sample_jobs()
    path = tmp_path / f"jobs{suffix}"
    write_native_trace(jobs, path)
    loaded, warnings = load_native_trace(path)
    assert loaded == jobs
    assert warnings == []
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left behind


def test_round_trip_of_many_similar_jobs_keeps_each_jobs_own_fields(tmp_path: Path) -> None:
    jobs = [
        job(id=f"j{i}", submit_s=float(i), runtime={"default": 10.0 + i, "by_gpu": {"T4": 5.0 + i}})
        for i in range(50)
    ]
    path = tmp_path / "many.csv"
    write_native_trace(jobs, path)
    loaded, _ = load_native_trace(path)
    assert loaded == jobs
    assert loaded[0].requests is not loaded[1].requests  # jobs of one shape do not share mutable dicts


def test_writer_replaces_atomically_and_keeps_old_file_on_error(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    write_native_trace(sample_jobs(), path)
    before = path.read_bytes()
    bad = job(id="x", requests={"cpu": 1, "ephemeral-storage": "1Gi"})
    with pytest.raises(ValueError, match="ephemeral-storage"):
        write_native_trace([bad], path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.csv"]
    with pytest.raises(ValueError, match="tolerationSeconds"):
        write_native_trace(
            [job(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 5}])], path
        )
    with pytest.raises(ValueError, match="suffix"):
        write_native_trace([], tmp_path / "jobs.json")


def test_documented_example_loads(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "example.csv",
        "id,submit_s,class,team,pods,cpu,memory,gpus,runtime_s,runtime_s[H100],tolerations\n"
        "train-1,0,training,vision,4,32,256Gi,8,36000,18000,nvidia.com/gpu:NoSchedule\n"
        "infer-1,60,inference,search,1,4,16Gi,1,3600,,\n"
        "etl-1,120,,,1,8,32Gi,,600,,\n",
    )
    jobs, warnings = load_native_trace(path)
    assert warnings == []
    train, infer, etl = jobs
    assert train.job_class is JobClass.TRAINING and train.pods == 4 and train.total_gpus == 32
    assert train.requests == {"cpu": 32000, "memory": 256 * 1024**3, "nvidia.com/gpu": 8}
    assert train.runtime.on("H100") == 18000 and train.runtime.on("T4") == 36000
    assert train.tolerations[0].operator == "Exists" and train.tolerations[0].effect == "NoSchedule"
    assert infer.runtime.by_gpu == {} and infer.tolerations == ()
    assert etl.job_class is JobClass.BATCH and etl.team == "default" and "nvidia.com/gpu" not in etl.requests


def test_empty_cells_mean_defaults(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "t.csv",
        "id,submit_s,runtime_s,class,priority,team,pods,cpu,memory,gpus,image,image_size,data_size,"
        "preemptible,node_selector,tolerations,affinity\n"
        "a,5,10,,,,,,,,,,,,,,\n",
    )
    (only,), _ = load_native_trace(path)
    assert only == Job.model_validate({"id": "a", "submit_s": 5, "requests": {}, "runtime": 10})


def test_cell_syntax(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "t.csv",
        "id,submit_s,runtime_s,preemptible,node_selector,tolerations\n"
        'a, 5 ,10,YES,"a=1; b = 2;","k=v:NoExecute; e ;*:NoSchedule;q="\n'
        "b,6,11,0,,*\n",
    )
    a, b = load_native_trace(path)[0]
    assert a.submit_s == 5 and a.preemptible is True and b.preemptible is False
    assert a.node_selector == {"a": "1", "b": "2"}
    assert [(t.key, t.operator, t.value, t.effect) for t in a.tolerations] == [
        ("k", "Equal", "v", "NoExecute"),
        ("e", "Exists", "", ""),
        ("", "Exists", "", "NoSchedule"),
        ("q", "Equal", "", ""),
    ]
    assert [(t.key, t.operator) for t in b.tolerations] == [("", "Exists")]


def test_parquet_with_typed_and_null_columns(tmp_path: Path) -> None:
    path = tmp_path / "typed.parquet"
    table = pa.table(
        {
            "id": pa.array(["a", "b"]).dictionary_encode(),
            "submit_s": pa.array([0, 30], pa.int64()),
            "runtime_s": pa.array([1.5, 2.0]),
            "runtime_s[H100]": pa.array([None, 1.0]),
            "gpus": pa.array([2.0, None]),
            "pods": pa.array([None, 3], pa.int32()),
            "preemptible": pa.array([True, None]),
            "memory": pa.array(["8Gi", None]),
        }
    )
    pq.write_table(table, path)
    a, b = load_native_trace(path)[0]
    assert a.submit_s == 0 and a.runtime.default == 1.5 and a.runtime.by_gpu == {} and a.gpus_per_pod == 2
    assert a.preemptible and a.pods == 1 and a.requests["memory"] == 8 * 1024**3
    assert (
        b.runtime.by_gpu == {"H100": 1.0}
        and b.pods == 3
        and b.gpus_per_pod == 0
        and "memory" not in b.requests
    )


def test_unknown_column_is_a_warning(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "t.csv", "id,submit_s,runtime_s,owner\na,0,1,alice\n")
    jobs, warnings = load_native_trace(path)
    assert len(jobs) == 1
    assert len(warnings) == 1 and "'owner'" in warnings[0] and "ignored" in warnings[0]


def test_empty_table_gives_no_jobs_and_a_warning(tmp_path: Path) -> None:
    jobs, warnings = load_native_trace(write_csv(tmp_path / "t.csv", "id,submit_s,runtime_s\n"))
    assert jobs == [] and "no rows" in warnings[0]


# --- bad cells --------------------------------------------------------------------------------------------

BAD_CELLS = [
    ("submit_s", "soon", "seconds >= 0"),
    ("submit_s", "-5", "seconds >= 0"),
    ("submit_s", "inf", "seconds >= 0"),
    ("runtime_s", "0", "seconds > 0"),
    ("runtime_s", "1h", "seconds > 0"),
    ("runtime_s[H100]", "-1", "seconds > 0"),
    ("class", "serving", "training, inference, batch, experiment"),
    ("priority", "high", "integer"),
    ("pods", "0", "integer >= 1"),
    ("pods", "2.5", "integer >= 1"),
    ("cpu", "8 cores", "quantity"),
    ("cpu", "-1", ">= 0"),
    ("memory", "16GB", 'did you mean "G"'),
    ("memory", "1gi", "case-sensitive"),
    ("gpus", "0.5", "integer >= 0"),
    ("gpus", "-1", "integer >= 0"),
    ("image_size", "big", "quantity"),
    ("data_size", "1 TB", "quantity"),
    ("preemptible", "maybe", "true, false, 1, 0, yes or no"),
    ("node_selector", "zone", "key=value;key2=value2"),
    ("node_selector", "=x", "empty key"),
    ("node_selector", "a=1;a=2", "twice"),
    ("tolerations", "k=v:Sometimes", "NoSchedule, PreferNoSchedule, NoExecute"),
    ("tolerations", "=v", "empty key"),
    ("affinity", "{not json", "not JSON"),
    ("affinity", '{"nodeAffinity": {"bogus": 1}}', "not a core/v1 Affinity"),
]


@pytest.mark.parametrize(("column", "value", "allowed"), BAD_CELLS)
def test_bad_cell_names_row_id_column_value_and_what_is_allowed(
    tmp_path: Path, column: str, value: str, allowed: str
) -> None:
    header = ["id", "submit_s", "runtime_s", "image"]
    good = {"id": "ok", "submit_s": "0", "runtime_s": "10", "image": "img"}
    if column not in header:
        header.append(column)
    row = {**good, "id": "bad-job", column: value}
    quote = lambda text: '"' + text.replace('"', '""') + '"'  # noqa: E731
    lines = [",".join(header), ",".join(quote(good.get(c, "")) for c in header)]
    lines.append(",".join(quote(row.get(c, "")) for c in header))
    error = load_error(write_csv(tmp_path / "t.csv", "\n".join(lines) + "\n"))
    assert error.source == str(tmp_path / "t.csv")
    assert len(error.problems) == 1, error.problems
    message = error.problems[0]
    assert message.startswith("row 2 (id 'bad-job')"), message
    assert f"column {column!r}" in message
    assert repr(value) in message
    assert allowed in message


def test_missing_required_values_and_duplicate_ids(tmp_path: Path) -> None:
    error = load_error(write_csv(tmp_path / "t.csv", "id,submit_s,runtime_s\na,,1\na,0,\n,0,1\n"))
    text = "\n".join(error.problems)
    assert "row 1 (id 'a'), column 'submit_s'" in text and "required" in text
    assert "row 2 (id 'a'), column 'id', value 'a': id already used on row 1" in text
    assert "row 2 (id 'a'), column 'runtime_s'" in text
    assert "row 3, column 'id'" in text


def test_problems_are_collected_up_to_a_limit_in_row_order(tmp_path: Path) -> None:
    rows = "".join(f"j{i},later,1\n" for i in range(25))
    error = load_error(write_csv(tmp_path / "t.csv", "id,submit_s,runtime_s\n" + rows))
    assert len(error.problems) == MAX_PROBLEMS + 1
    assert [p.split(" ")[1] for p in error.problems[:MAX_PROBLEMS]] == [str(i) for i in range(1, 11)]
    assert error.problems[-1].startswith("15 more bad cell(s)")
    assert "and 3 more problem(s)" in str(error)


def test_image_size_needs_image(tmp_path: Path) -> None:
    error = load_error(write_csv(tmp_path / "t.csv", "id,submit_s,runtime_s,image_size\na,0,1,1Gi\n"))
    assert "column 'image_size'" in error.problems[0] and "needs an image name" in error.problems[0]


def test_table_level_errors(tmp_path: Path) -> None:
    assert "required column 'runtime_s' is missing" in str(
        load_error(write_csv(tmp_path / "a.csv", "id,submit_s\na,0\n"))
    )
    assert "runtime_s[MODEL]" in str(
        load_error(write_csv(tmp_path / "b.csv", "id,submit_s,runtime_s,runtime_s[X1]\na,0,1,1\n"))
    )
    assert "more than once" in str(
        load_error(write_csv(tmp_path / "c.csv", "id,id,submit_s,runtime_s\na,b,0,1\n"))
    )
    assert "empty" in str(load_error(write_csv(tmp_path / "d.csv", "")))
    assert "file not found" in str(load_error(tmp_path / "missing.csv"))
    assert ".csv, .parquet or .pq" in str(load_error(write_csv(tmp_path / "e.json", "{}")))
    assert "cannot be read as CSV" in str(
        load_error(write_csv(tmp_path / "f.csv", "id,submit_s,runtime_s\na,0\n"))
    )
    assert "cannot be read as Parquet" in str(load_error(write_csv(tmp_path / "g.parquet", "not parquet")))


# --- dispatcher: limit, time_scale, order -----------------------------------------------------------------


def test_load_trace_applies_limit_and_time_scale_and_sorts_by_submit(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "t.csv",
        "id,submit_s,runtime_s,runtime_s[T4]\nc,30,100,50\na,10,200,\nb,10,300,\nd,0,1,\nbroken,x,1,\n",
    )
    jobs, warnings = load_trace(path, TraceSource(path=str(path), limit=3, time_scale=0.5))
    assert warnings == []
    assert [j.id for j in jobs] == ["a", "b", "c"]  # sorted by submit time, ties in file order
    assert [j.submit_s for j in jobs] == [5.0, 5.0, 15.0]
    assert [j.runtime.default for j in jobs] == [100.0, 150.0, 50.0]
    assert jobs[2].runtime.by_gpu == {"T4": 25.0}


def test_scenario_with_a_native_trace_resolves(tmp_path: Path) -> None:
    write_native_trace(sample_jobs(), tmp_path / "jobs.parquet")
    (tmp_path / "s.yaml").write_text(
        "cluster:\n  pools:\n    - {name: a, count: 1, cpu: 8, memory: 64Gi}\n"
        "workload:\n  trace: {path: jobs.parquet, format: native, time_scale: 2}\n",
        encoding="utf-8",
    )
    resolved = load(str(tmp_path / "s.yaml"))
    assert resolved.source == str(tmp_path / "jobs.parquet")
    assert len(resolved.jobs) == 5
    assert [j.submit_s for j in resolved.jobs] == sorted(j.submit_s * 2 for j in sample_jobs())


@pytest.mark.skipif(
    os.environ.get("FLEETLAB_SLOW_TESTS") != "1", reason="set FLEETLAB_SLOW_TESTS=1 to time 200k rows"
)
def test_200k_rows_load_in_a_few_seconds(tmp_path: Path) -> None:
    jobs = [
        job(
            id=f"j{i:06d}",
            submit_s=float(i),
            pods=1 + i % 4,
            requests={"cpu": f"{1 + i % 16}", "memory": "32Gi"},
        )
        for i in range(200_000)
    ]
    path = tmp_path / "big.csv"
    write_native_trace(jobs, path)
    start = time.perf_counter()
    loaded, _ = load_native_trace(path)
    assert time.perf_counter() - start < 10
    assert loaded == jobs
