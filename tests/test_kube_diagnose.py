"""Staged diagnosis of a kubectl snapshot: (a) GPUs advertised, (b) pending pods with kube-scheduler's
reasons and the block it cannot name, (c) bound pods not yet running.

Messages follow FitError.Error() (pkg/scheduler/framework/types.go, v1.35 wording: first failing filter
per node, reasons counted and sorted as strings, ``node(s) had untolerated taint(s)`` after PR #134740).
The expected strings below are worked out by hand from the fixture, node by node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleetlab.kube.cluster import build_live_cluster
from fleetlab.kube.diagnose import Diagnosis, diagnose
from fleetlab.model.resources import GPU
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import container, node, pod, write_list

FIXTURES = Path(__file__).parent / "fixtures" / "kube"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def fixture_diagnosis() -> Diagnosis:
    snap = load_snapshot([FIXTURES / "snapshot.json"])
    return diagnose(build_live_cluster(snap), snap.newest)


def run(tmp_path: Path, items: list[dict[str, Any]]) -> Diagnosis:
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    return diagnose(build_live_cluster(snap), snap.newest)


def gpu_pod(
    name: str,
    gpus: int,
    node_name: str | None = None,
    phase: str = "Pending",
    tolerate: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    extra: dict[str, Any] = {"tolerations": [GPU_TOLERATION]} if tolerate else {}
    extra.update(spec)
    return pod(name, [container("c", {"cpu": "1"}, {GPU: str(gpus)})], node=node_name, phase=phase, **extra)


# -- stage (a) ------------------------------------------------------------------------------------------


def test_stage_a_names_each_gpu_node_problem() -> None:
    d = fixture_diagnosis()
    problems = {g.node: " ".join(g.problems) for g in d.gpu_nodes}
    assert "device plugin marked the GPUs unhealthy" in problems["gpu-h100-c-2"]  # allocatable 0 of 8
    assert "NotReady (Ready=Unknown)" in problems["gpu-h100-c-0"]
    assert "cordoned" in problems["gpu-h100-c-1"]
    assert "device plugin (or the driver it needs) is not running" in problems["gpu-l4-noplugin-0"]
    assert problems["gpu-h100-a-0"] == "" and problems["gpu-a100-mig-0"] == ""
    assert "cpu-pool-0" not in problems  # no sign of GPUs: not listed
    sharing = {g.node: g.sharing for g in d.gpu_nodes}
    assert sharing["gpu-l4-shared-0"] is not None and "4 GPUs x 10 replicas" in sharing["gpu-l4-shared-0"]
    mig = {g.node: g.mig for g in d.gpu_nodes}
    assert mig["gpu-a100-mig-0"] is not None and "MIG mixed" in mig["gpu-a100-mig-0"]
    # 6 healthy H100 + c-0 + c-1 (8 each) + 40 time-sliced; c-0 (unreachable) and c-1 (cordoned) excluded.
    assert (d.gpus_allocatable, d.gpus_schedulable) == (104, 88)


# -- stage (b) ------------------------------------------------------------------------------------------


def test_eight_gpu_pod_is_fragmentation_with_kube_scheduler_message() -> None:
    """14 H100s free across 6 nodes, at most 4 on one: kube-scheduler only says Insufficient."""
    d = fixture_diagnosis()
    p = next(x for x in d.pending if x.pod == "ml-research/pretrain-70b-worker-0-fz2lm")
    # c-1 cordoned (NodeUnschedulable first); c-0 unreachable taint; mig, L4s and cpu nodes fail the
    # H100 nodeSelector; a-0..b-2 and c-2 lack 8 GPUs; a-1..b-2 (two 16-CPU/160Gi pods each) also lack
    # 180 CPUs and 1600Gi.
    assert p.message == (
        "0/14 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
        "5 Insufficient cpu, 5 Insufficient memory, 5 node(s) didn't match Pod's node affinity/selector, "
        "7 Insufficient nvidia.com/gpu."
    )
    # The constraint whose removal opens room: c-1 is cordoned with all 8 of its H100s free (its
    # node.kubernetes.io/unschedulable taint is the same cordon), and the time-sliced L4 node has 40 free
    # replicas behind the pod's H100 selector. Lifting the cordon alone opens room; the pod's own selector is
    # named last. On the nodes the pod may use, the GPUs are fragmented.
    assert p.blocked_by == "cordoned"
    assert p.detail == (
        "all 2 node(s) with room for the pod now are ruled out: 1 cordoned, 1 selector/affinity; lifting the "
        "cordoned rule alone opens 1 node(s); on the nodes it may use: fragmentation, 14 nvidia.com/gpu free "
        "across 6 node(s), at most 4 on one node; the pod needs 8"
    )
    per_node = {name: g for g in p.nodes for name in g.nodes}
    assert per_node["gpu-h100-c-1"].reasons == ["node(s) were unschedulable"]
    assert per_node["gpu-h100-c-0"].plugin == "TaintToleration"
    assert per_node["gpu-h100-a-0"].reasons == ["Insufficient nvidia.com/gpu"]
    assert per_node["gpu-h100-a-1"].reasons == [
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient nvidia.com/gpu",
    ]
    assert per_node["cpu-pool-0"].reasons == ["node(s) didn't match Pod's node affinity/selector"]
    assert not any(g.fits for g in p.nodes) and len(per_node) == 14
    # Groups are the histogram: 5 nodes short of cpu, memory and GPUs; a-0 and c-2 short of GPUs only.
    assert sorted(len(g.nodes) for g in p.nodes) == [1, 1, 2, 5, 5]
    assert p.waiting_s == 38 * 60 + 40  # created 09:20:00, snapshot newest 09:58:40


def test_pod_blocked_only_by_taint_is_taint_not_too_large() -> None:
    """The notebook asks for 1 GPU without tolerating nvidia.com/gpu: every GPU node is tainted, the
    untainted nodes have no GPUs. The block is the taint, and the taint is named."""
    d = fixture_diagnosis()
    p = next(x for x in d.pending if x.pod == "analytics/notebook-gpu-0")
    assert p.message == (
        "0/14 nodes are available: 1 node(s) were unschedulable, 10 node(s) had untolerated taint(s), "
        "3 Insufficient nvidia.com/gpu."
    )
    assert p.blocked_by == "taint"
    assert "nvidia.com/gpu=present:NoSchedule" in p.detail


def test_selector_matching_no_node_is_selector() -> None:
    d = fixture_diagnosis()
    p = next(x for x in d.pending if x.pod == "ml-research/b200-bench-8xkqz")
    assert p.blocked_by == "selector/affinity"
    assert "12 node(s) didn't match Pod's node affinity/selector" in p.message


def test_not_ready_node_without_taint_gets_the_controllers_taint(tmp_path: Path) -> None:
    """Ready=False but no not-ready taint yet: treated as tainted node.kubernetes.io/not-ready:NoSchedule
    (node lifecycle controller), so the pod is reported as blocked by a NotReady node, not placed."""
    d = run(tmp_path, [node("n0", ready="False"), gpu_pod("p", 8)])
    (p,) = d.pending
    assert p.message == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
    assert p.blocked_by == "not-ready"
    assert any("n0 is NotReady" in note for note in d.notes)
    assert d.gpus_schedulable == 0


def test_not_ready_taint_tolerated_lets_the_pod_fit(tmp_path: Path) -> None:
    tolerations = [GPU_TOLERATION, {"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]
    d = run(tmp_path, [node("n0", ready="False"), gpu_pod("p", 8, tolerations=tolerations)])
    assert d.pending[0].blocked_by == "none"


def test_cordoned_only_big_node_is_cordoned(tmp_path: Path) -> None:
    d = run(tmp_path, [node("big", unschedulable=True), node("small", gpus=2), gpu_pod("p", 8)])
    (p,) = d.pending
    assert (
        p.message == "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable."
    )
    assert p.blocked_by == "cordoned"


def test_driver_fault_gpu_zero_is_not_advertised(tmp_path: Path) -> None:
    """After an XID fault the device plugin reports allocatable 0 while capacity stays 8."""
    d = run(tmp_path, [node("n0", gpus=0, capacity_gpus=8), gpu_pod("p", 1)])
    (p,) = d.pending
    assert p.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert p.blocked_by == "not-advertised"
    assert "capacity but 0 allocatable" in p.detail
    assert "unhealthy" in d.gpu_nodes[0].problems[0]


def test_missing_mig_profile_is_not_advertised() -> None:
    snap = load_snapshot([FIXTURES / "snapshot.json"])
    extra = pod("mig", [container("c", limits={"nvidia.com/mig-3g.40gb": "1"})], tolerations=[GPU_TOLERATION])
    from fleetlab.spec.kube_snapshot import parse_pod

    snap.pods.append(parse_pod(extra, "test"))
    d = diagnose(build_live_cluster(snap), snap.newest)
    p = next(x for x in d.pending if x.pod == "default/mig")
    assert p.blocked_by == "not-advertised" and "nvidia.com/mig-3g.40gb" in p.detail


def test_total_shortage_and_too_large(tmp_path: Path) -> None:
    nodes = [node("a", 8), node("b", 8)]
    busy = [gpu_pod("busy-a", 6, "a", "Running"), gpu_pod("busy-b", 6, "b", "Running")]
    d = run(tmp_path, [*nodes, *busy, gpu_pod("want8", 8), gpu_pod("want16", 16)])
    by_pod = {p.pod: p for p in d.pending}
    assert by_pod["default/want8"].blocked_by == "shortage"
    assert by_pod["default/want8"].detail.startswith("4 nvidia.com/gpu free in total on 2 eligible node(s)")
    assert by_pod["default/want16"].blocked_by == "too-large"


def test_gang_waits_for_siblings(tmp_path: Path) -> None:
    """Kueue pod group of 4 with only 3 pods created; and a full gang larger than the free room."""

    def member(name: str, group: str, size: int, gpus: int) -> dict[str, Any]:
        obj = gpu_pod(name, gpus)
        obj["metadata"]["labels"] = {"kueue.x-k8s.io/pod-group-name": group}
        obj["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": str(size)}
        return obj

    items = [
        node("a"),
        node("b"),
        *(member(f"g-{i}", "g", 4, 1) for i in range(3)),
        *(member(f"h-{i}", "h", 3, 8) for i in range(3)),
    ]
    d = run(tmp_path, items)
    by_pod = {p.pod: p for p in d.pending}
    assert by_pod["default/g-0"].blocked_by == "gang"
    assert "3 of 4 pods exist" in by_pod["default/g-0"].detail
    assert by_pod["default/h-0"].blocked_by == "gang"
    assert "room for 2" in by_pod["default/h-0"].detail


def test_scheduling_gate_is_reported(tmp_path: Path) -> None:
    gated = gpu_pod("p", 1, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
    d = run(tmp_path, [node("a"), gated])
    assert d.pending[0].blocked_by == "gated" and "Kueue" in d.pending[0].detail


# -- stage (c) ------------------------------------------------------------------------------------------


def test_stage_c_bound_pods_not_running() -> None:
    d = fixture_diagnosis()
    by_pod = {s.pod: s for s in d.starting}
    reranker = by_pod["inference/l4-reranker-84f-zxcvb"]
    assert reranker.stage == "pulling image" and reranker.waiting_s == 6 * 60 + 37  # sandbox 09:52:03
    etl = by_pod["web/sandboxed-etl-1"]
    assert etl.stage == "initialising" and "migrate" in etl.reason and etl.waiting_s == 180  # 09:55:40
    assert d.anything_pending


def test_stage_c_volume_and_pull_failure(tmp_path: Path) -> None:
    with_pvc = gpu_pod(
        "vol", 1, "a", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "ds"}}]
    )
    with_pvc["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-30T09:10:00Z"}
    ]
    pull = gpu_pod("pull", 1, "a")
    pull["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-30T09:00:00Z"},
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-11-30T09:00:05Z"},
    ]
    pull["status"]["containerStatuses"] = [
        {"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "secret registry"}}}
    ]
    clock = gpu_pod("clock", 0, "a", phase="Running")
    clock["status"]["startTime"] = "2026-11-30T09:30:00Z"
    d = run(tmp_path, [node("a"), with_pvc, pull, clock])
    by_pod = {s.pod: s for s in d.starting}
    assert by_pod["default/vol"].stage == "waiting for volume" and "ds" in by_pod["default/vol"].reason
    assert by_pod["default/vol"].waiting_s == 20 * 60
    assert by_pod["default/pull"].stage == "image pull failing"
    assert "secret registry" not in json.dumps(d.as_dict())


def test_nothing_pending(tmp_path: Path) -> None:
    d = run(tmp_path, [node("a"), gpu_pod("done", 8, "a", "Succeeded"), gpu_pod("run", 8, "a", "Running")])
    assert not d.anything_pending and d.pending == [] and d.starting == []


# -- Kueue ----------------------------------------------------------------------------------------------


def test_kueue_quota_nominal_used_borrowable() -> None:
    """Flat cohort ``ml`` (resource_node.go arithmetic): team-a has 16 nominal, 12 used, borrowingLimit 8;
    team-b has 16 nominal, 10 used, lendingLimit 4 (12 stay private). team-a can use its 4 unused plus
    the 4 team-b lends = 8, so 2 x 8 GPUs waits for quota and 1 x 8 fits."""
    snap = load_snapshot([FIXTURES / "snapshot.json"], [FIXTURES / "kueue.json"])
    from fleetlab.spec.kube_snapshot import parse_pod

    gated = gpu_pod("pretrain-2x8-0", 8, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
    gated["metadata"]["namespace"] = "team-a"
    gated["metadata"]["ownerReferences"] = [
        {
            "kind": "Job",
            "name": "pretrain-2x8",
            "uid": "5f0c1a2b-0000-4000-8000-000000000001",
            "controller": True,
        }
    ]
    snap.pods.append(parse_pod(gated, "test"))
    d = diagnose(build_live_cluster(snap), snap.newest)
    by_name = {w.workload: w for w in d.workloads}
    big = by_name["team-a/job-pretrain-2x8"]
    assert big.cluster_queue == "team-a" and big.requests["nvidia.com/gpu"] == "16"
    (gpu_row,) = [q for q in big.quota if q.resource == "nvidia.com/gpu"]
    assert (gpu_row.nominal, gpu_row.used, gpu_row.available, gpu_row.borrowable) == ("16", "12", "8", "4")
    assert gpu_row.borrowing_limit == "8" and not gpu_row.fits
    assert big.verdict == "quota: ClusterQueue team-a: nvidia.com/gpu: needs 16, at most 8 available"
    assert "8 more needed" in big.message
    assert by_name["team-a/job-finetune-1x8"].verdict.startswith("quota fits")
    pod_entry = next(p for p in d.pending if p.pod == "team-a/pretrain-2x8-0")
    assert pod_entry.blocked_by == "kueue-quota" and "job-pretrain-2x8" in pod_entry.detail
    assert "hf_do_not_print" not in json.dumps(d.as_dict())


def test_kueue_file_with_other_kinds_is_refused(tmp_path: Path) -> None:
    import pytest

    from fleetlab.spec.errors import SpecError

    path = write_list(tmp_path / "k.json", [node("n0")])
    with pytest.raises(SpecError, match="a --kueue file holds only"):
        load_snapshot([FIXTURES / "nodes.json"], [path])


# -- what the cluster said ------------------------------------------------------------------------------


def test_cluster_message_agrees_with_the_recomputed_one() -> None:
    """The fixture's PodScheduled messages (v1.35 wording, DRA on) start with the filter part fleetlab
    recomputes from the snapshot, so no disagreement is noted."""
    d = fixture_diagnosis()
    for p in d.pending:
        assert p.reported.startswith(p.message), p.pod
        assert "preemption: 0/14 nodes are available" in p.reported
    assert not any("last reported" in n for n in d.notes)


def test_stale_cluster_message_is_noted(tmp_path: Path) -> None:
    stale = gpu_pod("p", 8)
    stale["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: ...",
        }
    ]
    d = run(tmp_path, [node("n0", ready="False"), stale])
    assert d.pending[0].reported.startswith("0/1 nodes are available: 1 Insufficient")
    assert any("last reported" in n and "filter fleetlab does not model" in n for n in d.notes)


def test_events_name_the_volume_problem_and_the_pull(tmp_path: Path) -> None:
    vol = gpu_pod("vol", 1, "a", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "ds"}}])
    pull = gpu_pod("pull", 1, "a")
    pull["status"]["conditions"] = [
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-11-30T09:00:05Z"}
    ]
    pull["status"]["containerStatuses"] = [
        {"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}
    ]
    events = [
        {
            "apiVersion": "v1",
            "kind": "Event",
            "reason": "FailedMount",
            "type": "Warning",
            "count": 7,
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "vol"},
            "message": 'MountVolume.MountDevice failed for volume "pvc-1" : rpc error: timed out',
            "firstTimestamp": "2026-11-30T09:02:00Z",
            "lastTimestamp": "2026-11-30T09:20:00Z",
        },
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "reason": "Pulling",
            "type": "Normal",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "pull"},
            "note": 'Pulling image "trainer:2026.11"',
            "eventTime": "2026-11-30T09:01:00Z",
        },
        {
            "apiVersion": "v1",
            "kind": "Event",
            "reason": "Started",
            "message": "ignored text",
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "pull"},
            "lastTimestamp": "2026-11-30T09:30:00Z",
        },
    ]
    nodes_pods = write_list(tmp_path / "snap.json", [node("a"), vol, pull])
    event_file = write_list(tmp_path / "events.json", events)
    snap = load_snapshot([nodes_pods], event_paths=[event_file])
    d = diagnose(build_live_cluster(snap), snap.newest)  # newest: 09:30:00 (the Started event)
    by_pod = {s.pod: s for s in d.starting}
    assert by_pod["default/vol"].stage == "waiting for volume"
    assert "FailedMount x7" in by_pod["default/vol"].reason and by_pod["default/vol"].waiting_s == 28 * 60
    assert by_pod["default/pull"].stage == "pulling image" and by_pod["default/pull"].waiting_s == 29 * 60
    assert "ignored text" not in json.dumps(d.as_dict())


# -- preemption -----------------------------------------------------------------------------------------


def test_preemption_dry_run_names_the_victims(tmp_path: Path) -> None:
    """DefaultPreemption (SelectVictimsOnNode): on the node where evicting lower-priority pods makes room,
    the minimal set is evicted; higher-priority pods are reprieved first."""
    low = gpu_pod("low", 4, "a", "Running", priority=0)
    low2 = gpu_pod("low2", 2, "a", "Running", priority=10)
    other = gpu_pod("peer", 4, "b", "Running", priority=1000)
    urgent = gpu_pod("urgent", 6, priority=1000)
    never = gpu_pod("polite", 6, priority=1000, preemptionPolicy="Never")
    d = run(tmp_path, [node("a"), node("b"), low, low2, other, urgent, never])
    by_pod = {p.pod: p for p in d.pending}
    # a has 2 free; evicting low (4) gives 6: enough, so low2 (priority 10) is reprieved.
    assert by_pod["default/urgent"].blocked_by == "fragmentation"  # 2 free on a, 4 on b
    assert by_pod["default/urgent"].preemption == "would evict 1 lower-priority pod(s) on a: default/low"
    assert by_pod["default/polite"].preemption == "not eligible due to preemptionPolicy=Never"


def test_fixture_eight_gpu_pod_finds_no_victims() -> None:
    """Every fine-tune runs at the same priority (0) as the 8-GPU pod: nothing to preempt, as the
    fixture's own message says (6 No preemption victims found for incoming pod)."""
    d = fixture_diagnosis()
    p = next(x for x in d.pending if x.pod == "ml-research/pretrain-70b-worker-0-fz2lm")
    assert p.preemption.startswith("no lower-priority pods run anywhere")


