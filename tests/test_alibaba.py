"""The Alibaba GPU trace 2023 ("openb") adapter, fleetlab.spec.alibaba.

The trace may be used for research only, so no row of it appears here: the self-contained tests write small
CSV files of invented rows in the trace's format; the tests on the real files read them from ``shared/``
(or ``$FLEETLAB_SHARED``) and skip when they are absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetlab.model.job import JobClass
from fleetlab.model.workload import TraceSource
from fleetlab.spec.alibaba import GPU_MODEL_LABEL, load_openb_nodes, load_openb_pods
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import openb_scenario
from fleetlab.spec.native_trace import load_native_trace
from fleetlab.spec.native_trace_writer import write_native_trace
from fleetlab.spec.traces import load_trace
from shared_data import shared_path

OPENB = shared_path("traces", "alibaba-gpu-v2023")
needs_openb = pytest.mark.skipif(
    not (OPENB / "openb_pod_list_default.csv").is_file(),
    reason="shared/traces/alibaba-gpu-v2023 not available",
)

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"

# Invented rows in the openb format (not taken from the trace).
PODS = [
    "p-a,4000,8192,1,1000,,LS,Running,100,1100,105",  # whole GPU; runtime from scheduled_time
    "p-b,2500,4096,1,250,,BE,Succeeded,200,260,200",  # shares a GPU: 250 milli of one
    "p-c,16000,65536,4,1000,T4|A10|T4,Burstable,Running,300,900,310",  # gpu_spec, deduplicated
    "p-d,1500,1024,0,0,,Guaranteed,Failed,400,400,400",  # zero lifetime: 1 s
    "p-e,8000,16384,1,500,G2,,Pending,500,2500,",  # never scheduled; empty qos
    "p-f,96000,786432,8,1000,,LS,Running,600,10600,600",
]


def pod_csv(path: Path, rows: list[str] = PODS, header: str = POD_HEADER) -> Path:
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def node_csv(path: Path, rows: list[str]) -> Path:
    path.write_text(NODE_HEADER + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def pods_error(path: Path) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_openb_pods(path)
    return info.value


# --- pods -------------------------------------------------------------------------------------------------


def test_pod_mapping(tmp_path: Path) -> None:
    jobs, _ = load_openb_pods(pod_csv(tmp_path / "pods.csv"))
    by_id = {j.id: j for j in jobs}
    assert [j.id for j in jobs] == ["p-a", "p-b", "p-c", "p-d", "p-e", "p-f"]
    a = by_id["p-a"]
    assert a.submit_s == 100 and a.runtime.default == 995  # deletion - scheduled
    assert a.requests == {"cpu": 4000, "memory": 8192 * 1024**2, "nvidia.com/gpu": 1}
    assert a.job_class is JobClass.INFERENCE and a.team == "LS" and a.priority == 0 and a.pods == 1
    assert a.affinity is None
    b = by_id["p-b"]
    assert b.job_class is JobClass.BATCH and b.gpus_per_pod == 0 and b.gpu_milli == 250 and b.shares_gpu
    assert by_id["p-c"].job_class is JobClass.EXPERIMENT and by_id["p-c"].gpus_per_pod == 4
    assert by_id["p-d"].job_class is JobClass.EXPERIMENT and by_id["p-d"].runtime.default == 1.0
    assert "nvidia.com/gpu" not in by_id["p-d"].requests and by_id["p-d"].requests["cpu"] == 1500
    e = by_id["p-e"]
    assert (
        e.runtime.default == 2000 and e.team == "default" and e.job_class is JobClass.BATCH
    )  # from creation_time
    assert by_id["p-f"].gpus_per_pod == 8


def test_gpu_spec_becomes_required_gpu_model_affinity(tmp_path: Path) -> None:
    jobs, _ = load_openb_pods(pod_csv(tmp_path / "pods.csv"))
    c = next(j for j in jobs if j.id == "p-c")
    assert c.affinity is not None and c.affinity.node_affinity is not None
    required = c.affinity.node_affinity.required
    assert required is not None
    (term,) = required.node_selector_terms
    (expr,) = term.match_expressions
    assert (expr.key, expr.operator, expr.values) == (GPU_MODEL_LABEL, "In", ("T4", "A10"))


def test_shared_gpu_pods_are_gpu_shares_not_whole_gpus(tmp_path: Path) -> None:
    """openb gpu_milli < 1000 with num_gpu 1 is a share of one GPU (FGD simulator's gpu-milli)."""
    jobs, warnings = load_openb_pods(pod_csv(tmp_path / "pods.csv"))
    shares = {j.id: j.gpu_milli for j in jobs if j.shares_gpu}
    assert shares == {"p-b": 250, "p-e": 500}
    assert all("nvidia.com/gpu" not in j.requests for j in jobs if j.shares_gpu)
    assert any("2 of 6 pods share a GPU" in w and "round_up_gpu_shares" in w for w in warnings)
    assert not any("rounded up" in w for w in warnings)


def test_shared_gpu_pods_are_rounded_up_with_one_warning(tmp_path: Path) -> None:
    jobs, warnings = load_openb_pods(pod_csv(tmp_path / "pods.csv"), round_up=True)
    assert not any(j.shares_gpu for j in jobs)
    assert {j.id: j.gpus_per_pod for j in jobs}["p-b"] == 1
    rounding = [w for w in warnings if "rounded up" in w]
    assert len(rounding) == 1
    assert "2 of 6 pods share a GPU" in rounding[0] and "1.2 GPUs more" in rounding[0]
    assert any("1 pod(s) ran for under 1 s" in w for w in warnings)
    assert any("1 pod(s) were never scheduled" in w for w in warnings)


def test_no_warning_without_shared_gpus(tmp_path: Path) -> None:
    _, warnings = load_openb_pods(pod_csv(tmp_path / "pods.csv", [PODS[0], PODS[5]]))
    assert warnings == []


def test_limit_and_time_scale(tmp_path: Path) -> None:
    path = pod_csv(tmp_path / "pods.csv")
    jobs, warnings = load_trace(
        path, TraceSource(path=str(path), format="alibaba-openb", limit=2, time_scale=0.1)
    )
    assert [j.id for j in jobs] == ["p-a", "p-b"]
    assert [j.submit_s for j in jobs] == [10.0, 20.0]
    assert jobs[0].runtime.default == pytest.approx(99.5) and jobs[1].runtime.default == pytest.approx(6.0)
    assert any("1 of 2 pods share a GPU" in w for w in warnings)


def test_variant_without_times_is_refused_with_an_explanation(tmp_path: Path) -> None:
    path = pod_csv(
        tmp_path / "multi.csv",
        ["m-a,4000,8192,2,1000", "m-b,1000,1024,0,0"],
        header="name,cpu_milli,memory_mib,num_gpu,gpu_milli",
    )
    error = pods_error(path)
    assert "no creation_time/deletion_time" in str(error)
    assert "multigpu" in str(error) and "replays" in str(error)


def test_gpu_shares_are_not_silently_dropped_by_the_native_writer(tmp_path: Path) -> None:
    jobs, _ = load_openb_pods(pod_csv(tmp_path / "pods.csv"))
    with pytest.raises(ValueError, match="GPU share"):
        write_native_trace(jobs, tmp_path / "native.csv")


def test_jobs_convert_to_a_native_trace(tmp_path: Path) -> None:
    jobs, _ = load_openb_pods(pod_csv(tmp_path / "pods.csv"), round_up=True)
    write_native_trace(jobs, tmp_path / "native.csv")
    assert load_native_trace(tmp_path / "native.csv")[0] == jobs


BAD_PODS = [
    ("p,x,1024,0,0,,LS,Running,0,10,0", "cpu_milli", "'x'", "whole number >= 0"),
    ("p,1000,-5,0,0,,LS,Running,0,10,0", "memory_mib", "'-5'", "whole number >= 0"),
    ("p,1000,1024,one,0,,LS,Running,0,10,0", "num_gpu", "'one'", "whole number >= 0"),
    ("p,1000,1024,1,1500,,LS,Running,0,10,0", "gpu_milli", "'1500'", "0..1000"),
    ("p,1000,1024,2,500,,LS,Running,0,10,0", "gpu_milli", "'500'", "only defined for num_gpu 1"),
    ("p,1000,1024,0,300,,LS,Running,0,10,0", "gpu_milli", "'300'", "needs num_gpu >= 1"),
    ("p,1000,1024,1,0,,LS,Running,0,10,0", "gpu_milli", "'0'", "needs gpu_milli 1..1000"),
    ("p,1000,1024,1,1000,H200X,LS,Running,0,10,0", "gpu_spec", "'H200X'", "unknown GPU model"),
    ("p,1000,1024,0,0,,Premium,Running,0,10,0", "qos", "'Premium'", "LS, BE, Burstable, Guaranteed"),
    ("p,1000,1024,0,0,,LS,Lost,0,10,0", "pod_phase", "'Lost'", "Running, Failed, Pending, Succeeded"),
    ("p,1000,1024,0,0,,LS,Running,later,10,0", "creation_time", "'later'", "number >= 0"),
    ("p,1000,1024,0,0,,LS,Running,0,,0", "deletion_time", "''", "required"),
    ("p,1000,1024,0,0,,LS,Running,50,10,50", "deletion_time", "'10'", "earlier than scheduled_time"),
]


@pytest.mark.parametrize(("row", "column", "value", "allowed"), BAD_PODS)
def test_bad_pod_cell_names_row_column_and_value(
    tmp_path: Path, row: str, column: str, value: str, allowed: str
) -> None:
    error = pods_error(pod_csv(tmp_path / "pods.csv", [PODS[0], row]))
    assert len(error.problems) == 1, error.problems
    message = error.problems[0]
    assert message.startswith("row 2 (id 'p')"), message
    assert f"column {column!r}" in message and f"value {value}" in message and allowed in message


def test_duplicate_names_and_missing_columns(tmp_path: Path) -> None:
    error = pods_error(pod_csv(tmp_path / "pods.csv", [PODS[0], PODS[0]]))
    assert "row 2 (id 'p-a'), column 'name'" in str(error) and "already used on row 1" in str(error)
    error = pods_error(pod_csv(tmp_path / "cols.csv", ["a,1"], header="name,cpu_milli"))
    assert "required column 'memory_mib' is missing" in str(error)


# --- nodes ------------------------------------------------------------------------------------------------

NODES = [
    "n-0,32000,131072,0,",
    "n-1,96000,393216,8,G2",
    "n-2,96000,393216,8,G2",
    "n-3,32000,262144,0,",
    "n-4,8000,61440,2,P100",
    "n-5,9500,61440,1,V100M16",
    "n-6,32000,131072,0,",
]


def test_nodes_group_into_pools_in_order_of_first_appearance(tmp_path: Path) -> None:
    cluster = load_openb_nodes(node_csv(tmp_path / "nodes.csv", NODES))
    assert [(p.name, p.count) for p in cluster.pools] == [
        ("openb-cpu-32cpu-128gi", 2),
        ("openb-g2-8gpu-96cpu", 2),
        ("openb-cpu-32cpu-256gi", 1),
        ("openb-p100-2gpu-8cpu", 1),
        ("openb-v100m16-1gpu-9500mcpu", 1),
    ]
    g2 = cluster.pools[1]
    assert (g2.gpu_model, g2.gpus_per_node, g2.cpu, g2.memory) == ("G2", 8, 96000, 384 * 1024**3)
    assert g2.labels == {GPU_MODEL_LABEL: "G2"} and g2.price_per_hour == 0
    assert g2.node_labels(0)[GPU_MODEL_LABEL] == "G2"
    cpu = cluster.pools[0]
    assert cpu.gpu_model is None and cpu.gpus_per_node == 0 and cpu.labels == {}
    assert GPU_MODEL_LABEL not in cpu.node_labels(0)
    assert cluster.node_count == 7
    assert sum(p.count * p.gpus_per_node for p in cluster.pools) == 19


@pytest.mark.parametrize(
    ("row", "column", "allowed"),
    [
        ("n,32000,1024,2,", "model", "needs a GPU model"),
        ("n,32000,1024,0,T4", "gpu", "needs gpu >= 1"),
        ("n,32000,1024,1,X9", "model", "unknown GPU model"),
        ("n,lots,1024,0,", "cpu_milli", "whole number"),
    ],
)
def test_bad_node_rows(tmp_path: Path, row: str, column: str, allowed: str) -> None:
    with pytest.raises(SpecError) as info:
        load_openb_nodes(node_csv(tmp_path / "nodes.csv", [NODES[0], row]))
    message = str(info.value)
    assert "row 2 (id 'n')" in message and f"column {column!r}" in message and allowed in message


def test_empty_node_list_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no rows"):
        load_openb_nodes(node_csv(tmp_path / "nodes.csv", []))


def test_openb_scenario(tmp_path: Path) -> None:
    nodes = node_csv(tmp_path / "nodes.csv", NODES)
    pods = pod_csv(tmp_path / "pods.csv")
    resolved = openb_scenario(nodes, pods, limit=4)
    assert resolved.scenario.name == "alibaba-openb"
    trace = resolved.scenario.workload.trace
    assert trace == TraceSource(path=str(pods), format="alibaba-openb", limit=4)
    assert resolved.scenario.cluster == load_openb_nodes(nodes)
    assert [j.id for j in resolved.jobs] == ["p-a", "p-b", "p-c", "p-d"]
    assert any("share a GPU" in w for w in resolved.warnings)


# --- the real trace (skipped without shared/) -------------------------------------------------------------


@needs_openb
def test_real_default_pod_list() -> None:
    jobs, warnings = load_openb_pods(OPENB / "openb_pod_list_default.csv")
    assert len(jobs) == 8152
    assert len({j.id for j in jobs}) == 8152
    assert any("3078 of 8152 pods share a GPU" in w for w in warnings)
    assert sum(1 for j in jobs if j.gpus_per_pod == 0 and not j.shares_gpu) == 1088
    assert sum(1 for j in jobs if j.shares_gpu) == 3078
    assert all(j.affinity is None for j in jobs)  # gpu_spec is empty throughout default
    assert all(j.runtime.default >= 1 for j in jobs)


@needs_openb
def test_real_gpuspec_list_has_affinity() -> None:
    jobs, _ = load_openb_pods(OPENB / "openb_pod_list_gpuspec33.csv", limit=2000)
    assert len(jobs) == 2000
    assert any(j.affinity is not None for j in jobs)


@needs_openb
def test_real_multigpu_list_is_refused() -> None:
    with pytest.raises(SpecError, match="no creation_time/deletion_time"):
        load_openb_pods(OPENB / "openb_pod_list_multigpu50.csv")


@needs_openb
def test_real_node_lists() -> None:
    gpu = load_openb_nodes(OPENB / "openb_node_list_gpu_node.csv")
    assert gpu.node_count == 1213
    assert sum(p.count * p.gpus_per_node for p in gpu.pools) == 6212
    assert sum(p.count * p.cpu for p in gpu.pools) == 107_018_000
    everything = load_openb_nodes(OPENB / "openb_node_list_all_node.csv")
    assert everything.node_count == 1523
    assert sum(p.count * p.gpus_per_node for p in everything.pools) == 6212
    assert sum(p.count for p in everything.pools if p.gpu_model is None) == 310


@needs_openb
def test_real_openb_scenario() -> None:
    resolved = openb_scenario(OPENB / "openb_node_list_gpu_node.csv", OPENB / "openb_pod_list_default.csv")
    assert len(resolved.jobs) == 8152
    assert resolved.scenario.cluster.node_count == 1213
    assert [j.submit_s for j in resolved.jobs] == sorted(j.submit_s for j in resolved.jobs)
