"""Slurm's multifactor priority settings, partition time limits, PreemptExemptTime and GraceTime, from the
files Slurm prints (``scontrol show config``, ``scontrol show partition``, ``sacctmgr show qos``) to the
calibrated scenario (experiment/history_batch.py, history_partitions.py) and its replay.

The world: tests/data/history/slurm_partitions' jobs and nodes (A, B in partition cpu, C, D in gpu, all QOS
normal; requested time = runtime) with this module's partitions and configuration, and the QOS table of
tests/data/history/policy (normal: Priority 0; long: Priority 100, GraceTime 00:01:00, preempts normal)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from builders import by_job
from fleetlab.cli import app
from fleetlab.experiment.calibration import calibrate
from fleetlab.experiment.history_batch import recorded_fair_share
from fleetlab.experiment.history_partitions import partition_notes
from fleetlab.experiment.history_scenario import Knobs, history_scenario, scenario_yaml
from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.loader import resolve

DATA = Path(__file__).parent / "data" / "history"
WORLD = DATA / "slurm_partitions"
CONFIG = """Configuration data as of 2024-05-01T12:00:00
PreemptExemptTime       = 00:02:00
PreemptType             = preempt/qos
PriorityCalcPeriod      = 00:05:00
PriorityDecayHalfLife   = 14-00:00:00
PriorityFavorSmall      = Yes
PriorityFlags           = SMALL_RELATIVE_TO_TIME,CALCULATE_RUNNING
PriorityMaxAge          = 1-00:00:00
PriorityType            = priority/multifactor
PriorityWeightAge       = 1000
PriorityWeightFairshare = 0
PriorityWeightJobSize   = 500
PriorityWeightPartition = 2000
PriorityWeightQOS       = 3000
EnforcePartLimits       = ALL
"""
PARTITIONS = (
    "PartitionName=cpu Default=YES DefaultTime=01:00:00 GraceTime=0 MaxTime=2-00:00:00 Nodes=n[01,03] "
    "PriorityJobFactor=10 PriorityTier=1 State=UP\n"
    "PartitionName=gpu Default=NO DefaultTime=NONE GraceTime=30 MaxTime=UNLIMITED Nodes=n03,g1 "
    "PriorityJobFactor=40 PriorityTier=1 State=UP\n"
)
runner = CliRunner()


def _files(tmp_path: Path, config: str = CONFIG, partitions: str = PARTITIONS) -> list[str]:
    (tmp_path / "config.txt").write_text(config)
    (tmp_path / "partitions.txt").write_text(partitions)
    return [str(WORLD / "sacct.txt"), str(WORLD / "nodes.txt"), str(DATA / "policy" / "qos.txt"),
            str(tmp_path / "partitions.txt"), str(tmp_path / "config.txt")]  # fmt: skip


def test_the_settings_are_read(tmp_path: Path) -> None:
    """Times as Slurm writes them: 00:05:00 = 300 s, 1-00:00:00 = 86,400 s, 14 days = 1,209,600 s."""
    h = import_sources(_files(tmp_path))
    sched = h.policy.slurm_scheduler
    assert (sched.calc_period_s, sched.max_age_s, sched.decay_half_life_s, sched.preempt_exempt_time_s) == (
        300.0, 86_400.0, 1_209_600.0, 120.0,
    )  # fmt: skip
    assert sched.favor_small is True and sched.priority_flags == (
        "SMALL_RELATIVE_TO_TIME",
        "CALCULATE_RUNNING",
    )
    assert sched.enforce_part_limits == "ALL"
    parts = {p.name: p for p in h.policy.slurm_partitions}
    assert (parts["cpu"].default_time_s, parts["cpu"].priority_job_factor, parts["cpu"].grace_time_s) == (
        3600.0, 10, None,
    )  # fmt: skip
    assert (parts["gpu"].default_time_s, parts["gpu"].priority_job_factor, parts["gpu"].grace_time_s) == (
        None, 40, 30.0,
    )  # fmt: skip
    qos = {q.name: q for q in h.policy.slurm_qos}
    assert (qos["long"].grace_time_s, qos["long"].preempt_exempt_time_s) == (60.0, None)


TRES_CONFIG = CONFIG + "PriorityWeightTRES      = CPU=1000,Mem=2000,GRES/gpu=3000,Billing=5,license/x=0\n"


def test_tres_weights_are_read_replayed_and_the_rest_named(tmp_path: Path) -> None:
    """``PriorityWeightTRES`` as ``scontrol show config`` prints it: names lower-cased; cpu, mem and gres/gpu
    reach ``fair_share.tres_weights``; billing (weight 5) is named in a calibration note as not replayed,
    license/x (weight 0) is not; jobs carry their partition label for the TRES factors."""
    h = import_sources(_files(tmp_path, TRES_CONFIG))
    assert h.policy.slurm_scheduler.tres_weights == {
        "cpu": 1000.0, "mem": 2000.0, "gres/gpu": 3000.0, "billing": 5.0, "license/x": 0.0,
    }  # fmt: skip
    fair = recorded_fair_share(h)
    assert fair is not None and fair.tres_weights == {"cpu": 1000.0, "gres/gpu": 3000.0, "mem": 2000.0}
    notes = partition_notes(h)
    assert any("PriorityWeightTRES weighs billing," in n for n in notes)
    assert not any("license/x" in n for n in notes)
    only_tres = TRES_CONFIG.replace("PriorityWeightPartition = 2000", "PriorityWeightPartition = 0")
    only_tres = only_tres.replace("= ALL", "= NO").replace("MaxTime=2-00:00:00", "MaxTime=UNLIMITED")
    h = import_sources(
        _files(tmp_path, only_tres, PARTITIONS.replace("DefaultTime=01:00:00", "DefaultTime=NONE"))
    )
    s = history_scenario(h, Knobs(queueing="fifo"), fair_share=recorded_fair_share(h))
    jobs = {j.id: j for j in s.workload.jobs or ()}
    assert jobs["C"].labels["fleetlab.io/partition"] == "gpu"
    resolved = resolve(s)
    sim = Simulator(resolved, profile_for(resolved, None))
    assert sim.features.job_priority is not None


def test_the_calibrated_scenario_carries_them_and_replays(tmp_path: Path) -> None:
    """``scheduler.fair_share`` gets the weights, PriorityCalcPeriod, PriorityMaxAge, PriorityDecayHalfLife,
    PriorityFavorSmall, SMALL_RELATIVE_TO_TIME, the partitions' job factors and the QOS priorities; the
    ``time_limits`` section holds partition cpu (gpu limits nothing) with EnforcePartLimits=ALL; QOS
    preemption the cluster's PreemptExemptTime and QOS long's GraceTime; jobs carry their QOS and
    partition labels. The replay runs every job to completion: each asked exactly its runtime."""
    h = import_sources(_files(tmp_path))
    s = history_scenario(h, Knobs(queueing="fifo"), fair_share=None)
    fair = recorded_fair_share(h)
    assert fair is not None
    assert (fair.weight_fairshare, fair.weight_age, fair.weight_job_size, fair.weight_partition,
            fair.weight_qos) == (0, 1000, 500, 2000, 3000)  # fmt: skip
    assert (fair.calc_period_s, fair.max_age_s, fair.half_life_s) == (300.0, 86_400.0, 1_209_600.0)
    assert fair.favor_small and fair.small_relative_to_time
    assert fair.partition_job_factors == {"cpu": 10, "gpu": 40}
    assert fair.qos_priorities == {"normal": 0, "long": 100}
    limits = s.time_limits
    assert limits is not None and limits.enforce_at_submit and limits.kill_at_limit
    assert [(p.name, p.max_time_s, p.default_time_s) for p in limits.partitions] == [("cpu", 172_800, 3600)]
    rules = s.batch_preemption
    assert rules is not None and rules.exempt_time_s == 120
    assert {c.name: (c.grace_time_s, c.exempt_time_s) for c in rules.classes} == {
        "normal": (0, None), "long": (60, None),
    }  # fmt: skip
    jobs = {j.id: j for j in s.workload.jobs or ()}
    assert jobs["A"].labels == {"fleetlab.io/qos": "normal", "fleetlab.io/partition": "cpu"}
    assert jobs["C"].labels == {"fleetlab.io/qos": "normal", "fleetlab.io/partition": "gpu"}
    with_priority = history_scenario(h, Knobs(queueing="fifo"), fair_share=fair)
    assert with_priority.scheduler.fair_share == fair
    again = Scenario.model_validate(yaml.safe_load("".join(scenario_yaml(with_priority))))
    assert again == with_priority
    resolved = resolve(with_priority)
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    assert set(by_job(result, "state").values()) == {"completed"}
    assert sim.features.job_priority is not None and sim.features.time_limits is not None


@pytest.mark.parametrize(
    ("config", "partitions", "expected"),
    [
        (CONFIG.replace("= Yes", "= Maybe"), PARTITIONS,
         "PriorityFavorSmall: 'Maybe' is not one of YES, NO"),
        (CONFIG.replace("00:05:00", "5 fortnights"), PARTITIONS,
         "PriorityCalcPeriod: '5 fortnights' is not a Slurm time"),
        (CONFIG.replace("= ALL", "= SOMETIMES"), PARTITIONS,
         "EnforcePartLimits: 'SOMETIMES' is not one of NO, ALL, ANY, YES"),
        (CONFIG, PARTITIONS.replace("PriorityJobFactor=10", "PriorityJobFactor=-1"),
         "PriorityJobFactor: '-1' is not a whole number in 0..65533"),
        (CONFIG, PARTITIONS.replace("DefaultTime=01:00:00", "DefaultTime=soon"),
         "DefaultTime: 'soon' is not a Slurm time"),
        (CONFIG, PARTITIONS.replace("GraceTime=30", "GraceTime=1e9"),
         "GraceTime: '1e9' is not a whole number"),
        (CONFIG + "PriorityWeightTRES      = CPU=1000,Mem=lots\n", PARTITIONS,
         "PriorityWeightTRES 'Mem': 'lots' is not a number"),
        (CONFIG + "PriorityWeightTRES      = CPU=1e12\n", PARTITIONS,
         "PriorityWeightTRES 'CPU': '1e12' is not a weight in 0..1e9"),
        (CONFIG + "PriorityWeightTRES      = CPU\n", PARTITIONS,
         "PriorityWeightTRES: 'CPU' is not TYPE=WEIGHT"),
    ],
)  # fmt: skip
def test_bad_settings_are_one_paragraph_with_exit_2(
    tmp_path: Path, config: str, partitions: str, expected: str
) -> None:
    files = _files(tmp_path, config, partitions)
    out = tmp_path / "h"
    result = runner.invoke(app, ["import", *files, "--out", str(out)])
    assert result.exit_code == 2 and expected in result.output and "Traceback" not in result.output
    assert "config.txt" in result.output or "partitions.txt" in result.output
    assert not out.exists()


def test_recorded_priority_without_sacctmgr_tables_is_replayed(tmp_path: Path) -> None:
    """Only ``sacct``, the nodes and ``scontrol show config``/``partition``: no association or QOS table,
    so the replay's limits are inferred from the history (or none), and the recorded multifactor priority
    (job size 500, age 1000, partition 2000, ...) still orders its queue: the calibrated scenario carries
    it, whatever the fitted knobs."""
    files = [str(WORLD / "sacct.txt"), str(WORLD / "nodes.txt")]
    (tmp_path / "config.txt").write_text(CONFIG)
    (tmp_path / "partitions.txt").write_text(PARTITIONS)
    h = import_sources([*files, str(tmp_path / "partitions.txt"), str(tmp_path / "config.txt")])
    assert not h.policy.slurm_associations and not h.policy.slurm_qos
    fair = recorded_fair_share(h)
    assert fair is not None and (fair.weight_job_size, fair.weight_age, fair.weight_partition) == (
        500,
        1000,
        2000,
    )
    result = calibrate(h, seeds=1)
    assert result.policy is None or result.policy.source != "slurm"
    assert result.scenario.scheduler.fair_share == fair
