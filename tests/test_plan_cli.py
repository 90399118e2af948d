"""``fleetlab plan gpus`` end to end on the built-in catalogs: table, JSON rows, the more-vs-faster
comparison, the plotly page, and bad input (unknown GPU, instance not in the catalog, negative values)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plan"
runner = CliRunner()


def test_gpus_json_rows_are_priced_and_sorted() -> None:
    result = runner.invoke(
        cli.app, ["plan", "gpus", str(EXAMPLES / "llm-finetune.yaml"), "--json", "--cloud", "aws"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = data["rows"]
    assert {r["cloud"] for r in rows} == {"aws"}
    costs = [r["cost_usd"] for r in rows]
    assert costs == sorted(costs)
    for r in rows:
        assert r["cost_usd"] == pytest.approx(r["instances"] * r["price_per_hour"] * r["hours"])
    p5 = next(
        r
        for r in rows
        if r["instance_type"] == "p5.48xlarge"
        and r["capacity_type"] == "on-demand"
        and r["region"] == "us-east-1"
    )
    assert p5["price_per_hour"] == 55.04 and p5["layout"] == "1x8"
    # A100-40GB cannot hold the profile's 60 GB per GPU
    assert all(r["gpu"] != "A100-40GB" for r in rows)
    assert any("A100-40GB: 60 GB per GPU needed" in e for e in data["excluded"])
    labels = [o["option"] for o in data["more_vs_faster"]]
    assert labels == ["A100-80GB x 8", "A100-80GB x 16", "A100-80GB x 32", "H100 x 8 (next model up)"]


def test_gpus_table_inference_and_html(tmp_path: Path) -> None:
    page = tmp_path / "plan.html"
    result = runner.invoke(
        cli.app,
        ["plan", "gpus", str(EXAMPLES / "chat-serving.yaml"), "--capacity", "on-demand", "--html", str(page)],
    )
    assert result.exit_code == 0, result.output
    assert "$ for the window" in result.stdout and "latency" in result.stdout
    text = page.read_text()
    assert "<html" in text and "plotly" in text and "chat-serving" in text


def test_gpus_from_flags() -> None:
    args = ["plan", "gpus", "--reference-gpu", "H100", "--throughput", "500", "--steps", "100",
            "--samples-per-step", "4000", "--gpu", "H100", "--gpu", "B200", "--json"]  # fmt: skip
    data = json.loads(runner.invoke(cli.app, args).stdout)
    assert {r["gpu"] for r in data["rows"]} == {"H100", "B200"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "X100"], "--gpu X100: unknown GPU model"),
        (["--instance", "p9.huge"], "--instance p9.huge: not in the catalog"),
        (["--region", "mars-1"], "--region mars-1: not in the catalog"),
        (["--capacity", "reserved"], "allowed: on-demand, spot"),
        (["--cloud", "oracle"], "unknown cloud; allowed: aws, gcp, azure"),
        (["--gpus", "-2"], "--gpus"),
        (["--network-gbps", "-1"], "--network-gbps"),
    ],
)
def test_gpus_bad_input_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(cli.app, ["plan", "gpus", str(EXAMPLES / "llm-finetune.yaml"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_gpus_bad_job_file_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "job.yaml"
    bad.write_text(
        "profile: {reference_gpu: A100-80GB, reference_throughput: -3, compute_fraction: 0.5, memory_fraction: 0.2}\ntraining: {steps: 10, samples_per_step: 5}\n"
    )
    result = runner.invoke(cli.app, ["plan", "gpus", str(bad)])
    assert result.exit_code == 2 and "profile.reference_throughput" in result.output
    missing = runner.invoke(cli.app, ["plan", "gpus"])
    assert missing.exit_code == 2 and "give a JOB.yaml file" in missing.output
    absent = runner.invoke(cli.app, ["plan", "gpus", str(tmp_path / "none.yaml")])
    assert absent.exit_code == 2 and "job file not found" in absent.output


MIX = """\
name: mix
cluster:
  pools:
    - {name: a100, count: 1, gpu_model: A100-80GB, gpus_per_node: 8, cpu: "96", memory: 1000Gi, price_per_hour: 27.44705}
workload:
  jobs:
    - {id: a, pods: 2, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 2}, runtime: {default: 1h, by_gpu: {H100: 30m}}}
    - {id: b, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}, runtime: 2h}
    - {id: c, requests: {cpu: "1", memory: 1Gi}, runtime: 5h}
"""


def test_mix_prices_each_gpu_job_on_one_model(tmp_path: Path) -> None:
    scenario = tmp_path / "mix.yaml"
    scenario.write_text(MIX)
    result = runner.invoke(
        cli.app, ["plan", "mix", str(scenario), "--gpu", "A100-80GB", "--gpu", "H100", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["gpu"]: r for r in json.loads(result.stdout)["rows"]}
    # a: 4 GPUs x 1 h, b: 1 GPU x 2 h -> 6 GPU-h on A100 at the pool's 27.44705/8; H100: 4 x 0.5 + 2 = 4 GPU-h
    assert rows["A100-80GB"]["gpu_hours"] == pytest.approx(6.0)
    assert rows["A100-80GB"]["usd_per_job"] == pytest.approx(6.0 * 27.44705 / 8 / 2)
    assert rows["H100"]["gpu_hours"] == pytest.approx(4.0)
    assert rows["H100"]["usd_per_gpu_hour"] > 0 and "scenario pool" not in rows["H100"]["price_source"]
    bad = runner.invoke(cli.app, ["plan", "mix", str(scenario), "--gpu", "Z9"])
    assert bad.exit_code == 2 and "unknown GPU model" in bad.output


def test_gpu_filter_is_named_not_called_missing_offers() -> None:
    """``--gpu B200`` keeps only B200 offers; the more-vs-faster rows for the reference model and the next
    one up say they were left out by the filter, not that the catalog has no offer (the catalog does)."""
    args = ["plan", "gpus", str(EXAMPLES / "llm-finetune.yaml"), "--gpu", "B200", "--json"]
    result = runner.invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["more_vs_faster"]
    assert {r["gpu"] for r in json.loads(result.stdout)["rows"]} == {"B200"}
    assert [r["missing"] for r in rows] == ["left out by --gpu B200"] * 4
    table = runner.invoke(cli.app, args[:-1])
    assert "left out by --gpu B200" in table.stdout and "no offer in the catalog" not in table.stdout
