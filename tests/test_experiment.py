"""Experiment files, resumable sweeps and the DuckDB store, on a tiny scenario (milliseconds per run)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.experiment.engines import EngineError, LocalEngine, make_engine
from fleetlab.experiment.patch import PatchError, apply_patch
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.results import load_results
from fleetlab.experiment.store import DATABASE, TMP_PREFIX, run_folder
from fleetlab.experiment.sweep import MANIFEST, run_sweep

ROOT = Path(__file__).resolve().parents[1]

TINY = """\
name: tiny
seed: 1
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 10}
    - {name: cpu, count: 1, cpu: "32", memory: 128Gi, price_per_hour: 1}
workload:
  generator:
    classes:
      - name: exp
        class: experiment
        arrivals_per_hour: 60
        count: 16
        gpus_per_pod: {values: [1, 2, 4], weights: [3, 2, 1]}
        cpu_per_gpu: "4"
        memory_per_gpu: 32Gi
        duration: {kind: lognormal, median: 20m, sigma: 0.5}
"""

EXPERIMENT = """\
name: tiny-exp
base: tiny.yaml
seeds: [1, 2, 3]
metrics: [completion_mean_s, cost_total, queue_wait_mean_s]
variants:
  - name: base
  - name: pack
    policy: most-allocated
  - name: more-gpus
    set:
      cluster.pools[gpu].count: 3
