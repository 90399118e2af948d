"""The self-contained HTML report: plotly.js inlined (opens offline), decision table, escaped names."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.sweep import run_sweep
from fleetlab.report.experiment_html import render_html

HOSTILE_JOB = "<script>alert(1)</script>"
HOSTILE_VARIANT = "<img src=x onerror=alert(2)>"

SCENARIO = f"""\
name: hostile
cluster:
  pools:
    - {{name: gpu, count: 1, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 10}}
workload:
  jobs:
    - {{id: "{HOSTILE_JOB}", submit_s: 0, class: training, requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: 8}}, runtime: {{default: 1h}}}}
    - {{id: second, submit_s: 60, class: batch, requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: 4}}, runtime: {{default: 30m}}}}
    - {{id: third, submit_s: 120, class: batch, requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: 4}}, runtime: {{default: 20m}}}}
"""

EXPERIMENT = f"""\
name: "<b>exp</b>"
base: hostile.yaml
seeds: [1, 2]
variants:
  - name: base
  - name: "{HOSTILE_VARIANT}"
    set:
      cluster.pools[gpu].count: 2
"""


def test_html_report_is_offline_and_escapes_input_names(tmp_path: Path) -> None:
    (tmp_path / "hostile.yaml").write_text(SCENARIO)
    (tmp_path / "exp.yaml").write_text(EXPERIMENT)
    out = tmp_path / "out"
    run_sweep(load_experiment(tmp_path / "exp.yaml"), out, LocalEngine(1))
    page = render_html(out)
    assert HOSTILE_JOB not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert HOSTILE_VARIANT not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "<b>exp</b>" not in page and "&lt;b&gt;exp&lt;/b&gt;" in page
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in page and 'src="https://cdn.plot.ly' not in page  # plotly.js inlined
    assert "Plotly.newPlot" in page and len(page) > 1_000_000
    assert "Decision table" in page and "completion_mean_s" in page and "cost_per_completed_job" in page
    # the verdict comes first, the metrics named in words beside their field
    assert page.index("<section id='verdict'>") < page.index("Decision table")
    assert "Verdict against " in page and "completion time mean (completion_mean_s)" in page
    target = tmp_path / "report.html"
    result = CliRunner().invoke(cli.app, ["experiment", "report", str(out), "--html", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == page  # chart div ids are fixed: same store, same bytes
