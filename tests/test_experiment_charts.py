"""The report's charts are computed from the sweep's store: checked against the runs' own Parquet files,
plus the notes shown when an experiment has no Kueue queues or no SLOs, and the PNG export."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cost.billing import BUCKETS
from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.png_export import find_browser
from fleetlab.experiment.results import load_results
from fleetlab.experiment.sweep import run_sweep
from fleetlab.report import experiment_data as data
from fleetlab.report.experiment_charts import build_charts
from fleetlab.report.experiment_charts import slo_attainment as slo_attainment_chart
from fleetlab.report.experiment_html import render_html
from fleetlab.spec.errors import SpecError
from report_sweeps import kueue_sweep

NO_QUEUES = """\
name: plain
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 10}
workload:
  jobs:
    - {id: a, submit_s: 0, class: training, requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 8}, runtime: {default: 1h}}
    - {id: b, submit_s: 60, class: batch, requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 4}, runtime: {default: 30m}}
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return kueue_sweep(tmp_path_factory.mktemp("charts"))


def _runs(out: Path, table: str) -> list[dict[str, list[object]]]:
    return [pq.read_table(p).to_pydict() for p in sorted(out.glob(f"runs/*/seed-*/{table}.parquet"))]


def test_step_function_holds_each_value_until_the_next_step() -> None:
    t = np.array([0.0, 10.0, 20.0])
    values = np.array([1.0, 5.0, 3.0])
    grid = np.array([-1.0, 0.0, 5.0, 10.0, 15.0, 25.0])
    assert data._step_values(t, values, grid).tolist() == [0.0, 1.0, 1.0, 5.0, 5.0, 3.0]


def test_chart_numbers_match_the_runs_parquet_files(sweep: Path) -> None:
    con = data.open_store(sweep)
    try:
        costs = data.cost_split(con)
        by_class = data.completion_by_class(con, 0.95)
        series = data.timeline_series(con)
        balances = data.queue_balances(con)
    finally:
        con.close()
    bills: dict[str, list[float]] = {}
    completion: dict[tuple[str, str], list[float]] = {}
    for run in _runs(sweep, "costs"):
        bills.setdefault(str(run["variant"][0]), []).append(sum(run["cost_billed_usd"]))  # type: ignore[arg-type]
    for run in _runs(sweep, "jobs"):
        for job_class in set(run["class"]):
            done = [
                c
                for k, c in zip(run["class"], run["completion_s"], strict=True)
                if k == job_class and c is not None and not math.isnan(c)
            ]  # type: ignore[arg-type]
            completion.setdefault((str(run["variant"][0]), str(job_class)), []).append(sum(done) / len(done))  # type: ignore[arg-type]
    assert set(costs) == set(bills) and len(bills) == 2
    for variant, billed in bills.items():  # the buckets add up to what was billed
        assert sum(costs[variant][b] for b in BUCKETS) == pytest.approx(sum(billed) / len(billed), rel=1e-9)
    for (variant, job_class), means in completion.items():
        assert by_class[job_class][variant].mean == pytest.approx(sum(means) / len(means), rel=1e-9)
    assert len(series.t_s) == data.TIMELINE_POINTS and series.gpus_per_node == 8
    for variant in bills:
        assert np.all(series.allocated[variant] <= series.total[variant] + 1e-9)
        assert series.free_on_used_nodes is not None and np.all(series.free_on_used_nodes[variant] >= 0)
        assert series.allocated[variant].max() > 0
        assert series.busy is not None and series.largest_free_block is not None
        assert np.all(series.busy[variant] <= series.allocated[variant] + 1e-9)  # allocation is not use
        assert series.busy[variant].max() > 0 and np.all(series.largest_free_block[variant] <= 8)
    # two-teams: team-a borrows team-b's idle GPU quota; only the GPU rows are charted
    assert {b.flavor_resource for b in balances} == {"h100/nvidia.com/gpu"}
    queues = _runs(sweep, "queues")
    for b in balances:
        lent = [
            r["lent_mean"][k]
            for r in queues
            for k in range(len(r["cluster_queue"]))
            if r["variant"][0] == b.variant
            and r["cluster_queue"][k] == b.cluster_queue
            and r["flavor_resource"][k] == b.flavor_resource
        ]
        assert b.lent == pytest.approx(sum(lent) / len(lent))  # type: ignore[arg-type]
    assert max(b.borrowed for b in balances if b.cluster_queue == "team-a") > 0


