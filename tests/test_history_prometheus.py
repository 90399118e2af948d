"""Prometheus import against a real server with backfilled kube-state-metrics and DCGM series.

Series shapes: kube-state-metrics docs/metrics/workload/pod-metrics.md and node-metrics.md (metric names,
``namespace``/``pod``/``uid``, ``owner_kind``/``owner_name``/``owner_is_controller``, ``resource``/``unit``
with ``nvidia_com_gpu``, ``phase``), NVIDIA/dcgm-exporter etc/default-counters.csv (``DCGM_FI_DEV_GPU_UTIL``
percent, ``DCGM_FI_DEV_FB_USED`` MiB) with the ``exported_namespace``/``exported_pod`` labels a
ServiceMonitor scrape gives.

T0 = 2024-05-01T10:00:00Z (Unix 1714557600) is the epoch: pod train-1-0 is created then. Samples every
60 s; the query range is T0-600 .. T0+7200 with step 60.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.prometheus import PrometheusClient
from fleetlab.spec.history.sources import PrometheusSource, import_sources
from prometheus_server import (
    PROMETHEUS,
    PROMTOOL,
    free_port,
    needs_prometheus,
    openmetrics,
    prometheus_server,
)

T0 = 1714557600.0
END = T0 + 7200
GiB = 2**30


def _every(start: float, stop: float, value: float) -> list[tuple[float, float]]:
    return [(t, value) for t in range(int(start), int(stop) + 1, 60)]


def _pod_series(ns: str, pod: str, start: float, stop: float, times: dict[str, float], phases: list[tuple[float, str]],
                owner: tuple[str, str] | None, requests: dict[str, float]) -> dict[str, list[tuple[str, list[tuple[float, float]]]]]:  # fmt: skip
    """kube-state-metrics series of one pod alive from ``start`` to ``stop``."""
    base = f'namespace="{ns}",pod="{pod}",uid="uid-{pod}"'
    out: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
    for metric, value in times.items():
        out.setdefault(metric, []).append((base, _every(start, stop, value)))
    for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
        samples = []
        for t, _ in _every(start, stop, 0):
            current = [p for at, p in phases if at <= t]
            samples.append((t, 1.0 if current and current[-1] == phase else 0.0))
        out.setdefault("kube_pod_status_phase", []).append((f'{base},phase="{phase}"', samples))
    if owner:
        labels = f'{base},owner_kind="{owner[0]}",owner_name="{owner[1]}",owner_is_controller="true"'
        out.setdefault("kube_pod_owner", []).append((labels, _every(start, stop, 1)))
    for resource, value in requests.items():
        unit = {"nvidia_com_gpu": "integer", "cpu": "core", "memory": "byte"}[resource]
        labels = f'{base},container="main",node="gpu-node-1",resource="{resource}",unit="{unit}"'
        out.setdefault("kube_pod_container_resource_requests", []).append(
            (labels, _every(start, stop, value))
        )
    return out


def _world() -> str:
    series: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}

    def add(more: dict[str, list[tuple[str, list[tuple[float, float]]]]]) -> None:
        for metric, items in more.items():
            series.setdefault(metric, []).extend(items)

    # train-1-0: created T0, scheduled T0+60, started T0+120, completed T0+3720; Succeeded from then.
    add(_pod_series("team-a", "train-1-0", T0, T0 + 3900,
                    {"kube_pod_created": T0, "kube_pod_status_scheduled_time": T0 + 60,
                     "kube_pod_start_time": T0 + 120},
                    [(T0, "Pending"), (T0 + 120, "Running"), (T0 + 3720, "Succeeded")], ("Job", "train-1"),
                    {"nvidia_com_gpu": 2, "cpu": 16, "memory": 64 * GiB}))  # fmt: skip
    series["kube_pod_completion_time"] = [
        ('namespace="team-a",pod="train-1-0",uid="uid-train-1-0"', _every(T0 + 3720, T0 + 3900, T0 + 3720))
    ]
    # serve: a ReplicaSet's pod running from T0+600 to the end of the range.
    add(_pod_series("team-b", "serve-7d9f-abc", T0 + 600, END,
                    {"kube_pod_created": T0 + 600, "kube_pod_status_scheduled_time": T0 + 601,
                     "kube_pod_start_time": T0 + 630},
                    [(T0 + 600, "Running")], ("ReplicaSet", "serve-7d9f"), {"nvidia_com_gpu": 1, "cpu": 4}))  # fmt: skip
    # An older pod of the same ReplicaSet, scaled away at T0+2000: the ReplicaSet still runs.
    add(_pod_series("team-b", "serve-7d9f-old", T0 + 600, T0 + 2000,
                    {"kube_pod_created": T0 + 600, "kube_pod_status_scheduled_time": T0 + 601,
                     "kube_pod_start_time": T0 + 620},
                    [(T0 + 600, "Running")], ("ReplicaSet", "serve-7d9f"), {"nvidia_com_gpu": 1, "cpu": 4}))  # fmt: skip
    # scratch: a bare pod deleted while running (series stop at T0+900).
    add(_pod_series("team-c", "scratch", T0 + 300, T0 + 900,
                    {"kube_pod_created": T0 + 300, "kube_pod_status_scheduled_time": T0 + 301,
                     "kube_pod_start_time": T0 + 310},
                    [(T0 + 300, "Running")], None, {}))  # fmt: skip
    # mig: a pod holding one MIG 1g.10gb slice (1 of 7): gpu_milli_per_pod = round(1000 / 7) = 143.
    add(_pod_series("team-c", "mig", T0 + 300, END,
                    {"kube_pod_created": T0 + 300, "kube_pod_status_scheduled_time": T0 + 301,
                     "kube_pod_start_time": T0 + 310},
                    [(T0 + 300, "Running")], None, {}))  # fmt: skip
    series["kube_pod_container_resource_requests"].append(
        (
            'namespace="team-c",pod="mig",uid="uid-mig",container="main",node="gpu-node-1",'
            'resource="nvidia_com_mig_1g_10gb",unit="integer"',
            _every(T0 + 300, END, 1),
        )
    )
    # pending: no owner, never scheduled.
    add(_pod_series("team-c", "notebook", T0 + 900, END, {"kube_pod_created": T0 + 900},
                    [(T0 + 900, "Pending")], None, {"nvidia_com_gpu": 1}))  # fmt: skip
    # backwards: completion before start -> skipped.
    add(_pod_series("team-c", "backwards", T0 + 1000, T0 + 1300,
                    {"kube_pod_created": T0 + 1000, "kube_pod_start_time": T0 + 1200,
                     "kube_pod_completion_time": T0 + 1100},
                    [(T0 + 1000, "Succeeded")], None, {}))  # fmt: skip
    # DCGM for train-1-0 (as scraped through a ServiceMonitor: exported_namespace/exported_pod).
    # GPU 0 at 50 %, GPU 1 at 70 % (mean 60 %), with a 20-minute gap in both (no samples T0+1200..T0+2400):
    # the mean is over the samples present, so still 60 %. Framebuffer: 30000 MiB, GPU 1 peaks at 40000 MiB.
    dcgm = 'Hostname="gpu-node-1",container="main",exported_namespace="team-a",exported_pod="train-1-0",namespace="gpu-operator",pod="nvidia-dcgm-exporter-x"'
    gap = [t for t in range(int(T0 + 120), int(T0 + 3720), 60) if not T0 + 1200 <= t <= T0 + 2400]
    series["DCGM_FI_DEV_GPU_UTIL"] = [
        (f'{dcgm},gpu="0",UUID="GPU-0",modelName="NVIDIA H100 80GB HBM3"', [(t, 50.0) for t in gap]),
        (f'{dcgm},gpu="1",UUID="GPU-1",modelName="NVIDIA H100 80GB HBM3"', [(t, 70.0) for t in gap]),
    ]
    series["DCGM_FI_DEV_FB_USED"] = [
        (f'{dcgm},gpu="0",UUID="GPU-0"', [(t, 30000.0) for t in gap]),
        (f'{dcgm},gpu="1",UUID="GPU-1"', [(t, 40000.0 if t == gap[5] else 30000.0) for t in gap]),
    ]
    node = 'node="gpu-node-1"'
    series["kube_node_status_allocatable"] = [
        (f'{node},resource="nvidia_com_gpu",unit="integer"', _every(T0 - 600, END, 8)),
        (f'{node},resource="cpu",unit="core"', _every(T0 - 600, END, 207)),
        (f'{node},resource="memory",unit="byte"', _every(T0 - 600, END, 1842 * GiB)),
    ]
    # gpu-node-2 joins at T0+1800 (created then) and is gone after T0+5400: an autoscaled node.
    node2 = 'node="gpu-node-2"'
    series["kube_node_status_allocatable"] += [
        (f'{node2},resource="nvidia_com_gpu",unit="integer"', _every(T0 + 1800, T0 + 5400, 8)),
        (f'{node2},resource="cpu",unit="core"', _every(T0 + 1800, T0 + 5400, 207)),
    ]
    series["kube_node_created"] = [
        (node, _every(T0 - 600, END, T0 - 86400)),
        (node2, _every(T0 + 1800, T0 + 5400, T0 + 1800)),
    ]
    series["kube_node_labels"] = [
        (f'{node},label_nvidia_com_gpu_product="NVIDIA-H100-80GB-HBM3",label_topology_kubernetes_io_zone="us-central1-a",'
         'label_node_kubernetes_io_instance_type="a3-highgpu-8g"', _every(T0 - 600, END, 1)),
    ]  # fmt: skip
    for items in series.values():
        items.sort(key=lambda item: item[0])
    return openmetrics(series)


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip("prometheus/promtool not installed (Debian package prometheus)")
    with prometheus_server(tmp_path_factory.mktemp("prom"), _world()) as url:
        yield url


@needs_prometheus
def test_import_from_a_real_prometheus(prometheus_url: str) -> None:
    history = import_sources([], PrometheusSource(prometheus_url, T0 - 600, END, step_s=60))
    assert history.epoch == "2024-05-01T10:00:00Z"
    assert history.end_s == 7200.0  # the query range's end
    assert history.skipped == {"prometheus: pod finished before it started (clocks went backwards)": 1}
    jobs = {row["job_id"]: row for row in history.jobs.to_pylist()}
    assert sorted(jobs) == [
        "team-a/Job/train-1", "team-b/ReplicaSet/serve-7d9f", "team-c/Pod/mig", "team-c/Pod/notebook",
        "team-c/Pod/scratch",
    ]  # fmt: skip
    assert (jobs["team-c/Pod/mig"]["gpu_milli_per_pod"], jobs["team-c/Pod/mig"]["gpus_per_pod"]) == (
        143,
        0.143,
    )
    train = jobs["team-a/Job/train-1"]
    assert (train["submit_s"], train["scheduled_s"], train["running_s"], train["end_s"], train["run_s"]) == (
        0.0, 60.0, 120.0, 3720.0, 3600.0
    )  # fmt: skip
    assert (train["state"], train["gpus_per_pod"], train["cpu_per_pod"], train["memory_per_pod"]) == (
        "completed", 2.0, 16.0, 64 * GiB
    )  # fmt: skip
    assert train["gpu_util_mean"] == pytest.approx(0.6)  # (50 + 70) / 2 %, over the samples around the gap
    assert train["gpu_mem_used_max"] == 40000 * 2**20
    assert (train["gpu_model"], train["nodes"]) == ("H100", "gpu-node-1")
    serve = jobs["team-b/ReplicaSet/serve-7d9f"]
    # Two pods: the old one started 620 and went away; the ReplicaSet runs on.
    assert (serve["state"], serve["job_class"], serve["running_s"], serve["end_s"], serve["gpu_util_mean"]) == (
        "running", "inference", 620.0, None, None
    )  # fmt: skip
    scratch = jobs["team-c/Pod/scratch"]
    # Last sample T0+900, seen through the 5-minute lookback until T0+1200 (no staleness marker when backfilled).
    assert (scratch["state"], scratch["end_reason"], scratch["end_s"]) == ("cancelled", "Deleted", 1200.0)
    pending = jobs["team-c/Pod/notebook"]
    assert (pending["state"], pending["submit_s"], pending["scheduled_s"]) == ("pending", 900.0, None)
    node, node2 = history.nodes.to_pylist()
    assert (node["node"], node["gpus"], node["cpu"], node["memory"], node["gpu_model"], node["zone"]) == (
        "gpu-node-1", 8, 207.0, 1842 * GiB, "H100", "us-central1-a"
    )  # fmt: skip
    assert (node["created_s"], node["deleted_s"]) == (None, None)  # there before the history, still there
    # gpu-node-2: created T0+1800; its series stop at T0+5400. Backfilled blocks carry no staleness marker
    # (a live scrape writes one when the series disappears), so the 5-minute lookback keeps answering until
    # T0+5700, the last evaluation instant that still sees a sample: that is when the import sees it go.
    assert (node2["created_s"], node2["deleted_s"], node2["gpus"]) == (1800.0, 5700.0, 8)


@needs_prometheus
def test_windowed_reads_give_the_same_history(prometheus_url: str) -> None:
    """Reading the 7800 s range in 1800 s windows (evaluation instants never shared between windows) gives
    exactly the history of one window: no DCGM sample counted twice, no time lost at a boundary."""
    whole = import_sources([], PrometheusSource(prometheus_url, T0 - 600, END, step_s=60))
    windows = import_sources([], PrometheusSource(prometheus_url, T0 - 600, END, step_s=60, window_s=1800))
    assert whole.jobs.equals(windows.jobs) and whole.nodes.equals(windows.nodes)


@needs_prometheus
def test_prometheus_error_answer_is_a_clear_error(prometheus_url: str) -> None:
    client = PrometheusClient(prometheus_url, None, 10)
    with pytest.raises(SpecError) as err:
        list(client.query_range("kube_pod_created[", T0, END, 60))
    assert "HTTP 400" in str(err.value) and "bad_data" in str(err.value)


def test_prometheus_down_exits_2_without_the_token(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    env = {**os.environ, "PROM_TOKEN": "s3cr3t-token-value"}
    result = subprocess.run(
        [sys.executable, "-m", "fleetlab.cli", "import", "--prometheus", f"http://127.0.0.1:{port}",
         "--start", "2024-05-01T09:50:00Z", "--end", "2024-05-01T12:00:00Z", "--token-env", "PROM_TOKEN",
         "--out", str(tmp_path / "h")],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "cannot reach the server" in result.stderr and f"127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    assert "s3cr3t" not in result.stderr + result.stdout
    assert not (tmp_path / "h").exists()


def test_credentials_in_the_url_are_refused() -> None:
    with pytest.raises(SpecError, match="--token-env or --token-file") as err:
        PrometheusClient("http://admin:hunter2@127.0.0.1:9090", None, 5)
    assert "hunter2" not in str(err.value)
    assert "hunter2" not in repr(PrometheusSource("http://127.0.0.1:9090", 0, 1, token="hunter2"))


@needs_prometheus
def test_kubectl_and_prometheus_merge_by_job_id(prometheus_url: str, tmp_path: Path) -> None:
    """The kubectl small world (tests/kube_history_builders.py) and this Prometheus describe the same
    team-a/Job/train-1: kubectl's times win, DCGM fills the utilisation kubectl cannot know."""
    from kube_history_builders import small_world

    history = import_sources(
        small_world(tmp_path), PrometheusSource(prometheus_url, T0 - 600, END, step_s=60)
    )
    jobs = {row["job_id"]: row for row in history.jobs.to_pylist()}
    train = jobs["team-a/Job/train-1"]
    assert (train["source"], train["end_s"], train["admitted_s"]) == ("kubectl", 3630.0, 120.0)  # kubectl's
    assert (
        train["gpu_util_mean"] == pytest.approx(0.6) and train["gpu_mem_used_max"] == 40000 * 2**20
    )  # DCGM's
    assert "team-b/ReplicaSet/serve-7d9f" in jobs and jobs["team-c/Pod/notebook"]["source"] == "kubectl"
    assert history.end_s == 7200.0  # the Prometheus range ends after every kubectl record
    assert history.sources[1].startswith("prometheus:http://127.0.0.1:")
