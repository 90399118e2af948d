"""A kubectl snapshot replayed as a scenario: pools grouped from node labels/taints/allocatable, running
pods bound to their own node at t=0 (no scheduling cycle, as pods bound before kube-scheduler started sit
in its cache), pending pods arriving at t=0; and what one more node changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.experiment.run import run_one
from fleetlab.kube.to_scenario import snapshot_pools, snapshot_scenario
from fleetlab.metrics.tables import job_columns
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import gpu_operator_node, write_list

SNAPSHOT = Path(__file__).parent / "fixtures" / "kube" / "snapshot.json"
PRETRAIN = "ml-research/pretrain-70b-worker-0-fz2lm"


def test_pools_group_identical_nodes_and_fold_in_daemonset_pods() -> None:
    built = snapshot_pools(load_snapshot([SNAPSHOT]))
    pools = {p["name"]: p for p in built.pools}
    # a-0..a-2 (zone a) and b-0..b-2 (zone b): healthy 8xH100; c-0 (unreachable), c-1 (cordoned) and
    # c-2 (0 GPUs after a driver fault) differ and stay alone.
    assert pools["a3-highgpu-8g-h100"]["count"] == 3 and pools["a3-highgpu-8g-h100-2"]["count"] == 3
    assert sum(p["count"] for p in built.pools) == 14
    h100 = pools["a3-highgpu-8g-h100"]
    assert (h100["gpu_model"], h100["gpus_per_node"]) == ("H100", 8)
    assert h100["cpu"] == "207400m"  # 207500m allocatable minus kube-proxy's 100m (DaemonSet)
    assert h100["max_pods"] == 108  # kube-proxy and the device plugin hold two of 110 pod slots
    cordoned = next(p for p in built.pools if p["unschedulable"])
    assert cordoned["count"] == 1 and built.node_of["gpu-h100-c-1"] == f"{cordoned['name']}-0"
    mig = next(p for p in built.pools if "nvidia.com/mig-1g.10gb" in p["extended_resources"])
    assert mig["extended_resources"]["nvidia.com/mig-1g.10gb"] == 7 and "gpu_model" not in mig


def test_pools_are_priced_from_the_built_in_catalog_of_their_cloud() -> None:
    """providerID gce:// + region label + instance type: the built-in GCP catalog prices the pool; the
    snapshot's shape is kept (a faulted node keeps 0 GPUs); an instance type missing there is warned."""
    built = snapshot_pools(load_snapshot([SNAPSHOT]))
    pools = {p["name"]: p for p in built.pools}
    assert pools["a3-highgpu-8g-h100"]["price_per_hour"] > 0
    faulted = pools["a3-highgpu-8g-h100-5"]
    assert faulted["price_per_hour"] > 0 and "gpus_per_node" not in faulted
    assert any("n2-standard-32" in w and "counts as 0" in w for w in built.warnings)


