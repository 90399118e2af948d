"""Importer fixes found on real files: the Alibaba pod and node lists through ``fleetlab import``, and a pod
running on a node without a PodScheduled condition counting its GPU-hours (the SWF fixes are in
test_history_swf.py, Philly's attempts in test_history_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.metrics.baseline import compute_baseline
from fleetlab.spec.history.alibaba import load_alibaba_history
from fleetlab.spec.history.sources import detect_format, import_sources
from fleetlab.spec.history.store import load_history
from kube_history_builders import kube_list, node, pod, write_json

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time"
)
runner = CliRunner()


def test_alibaba_lists_go_through_import_like_every_source(tmp_path: Path) -> None:
    pods = tmp_path / "openb_pod_list_default.csv"
    pods.write_text(
        POD_HEADER + "\n"
        "p0,4000,8192,1,1000,,LS,Running,0,1000,5\n"  # still running at the last instant
        "p1,4000,8192,1,500,,BE,Succeeded,10,300,40\n"
        "p3,4000,8192,1,1000,,BE,Pending,30,130,\n"  # deleted while pending
    )
    nodes = tmp_path / "openb_node_list_gpu_node.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,64000,262144,8,V100M32\n")
    assert (detect_format(pods), detect_format(nodes)) == ("alibaba", "alibaba")
    result = runner.invoke(
        app, ["import", str(pods), f"alibaba:{nodes}", "--out", str(tmp_path / "h"), "--json"]
    )
    assert result.exit_code == 0, result.output
    meta = json.loads(result.output)
    assert (meta["jobs"], meta["nodes"], meta["epoch"]) == (3, 1, "1970-01-01T00:00:00Z")
    imported = load_history(tmp_path / "h")
    direct = load_alibaba_history(pods, nodes)
    # The same jobs and figures as the direct reader (--alibaba-pods): the trace's own seconds, its end
    # the last instant in the list (1000 s), p0 still running then, p3 cancelled at its deletion.
    assert imported.end_s == direct.end_s == 1000.0
    for column in ("job_id", "submit_s", "scheduled_s", "end_s", "state", "gpus_per_pod", "team"):
        assert imported.jobs.column(column).to_pylist() == direct.jobs.column(column).to_pylist(), column
    assert compute_baseline(imported).rows[0] == compute_baseline(direct).rows[0]


def test_a_pod_on_a_node_without_a_podscheduled_condition_counts_its_gpu_hours(tmp_path: Path) -> None:
    # Bound at creation through spec.nodeName (no scheduler, so no PodScheduled condition), acknowledged by
    # the kubelet at 10:00:30 (status.startTime), containers still waiting: it holds 2 GPUs from 30 s to
    # the record's end at 11:00:00, (3600 - 30) x 2 / 3600 = 1.98 GPU-hours.
    p = pod("ns", "runner", "10:00:00", scheduled="10:00:30", phase="Running", gpus=2)
    p["status"]["conditions"] = [c for c in p["status"]["conditions"] if c["type"] != "PodScheduled"]
    p["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ContainerCreating"}}
    path = write_json(tmp_path / "pods.json", kube_list([p, node("gpu-node-1")]))
    history = import_sources([str(path)], end=1714561200.0)  # 2024-05-01T11:00:00Z
    (job,) = history.jobs.to_pylist()
    assert (job["scheduled_s"], job["state"]) == (30.0, "running")
    assert compute_baseline(history).rows[0].gpu_hours_allocated == (3600 - 30) * 2 / 3600
