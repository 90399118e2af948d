"""The experiment report keeps every variant and shows what was censored: a class with an unfinished job
still gets its bar (NaN completion times are left out, counted as "n/N done"), jobs by state are tabled,
service replica slots never appear among the jobs, and a job still pending shows its wait so far as "≥"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from builders import job, pool, service
from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.sweep import run_sweep
from fleetlab.report import experiment_data as data
from fleetlab.report.experiment_html import render_html


def _scenario() -> str:
    """One 2-GPU H100 node ($10/h), two 1-GPU training jobs and a 1-replica chat service, horizon 3 h."""
    jobs = [job(x, runtime=t, **{"class": "training"}) for x, t in (("a", 3600), ("b", 7200))]
    data = {
        "name": "censored",
        "horizon_s": 3 * 3600,
        "cluster": {"pools": [pool(gpus=2, price_per_hour=10.0)]},
        "workload": {"jobs": jobs},
        "services": [service(replicas={"min": 1}, rate={"kind": "constant", "rps": 10})],
    }
    return yaml.safe_dump(data)


EXPERIMENT = """\
name: censoring
base: censored.yaml
seeds: [1]
replicates: {resample: off}  # the hand-worked figures below are of these very jobs
variants:
  - name: short
  - name: long
    set: {"workload.jobs[1].runtime": 10h}
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 2-GPU node: a (1 h) and b take both GPUs at 0 (workload jobs are submitted before the service's
    replica, which waits for a GPU). short: a 0–1 h, b 0–2 h, both done by the 3 h horizon. long: b runs
    10 h, so a completes and b is still running at 3 h."""
    folder = tmp_path_factory.mktemp("censoring")
    (folder / "censored.yaml").write_text(_scenario())
    (folder / "exp.yaml").write_text(EXPERIMENT)
    out = folder / "out"
    run_sweep(load_experiment(folder / "exp.yaml"), out, LocalEngine(1))
    return out


def test_every_variant_keeps_its_completion_bar(sweep: Path) -> None:
    con = data.open_store(sweep)
    try:
        by_class = data.completion_by_class(con, 0.95)
        counts = data.completion_counts(con)
        states = data.state_counts(con)
        _, slowest = data.queue_waits(con)
    finally:
        con.close()
    # short: a 1 h, b 2 h: mean 1.5 h. long: only a completes (1 h); b's completion is NaN, which used to
    # make the class mean NaN and drop the whole variant from the chart.
    assert by_class["training"]["short"].mean == pytest.approx(1.5 * 3600)
    assert by_class["training"]["long"].mean == pytest.approx(3600)
    assert counts["training"] == {"long": (1, 2), "short": (2, 2)}
    assert states["long"]["completed"] == 1 and states["long"]["running"] == 1
    assert states["short"]["completed"] == 2 and sum(states["short"].values()) == 2  # no replica slots
    assert all(not str(job).startswith("service/") for _, _, job, _, _ in slowest)


def test_the_html_report_shows_counts_and_every_variant(sweep: Path) -> None:
    page = render_html(sweep)
    assert "Jobs by state at the end" in page
    assert "1\\u002f2 done" in page and "2\\u002f2 done" in page  # plotly's JSON escapes "/"
    assert "their completion times are censored" in page
    assert "service/chat" not in page