def _pod_nodes(run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    result = run.result
    ids = list(result.jobs.ids)
    return {
        ids[int(j)]: result.nodes.names[int(n)]
        for j, n in zip(result.pods.job, result.pods.node, strict=True)
        if n >= 0
    }


def test_running_pods_stay_on_their_node_and_pending_pods_arrive() -> None:
    snap = load_snapshot([SNAPSHOT])
    resolved = snapshot_scenario(snap, remaining_s=3600, runtime_s=600)
    built = snapshot_pools(snap)
    run = run_one(resolved, "default")
    nodes = _pod_nodes(run)
    assert nodes["ml-research/finetune-00-x7k2p"] == built.node_of["gpu-h100-a-0"]
    assert nodes["web/api-5c8f-limitsonly"] == built.node_of["cpu-pool-0"]
    cols = job_columns(run.result)
    index = {jid: i for i, jid in enumerate(cols["job_id"])}
    assert cols["queue_wait_s"][index["ml-research/finetune-00-x7k2p"]] == 0
    # The 8-GPU pod waits for the running fine-tunes (assumed 1 h left) to free a whole H100 node.
    assert cols["queue_wait_s"][index[PRETRAIN]] == 3600
    pending = {p.job_id: p for p in run.result.pending}
    assert pending["analytics/notebook-gpu-0"].blocked_by == "constraints"  # the GPU taint, never lifts
    assert "ml-research/eval-done-q9r8s" not in index  # Succeeded: not a job


def test_one_more_node_places_the_eight_gpu_pod_at_once() -> None:
    snap = load_snapshot([SNAPSHOT])
    resolved = snapshot_scenario(snap, ["a3-highgpu-8g-h100=1"], remaining_s=3600, runtime_s=600)
    cols = job_columns(run_one(resolved, "default").result)
    index = {jid: i for i, jid in enumerate(cols["job_id"])}
    assert cols["queue_wait_s"][index[PRETRAIN]] == 0


def test_add_nodes_names_the_pools() -> None:
    with pytest.raises(SpecError) as info:
        snapshot_scenario(load_snapshot([SNAPSHOT]), ["h100=2"])
    assert "a3-highgpu-8g-h100" in str(info.value)


def test_cli_simulate_from_snapshot() -> None:
    runner = CliRunner()
    args = ["simulate", "--from-snapshot", str(SNAPSHOT), "--json", "--snapshot-runtime", "10m"]
    result = runner.invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert summary["jobs_pending"] == 2  # the untolerated-taint notebook and the B200 bench
    bad = runner.invoke(cli.app, ["simulate", "--from-snapshot", str(SNAPSHOT), "--add-nodes", "nope=1"])
    assert bad.exit_code == 2 and "POOL=N" in bad.output
    alone = runner.invoke(cli.app, ["simulate", "--add-nodes", "x=1"])
    assert alone.exit_code == 2 and "--from-snapshot" in alone.output


def test_preempted_running_pod_is_rescheduled_not_rebound(tmp_path: Path) -> None:
    """A snapshot's running pod is bound once at t=0; evicted by a higher-priority arrival it goes back
    through the scheduling queue like any other pod (DefaultPreemption in the simulator)."""
    from kube_builders import container, node, pod, write_list

    low = pod(
        "low", [container("c", {"cpu": "1"}, {"nvidia.com/gpu": "8"})], node="n0", phase="Running", priority=0
    )
    high = pod("high", [container("c", {"cpu": "1"}, {"nvidia.com/gpu": "8"})], priority=1000)
    path = write_list(tmp_path / "s.json", [node("n0"), low, high])
    resolved = snapshot_scenario(load_snapshot([path]), remaining_s=3600, runtime_s=600)
    cols = job_columns(run_one(resolved, "default").result)
    index = {jid: i for i, jid in enumerate(cols["job_id"])}
    assert cols["queue_wait_s"][index["default/high"]] == 0  # preempted its way in at t=0
    assert cols["evictions"][index["default/low"]] == 1
    assert cols["state"][index["default/low"]] == "completed"
    assert cols["queue_wait_s"][index["default/low"]] == 600  # back on the node once high finished


def test_pending_pod_group_becomes_one_gang_job(tmp_path: Path) -> None:
    from kube_builders import container, node, pod, write_list

    members = []
    for i in range(3):
        member = pod(f"w-{i}", [container("c", {"cpu": "1"}, {"nvidia.com/gpu": "8"})])
        member["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "train"}
        members.append(member)
    path = write_list(tmp_path / "s.json", [node("n0"), node("n1"), *members])
    resolved = snapshot_scenario(load_snapshot([path]))
    (job,) = resolved.jobs
    assert (job.id, job.pods, job.gang) == ("default/train", 3, True)


def test_hostname_selector_follows_the_node_into_its_pool(tmp_path: Path) -> None:
    from kube_builders import container, node, pod, write_list

    pinned = pod("pinned", [container("c", {"cpu": "1"})], nodeSelector={"kubernetes.io/hostname": "n1"})
    path = write_list(tmp_path / "s.json", [node("n0"), node("n1", gpus=4), pinned])
    snap = load_snapshot([path])
    resolved = snapshot_scenario(snap)
    node_of = snapshot_pools(snap).node_of
    (job,) = resolved.jobs
    assert job.node_selector == {"kubernetes.io/hostname": node_of["n1"]}
    assert _pod_nodes(run_one(resolved, "default"))["default/pinned"] == node_of["n1"]


def test_product_strings_become_models_or_a_named_warning(tmp_path: Path) -> None:
    """GFD products: NVIDIA-A10G (an EKS g5 node) maps to A10G; a MIG single product counts instances,
    so its nvidia.com/gpu stays a plain resource, said in a warning; an unknown product is named."""
    items = [
        gpu_operator_node("g5-0", "NVIDIA-A10G", gpus=4),
        gpu_operator_node("mig-0", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", gpus=56),
        gpu_operator_node("rtx-0", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", gpus=8),
    ]
    built = snapshot_pools(load_snapshot([write_list(tmp_path / "n.json", items)]))
    by_node = {
        node: next(p for p in built.pools if built.node_of[node].startswith(p["name"]))
        for node in ("g5-0", "mig-0", "rtx-0")
    }
    assert (by_node["g5-0"]["gpu_model"], by_node["g5-0"]["gpus_per_node"]) == ("A10G", 4)
    assert (
        by_node["mig-0"]["extended_resources"]["nvidia.com/gpu"] == 56 and "gpu_model" not in by_node["mig-0"]
    )
    assert by_node["rtx-0"]["extended_resources"]["nvidia.com/gpu"] == 8
    assert any("counts MIG instances (NVIDIA-A100-SXM4-40GB-MIG-1g.5gb)" in w for w in built.warnings)
    assert any(
        "GPU product 'NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition' is not a model" in w
        for w in built.warnings
    )