"""


def write_experiment(folder: Path, text: str = EXPERIMENT) -> Path:
    (folder / "tiny.yaml").write_text(TINY)
    path = folder / "exp.yaml"
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str) -> str:
    from fleetlab.spec.errors import SpecError

    with pytest.raises(SpecError) as info:
        load_experiment(write_experiment(tmp_path, text))
    return str(info.value)


def test_example_experiment_file_is_valid() -> None:
    experiment = load_experiment(ROOT / "examples" / "experiments" / "placement.yaml")
    assert len(experiment.variants) == 6 and len(experiment.seeds) == 10
    assert experiment.variants[0].name == experiment.baseline
    h100 = experiment.variant("two-more-h100").scenario_data["cluster"]["pools"][0]
    assert h100["name"] == "h100" and h100["count"] == 8


def test_patch_paths_by_index_name_and_new_key() -> None:
    data = {"cluster": {"pools": [{"name": "a", "count": 1}, {"name": "b", "count": 2}]}}
    assert apply_patch(data, "cluster.pools[b].count", 5)["cluster"]["pools"][1]["count"] == 5
    assert apply_patch(data, "cluster.pools.0.count", 7)["cluster"]["pools"][0]["count"] == 7
    assert apply_patch(data, "scheduler.plugin_weights.ImageLocality", 0)["scheduler"] == {
        "plugin_weights": {"ImageLocality": 0}
    }
    assert data["cluster"]["pools"][1]["count"] == 2  # the base is not modified
    with pytest.raises(PatchError, match="no entry named 'c'"):
        apply_patch(data, "cluster.pools[c].count", 1)
    with pytest.raises(PatchError, match="out of range"):
        apply_patch(data, "cluster.pools[4].count", 1)


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        (
            "  - name: bad\n    policy: tightest\n",
            "variants[1] ('bad'): policy=tightest makes the scenario invalid: scheduler.policy: unknown policy 'tightest'",
        ),
        (
            "  - name: two\n    policy: bin-packing\n    scheduler: {preemption: false}\n",
            "variants[1] ('two'): states 2 changes",
        ),
        (
            "  - name: neg\n    set: {cluster.pools.0.count: -1}\n",
            "variants[1] ('neg'): cluster.pools.0.count=-1 makes the scenario invalid: cluster.pools[0].count",
        ),
        (
            "  - name: nowhere\n    set: {cluster.pools.7.count: 2}\n",
            "variants[1] ('nowhere'): set.cluster.pools.7.count",
        ),
        ("  - name: typo\n    polcy: bin-packing\n", "variants[1] ('typo').polcy: unknown field"),
        ("  - name: base\n", "variant name(s) used twice: base"),
    ],
)
def test_bad_variants_are_named_with_their_field(tmp_path: Path, variant: str, expected: str) -> None:
    text = "base: tiny.yaml\nvariants:\n  - name: base\n" + variant
    assert expected in error_of(tmp_path, text)


def test_bad_metric_and_missing_base_are_clear(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "base: tiny.yaml\nmetrics: [cost]\nvariants: [{name: a}]\n")
    assert "metrics: unknown metric(s) cost; allowed: jobs," in msg
    msg = error_of(tmp_path, "base: nope.yaml\nvariants: [{name: a}]\n")
    assert "nope.yaml: file not found" in msg


def test_cli_bad_experiment_exits_2_without_traceback(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, "base: tiny.yaml\nvariants:\n  - {name: a, policy: nope}\n")
    result = CliRunner().invoke(cli.app, ["experiment", "run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert (
        "variants[0] ('a'): policy=nope makes the scenario invalid: scheduler.policy: unknown policy 'nope'"
        in result.output
    )
    assert "Traceback" not in result.output


def _summaries(out: Path) -> dict[str, dict[str, object]]:
    manifest = json.loads((out / MANIFEST).read_text())
    return {run["key"]: run["summary"] for run in manifest["runs"]}


def test_killed_sweep_resumes_exactly_the_missing_runs(tmp_path: Path) -> None:
    experiment = load_experiment(write_experiment(tmp_path))
    out = tmp_path / "out"
    first = run_sweep(experiment, out, LocalEngine(1), limit=4)  # "killed" after 4 of 9 runs
    assert len(first.executed) == 4 and len(_summaries(out)) == 4
    # What a kill mid-run leaves: a temporary folder of the run being written, and a stray temp manifest.
    partial = run_folder(out, "pack", 3).parent / f"{TMP_PREFIX}seed-3-abc"
    partial.mkdir(parents=True)
    (partial / "jobs.parquet").write_bytes(b"PAR1 half")
    (out / f"{TMP_PREFIX}{MANIFEST}-xyz").write_text("{")
    # A run folder without its record (e.g. copied by hand, half): not finished, is redone.
    broken = run_folder(out, "more-gpus", 1)
    broken.mkdir(parents=True)
    (broken / "jobs.parquet").write_bytes(b"")
    second = run_sweep(experiment, out, LocalEngine(1))
    all_keys = {f"{v.name}/seed-{s}" for v in experiment.variants for s in experiment.seeds}
    assert set(second.kept) == set(first.executed)
    assert sorted(second.executed) == sorted(all_keys - set(first.executed))
    assert second.removed_strays == 1 and not partial.exists()
    manifest = json.loads((out / MANIFEST).read_text())
    planned = [f"{v.name}/seed-{seed}" for v in experiment.variants for seed in experiment.seeds]
    assert [r["key"] for r in manifest["runs"]] == planned  # each run once, in plan order
    assert len(manifest["runs"]) == 9 == len({r["key"] for r in manifest["runs"]})
    assert not list(out.rglob(f"{TMP_PREFIX}seed*"))
    third = run_sweep(experiment, out, LocalEngine(1))
    assert third.executed == [] and len(third.kept) == 9


def test_changed_variant_reruns_only_its_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sweep(load_experiment(write_experiment(tmp_path)), out, LocalEngine(1))
    changed = load_experiment(
        write_experiment(tmp_path, EXPERIMENT.replace("policy: most-allocated", "policy: bin-packing"))
    )
    outcome = run_sweep(changed, out, LocalEngine(1))
    assert sorted(outcome.executed) == ["pack/seed-1", "pack/seed-2", "pack/seed-3"]


def test_process_pool_gives_the_same_results_as_in_process(tmp_path: Path) -> None:
    experiment = load_experiment(write_experiment(tmp_path, EXPERIMENT.replace("[1, 2, 3]", "[1, 2]")))
    run_sweep(experiment, tmp_path / "one", LocalEngine(1))
    outcome = run_sweep(experiment, tmp_path / "two", LocalEngine(2))
    assert len(outcome.executed) == 6
    assert _summaries(tmp_path / "one") == _summaries(tmp_path / "two")


def test_paired_seeds_share_the_workload(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sweep(load_experiment(write_experiment(tmp_path)), out, LocalEngine(1))
    con = duckdb.connect(str(out / DATABASE), read_only=True)
    workloads = con.sql(
        "SELECT variant, seed, string_agg(job_id || ':' || submit_s, ',' ORDER BY job_id) AS w FROM jobs GROUP BY ALL"
    ).fetchall()
    by_seed: dict[int, set[str]] = {}
    for _, seed, w in workloads:
        by_seed.setdefault(seed, set()).add(w)
    assert all(len(ws) == 1 for ws in by_seed.values())  # each seed: the same workload in every variant
    assert len({next(iter(ws)) for ws in by_seed.values()}) == 3  # and different seeds differ


def test_duckdb_views_match_the_per_run_summaries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    experiment = load_experiment(write_experiment(tmp_path))
    run_sweep(experiment, out, LocalEngine(1))
    con = duckdb.connect(str(out / DATABASE), read_only=True)
    for variant in experiment.variants:
        for seed in experiment.seeds:
            record = json.loads((run_folder(out, variant.name, seed) / "run.json").read_text())
            s = record["summary"]
            jobs, done, jct = con.execute(
                "SELECT count(*), count(*) FILTER (state = 'completed'), avg(completion_s) FROM jobs "
                "WHERE variant = ? AND seed = ?",
                [variant.name, seed],
            ).fetchall()[0]
            assert (jobs, done) == (s["jobs"], s["jobs_completed"])
            assert jct == pytest.approx(s["completion_mean_s"])
            (billed,) = con.execute(
                "SELECT sum(cost_billed_usd) FROM costs WHERE variant = ? AND seed = ?", [variant.name, seed]
            ).fetchall()[0]
            assert billed == pytest.approx(s["cost_total"])
            row = con.execute(
                "SELECT cost_total, queue_wait_p95_s, change FROM runs WHERE variant = ? AND seed = ?",
                [variant.name, seed],
            ).fetchall()[0]
            assert row == (
                pytest.approx(s["cost_total"]),
                pytest.approx(s["queue_wait_p95_s"]),
                variant.change,
            )
    results = load_results(out)
    for name, seeds, cost in con.sql("SELECT variant, seeds, cost_total FROM variants").fetchall():
        values = [m["cost_total"] for m in results.samples[name].values()]
        assert seeds == 3 and cost == pytest.approx(sum(values) / len(values))
    assert con.sql("SELECT count(*) FROM queues").fetchall()[0] == (0,)  # no Kueue in this scenario
    assert "cluster_queue" in [c[0] for c in con.sql("DESCRIBE queues").fetchall()]
    assert con.sql("SELECT count(*) FROM timeline").fetchall()[0][0] > 0


def test_kueue_scenario_fills_the_queues_view(tmp_path: Path) -> None:
    from fleetlab.experiment.store import read_record

    base = ROOT / "examples" / "two-teams" / "baseline.yaml"
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"base: {base}\nseeds: [1]\nvariants: [{{name: a}}, {{name: b, scheduler: {{gang_scheduling: false}}}}]\n"
    )
    out = tmp_path / "out"
    run_sweep(load_experiment(path), out, LocalEngine(1))
    con = duckdb.connect(str(out / DATABASE), read_only=True)
    rows = con.sql(
        "SELECT variant, cluster_queue, jobs FROM queues WHERE flavor_resource LIKE '%gpu' ORDER BY ALL"
    ).fetchall()
    assert {(v, cq) for v, cq, _ in rows} == {
        ("a", "team-a"),
        ("a", "team-b"),
        ("b", "team-a"),
        ("b", "team-b"),
    }
    record = read_record(run_folder(out, "a", 1))
    assert record is not None
    assert sum(j for v, _, j in rows if v == "a") == record["summary"]["jobs"]


def test_ray_engine_without_ray_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as where Ray is not installed
    with pytest.raises(EngineError, match=r"pip install 'fleetlab\[ray\]'"):
        make_engine("ray")
    path = write_experiment(tmp_path)
    result = CliRunner().invoke(
        cli.app, ["experiment", "run", str(path), "--out", str(tmp_path / "o"), "--engine", "ray"]
    )
    assert result.exit_code == 2 and "pip install 'fleetlab[ray]'" in result.output


def test_cli_run_then_report(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, EXPERIMENT.replace("[1, 2, 3]", "[1, 2]"))
    out = tmp_path / "out"
    runner = CliRunner()
    result = runner.invoke(cli.app, ["experiment", "run", str(path), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "6 run(s) executed, 0 already finished" in result.output
    report = runner.invoke(cli.app, ["experiment", "report", str(out)])
    assert report.exit_code == 0
    for text in (
        "tiny-exp: 6/6 runs, baseline base",
        "pack",
        "more-gpus",
        "cluster.pools[gpu].count=3",
        "completion_mean_s",
    ):
        assert text in report.output
    assert report.output.startswith("Prices assumed")  # the assumptions come first, then the verdict
    assert "\nVerdict against base (2 paired seeds" in report.output
    as_json = runner.invoke(cli.app, ["experiment", "report", str(out), "--json"])
    assert as_json.exit_code == 0, as_json.output
    payload = json.loads(as_json.stdout)
    assert payload["baseline"] == "base" and payload["seeds"] == [1, 2] and payload["runs_finished"] == 6
    assert [v["candidate"] for v in payload["verdict"]] == ["pack", "more-gpus"]  # file order
    bad = runner.invoke(cli.app, ["experiment", "report", str(tmp_path)])
    assert bad.exit_code == 2 and "not the output folder" in bad.output
    assert not math.isnan(load_results(out).comparisons()[0].value.mean)


def test_patch_paths_address_kueue_objects_and_pools_by_name(tmp_path: Path) -> None:
    """``kueue[team-a]`` finds the object whose metadata.name is team-a; ``pools[h100]`` is short for
    ``cluster.pools[h100]``; a name two kinds share must say which kind it means."""
    data = {
        "cluster": {"pools": [{"name": "h100", "count": 6}]},
        "kueue": [
            {"kind": "ResourceFlavor", "metadata": {"name": "h100"}},
            {"kind": "ClusterQueue", "metadata": {"name": "h100"}, "spec": {"cohortName": "x"}},
            {"kind": "ClusterQueue", "metadata": {"name": "team-a"}, "spec": {"cohortName": "research"}},
        ],
    }
    patched = apply_patch(data, "kueue[team-a].spec.cohortName", "other")
    assert patched["kueue"][2]["spec"]["cohortName"] == "other"
    assert apply_patch(data, "pools[h100].count", 8)["cluster"]["pools"][0]["count"] == 8
    assert apply_patch(data, "kueue[ClusterQueue/h100].spec.cohortName", "y")["kueue"][1]["spec"] == {
        "cohortName": "y"
    }
    with pytest.raises(
        PatchError, match=r"2 entries are named 'h100'; pick one with \[ResourceFlavor/h100\]"
    ):
        apply_patch(data, "kueue[h100].spec", {})
    with pytest.raises(PatchError, match=r"no entry named 'team-c'.*ClusterQueue/team-a"):
        apply_patch(data, "kueue[team-c].spec.cohortName", "z")
    # End to end on the built-in two-teams scenario: the patched quota reaches the validated variant.
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        "base: two-teams\nseeds: [1]\nvariants:\n  - name: base\n  - name: no-quota-a\n    set:\n"
        "      kueue[team-a].spec.resourceGroups[0].flavors[h100].resources[nvidia.com/gpu].nominalQuota: 8\n"
        "  - name: more-h100\n    set:\n      pools[h100].count: 9\n",
        encoding="utf-8",
    )
    experiment = load_experiment(exp)
    quota = experiment.variant("no-quota-a").scenario_data["kueue"][2]["spec"]["resourceGroups"][0]
    assert quota["flavors"][0]["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 8}
    assert experiment.variant("more-h100").scenario_data["cluster"]["pools"][0]["count"] == 9


def test_ray_engine_refuses_a_second_cluster_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray keeps one connection per process: an engine for another address says so instead of silently
    running on the cluster already connected; the same address reuses the connection."""
    import types

    from fleetlab.experiment import engines

    calls: list[str | None] = []
    state = {"up": False}

    def init(address: str | None = None, **_: object) -> None:
        calls.append(address)
        state["up"] = True

    fake_ray = types.SimpleNamespace(is_initialized=lambda: state["up"], init=init)
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    monkeypatch.setattr(engines, "_connected", {})
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    make_engine("ray", None, "ray://10.0.0.1:10001")
    make_engine("ray", None, "ray://10.0.0.1:10001")  # the same cluster: reused, not initialised again
    assert calls == ["ray://10.0.0.1:10001"]
    with pytest.raises(
        EngineError, match=r"already connected to the Ray cluster at ray://10\.0\.0\.1:10001, "
    ):
        make_engine("ray", None, "ray://10.0.0.2:10001")
    with pytest.raises(EngineError, match="not to a Ray started in this process"):
        make_engine("ray")
