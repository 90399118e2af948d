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
    assert (row.completed, row.failed, row.running, row.pending) == (1, 2, 2, 1)
    # Waits 0, 1, 2, 123, 902 observed; notebook censored at 7200 − 1800 = 5400.
    # S(0) = 5/6, S(1) = 4/6, S(2) = 3/6 -> p50 = 2 s; the curve stops at 1/6 -> p95 ≥ 5400.
    assert (row.wait_p50_s, row.wait_p50_lower_bound) == (2.0, False)
    assert (row.wait_p95_s, row.wait_p95_lower_bound) == (5400.0, True)
    # Kueue: train-1 quota 120, node 3; js-1 quota 900, node 2.
    assert (row.quota_wait_mean_s, row.node_wait_mean_s) == (510.0, 2.5)
    # prep: 117, 28, 0, 1, 29 -> 35; lost: victim 2 × 360 + oom-job 1 × 305 = 1025 GPU-s.
    assert row.prep_mean_s == pytest.approx(35.0)
    assert row.gpu_hours_lost == pytest.approx(1025 / H)
    # DCGM covers train-1 only: 8 × 3390 = 27120 of 27120 + 16 × 5970 + 720 + 305 + 6570 = 130235 GPU-s.
    assert row.gpu_util_measured == pytest.approx(0.6)
    assert row.gpu_util_coverage == pytest.approx(27120 / 130235)


@needs_prometheus
def test_calibration_of_the_imported_kubernetes_history(kube_history: History) -> None:
    c = calibrate(kube_history)
    rows = {(r.job_class, r.metric): r for r in c.rows}
    # gpu-node-2 joined at 1800 s: its boot time is fitted too.
    assert c.fitted == ["scheduling_latency_s", "node_boot_time_s"]
    assert rows[("all", "gpu_hours_allocated")].within  # run times are replayed as measured
    assert c.verdict == "fail"  # the recorded jobs need more GPUs than the node list has (a note says so)
    assert any("node list is incomplete" in n for n in c.notes)
    assert any("gpu-node-2 (memory, gpu_model)" in n for n in c.notes)
    assert c.disagreements and c.disagreements[0]["job_id"] == "team-a/Job/train-1"
