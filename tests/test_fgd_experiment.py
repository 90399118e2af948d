"""The FGD experiment protocol (upstream ``Simulate``: shuffle, inflate to 130 % of GPU capacity, arrivals
only), its report files and the ``fleetlab fgd-experiment`` command. Runs on the real openb trace are
skipped when it is absent; the rest use invented rows in the trace's format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cli.fgd import parse_seeds
from fleetlab.experiment.fgd import (
    INFLATION,
    Trajectory,
    arrival_order,
    ordered_state,
    renamed_prefixes,
    run_grid,
    run_policy,
    tie_order,
)
from fleetlab.experiment.fgd_report import markdown_table, summary_cells, write_report
from fleetlab.placement.fragmentation import target_workload
from fleetlab.placement.share_policies import place
from fleetlab.placement.sharing import PodRequest
from fleetlab.spec.errors import SpecError
from fleetlab.spec.openb_share import ShareNodes, load_share_nodes, load_share_pods
from fleetlab.spec.openb_variants import find_trace_dir, resolve_variants, subsample
from fleetlab.spec.out_folder import MARKER, mark

OPENB = find_trace_dir(Path(__file__).resolve().parent)
needs_openb = pytest.mark.skipif(
    OPENB is None or not (OPENB / "openb_pod_list_default.csv").is_file(),
    reason="shared/traces/alibaba-gpu-v2023 not available",
)

NODES = """sn,cpu_milli,memory_mib,gpu,model
node-b,32000,131072,4,T4
node-a,64000,262144,8,G2
node-c,16000,65536,2,P100
node-d,32000,131072,0,
"""


def _pods_csv(path: Path, rng: np.random.Generator, n: int = 60) -> Path:
    shapes = [(4000, 1, 500), (8000, 1, 1000), (2000, 0, 0), (4000, 1, 250), (16000, 2, 1000), (3000, 1, 750)]
    lines = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    for i in range(n):
        cpu, gpus, milli = shapes[int(rng.integers(len(shapes)))]
        spec = "T4|P100" if i % 7 == 0 and gpus else ""
        lines.append(f"pod-{i:04d},{cpu},1024,{gpus},{milli},{spec}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def mini_trace(tmp_path: Path) -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "openb_node_list_gpu_node.csv").write_text(NODES, encoding="utf-8")
    _pods_csv(folder / "openb_pod_list_default.csv", np.random.default_rng(3))
    _pods_csv(folder / "openb_pod_list_gpushare40.csv", np.random.default_rng(4), n=40)
    return folder


def test_nodes_are_ordered_by_name_for_upstreams_tie_break(mini_trace: Path) -> None:
    nodes = load_share_nodes(mini_trace / "openb_node_list_gpu_node.csv")
    assert nodes.names == ["node-a", "node-b", "node-c", "node-d"]
    assert nodes.gpus.tolist() == [8, 4, 2, 0]


def test_arrivals_are_all_pods_shuffled_then_clones_up_to_130_percent() -> None:
    names = [f"p{i:03d}" for i in range(50)]
    demand = np.asarray([1000] * 25 + [500] * 25, dtype=np.int64)
    order = arrival_order(names, demand, capacity_milli=40_000, seed=42)
    assert sorted(order[:50].tolist()) == list(range(50))
    assert order[:50].tolist() != list(range(50))
    total = int(demand[order].sum())
    assert 37_500 <= total <= INFLATION * 40_000 and total > 52_000 - 1000
    assert np.array_equal(order, arrival_order(names, demand, 40_000, seed=42))
    assert not np.array_equal(order, arrival_order(names, demand, 40_000, seed=43))


def test_arrivals_drop_random_pods_when_the_workload_is_above_130_percent() -> None:
    names = [f"p{i:03d}" for i in range(100)]
    demand = np.full(100, 1000, dtype=np.int64)
    order = arrival_order(names, demand, capacity_milli=50_000, seed=1)
    assert len(order) == 65 and len(set(order.tolist())) == 65


def test_unallocated_percent_is_read_after_the_last_arrival_in_each_bin() -> None:
    run = Trajectory(
        "v",
        "p",
        1,
        np.asarray([400, 1000, 1004, 1500]),
        np.asarray([400, 1000, 1000, 1000]),
        np.zeros(4),
        failed=2,
        capacity_milli=1000,
        wall_s=0.0,
    )
    unalloc, _ = run.by_percent(top=150)
    assert np.isnan(unalloc[39])
    assert unalloc[40] == pytest.approx(60.0) and unalloc[99] == pytest.approx(60.0)
    assert unalloc[100] == pytest.approx(0.0) and unalloc[150] == pytest.approx(0.0)


def test_mini_trace_runs_are_deterministic_and_within_capacity(mini_trace: Path) -> None:
    nodes = load_share_nodes(mini_trace / "openb_node_list_gpu_node.csv")
    pods = load_share_pods(mini_trace / "openb_pod_list_default.csv", nodes.models)
    for policy in ("fgd", "bestfit", "random"):
        first, again = run_policy(nodes, pods, policy, 5), run_policy(nodes, pods, policy, 5)
        assert np.array_equal(first.allocated_milli, again.allocated_milli)
        assert np.array_equal(first.frag_milli, again.frag_milli)
        assert first.allocated_milli[-1] <= first.capacity_milli
        assert first.failed > 0  # the workload is inflated past capacity


def test_report_files_and_table(mini_trace: Path, tmp_path: Path) -> None:
    nodes = load_share_nodes(mini_trace / "openb_node_list_gpu_node.csv")
    workloads = {
        v: load_share_pods(mini_trace / f"openb_pod_list_{v}.csv", nodes.models)
        for v in ("default", "gpushare40")
    }
    runs = run_grid(nodes, workloads, ["fgd", "bestfit"], [1, 2], jobs=1)
    assert [(r.variant, r.policy, r.seed) for r in runs][:3] == [
        ("default", "fgd", 1),
        ("default", "fgd", 2),
        ("default", "bestfit", 1),
    ]
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old", encoding="utf-8")
    mark(out)  # an earlier report: fleetlab's own folder, so it may be replaced
    assert write_report(runs, out) == []
    assert sorted(p.name for p in out.iterdir()) == [
        MARKER,
        "curves.csv",
        "curves.parquet",
        "runs.csv",
        "summary.csv",
        "table.md",
        "unallocated.html",
    ]
    with (out / "summary.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["variant"], r["policy"], r["seeds"]) for r in rows] == [
        ("default", "fgd", "2"),
        ("default", "bestfit", "2"),
        ("gpushare40", "fgd", "2"),
        ("gpushare40", "bestfit", "2"),
    ]
    table = markdown_table(summary_cells(runs))
    assert "| default |" in table and "±" in table and "**" in table
    assert "plotly" in (out / "unallocated.html").read_text(encoding="utf-8")
    again = tmp_path / "again"
    write_report(run_grid(nodes, workloads, ["fgd", "bestfit"], [1, 2], jobs=1), again)
    for name in ("curves.csv", "curves.parquet", "runs.csv", "summary.csv", "table.md", "unallocated.html"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name


def test_parallel_grid_gives_the_same_results(mini_trace: Path) -> None:
    nodes = load_share_nodes(mini_trace / "openb_node_list_gpu_node.csv")
    workloads = {"default": load_share_pods(mini_trace / "openb_pod_list_default.csv", nodes.models)}
    serial = run_grid(nodes, workloads, ["fgd", "packing"], [1, 2], jobs=1)
    parallel = run_grid(nodes, workloads, ["fgd", "packing"], [1, 2], jobs=2)
    assert [r.allocated_milli.tolist() for r in serial] == [r.allocated_milli.tolist() for r in parallel]


def test_variant_families_and_seed_ranges() -> None:
    assert resolve_variants(["gpushare", "default", "gpushare40"]) == [
        "gpushare40",
        "gpushare60",
        "gpushare80",
        "gpushare100",
        "default",
    ]
    assert len(resolve_variants(["paper"])) == 17
    with pytest.raises(SpecError, match="unknown pod list 'gpushare50'"):
        resolve_variants(["gpushare50"])
    assert parse_seeds("42-44,47") == [42, 43, 44, 47]
    with pytest.raises(ValueError, match="not a seed"):
        parse_seeds("4x")


def _invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli.app, list(args), env=env)


def test_cli_runs_on_a_trace_folder(mini_trace: Path, tmp_path: Path) -> None:
    result = _invoke(
        "fgd-experiment",
        "--out",
        str(tmp_path / "o"),
        "--trace-dir",
        str(mini_trace),
        "--seeds",
        "1-2",
        "--policy",
        "fgd",
        "--policy",
        "bestfit",
        "--variant",
        "default",
    )
    assert result.exit_code == 0, result.output
    assert "| default |" in result.output and "fgd:" in result.output
    assert (tmp_path / "o" / "curves.parquet").is_file()


def test_cli_says_where_to_get_the_trace(tmp_path: Path) -> None:
    result = _invoke(
        "fgd-experiment", "--out", str(tmp_path / "o"), env={"FLEETLAB_OPENB_DIR": str(tmp_path)}
    )
    assert result.exit_code == 2
    assert (
        "openb_node_list_gpu_node.csv is missing" in result.output and "alibaba/clusterdata" in result.output
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "tetris"], "--policy tetris: unknown"),
        (["--seeds", "9-3"], "runs backwards"),
        (["--seeds", "[/x]"], "'[/x]' is not a seed"),  # shown as typed, not parsed as rich markup
        (["--variant", "cpu999"], "unknown pod list"),
        (["--sample", "2"], "not a fraction"),
    ],
)
def test_cli_rejects_bad_options(mini_trace: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = _invoke("fgd-experiment", "--out", str(tmp_path / "o"), "--trace-dir", str(mini_trace), *args)
    assert result.exit_code == 2 and message in result.output, result.output


@needs_openb
def test_fgd_leaves_fewest_gpus_unallocated_on_a_sample_of_openb() -> None:
    """Fig. 9(a): at 100 % arrived, FGD's unallocated GPU share is below every baseline's (a quarter of the
    cluster and workload, two seeds)."""
    assert OPENB is not None
    nodes = load_share_nodes(OPENB / "openb_node_list_gpu_node.csv")
    pods = load_share_pods(OPENB / "openb_pod_list_default.csv", nodes.models)
    small, sample = subsample(nodes, pods, 0.25)
    runs = run_grid(
        small, {"default": sample}, ["random", "dotprod", "clustering", "packing", "bestfit", "fgd"], [42, 43]
    )
    means = {c.policy: c.mean for c in summary_cells(runs)}
    assert all(means["fgd"] < v for p, v in means.items() if p != "fgd"), means
    assert means["fgd"] < 8.0 and means["random"] > 10.0, means


def test_five_column_pod_lists_load_and_bad_cells_are_named(tmp_path: Path) -> None:
    """multigpu* files have only name,cpu_milli,memory_mib,num_gpu,gpu_milli; bad cells name row and column."""
    good = tmp_path / "openb_pod_list_multigpu20.csv"
    good.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,8,1000\np1,500,10,0,0\n", encoding="utf-8"
    )
    pods = load_share_pods(good, ["G2"])
    assert pods.num_gpu.tolist() == [8, 0] and pods.model_mask.tolist() == [0, 0]
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,2,500\np1,x,10,1,1500\n", encoding="utf-8"
    )
    with pytest.raises(SpecError) as info:
        load_share_pods(bad, ["G2"])
    text = str(info.value)
    assert "a share below 1000 needs num_gpu 1" in text and "cpu_milli" in text and "1500" in text


def test_ties_follow_upstreams_renamed_node_names() -> None:
    """Upstream's ``syncClusterResourceList`` renames the name-sorted nodes ``%04d-<name>`` with a random
    permutation; the smallest renamed name wins a tie. Prefixes (2, 0, 3, 1) for nodes a, b, c, d give
    0002-a, 0000-b, 0003-c, 0001-d, so ties go to b, then d, a, c."""
    names = ["node-a", "node-b", "node-c", "node-d"]
    prefixes = np.asarray([2, 0, 3, 1], dtype=np.int64)
    renamed = [f"{p:04d}-{n}" for p, n in zip(prefixes.tolist(), names, strict=True)]
    assert tie_order(prefixes).tolist() == [1, 3, 0, 2]
    assert [names[i] for i in tie_order(prefixes)] == [r[5:] for r in sorted(renamed)]
    drawn = renamed_prefixes(1213, 42)
    assert sorted(drawn.tolist()) == list(range(1213))
    assert np.array_equal(drawn, renamed_prefixes(1213, 42))
    assert not np.array_equal(drawn, renamed_prefixes(1213, 43))


def test_packing_puts_cpu_only_pods_on_the_first_renamed_node() -> None:
    """GpuPacking scores a CPU-only pod 0 on every node, so the tie-break decides. Node a has 8 cores and
    1 GPU, node b 64 cores and 1 GPU. Renamed 0001-a, 0000-b: the 8-core CPU-only pod goes to b; two
    1-GPU pods of 4 cores then tie at 33 - 1 = 32 on the two nodes whose GPU is free and take b, then a: both GPUs
    allocated. In name order the CPU-only pod fills a's CPU, the first GPU pod takes b and the second
    finds no node: 1 GPU of 2."""
    nodes = ShareNodes(
        ["node-a", "node-b"],
        np.asarray([8000, 64000], dtype=np.int64),
        np.asarray([65536, 65536], dtype=np.int64),
        np.asarray([1, 1], dtype=np.int64),
        np.asarray([0, 0], dtype=np.int64),
        ["T4"],
    )
    pods = [
        PodRequest(8000, 1024, 0, 0, 0),
        PodRequest(4000, 1024, 1, 1000, 0),
        PodRequest(4000, 1024, 1, 1000, 0),
    ]
    target = target_workload(
        np.asarray([8000, 4000]), np.asarray([0, 1]), np.asarray([0, 1000]), np.zeros(2, dtype=np.int64)
    )
    rng = np.random.default_rng(0)
    renamed = tie_order(np.asarray([1, 0], dtype=np.int64))
    by_name = np.arange(2, dtype=np.int64)
    for ranked, where in ((renamed, ["node-b", "node-b", "node-a"]), (by_name, ["node-a", "node-b", None])):
        state = ordered_state(nodes, target, ranked)
        placed: list[str | None] = []
        for pod in pods:
            choice = place(state, pod, "packing", rng)
            placed.append(None if choice is None else nodes.names[int(ranked[choice.node])])
            if choice is not None:
                state.bind(pod, choice.node, choice.gpu)
        assert placed == where
        assert state.allocated_milli == (2000 if where[-1] else 1000)