def test_without_queues_or_slos_the_sections_say_so(tmp_path: Path) -> None:
    (tmp_path / "plain.yaml").write_text(NO_QUEUES)
    (tmp_path / "exp.yaml").write_text(
        "name: plain\nbase: plain.yaml\nseeds: [1]\nvariants:\n  - name: only\n"
    )
    out = tmp_path / "out"
    run_sweep(load_experiment(tmp_path / "exp.yaml"), out, LocalEngine(1))
    sections = {s.key: s for s in build_charts(out, load_results(out)).sections}
    assert sections["queue_borrowing"].figure is None
    assert "no Kueue queues" in sections["queue_borrowing"].note
    assert sections["slo_attainment"].figure is None
    assert "no services in this experiment" in sections["slo_attainment"].note
    assert all(sections[k].figure is not None for k in ("queue_wait_cdf", "cost_split", "gpu_allocation"))


def test_slo_attainment_is_the_share_of_jobs_completed_within_their_slo() -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE jobs AS SELECT * FROM (VALUES "
        "('inference', 'a', 1, 50.0, 60.0), ('inference', 'a', 1, 70.0, 60.0), "
        "('inference', 'a', 2, 10.0, 60.0), ('inference', 'a', 2, NULL, 60.0), "
        "('training', 'a', 1, 9999.0, NULL)) AS t(class, variant, seed, completion_s, slo_s)"
    )
    rows = data.slo_attainment(con)
    assert [(r.job_class, r.variant) for r in rows] == [("inference", "a")]
    assert rows[0].attained == pytest.approx(0.5)  # seed 1: 1 of 2, seed 2: 1 of 2 (never completed = missed)


def test_html_report_is_deterministic_and_small(sweep: Path) -> None:
    page = render_html(sweep)
    assert page == render_html(sweep)
    from plotly.offline import get_plotlyjs

    bundled = get_plotlyjs().count("Plotly.newPlot")  # the embedded plotly.js names it too (plotly 5/6)
    assert len(page.encode()) < 10_000_000 and page.count("Plotly.newPlot") - bundled == 6
    assert "There are no services in this experiment" in page


def _png_ready() -> None:
    pytest.importorskip("kaleido", reason="kaleido not installed (pip install -e '.[png]')")
    if find_browser() is None:
        pytest.skip("no Chrome/Chromium for kaleido (Debian: apt-get install -y chromium)")


def test_png_export_writes_one_file_per_chart(sweep: Path, tmp_path: Path) -> None:
    _png_ready()
    target = tmp_path / "slides"
    result = CliRunner().invoke(cli.app, ["experiment", "report", str(sweep), "--png", str(target)])
    assert result.exit_code == 0, result.output
    keys = {s.key for s in build_charts(sweep, load_results(sweep)).sections if s.figure is not None}
    assert {p.stem for p in target.iterdir()} == keys and len(keys) == 6
    for path in target.iterdir():
        head = path.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(head[16:20], "big") == 2400  # 1200 px wide at scale 2
    assert "no services in this experiment" in result.output


def test_png_export_without_a_browser_exits_2_and_says_what_to_install(
    sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chrome"))
    result = CliRunner().invoke(cli.app, ["experiment", "report", str(sweep), "--png", str(tmp_path / "s")])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "fleetlab[png]" in text and "apt-get install -y chromium" in text and "Traceback" not in text


def test_png_target_that_is_a_file_exits_2(sweep: Path, tmp_path: Path) -> None:
    target = tmp_path / "slides.png"
    target.write_text("not a folder")
    result = CliRunner().invoke(cli.app, ["experiment", "report", str(sweep), "--png", str(target)])
    assert result.exit_code == 2 and "is not a directory" in " ".join(result.output.split())


def test_service_slo_reads_the_services_time_series() -> None:
    """services rows (time_s, service, slo_met, p99_ms): share of samples meeting the SLO per seed, then the
    mean over seeds; the SLO chart prefers it over job SLOs."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE services AS SELECT * FROM (VALUES "
        "('a', 1, 0.0, 'search', true, 80.0), ('a', 1, 60.0, 'search', false, 250.0), "
        "('a', 2, 0.0, 'search', true, 90.0), ('a', 2, 60.0, 'search', true, 100.0), "
        "('b', 1, 0.0, 'search', false, 300.0)) AS t(variant, seed, time_s, service, slo_met, p99_ms)"
    )
    rows = data.service_slo(con)
    assert [(r.job_class, r.variant) for r in rows] == [("search", "a"), ("search", "b")]
    assert rows[0].attained == pytest.approx(0.75)  # seed 1: 1 of 2, seed 2: 2 of 2
    assert rows[0].p99_ms == pytest.approx((165.0 + 95.0) / 2) and rows[1].attained == 0.0
    section = slo_attainment_chart(rows, ["a", "b"])
    assert section.figure is not None and len(section.figure.data) == 2
    assert data.service_slo(duckdb.connect()) == []


def test_service_slo_names_missing_columns() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE services AS SELECT 'a' AS variant, 1 AS seed, 'x' AS service")
    with pytest.raises(SpecError, match="missing column"):
        data.service_slo(con)
