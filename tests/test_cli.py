"""The ``fleetlab`` command end to end: tables, JSON, --out files, determinism, and bad input (exit 2).

The built-in default scenario is simulated six times in all (``compare`` with its four default policies
once, and two policies through the Python API for the acceptance check); everything else uses a small
generated scenario that runs in milliseconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from fleetlab import cli
from fleetlab.experiment.run import compare
from fleetlab.metrics.summary import summarize
from fleetlab.model.policy_names import DEFAULT_COMPARE
from fleetlab.placement.profiles import PRESETS
from fleetlab.spec.loader import load
from fleetlab.spec.out_folder import MARKER, mark

RUN_FILES = (
    "jobs.parquet",
    "ledger.parquet",
    "nodes.parquet",
    "pods.parquet",
    "segments.parquet",
    "timeline.parquet",
    "summary.json",
)

# 3 GPU nodes and 2 CPU nodes, 50 generated jobs: enough contention for queueing and score ties.
SMALL = """\
name: small
seed: 1
cluster:
  pools:
    - {name: gpu, count: 3, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 10}
    - {name: cpu, count: 2, cpu: "32", memory: 128Gi, price_per_hour: 1}
workload:
  generator:
    classes:
      - name: exp
        class: experiment
        arrivals_per_hour: 60
        count: 40
        gpus_per_pod: {values: [1, 2, 4], weights: [3, 2, 1]}
        cpu_per_gpu: "4"
        memory_per_gpu: 32Gi
        duration: {kind: lognormal, median: 20m, sigma: 0.5}
      - name: etl
        class: batch
        arrivals_per_hour: 30
        count: 10
        gpus_per_pod: {values: [0]}
        cpu_per_pod: "8"
        memory_per_pod: 16Gi
        duration: {kind: fixed, median: 10m}
"""

OVERSIZED = """\
name: oversized
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi}
workload:
  jobs:
    - {id: fits-job, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}, runtime: 10m}
    - {id: huge-job, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 16}, runtime: 10m}
"""

BAD_GPU = """\
name: bad
cluster:
  pools:
    - {name: gpu, count: 1, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi}
    - {name: other, count: 1, gpu_model: H900, gpus_per_node: 8, cpu: "64", memory: 512Gi}
workload:
  jobs:
    - {id: j1, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}, runtime: 10m}
"""


def invoke(*args: str) -> Result:
    """Run the typer app in-process with wide, colourless consoles (rich would wrap at 80 columns)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "out_console", Console(width=250, color_system=None))
        mp.setattr(cli, "err_console", Console(width=250, color_system=None, stderr=True))
        return CliRunner().invoke(cli.app, list(args))


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_clean_failure(result: Result, *needles: str) -> None:
    """Exit 2, one ``error:`` paragraph on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("scenarios")
    out: dict[str, Path] = {}
    for name, text in {"small": SMALL, "oversized": OVERSIZED, "bad": BAD_GPU}.items():
        out[name] = folder / f"{name}.yaml"
        out[name].write_text(text, encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def default_compare() -> Result:
    """``fleetlab compare`` with no arguments: the built-in scenario under the four default policies."""
    return invoke("compare")


@pytest.fixture()
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# --- compare ------------------------------------------------------------------------------------------------


def test_compare_without_arguments_prints_the_default_table(default_compare: Result) -> None:
    assert default_compare.exit_code == 0, default_compare.output
    out = default_compare.stdout
    header = next(line for line in out.splitlines() if "metric" in line)
    columns = [cell.strip() for cell in header.strip("┃│ ").split("┃")]
    # each candidate's level, then its paired difference to the first column, in a column of its own
    deltas = [[x, "Δ"] for x in DEFAULT_COMPARE[1:]]
    assert columns == ["metric", "default", *(c for pair in deltas for c in pair)]
    assert list(DEFAULT_COMPARE) == ["default", "least-allocated", "most-allocated", "bin-packing"]
    for row in ("queue wait p99", "idle GPU-hours", "cost per completed job", "whole free GPU nodes (mean)"):
        assert row in out
    # The assumptions come first, then the verdict against the first column, over five paired seeds from
    # the scenario's 7.
    assert out.startswith("Prices assumed (per node-hour")
    assert "\nVerdict against default (5 paired seeds, 95% intervals" in out
    title = next(line for line in out.splitlines() if line.startswith("default: "))
    assert "922 jobs on 24 nodes, seeds 7–11 (5, paired)" in title
    for candidate in DEFAULT_COMPARE[1:]:
        assert f"\n  {candidate}: " in out
    assert "jobs completed / running / pending / failed" in out
    assert "zero in every run, not shown:" in out and "data storage" in out.split("zero in every run")[1]


def test_readme_excerpt_is_what_compare_prints(default_compare: Result) -> None:
    """The README quotes this run: every line of its excerpt (but the elision) is in today's output."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    excerpt = readme.split("```text\n", 1)[1].split("```", 1)[0]
    lines = [line for line in excerpt.splitlines() if line.strip() != "..."]
    assert len(lines) >= 4
    for line in lines:
        assert line in default_compare.stdout.splitlines(), line
    assert "(922 jobs on 24 nodes)" in readme and "922 jobs on 24 nodes" in default_compare.stdout
    assert "Traceback" not in default_compare.output


