"""Slurm partitions as node sets, partition tiers and preemption, backfill settings, from the files Slurm
prints (spec/history/slurm_nodes.py, slurm_policy.py) to the calibrated scenario and its replay
(experiment/history_partitions.py), worked out by hand.

The world (tests/data/history/slurm_partitions): nodes n01, n03 and g1 of 16 CPUs (``scontrol show node``);
partition ``cpu`` = n[01,03] (Default, PriorityTier 1, PreemptMode REQUEUE) and ``gpu`` = n03,g1
(PriorityTier 10, PreemptMode OFF), so n03 is in both; ``PreemptType=preempt/partition_prio``,
``SchedulerType=sched/backfill`` with ``bf_interval=60,bf_window=120``. Jobs (sacct): A and B (cpu, 16
CPUs, 1000 s) at 0, C (gpu, 8 CPUs, 100 s) at 10, D (gpu, 16 CPUs, 100 s) at 20."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from builders import by_job
from fleetlab.cli import app
from fleetlab.experiment.history_scenario import Knobs, history_scenario, scenario_yaml
from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history import slurm_nodes
from fleetlab.spec.history.slurm_nodes import parse_hostlist
from fleetlab.spec.history.sources import detect_format, import_sources
from fleetlab.spec.loader import resolve

WORLD = Path(__file__).parent / "data" / "history" / "slurm_partitions"
FILES = [str(WORLD / n) for n in ("sacct.txt", "partitions.txt", "nodes.txt", "config.txt")]
runner = CliRunner()


def test_hostlists_expand_in_order_with_zero_padding_and_products() -> None:
    # n[01,03] -> n01, n03; n[08-10] keeps the width of "08": n08 n09 n10; rack[1-2]-n[1-2] is the product
    # in order rack1-n1 rack1-n2 rack2-n1 rack2-n2; a plain name stays as it is.
    assert parse_hostlist("n[01,03]", "f", "w") == ["n01", "n03"]
    assert parse_hostlist("n[08-10],g1", "f", "w") == ["n08", "n09", "n10", "g1"]
    assert parse_hostlist("rack[1-2]-n[1-2]", "f", "w") == ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
    assert parse_hostlist("(null)", "f", "w") == []


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ("n[01-", "'[' without its ']'"),
        ("n01]", "']' without its '['"),
        ("n[09-01]", "runs high to low"),
        ("n[a-b]", "is not a number or a range"),
        ("n[[1-2]]", "nests brackets"),
        ("n[0-99999999]", "more than 100000 hosts"),
        ("r[0-999]-n[0-999]", "more than 100000 hosts"),
    ],
)
def test_a_bad_hostlist_is_one_paragraph_naming_file_line_and_value(
    tmp_path: Path, nodes: str, expected: str
) -> None:
    bad = tmp_path / "partitions.txt"
    bad.write_text(f"PartitionName=ok Nodes=a1\nPartitionName=x PriorityTier=1 Nodes={nodes} State=UP\n")
    with pytest.raises(SpecError, match="line 2 Nodes") as err:
        import_sources([str(bad)])
    assert expected in str(err.value) and str(bad) in str(err.value)
    out = tmp_path / "h"
    result = runner.invoke(app, ["import", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and expected in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_hostlist_of_many_large_brackets_stops_at_the_bound_without_expanding_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2,000 brackets of 99,999 names each: the product passes 100,000 at the second bracket, so only two are
    # expanded (expanding all of them first was 200 million strings, minutes of work).
    expanded: list[str] = []
    original = slurm_nodes._bracket

    def counting(body: str, source: str, where: str) -> list[str]:
        expanded.append(body)
        return original(body, source, where)

    monkeypatch.setattr(slurm_nodes, "_bracket", counting)
    with pytest.raises(SpecError, match="names more than 100000 hosts"):
        parse_hostlist("x[0-99998]" * 2000, "f", "line 1 Nodes")
    assert len(expanded) == 2


def test_partitions_of_one_file_list_a_bounded_number_of_node_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bound 5: partitions a and b list 2 + 2 = 4 names, c brings it to 6 > 5, so line 3 is named.
    monkeypatch.setattr(slurm_nodes, "MAX_PARTITION_HOSTS", 5)
    bad = tmp_path / "partitions.txt"
    bad.write_text(
        "PartitionName=a Nodes=n[1-2]\nPartitionName=b Nodes=n[1-2]\nPartitionName=c Nodes=n[1-2]\n"
    )
    out = tmp_path / "h"
    result = runner.invoke(app, ["import", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        str(bad) in result.output and "line 3 Nodes" in result.output and "list 6 node names" in result.output
    )
    assert "at most 5 in one file" in result.output
    assert not out.exists()


def test_detected_and_read() -> None:
    assert [detect_format(Path(f)) for f in FILES] == [
        "slurm",
        "scontrol-partition",
        "scontrol-node",
        "scontrol",
    ]
    h = import_sources(FILES)
    parts = {p.name: p for p in h.policy.slurm_partitions}
    assert (
        parts["cpu"].nodes == ("n01", "n03") and parts["cpu"].default and parts["cpu"].max_time_s == 172_800
    )
    assert parts["gpu"].nodes == ("n03", "g1") and parts["gpu"].priority_tier == 10
    assert (parts["gpu"].preempt_mode, parts["gpu"].max_time_s) == ("OFF", None)
    sched = h.policy.slurm_scheduler
    # bf_window is written in minutes: 120 min = 7200 s; bf_continue is not a backfill number, ignored.
    assert (sched.scheduler_type, sched.interval_s, sched.window_s, sched.max_job_test) == (
        "sched/backfill", 60.0, 7200.0, None,
    )  # fmt: skip
    assert (sched.preempt_type, sched.preempt_mode) == ("preempt/partition_prio", "REQUEUE")
    assert sorted(h.nodes.column("node").to_pylist()) == ["g1", "n01", "n03"]
    assert set(h.nodes.column("cpu").to_pylist()) == {16.0}
    assert h.jobs.column("qos").to_pylist() == ["normal"] * 4
    # two snapshots of three nodes, at 30 s and 90 s after the first submit (10:00:00)
    assert h.node_usage.num_rows == 6 and sorted(set(h.node_usage.column("time_s").to_pylist())) == [30, 90]


def _scenario(queueing: str = "best-effort-fifo") -> Scenario:
    h = import_sources(FILES)
    return history_scenario(h, Knobs(queueing=queueing))


def test_the_calibrated_scenario_carries_partitions_tiers_preemption_and_backfill() -> None:
    s = _scenario("easy-backfill")
    keys = "partition.slurm.fleetlab.io/cpu", "partition.slurm.fleetlab.io/gpu"
    # n01: cpu only; n03: cpu and gpu; g1: gpu only -> three pools by their partition labels.
    labels = sorted(tuple(sorted(k for k in p.labels if k in keys)) for p in s.cluster.pools)
    assert labels == [(keys[0],), (keys[0], keys[1]), (keys[1],)]
    jobs = {j.id: j for j in s.workload.jobs or ()}
    assert jobs["A"].node_selector == {keys[0]: "true"} and jobs["D"].node_selector == {keys[1]: "true"}
    assert (jobs["A"].priority_class_name, jobs["D"].priority_class_name) == ("slurm-tier-1", "slurm-tier-10")
    assert {c.name: (c.value, c.preemption_policy) for c in s.priority_classes} == {
        "slurm-tier-1": (1, "Never"), "slurm-tier-10": (10, "Never"),
    }  # fmt: skip
    rules = s.batch_preemption
    assert rules is not None and rules.label == "fleetlab.io/partition"
    assert {c.name: (c.preempts, c.mode) for c in rules.classes} == {
        "cpu": ((), "requeue"), "gpu": (("cpu",), "off"),
    }  # fmt: skip
    assert jobs["C"].labels == {"fleetlab.io/partition": "gpu"}
    sched = s.scheduler
    assert (sched.backfill_interval_s, sched.backfill_window_s, sched.backfill_depth) == (60, 7200, 500)
    assert sched.preemption is False  # Slurm preempts by its own rules only
    again = Scenario.model_validate(yaml.safe_load("".join(scenario_yaml(s))))
    assert again == s


def test_replay_keeps_jobs_on_their_partition_and_tier_preempts_lower_tier() -> None:
    """A and B (cpu) start at 0 on n01 and n03, the only cpu nodes (g1 stays free). C (gpu, 8 CPUs) at 10
    goes to g1. D (gpu, 16 CPUs) at 20: g1 has 8 free, n03 is held by a cpu job; gpu (tier 10) preempts
    cpu (tier 1) and cpu's PreemptMode is REQUEUE: the job on n03 is requeued, D runs 20 → 120 on n03.
    The victim can only use cpu nodes (C's end at 110 frees g1, not one of them): it starts again at 120
    and ends at 1120, a completion of 1120 s. The other cpu job ends at 1000."""
    resolved = resolve(_scenario())
    tiers = {job.id: job.priority for job in (resolved.jobs[i] for i in range(len(resolved.jobs)))}
    assert tiers == {"A": 1, "B": 1, "C": 10, "D": 10}  # the PriorityClass value: the tier
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    done = by_job(result, "completion_s")
    assert sorted((done["A"], done["B"])) == [1000, 1120]
    assert (done["C"], done["D"]) == (100, 100)
    assert sorted(by_job(result, "evictions").values()) == [0, 0, 0, 1]
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.lost_pod_s) == (1, 20.0)


def test_a_record_spans_a_bounded_number_of_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Bound 3: the record begun on line 1 holds lines 1-3; line 4, its fourth, is refused and named.
    monkeypatch.setattr(slurm_nodes, "MAX_RECORD_LINES", 3)
    bad = tmp_path / "partitions.txt"
    bad.write_text("PartitionName=a\n   Nodes=n1\n   MaxTime=10\n   Default=YES\n")
    out = tmp_path / "h"
    result = runner.invoke(app, ["import", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        str(bad) in result.output
        and "line 4" in result.output
        and "line 1 spans more than 3" in result.output
    )
    assert not out.exists()


def test_the_multi_line_form_and_node_records_with_spaces(tmp_path: Path) -> None:
    """``scontrol show partition`` without ``--oneliner`` indents each record's further lines; a node's
    ``OS`` and ``Reason`` hold spaces. n[1-2] of 64 CPUs, 4 A100s (``Gres=gpu:a100:4(S:0-1)``)."""
    parts = tmp_path / "p.txt"
    parts.write_text(
        "PartitionName=debug\n   AllowGroups=ALL Default=YES\n   MaxTime=30:00 Nodes=n[1-2]\n"
        "   PriorityTier=5 PreemptMode=CANCEL\n\nPartitionName=long\n   Nodes=n2 MaxTime=7-00:00:00\n"
    )  # fmt: skip
    nodes = tmp_path / "n.txt"
    nodes.write_text(
        "NodeName=n1 CPUTot=64 Gres=gpu:a100:4(S:0-1) RealMemory=1024 OS=Linux 5.14.0 #1 SMP "
        "Partitions=debug Reason=fan broken [root@2024-05-01T09:00:00] AllocTRES=cpu=8,gres/gpu=2\n"
        "NodeName=n2 CPUTot=64 Gres=gpu:a100:4 RealMemory=1024 Partitions=debug,long\n"
    )  # fmt: skip
    h = import_sources([str(parts), str(nodes)])
    p = {x.name: x for x in h.policy.slurm_partitions}
    assert (p["debug"].nodes, p["debug"].max_time_s, p["debug"].priority_tier) == (("n1", "n2"), 1800, 5)
    assert (p["debug"].preempt_mode, p["long"].nodes, p["long"].priority_tier) == ("CANCEL", ("n2",), 1)
    rows = {r["node"]: r for r in h.nodes.to_pylist()}
    assert (rows["n1"]["cpu"], rows["n1"]["gpus"], rows["n1"]["memory"]) == (64, 4, 1024 << 20)
    assert rows["n1"]["gpu_model"] == rows["n2"]["gpu_model"] and rows["n1"]["pool"] == "debug"
    assert h.node_usage.num_rows == 0  # no time line: shapes only