def test_bound_to_not_ready_node_and_nominated_pod(tmp_path: Path) -> None:
    stuck = gpu_pod("stuck", 1, "down")
    nominated = gpu_pod("nominee", 8)
    nominated["status"]["nominatedNodeName"] = "up"
    busy = gpu_pod("busy", 4, "up", "Running")
    d = run(tmp_path, [node("down", ready="Unknown"), node("up"), stuck, nominated, busy])
    (s,) = d.starting
    assert s.stage == "node NotReady" and "Ready=Unknown" in s.reason
    (p,) = d.pending
    assert p.preemption.startswith("nominated to node up")


def test_stuck_since_without_first_timestamp_uses_series_start_or_pod_creation(tmp_path: Path) -> None:
    """An events.k8s.io FailedMount series says when it began in ``eventTime`` and when it was last seen in
    ``series.lastObservedTime``; with neither a firstTimestamp nor an eventTime the start is unknown and the
    pod's own creation stands in. Hand check (snapshot newest 09:30:00, pods created 09:00:00): the series
    begun at 09:04:00 gives 26 min; the event with only a last time (09:30:00) gives 30 min since
    creation, where the old reading said 0 s."""
    vol = gpu_pod("vol", 1, "a", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "ds"}}])
    bare = gpu_pod("bare", 1, "a", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "ds2"}}])

    def mount_event(pod: str, **times: object) -> dict[str, object]:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "reason": "FailedMount",
            "type": "Warning",
            "regarding": {"kind": "Pod", "namespace": "default", "name": pod},
            "note": "MountVolume.SetUp failed: timed out",
            **times,
        }

    events = [
        mount_event(
            "vol",
            eventTime="2026-11-30T09:04:00Z",
            series={"count": 5, "lastObservedTime": "2026-11-30T09:30:00Z"},
        ),
        mount_event("bare", series={"count": 3, "lastObservedTime": "2026-11-30T09:30:00Z"}),
    ]
    snap = load_snapshot(
        [write_list(tmp_path / "snap.json", [node("a"), vol, bare])],
        event_paths=[write_list(tmp_path / "events.json", events)],
    )
    d = diagnose(build_live_cluster(snap), snap.newest)
    by_pod = {s.pod: s for s in d.starting}
    assert by_pod["default/vol"].waiting_s == 26 * 60
    assert by_pod["default/bare"].stage == "waiting for volume"
    assert by_pod["default/bare"].waiting_s == 30 * 60
