"""The constraint whose removal opens room is the block, not a shortage.

Hand case (the issue's): n1 has 8 GPUs, all held by a running pod; n4 has 8 GPUs free behind the taint
``dedicated=inference:NoSchedule``. A pod asking for 4 GPUs without the toleration: on the one node it may
use (n1) 0 GPUs are free, which alone reads as a shortage; but lifting the taint opens n4, which has
8 >= 4 free, so the verdict is ``taint``, naming it. With the toleration it fits n4; with n4 full too it is
a real shortage.
"""

from __future__ import annotations

from pathlib import Path

from fleetlab.model.resources import GPU
from kube_builders import container, diagnose_items, node, pod

TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}


def _world(tolerate: bool = False, n4_busy: bool = False) -> list[dict[str, object]]:
    items: list[dict[str, object]] = [node("n1"), node("n4", taints=[TAINT])]
    items.append(pod("holder", [container("c", limits={GPU: "8"})], node="n1", phase="Running"))
    if n4_busy:
        toleration = [{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}]
        items.append(
            pod(
                "infer",
                [container("c", limits={GPU: "8"})],
                node="n4",
                phase="Running",
                tolerations=toleration,
            )
        )
    extra = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]} if tolerate else {}
    items.append(pod("train", [container("c", limits={GPU: "4"})], **extra))
    return items


def test_free_gpus_behind_a_taint_are_the_taint(tmp_path: Path) -> None:
    d = diagnose_items(tmp_path, _world())
    (p,) = d.pending
    assert p.message == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
    )
    assert p.blocked_by == "taint"
    assert p.detail.startswith(
        "all 1 node(s) with room for the pod now are ruled out: 1 taint; lifting the taint rule alone opens "
        "1 node(s); untolerated taints: dedicated=inference:NoSchedule (1); on the nodes it may use: shortage, "
        "0 nvidia.com/gpu free in total on 1 eligible node(s)"
    )
    assert p.capacity_verdict == "shortage"


def test_tolerating_pod_fits(tmp_path: Path) -> None:
    (p,) = diagnose_items(tmp_path, _world(tolerate=True)).pending
    assert p.blocked_by == "none" and p.placed_on == "n4"


def test_no_room_anywhere_is_a_shortage(tmp_path: Path) -> None:
    (p,) = diagnose_items(tmp_path, _world(n4_busy=True)).pending
    assert p.blocked_by == "shortage"
    assert p.capacity_verdict == ""


def test_diagnose_nodes_and_pods_files_name_the_taint(tmp_path: Path) -> None:
    """The same world as two kubectl outputs (``--nodes`` and ``--pods``), through the command's --json."""
    import json

    from typer.testing import CliRunner

    from fleetlab import cli
    from kube_builders import write_list

    world = _world()
    nodes = write_list(tmp_path / "nodes.json", [o for o in world if o["kind"] == "Node"])
    pods = write_list(tmp_path / "pods.json", [o for o in world if o["kind"] == "Pod"])
    result = CliRunner().invoke(cli.app, ["diagnose", "--nodes", str(nodes), "--pods", str(pods), "--json"])
    assert result.exit_code == 1, result.output  # something is pending
    (pending,) = json.loads(result.output)["pending"]
    assert pending["blocked_by"] == "taint"
    assert "dedicated=inference:NoSchedule" in pending["detail"]
    assert pending["capacity_verdict"] == "shortage"


def test_simulate_pending_table_names_the_taint(tmp_path: Path) -> None:
    """The issue's case replayed: pool n1 (one node of 8 GPUs) is held by ``holder`` for 10 h, pool n4 (one
    node of 8 GPUs, tainted dedicated=inference:NoSchedule) is empty. ``train`` (4 GPUs, no toleration)
    arrives at 0 and is still pending at the 1 h horizon: its pending row is the taint, with the capacity
    verdict on the node it may use (0 of 8 GPUs free on n1) kept in the detail; ``simulate --json`` and
    summary.json say the same."""
    import json

    from typer.testing import CliRunner

    from builders import job, pool, scenario
    from fleetlab import cli
    from fleetlab.experiment.run import profile_for
    from fleetlab.sim.simulator import Simulator

    pools = [pool("n1"), pool("n4", taints=[TAINT])]
    jobs = [job("holder", gpus=8, runtime=36_000), job("train", gpus=4, runtime=3_600)]
    resolved = scenario(pools, jobs, horizon_s=3_600)
    result = Simulator(resolved, profile_for(resolved, None)).run()
    (row,) = [p for p in result.pending if p.job_id == "train"]
    assert row.blocked_by == "taint"
    assert row.message == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
    )
    assert row.detail.startswith(
        "all 1 node(s) with room for the pod now are ruled out: 1 taint; lifting the taint rule alone opens "
        "1 node(s); untolerated taints: dedicated=inference:NoSchedule (1); on the nodes it may use: shortage, "
        "0 nvidia.com/gpu free in total on 1 eligible node(s)"
    )
    import yaml

    path = tmp_path / "taint.yaml"
    path.write_text(
        yaml.safe_dump({"horizon_s": 3600, "cluster": {"pools": pools}, "workload": {"jobs": jobs}}),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    ran = CliRunner().invoke(cli.app, ["simulate", str(path), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    assert "taint" in ran.output
    pending = json.loads((out / "summary.json").read_text())["pending"]
    assert [p["blocked_by"] for p in pending if p["job_id"] == "train"] == ["taint"]
