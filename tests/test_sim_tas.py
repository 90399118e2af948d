"""Kueue topology-aware scheduling in a simulation run, on worlds worked out by hand.

Kueue's rules used (kubernetes-sigs/kueue ``pkg/cache/tas_flavor_snapshot.go`` at commit
0060e03bdaad6e39ce06ed4a7c0a1e10e68580cd): a required level must hold the whole PodSet in one of its
domains; a preferred level that cannot climbs to the level above; BestFit takes, among the domains with
room, the one with the least room, ties broken by the domain's values in ascending order; inside the
chosen domain pods fill the lowest level's domains in the same order. A node that goes away is replaced
inside the same domain of the required level (``findReplacementAssignment``); when none has room Kueue
evicts the workload and admits it again from scratch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from builders import pool, scenario
from fleetlab.cli import app
from fleetlab.experiment.run import run_one
from fleetlab.metrics.tables import job_columns, pod_columns
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.loader import load

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tas" / "racks.yaml"
RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"


def placed(result: SimulationResult) -> dict[str, list[str]]:
    """Job id → the nodes of its pods, sorted."""
    pods = pod_columns(result)
    out: dict[str, list[str]] = {}
    for job, node in zip(pods["job_id"], pods["node"], strict=True):
        out.setdefault(job, []).append(node)
    return {job: sorted(nodes) for job, nodes in out.items()}


def by_job(result: SimulationResult, column: str) -> dict[str, float]:
    jobs = job_columns(result)
    return dict(zip(jobs["job_id"], jobs[column].tolist(), strict=True))


def test_example_racks_outcome() -> None:
    """examples/tas/racks.yaml: racks r1, r2 (block b1) and r3 (block b2) of two 8-GPU nodes each; the
    hold pods (outside Kueue) keep r1-0 and r2-0 busy from 0 to 3600 s. Every gang pod asks 8 GPUs.

    * rack-required (t=60, 2 pods, required rack): free nodes r1-1, r2-1, r3-0, r3-1; only r3 has 2 →
      r3-0 + r3-1 at once, running 60 → 7260 s.
    * rack-preferred (t=120, 2 pods, preferred rack): free r1-1 and r2-1, no rack has 2, so it climbs to
      the block level: b1 holds both → r1-1 + r2-1 at once, 120 → 3720 s (completion 3600 s).
    * rack-required-late (t=180, 2 pods, required rack): quota is free (32 of 48 GPUs used by Kueue) but
      no rack has 2 free nodes. At 3600 s the holds end (r1-0, r2-0 free: still one per rack); at 3720 s
      rack-preferred ends and r1 and r2 both have 2 free: the tie goes to r1 → r1-0 + r1-1,
      3720 → 7320 s; it waited 3720 − 180 = 3540 s, all of it before admission.
    * block-required (t=240, 4 pods, required block): 32 GPUs exceed the quota left (48 − 48 at 240 s,
      48 − 32 after 3720 s, 48 − 16 = 32 after 7260 s but b1 then has only r2's 2 nodes free and b2
      r3's 2); at 7320 s all of b1 is free → r1-0, r1-1, r2-0, r2-1, 7320 → 9120 s; waited
      7320 − 240 = 7080 s.
    """
    result = run_one(load(str(EXAMPLE))).result
    assert placed(result) == {
        "hold-r1": ["r1-0"],
        "hold-r2": ["r2-0"],
        "rack-required": ["r3-0", "r3-1"],
        "rack-preferred": ["r1-1", "r2-1"],
        "rack-required-late": ["r1-0", "r1-1"],
        "block-required": ["r1-0", "r1-1", "r2-0", "r2-1"],
    }
    waits = by_job(result, "queue_wait_s")
    assert waits == {
        "hold-r1": 0.0,
        "hold-r2": 0.0,
        "rack-required": 0.0,
        "rack-preferred": 0.0,
        "rack-required-late": 3540.0,
        "block-required": 7080.0,
    }
    assert by_job(result, "quota_wait_s") == waits  # Kueue had not admitted them: no node wait
    assert by_job(result, "completion_s")["block-required"] == 9120.0 - 240.0


def test_example_racks_from_the_command_line(tmp_path: Path) -> None:
    """``simulate --out`` on the example: 6 jobs, all completed, none pending, the last ends at 9120 s."""
    out = CliRunner().invoke(app, ["simulate", str(EXAMPLE), "--out", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    found = summary["summary"]
    assert (found["jobs_completed"], found["jobs_pending"], found["makespan_s"]) == (6, 0, 9120.0)


def kueue_objects() -> list[dict[str, Any]]:
    """A Topology of racks and hosts, one TAS flavor, a ClusterQueue with room for everything."""
    quota = [
        {"name": "cpu", "nominalQuota": "1000"},
        {"name": "memory", "nominalQuota": "10Ti"},
        {"name": "nvidia.com/gpu", "nominalQuota": 100},
    ]
    group = {
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "f", "resources": quota}],
    }
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "t"},
         "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
         "spec": {"nodeLabels": {"nvidia.com/gpu.present": "true"}, "topologyName": "t"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"resourceGroups": [group]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "q", "namespace": "default"}, "spec": {"clusterQueue": "cq"}},
    ]  # fmt: skip


GPU8 = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 8}


def failing_rack(r1_nodes: int, **gang: Any) -> SimulationResult:
    """Racks r0 (2 nodes) and r1 (``r1_nodes``), 8 GPUs a node. A pod outside Kueue holds r0-0 from 0 to
    300 s, so at t=1 the gang of two 8-GPU pods (required rack) can only go to r1, where BestFit and the
    hosts' order give r1-0 + r1-1. r1-1 fails at 600 s (repaired an hour later)."""
    failures = {"trace": [{"node": "r1-1", "at_s": 600, "repair_s": 3600}]}
    pools = [
        pool("r0", count=2, labels={RACK: "r0"}),
        pool("r1", count=r1_nodes, labels={RACK: "r1"}, failures=failures),
    ]
    hold = {"id": "hold", "requests": GPU8, "runtime": 300, "nodeSelector": {HOST: "r0-0"}}
    job = {"id": "g", "submit_s": 1, "pods": 2, "queue": "q", "requests": GPU8, "runtime": 3600, **gang}
    return run_one(scenario(pools, [hold, job], kueue=kueue_objects())).result


def test_a_failed_node_is_replaced_inside_the_required_rack() -> None:
    """r1 has a third node: Kueue replaces r1-1 by r1-2 (same rack) and the workload stays admitted. The
    gang restarts at 600 s on r1-0 + r1-2 and ends at 4200 s. Had Kueue evicted and re-admitted it, BestFit
    would have chosen r0 (2 free since 300 s, tied with r1's 2, and r0 < r1)."""
    result = failing_rack(3, gang=True, topology_required=RACK)
    assert placed(result)["g"] == ["r1-0", "r1-2"]
    assert by_job(result, "evictions")["g"] == 2  # both pods of the gang restart
    assert by_job(result, "completion_s")["g"] == 4200.0 - 1.0


def test_no_room_in_the_rack_evicts_the_workload_and_admits_it_again() -> None:
    """r1 has no other node: no replacement fits the required rack, Kueue evicts the workload and admits it
    again at once on r0 (free since 300 s): r0-0 + r0-1 from 600 s to 4200 s."""
    result = failing_rack(2, gang=True, topology_required=RACK)
    assert placed(result)["g"] == ["r0-0", "r0-1"]
    assert by_job(result, "evictions")["g"] == 2
    assert by_job(result, "completion_s")["g"] == 4200.0 - 1.0
