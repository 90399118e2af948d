"""Recorded policy into the history: Slurm associations, QOS, node events, sshare and priority weights
(files in tests/data/history/policy/, written in the shape `sacctmgr ... --parsable2`, `sshare -P` and
`scontrol show config` print); Kueue queues, ResourceQuotas, PriorityClasses and node outages from a kubectl
dump; the history folder keeps them; the calibrated scenario replays what it can."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetlab.experiment.history_policy import recorded_policy
from fleetlab.model.history_policy import SlurmLimits
from fleetlab.model.queues import queue_config_from_objects
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.slurm import parse_wall
from fleetlab.spec.history.sources import detect_format, import_sources
from fleetlab.spec.history.store import history_meta, load_history, write_history
from kube_history_builders import event, kube_list, node, pod, ts, write_json

POLICY = Path(__file__).parent / "data" / "history" / "policy"
DATA = Path(__file__).parent / "data" / "history"
GiB = 1 << 30


def test_formats_are_detected_from_their_headers() -> None:
    names = ("assoc.txt", "qos.txt", "events.txt", "sshare.txt", "config.txt")
    assert [detect_format(POLICY / n) for n in names] == [
        "sacctmgr",
        "sacctmgr",
        "sacctmgr",
        "sshare",
        "scontrol",
    ]


def test_slurm_associations_qos_share_and_weights() -> None:
    history = import_sources(
        [str(POLICY / n) for n in ("assoc.txt", "qos.txt", "sshare.txt", "config.txt")]
        + [str(DATA / "sacct.txt")]
    )
    policy = history.policy
    by_key = {(a.account, a.user): a for a in policy.slurm_associations}
    # physics: GrpTRES cpu=96,gres/gpu=8; chemistry: a typed gres/gpu:a100=4 counts as 4 GPUs.
    assert by_key[("physics", None)].limits.grp_tres == {"cpu": 96, "gres/gpu": 8}
    assert by_key[("chemistry", None)].limits.grp_tres == {"cpu": 64, "gres/gpu": 4}
    alice = by_key[("physics", "alice")]
    # MaxJobs 10, MaxTRES cpu=64,mem=256G (per job), MaxSubmit 50, MaxWall 2 days; QOS normal and long.
    assert alice.limits == SlurmLimits(
        max_jobs=10, max_tres_per_job={"cpu": 64, "mem": 256 * GiB}, max_submit=50, max_wall_s=2 * 86400.0
    )
    assert (alice.qos, alice.default_qos) == (("normal", "long"), "normal")
    qos = {q.name: q for q in policy.slurm_qos}
    # normal: MaxTRESPU cpu=32 and MaxJobsPU 1000001 (a site's "practically unlimited", kept as written).
    assert qos["normal"].limits.max_tres_per_user == {"cpu": 32}
    assert qos["normal"].limits.max_jobs_per_user == 1000001
    long = qos["long"]
    assert (long.priority, long.preempt, long.usage_factor) == (100, ("normal",), 0.5)
    assert long.limits.max_tres_per_user == {"cpu": 16, "mem": 64 * GiB}
    assert (long.limits.max_jobs_per_user, long.limits.max_submit_per_user, long.limits.max_wall_s) == (
        2,
        5,
        7 * 86400.0,
    )
    shares = {(r.account, r.user): r for r in policy.fair_share}
    assert shares[("physics", None)].norm_shares == 0.75 and shares[("chemistry", "bob")].raw_shares is None
    assert policy.priority_type == "priority/multifactor"
    # PriorityWeightTRES is a list, not a whole number: left out.
    assert policy.priority_weights == {
        "PriorityWeightAge": 1000,
        "PriorityWeightFairshare": 10000,
        "PriorityWeightJobSize": 0,
    }


def test_slurm_node_events_become_down_and_drain_windows() -> None:
    history = import_sources([str(POLICY / "events.txt"), str(DATA / "sacct.txt")])
    # The epoch is sacct.txt's first submit, 2024-05-01T10:00:00; the record ends at its latest instant.
    windows = [(w["node"], w["start_s"], w["end_s"], w["state"]) for w in history.node_down.to_pylist()]
    # n[01-02] DOWN* 10:00..11:30 (0..5400 s) for each node; n03 IDLE+DRAIN from 11:00 (3600 s), still so;
    # n04 MIXED takes no node out; the cluster event (no node) is skipped.
    assert windows == [
        ("n01", 0.0, 5400.0, "down"),
        ("n02", 0.0, 5400.0, "down"),
        ("n03", 3600.0, None, "drain"),
    ]
    assert history.skipped["sacctmgr: cluster event (no node)"] == 1
    assert history.skipped["sacctmgr: node event in a state that takes no node out"] == 1


def test_bad_policy_files_name_line_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "qos.txt"
    bad.write_text("Name|Priority|MaxTRESPU\nnormal|high|cpu=4\n")
    with pytest.raises(SpecError, match="line 2 Priority: 'high' is not a whole number"):
        import_sources([f"sacctmgr:{bad}"])
    bad.write_text("Name|Priority|MaxTRESPU|MaxWall\nnormal|1|cpu=4|forever\n")
    with pytest.raises(SpecError, match="MaxWall: 'forever' is not a Slurm time"):
        import_sources([f"sacctmgr:{bad}"])
    bad.write_text("Foo|Bar\n1|2\n")
    with pytest.raises(SpecError, match="is not the header of `sacctmgr show"):
        import_sources([f"sacctmgr:{bad}"])


def _kueue(kind: str, name: str, spec: dict[str, Any], ns: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "42",
                            "creationTimestamp": ts("09:00:00"), "managedFields": [{"manager": "kubectl"}]}  # fmt: skip
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec,
            "status": {"admittedWorkloads": 3}}  # fmt: skip


def _policy_dump(folder: Path) -> list[Path]:
    queues = kube_list([
        _kueue("ResourceFlavor", "default-flavor", {}),
        _kueue("ClusterQueue", "team-a-cq", {
            "namespaceSelector": {}, "cohort": "all", "queueingStrategy": "StrictFIFO",
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 64},
                 {"name": "memory", "nominalQuota": "256Gi"}, {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}),
        _kueue("LocalQueue", "team-a-queue", {"clusterQueue": "team-a-cq"}, ns="team-a"),
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "WorkloadPriorityClass",
         "metadata": {"name": "high"}, "value": 1000},
    ])  # fmt: skip
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": "team-b"},
             "spec": {"hard": {"requests.cpu": "32", "requests.nvidia.com/gpu": 4, "pods": "50"}},
             "status": {"used": {"requests.cpu": "8"}}}  # fmt: skip
    priority = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch"},
                "value": 100, "globalDefault": True, "preemptionPolicy": "Never"}  # fmt: skip
    down = node("gpu-node-2")
    down["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                     "lastTransitionTime": ts("10:30:00")}]  # fmt: skip
    cordoned = node("gpu-node-3")
    cordoned["spec"] = {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": ts("10:40:00")}]}  # fmt: skip
    events = kube_list([
        event("Node", "", "gpu-node-1", "NodeNotReady", "Node gpu-node-1 status is now: NodeNotReady", "10:10:00"),
        event("Node", "", "gpu-node-1", "NodeReady", "Node gpu-node-1 status is now: NodeReady", "10:25:00"),
        event("Node", "", "gpu-node-1", "NodeNotSchedulable", "Node gpu-node-1 status is now: NodeNotSchedulable",
              "10:50:00"),
    ])  # fmt: skip
    pods = kube_list([
        pod("team-a", "p-1", "10:00:00", scheduled="10:00:05", started="10:00:10", finished="11:00:00",
            phase="Succeeded", gpus=1, labels={"kueue.x-k8s.io/queue-name": "team-a-queue"}),
    ])  # fmt: skip
    return [
        write_json(folder / "queues.json", queues),
        write_json(folder / "quota.json", kube_list([quota, priority])),
        write_json(folder / "nodes.json", kube_list([node("gpu-node-1"), down, cordoned])),
        write_json(folder / "events.json", events),
        write_json(folder / "pods.json", pods),
    ]


def test_kubectl_queues_quotas_priority_classes_and_node_outages(tmp_path: Path) -> None:
    history = import_sources(_policy_dump(tmp_path))
    policy = history.policy
    kinds = [o["kind"] for o in policy.kueue]
    assert kinds == ["ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"]
    cq = policy.kueue[1]
    # status and the server's metadata are dropped; the spec is kept as written (v1beta1's cohort).
    assert "status" not in cq and cq["metadata"] == {"name": "team-a-cq"} and cq["spec"]["cohort"] == "all"
    assert queue_config_from_objects([dict(o) for o in policy.kueue]).cluster_queues[0].name == "team-a-cq"
    (quota,) = policy.resource_quotas
    assert (quota.namespace, quota.hard) == (
        "team-b",
        {"requests.cpu": "32", "requests.nvidia.com/gpu": "4", "pods": "50"},
    )
    (pc,) = policy.priority_classes
    assert (pc.name, pc.value, pc.global_default, pc.preemption_policy) == ("batch", 100, True, "Never")
    windows = [(w["node"], w["start_s"], w["end_s"], w["state"]) for w in history.node_down.to_pylist()]
    # Epoch 10:00:00 (p-1's creation). gpu-node-1: NotReady 10:10 -> Ready 10:25 (600..1500 s), cordoned
    # from 10:50 (3000 s) on; gpu-node-2 not ready since 10:30 (1800 s); gpu-node-3 cordoned since 10:40.
    assert windows == [
        ("gpu-node-1", 600.0, 1500.0, "down"),
        ("gpu-node-2", 1800.0, None, "down"),
        ("gpu-node-3", 2400.0, None, "drain"),
        ("gpu-node-1", 3000.0, None, "drain"),
    ]
    counts = history_meta(history)["policy"]
    assert counts == {"ClusterQueue": 1, "LocalQueue": 1, "PriorityClass": 1, "ResourceFlavor": 1,
                      "ResourceQuota": 1, "WorkloadPriorityClass": 1}  # fmt: skip
    write_history(history, tmp_path / "h")
    loaded = load_history(tmp_path / "h")
    assert loaded.policy == history.policy and loaded.node_down.equals(history.node_down)


def test_recorded_kueue_objects_are_the_replayed_queues(tmp_path: Path) -> None:
    history = import_sources(_policy_dump(tmp_path))
    replay = recorded_policy(history)
    assert replay is not None and replay.source == "kueue"
    # p-1 names LocalQueue team-a/team-a-queue (its label), which the dump defines.
    assert replay.assignment == {"team-a/Pod/p-1": ("team-a", "team-a-queue")}


SACCT = (
    "JobID|Partition|Account|QOS|State|Submit|Start|End|AllocTRES|NodeList\n"
    "1|cpu|physics|normal|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:01:00|2024-05-01T11:00:00|cpu=8,mem=8G,node=1|n01\n"
    "2|cpu|chemistry|normal|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T11:00:00|cpu=8,mem=8G,node=1|n02\n"
)


def test_slurm_account_limits_become_cluster_queues_weighted_by_shares(tmp_path: Path) -> None:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(SACCT)
    history = import_sources(
        [str(POLICY / n) for n in ("assoc.txt", "sshare.txt", "config.txt")] + [str(sacct)]
    )
    replay = recorded_policy(history)
    assert replay is not None and (replay.source, replay.grouping, replay.fair_sharing) == (
        "slurm",
        "team",
        True,
    )
    queues = {o["metadata"]["name"]: o for o in replay.objects if o["kind"] == "ClusterQueue"}
    assert sorted(queues) == ["account-chemistry", "account-physics"]
    assert replay.assignment == {"1": ("account-physics", "history"), "2": ("account-chemistry", "history")}
    physics = queues["account-physics"]["spec"]
    resources = {r["name"]: r for r in physics["resourceGroups"][0]["flavors"][0]["resources"]}
    # GrpTRES cpu=96 -> 96,000 milli-cores, gres/gpu=8 -> 8 GPUs, lent to no one; weight NormShares 0.75.
    assert (resources["cpu"]["nominalQuota"], resources["cpu"]["borrowingLimit"]) == ("96000m", "0")
    assert physics["fairSharing"] == {"weight": "750m"}
    # alice's MaxJobs 10 / MaxSubmit 50 are replayed as a job limit (tests/test_history_batch.py).
    assert [(j.name, j.max_running, j.max_submitted) for j in replay.job_limits] == [("alice", 10, 50)]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2-00:00:00", 172800.0), ("04:00:00", 14400.0), ("30", 1800.0), ("30:15", 1815.0), ("1-12", 129600.0),
     ("1-02:30", 95400.0), ("UNLIMITED", None), ("", None)],
)  # fmt: skip
def test_slurm_times(text: str, seconds: float | None) -> None:
    # Slurm's forms: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes, ...
    assert parse_wall(text, "t", "x") == seconds


def test_sacct_user_and_time_limit_become_user_and_walltime(tmp_path: Path) -> None:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|User|Account|State|Submit|Start|End|Timelimit|AllocTRES\n"
        "7|alice|physics|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:30:00|01:00:00|cpu=4,node=1\n"
    )
    (job,) = import_sources([str(sacct)]).jobs.to_pylist()
    assert (job["user"], job["team"], job["walltime_s"]) == ("alice", "physics", 3600.0)