def test_compare_with_two_policies_shows_just_those(files: dict[str, Path]) -> None:
    result = invoke(
        "compare", str(files["small"]), "--policy", "most-allocated", "--policy", "least-allocated"
    )
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if "metric" in line)
    columns = [cell.strip() for cell in header.strip("┃│ ").split("┃")]
    assert columns == ["metric", "most-allocated", "least-allocated", "Δ"]
    assert "bin-packing" not in result.stdout
    assert "default" not in result.stdout


def test_compare_repeated_policy_is_run_once(files: dict[str, Path]) -> None:
    result = invoke("compare", str(files["small"]), "--policy", "bin-packing", "--policy", "bin-packing")
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if "metric" in line)
    assert header.count("bin-packing") == 1


def test_compare_out_writes_one_folder_per_policy_and_is_deterministic(
    files: dict[str, Path], tmp_path: Path
) -> None:
    args = ("compare", str(files["small"]), "--policy", "most-allocated", "--policy", "least-allocated")
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        result = invoke(*args, "--out", str(out))
        assert result.exit_code == 0, result.output
        assert f"results written to {out}" in result.stdout
    assert sorted(p.name for p in first.iterdir()) == [
        MARKER,
        "comparison.json",
        "least-allocated",
        "most-allocated",
        "summary.json",
    ]
    for policy in ("most-allocated", "least-allocated"):
        assert sorted(p.name for p in (first / policy).iterdir()) == sorted(RUN_FILES)
        per_run = json.loads((first / policy / "summary.json").read_text())
        assert per_run["policy"] == policy
    combined = json.loads((first / "summary.json").read_text())
    assert [run["policy"] for run in combined["runs"]] == ["most-allocated", "least-allocated"]
    assert tree_bytes(first) == tree_bytes(second)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no staging folders left behind


