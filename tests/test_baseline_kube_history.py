"""A Kubernetes history built by the tests — kubectl JSON with finished pods, Kueue Workloads and events
(tests/kube_history_builders.py) merged with a real Prometheus server backfilled with kube-state-metrics
and DCGM series (tests/test_history_prometheus.py) — imported, baselined and calibrated.

The imported jobs (seconds from 2024-05-01T10:00:00Z; the record ends at 7200):

| job | state | submit | admitted | scheduled | running | end | GPUs |
|---|---|---|---|---|---|---|---|
| team-a/Job/train-1 | completed | 0 | 120 | 123 | 240 | 3630 | 2 × 4, DCGM util 0.6 |
| team-b/JobSet/js-1 | running | 300 | 1200 | 1202 | 1230 | — | 2 × 8 |
| team-b/Pod/victim | failed | 360 | — | 360 | 360 | 720 | 1 × 2 |
| team-a/Job/oom-job | failed | 597 | — | 599 | 600 | 905 | 1 × 1 |
| team-b/ReplicaSet/serve-7d9f | running | 600 | — | 601 | 630 | — | 1 × 1 |
| team-c/Pod/notebook | pending | 1800 | — | — | — | — | 1 × 1 |
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetlab.experiment.calibration import calibrate
from fleetlab.metrics.baseline import compute_baseline
from fleetlab.model.history import History
from fleetlab.spec.history.checks import check_history
from fleetlab.spec.history.sources import PrometheusSource, import_sources
from kube_history_builders import small_world
from prometheus_server import PROMETHEUS, PROMTOOL, needs_prometheus, prometheus_server
from test_history_prometheus import END, T0, _world

H = 3600.0


@pytest.fixture(scope="module")
def kube_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip("prometheus/promtool not installed (Debian package prometheus)")
    with prometheus_server(tmp_path_factory.mktemp("prom"), _world()) as url:
        yield import_sources(
            small_world(tmp_path_factory.mktemp("kube")), PrometheusSource(url, T0 - 600, END, step_s=60)
        )


@needs_prometheus
def test_baseline_of_the_imported_kubernetes_history(kube_history: History) -> None:
    check_history(kube_history, "<kube history>")
    row = compute_baseline(kube_history).rows[0]
    assert (row.completed, row.failed, row.running, row.pending) == (1, 2, 3, 1)
    # Waits observed: victim 0; mig, scratch (Prometheus only) and serve 1; oom-job 2; train-1 123; js-1 902;
    # notebook censored at 7200 − 1800 = 5400. S(0) = 7/8, S(1) = 4/8 -> p50 = 1 s; the curve stops at
    # 1/8 -> p95 ≥ 5400.
    assert (row.wait_p50_s, row.wait_p50_lower_bound) == (1.0, False)
    assert (row.wait_p95_s, row.wait_p95_lower_bound) == (5400.0, True)
    # Kueue: train-1 quota 120, node 3; js-1 quota 900, node 2.
    assert (row.quota_wait_mean_s, row.node_wait_mean_s) == (510.0, 2.5)
    # prep (running − scheduled): train-1 117, js-1 28, mig 9, scratch 9, victim 0, oom-job 1, serve 19
    # -> 183 / 7. Lost: victim 2 × 360 + oom-job 1 × 305 = 1025 GPU-s.
    assert row.prep_mean_s == pytest.approx(183 / 7)
    assert row.gpu_hours_lost == pytest.approx(1025 / H)
    # Compute GPU-s (GPUs × (end or 7200 − running)): train-1 8 × 3390 = 27120, js-1 8 × 5970 = 47760,
    # mig 0.143 × 6890 = 985.27, victim 2 × 360 = 720, oom-job 1 × 305 = 305, serve 2 × 6580 = 13160
    # (scratch holds no GPU). DCGM covers train-1 only: utilisation 0.6 over 27120 of 90050.27 GPU-s.
    assert row.gpu_util_measured == pytest.approx(0.6)
    assert row.gpu_util_coverage == pytest.approx(27120 / (27120 + 47760 + 0.143 * 6890 + 720 + 305 + 13160))


@needs_prometheus
def test_calibration_of_the_imported_kubernetes_history(kube_history: History) -> None:
    c = calibrate(kube_history, fit_until=1.0)  # fit on the whole record: no later part held out
    rows = {(r.job_class, r.metric): r for r in c.rows}
    # Teams are recorded, so per-team limits are tried; every node was there from the start: no boot time
    # to fit; the scheduling latency is fitted, and the first-pull time since kubelet's Pulled events gave
    # measured pulls.
    assert (
        c.fitted
        == ["limit_quantile", "job_limit_quantile", "scheduling_latency_s", "queueing", "image_pull_s"]
        and c.validation is None
    )
    # train-1's one Pulled event: 112.5 s (the only measured pull), replayed as a first pull of 112.5 s
    # with its data download the rest of its 117 s preparation.
    assert [p for p in kube_history.jobs.column("image_pull_s").to_pylist() if p is not None] == [112.5]
    assert c.knobs.image_pull_s == 112.5 and rows[("all", "image_pull_ks")].error == 0.0
    assert rows[("all", "gpu_hours_allocated")].within  # run times are replayed as measured
    # The notebook stayed pending for the last 5400 s (FailedScheduling), but the replay finds a free GPU
    # for it at once: the training class's never-started share (1/6 measured, 0 simulated) and its wait
    # distribution fail, and the notebook is the largest disagreement.
    assert not rows[("training", "never_started_share")].within
    assert rows[("training", "never_started_share")].measured == pytest.approx(1 / 6)
    assert c.verdict == "fail"
    assert any("left out" in n for n in c.notes)
    assert "team-c/Pod/notebook" in [d["job_id"] for d in c.disagreements]
    # By default the earlier two thirds of submissions are fitted on: of the 8 submits in order (0, 300,
    # 300, 300, 360, 597, 600, 1800 s) the split is the one at index ceil(2/3 x 8) = 6, 600 s; the jobs
    # submitted at 600 s and 1800 s are the later part.
    held_out = calibrate(kube_history)
    assert held_out.fit_until_s == 600.0 and held_out.validation is not None
    assert held_out.validation.jobs == 2
