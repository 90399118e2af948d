"""The examples/dynamics comparisons through the CLI: the lifecycle table, summary.json, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fleetlab import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "dynamics"
runner = CliRunner()


def test_compare_static_vs_autoscaled_prints_the_lifecycle_table_and_writes_it(tmp_path: Path) -> None:
    files = [str(EXAMPLES / "static-h100.yaml"), str(EXAMPLES / "autoscaled-h100.yaml")]
    result = runner.invoke(cli.app, ["compare", *files, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "node lifecycle" in result.output and "idle node-hours" in result.output
    summary = json.loads((tmp_path / "out" / "autoscaled-h100" / "summary.json").read_text())
    life = summary["lifecycle"]
    ups = [e for e in life["scale_events"] if e["kind"] == "up"]
    assert life["scale_ups"] == len(ups) > 0
    assert life["nodes_added"] == sum(e["nodes"] for e in ups)
    static = json.loads((tmp_path / "out" / "static-h100" / "summary.json").read_text())
    assert static["lifecycle"] is None
    # The autoscaled pool never pays for four always-on nodes: less idle money than the static one.
    assert summary["summary"]["cost_idle"] < static["summary"]["cost_idle"]


def test_unknown_node_in_a_failure_trace_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "cluster:\n  pools:\n    - {name: gpu, count: 2, cpu: '8', memory: 8Gi,\n"
        "       failures: {trace: [{node: gpu-7, at_s: 10, repair_s: 10}]}}\n"
        "workload: {jobs: [{id: j, submit_s: 0, requests: {cpu: '1'}, runtime: 1}]}\n"
    )
    result = runner.invoke(cli.app, ["validate", str(bad)])
    assert result.exit_code == 2
    assert "gpu-7" in result.output and "gpu-0 .. gpu-1" in result.output
    assert "Traceback" not in result.output