def test_compare_out_keeps_every_run_when_labels_collide(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        "compare", str(files["small"]), "--policy", "scenario", "--policy", "default", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    runs = json.loads((out / "summary.json").read_text())["runs"]
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == len(runs) == 2
    comparison = json.loads((out / "comparison.json").read_text())
    assert comparison["columns"] == [run["policy"] for run in runs] and len(comparison["seeds"]) == 5


# --- simulate -----------------------------------------------------------------------------------------------


def test_simulate_json(files: dict[str, Path]) -> None:
    result = invoke("simulate", str(files["small"]), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    for key in (
        "policy",
        "jobs",
        "jobs_completed",
        "jobs_pending",
        "queue_wait_p99_s",
        "cost_total",
        "cost_per_completed_job",
        "whole_free_gpu_nodes_mean",
        "gpu_hours_idle",
        "makespan_s",
    ):
        assert key in summary
    assert summary["policy"] == "default"
    assert summary["jobs"] == 50
    assert summary["jobs_completed"] + summary["jobs_pending"] <= summary["jobs"]
    assert summary["cost_total"] > 0


def test_simulate_table(files: dict[str, Path]) -> None:
    result = invoke("simulate", str(files["small"]), "--policy", "most-allocated")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("small: 50 jobs on 5 nodes, seed 1")
    assert "most-allocated" in result.stdout
    assert "cost per completed job" in result.stdout


def test_simulate_out_writes_files_and_is_deterministic(files: dict[str, Path], tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        result = invoke("simulate", str(files["small"]), "--out", str(out))
        assert result.exit_code == 0, result.output
        assert f"results written to {out}" in result.stdout
    assert sorted(p.name for p in first.iterdir()) == sorted([*RUN_FILES, MARKER])
    assert tree_bytes(first) == tree_bytes(second)
    payload = json.loads((first / "summary.json").read_text())
    assert payload["seed"] == 1
    assert payload["policy"] == "default"
    assert payload["summary"]["jobs"] == 50
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_simulate_out_replaces_previous_results(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    mark(out)  # an earlier run: fleetlab's own folder, so it may be replaced
    result = invoke("simulate", str(files["small"]), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted([*RUN_FILES, MARKER])


def test_simulate_json_and_out_together(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("simulate", str(files["small"]), "--json", "--out", str(out))
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert printed == json.loads((out / "summary.json").read_text())["summary"]


def test_different_seed_changes_the_summary(files: dict[str, Path], tmp_path: Path) -> None:
    base = json.loads(invoke("simulate", str(files["small"]), "--json").stdout)
    reseeded = invoke("simulate", str(files["small"]), "--json", "--seed", "2")
    assert reseeded.exit_code == 0, reseeded.output
    assert json.loads(reseeded.stdout) != base
    out = tmp_path / "out"
    assert invoke("simulate", str(files["small"]), "--seed", "2", "--out", str(out)).exit_code == 0
    assert json.loads((out / "summary.json").read_text())["seed"] == 2


def test_seed_option_equals_seed_in_file(files: dict[str, Path], tmp_path: Path) -> None:
    reseeded_file = tmp_path / "seed2.yaml"
    reseeded_file.write_text(SMALL.replace("seed: 1\n", "seed: 2\n"), encoding="utf-8")
    via_option = json.loads(invoke("simulate", str(files["small"]), "--json", "--seed", "2").stdout)
    via_file = json.loads(invoke("simulate", str(reseeded_file), "--json").stdout)
    assert via_option == via_file


# --- bad input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_bad_scenario_exits_2_and_writes_nothing(
    files: dict[str, Path], tmp_path: Path, command: str
) -> None:
    out = tmp_path / "out"
    result = invoke(command, str(files["bad"]), "--out", str(out))
    assert_clean_failure(result, str(files["bad"]), "cluster.pools[1].gpu_model", "'H900'", "known models:")
    assert list(tmp_path.iterdir()) == []


def test_validate_bad_scenario_exits_2(files: dict[str, Path]) -> None:
    assert_clean_failure(
        invoke("validate", str(files["bad"])), str(files["bad"]), "cluster.pools[1].gpu_model"
    )


def test_missing_scenario_file_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert_clean_failure(invoke("simulate", str(missing)), str(missing), "file not found")


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_unknown_policy_exits_2(files: dict[str, Path], tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    result = invoke(command, str(files["small"]), "--policy", "nope", "--out", str(out))
    assert_clean_failure(result, "unknown policy 'nope'", *PRESETS)
    assert list(tmp_path.iterdir()) == []


def test_bad_scenario_through_the_console_script(files: dict[str, Path], tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("fleetlab")
    if not script.exists():
        found = shutil.which("fleetlab")
        script = Path(found) if found else script
    command = [str(script)] if script.exists() else [sys.executable, "-m", "fleetlab.cli"]
    out = tmp_path / "out"
    proc = subprocess.run(
        [*command, "compare", str(files["bad"]), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250", "NO_COLOR": "1"},
        check=False,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("error: ")
    assert str(files["bad"]) in proc.stderr
    assert "cluster.pools[1].gpu_model" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stdout == ""
    assert not out.exists()


def test_out_is_an_existing_file(files: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "results"
    target.write_text("not a folder")
    result = invoke("simulate", str(files["small"]), "--out", str(target))
    assert_clean_failure(result, str(target))
    assert target.read_text() == "not a folder"


def test_unknown_policy_in_file_names_file_and_path(tmp_path: Path) -> None:
    scenario = tmp_path / "policy.yaml"
    scenario.write_text(SMALL + "scheduler: {policy: foo}\n", encoding="utf-8")
    assert_clean_failure(invoke("validate", str(scenario)), str(scenario), "scheduler.policy", "'foo'")


def test_out_folder_honours_umask(files: dict[str, Path], tmp_path: Path, umask_022: None) -> None:
    out = tmp_path / "out"
    assert invoke("simulate", str(files["small"]), "--out", str(out)).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o755


# --- validate and policies ----------------------------------------------------------------------------------


def test_validate_builtin_default_file() -> None:
    path = resources.files("fleetlab") / "scenarios" / "default.yaml"
    result = invoke("validate", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{path}: ok")
    assert "node pool(s)" in result.stdout
    assert "policy default" in result.stdout
    assert "warning" not in result.output


def test_validate_warns_about_a_job_no_node_can_hold(files: dict[str, Path]) -> None:
    result = invoke("validate", str(files["oversized"]))
    assert result.exit_code == 0, result.output
    assert ": ok" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, result.stderr
    assert "huge-job" in warnings[0]
    assert "nvidia.com/gpu=16" in warnings[0]
    assert "fits-job" not in result.stderr


def test_policies_lists_the_presets() -> None:
    result = invoke("policies")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for name, (_, _, _, description) in PRESETS.items():
        assert f"{name}: {description}" in lines
    assert set(PRESETS) >= set(DEFAULT_COMPARE)
    assert "built-in scenarios: default" in result.stdout


def test_no_arguments_prints_help() -> None:
    result = invoke()
    assert "simulate" in result.output and "compare" in result.output and "validate" in result.output


# --- acceptance check of the foundation ---------------------------------------------------------------------


def test_packing_keeps_more_whole_gpu_nodes_free_on_the_default_scenario() -> None:
    runs = compare(load(None), ["most-allocated", "least-allocated"])
    free = {run.label: summarize(run.result).whole_free_gpu_nodes_mean for run in runs}
    assert free["most-allocated"] > free["least-allocated"], free


def test_error_text_in_square_brackets_is_shown_verbatim(tmp_path: Path) -> None:
    """A path such as `runs/[team]/x.yaml` must not be swallowed as console markup."""
    folder = tmp_path / "[team]"
    folder.mkdir()
    bad = folder / "bad.yaml"
    bad.write_text("name: x\n")
    result = CliRunner().invoke(cli.app, ["simulate", str(bad)])
    assert result.exit_code == 2
    assert "[team]" in result.output, result.output


def test_an_output_path_with_markup_like_text_is_printed_as_is(tmp_path: Path) -> None:
    """Paths are user text: a folder named like a rich closing tag must not break the final message."""
    out = tmp_path / "[/x]"
    result = CliRunner().invoke(cli.app, ["simulate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"results written to {out}" in result.output
