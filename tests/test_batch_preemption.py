"""Slurm preemption by QOS (the scenario's ``batch_preemption``, sim/batch_preemption.py), worked out by
hand after Slurm's documentation: https://slurm.schedmd.com/preempt.html (a job whose QOS may preempt stops
preemptable running jobs; they are cancelled or requeued per the ``PreemptMode`` of the *preempted* job's
QOS; SUSPEND with preempt/qos is replayed as requeue) and https://slurm.schedmd.com/qos.html (a QOS's
``Preempt`` list names the QOSes it may preempt; ``PreemptMode`` OFF: its jobs are never preempted).

World: two nodes of 4 CPUs; every job one 4-CPU pod (a whole node). L1 (QOS low, 100 s) starts at 0 on one
node, L2 (QOS low, 100 s) at 5 on the other; H (QOS high, 10 s) arrives at 20 and finds no room."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from builders import by_job, scenario
from fleetlab.experiment.history_partitions import backfill_settings, batch_preemption
from fleetlab.experiment.history_scenario import history_jobs
from fleetlab.experiment.run import profile_for
from fleetlab.model.batch_policy import BatchPreemption as Rules
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.history.sources import import_sources

POLICY = Path(__file__).parent / "data" / "history" / "policy"
NODES = {"name": "p", "count": 2, "cpu": "4", "memory": "8Gi", "price_per_hour": 1.0}


def _job(job_id: str, qos: str, submit: float, runtime: float) -> dict[str, Any]:
    return {"id": job_id, "submit_s": submit, "runtime": runtime, "labels": {"fleetlab.io/qos": qos},
            "requests": {"cpu": "4", "memory": "1Gi"}}  # fmt: skip


def _run(low_mode: str, preempts: tuple[str, ...] = ("low",)) -> tuple[Simulator, SimulationResult]:
    jobs = [_job("L1", "low", 0, 100), _job("L2", "low", 5, 100), _job("H", "high", 20, 10)]
    rules = {"classes": [{"name": "high", "priority": 100, "preempts": list(preempts)},
                         {"name": "low", "priority": 10, "mode": low_mode}]}  # fmt: skip
    resolved = scenario([NODES], jobs, scheduler={"tie_break": "first"}, batch_preemption=rules)
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def _ends(result: SimulationResult) -> dict[str, float]:
    return {k: round(v, 3) for k, v in by_job(result, "completion_s").items()}


def test_requeue_stops_the_youngest_victim_and_restarts_it_after_the_preemptor() -> None:
    """H at 20 may preempt QOS low: the candidates, youngest first, are L2 (started 5) then L1 (0); taking
    L2 frees its node, so L2 alone is preempted. H runs 20 → 30 on L2's node. L2 (REQUEUE) waits, starts
    again at 30 from the beginning and ends at 130; it had run 20 − 5 = 15 s, lost. L1 ends at 100."""
    sim, result = _run("requeue")
    ends = _ends(result)
    assert ends["H"] == 30 - 20 and ends["L1"] == 100 - 0 and ends["L2"] == 130 - 5  # completion from submit
    feature = sim.features.batch_preemption
    assert feature is not None
    assert (feature.preempted_jobs, feature.cancelled_jobs, feature.lost_pod_s) == (1, 0, 15.0)
    assert by_job(result, "evictions") == {"L1": 0, "L2": 1, "H": 0}


def test_cancel_ends_the_victim_and_the_preemptor_starts_in_the_same_instant() -> None:
    """PreemptMode CANCEL for QOS low: L2 is stopped at 20 and never finishes; H still starts at 20 (the
    room frees at the end of the step and H is tried again at once) and ends at 30. Lost: 15 s."""
    sim, result = _run("cancel")
    ends = _ends(result)
    assert ends["H"] == 10 and ends["L1"] == 100
    assert math.isnan(ends["L2"]) and by_job(result, "state")["L2"] == "failed"  # never completed
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.cancelled_jobs, feature.lost_pod_s) == (
        1, 1, 15.0,
    )  # fmt: skip


@pytest.mark.parametrize(("mode", "preempts"), [("off", ("low",)), ("requeue", ())])
def test_no_preemption_when_the_victim_qos_is_off_or_not_listed(mode: str, preempts: tuple[str, ...]) -> None:
    """QOS low with PreemptMode OFF, or QOS high listing no QOS in Preempt: H waits for L1 to end at 100
    and runs 100 → 110 (completion 90 after its submit); nothing is preempted."""
    sim, result = _run(mode, preempts)
    assert _ends(result) == {"L1": 100, "L2": 100, "H": 90}
    feature = sim.features.batch_preemption
    assert feature is not None and feature.preempted_jobs == 0


def test_a_class_must_preempt_known_classes() -> None:
    with pytest.raises(ValueError, match="preempts nobody, which no class names"):
        Rules.model_validate({"classes": [{"name": "a", "preempts": ["nobody"]}]})


def test_recorded_qos_preemption_reaches_the_calibrated_scenario(tmp_path: Path) -> None:
    """``sacctmgr show qos``: normal (Priority 0, PreemptMode cluster), long (Priority 100, Preempt normal,
    PreemptMode cluster); ``scontrol show config``: PreemptType preempt/qos, PreemptMode REQUEUE. So long
    preempts normal and both requeue (the cluster's mode); each job carries its sacct QOS as a label."""
    config = tmp_path / "config.txt"
    config.write_text("Configuration data as of 2024-05-01T12:00:00\nPreemptType = preempt/qos\n"
                      "PreemptMode = REQUEUE\nSchedulerType = sched/builtin\n")  # fmt: skip
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|User|Account|QOS|State|Submit|Start|End|AllocTRES|NodeList\n"
        "1|alice|physics|long|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:10:00|cpu=4,node=1|n1\n"
        "2|bob|physics|normal|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:10:00|cpu=4,node=1|n1\n"
    )  # fmt: skip
    h = import_sources([str(sacct), str(POLICY / "qos.txt"), str(config)])
    rules = batch_preemption(h)
    assert rules is not None and rules.label == "fleetlab.io/qos"
    assert {c.name: (c.priority, c.preempts, c.mode) for c in rules.classes} == {
        "normal": (0, (), "requeue"), "long": (100, ("normal",), "requeue"),
    }  # fmt: skip
    jobs = history_jobs(h)
    assert [j.labels for j in jobs] == [{"fleetlab.io/qos": "long"}, {"fleetlab.io/qos": "normal"}]
    assert backfill_settings(h) == {}  # sched/builtin: no backfill passes


def _run_with(low: dict[str, Any], section: dict[str, Any] | None = None,
              l2_runtime: float = 100) -> tuple[Simulator, SimulationResult]:  # fmt: skip
    """The module's world with QOS low's class given ``low`` and the section ``section``."""
    jobs = [_job("L1", "low", 0, 100), _job("L2", "low", 5, l2_runtime), _job("H", "high", 20, 10)]
    rules = {"classes": [{"name": "high", "priority": 100, "preempts": ["low"]},
                         {"name": "low", "priority": 10, **low}], **(section or {})}  # fmt: skip
    resolved = scenario([NODES], jobs, scheduler={"tie_break": "first"}, batch_preemption=rules)
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def test_preempt_exempt_time_spares_the_jobs_that_ran_less() -> None:
    """PreemptExemptTime 18 s (slurm.conf; https://slurm.schedmd.com/slurm.conf.html): at 20 L2 has run
    20 − 5 = 15 s < 18, exempt; L1 has run 20 ≥ 18, so L1 is the victim although it is the older one. H runs
    20 → 30 on L1's node; L1 (requeued) runs again 30 → 130 (lost 20 s); L2 ends at 105."""
    sim, result = _run_with({"mode": "requeue"}, {"exempt_time_s": 18})
    assert _ends(result) == {"L1": 130, "L2": 100, "H": 10}
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.lost_pod_s) == (1, 20.0)


def test_a_qos_exempt_time_overrides_the_cluster_one_and_may_spare_everyone() -> None:
    """QOS low's PreemptExemptTime 100 s overrides the cluster's 0: neither L1 nor L2 may be preempted
    before it ends (at 0 + 100 = 100 for L1, the moment L1 ends anyway); H waits for L1's end at 100 and runs
    100 → 110 (completion 90)."""
    sim, result = _run_with({"mode": "requeue", "exempt_time_s": 100})
    assert _ends(result) == {"L1": 100, "L2": 100, "H": 90}
    feature = sim.features.batch_preemption
    assert feature is not None and feature.preempted_jobs == 0


def test_a_waiting_preemptor_is_tried_again_when_the_first_exemption_ends() -> None:
    """Exempt 25 s (QOS low): at 20 neither L1 (bound at 0, run 20 s) nor L2 (bound at 5, run 15 s) may be
    taken; the soonest either may is 0 + 25 = 25, when H is tried again (nothing was released then): L1
    (run 25 ≥ 25) is the only candidate, L2 (20 < 25) still exempt. H runs 25 → 35 (completion 15); L1 is
    requeued and runs 35 → 135 (completion 135, lost 25 s); L2 ends at 105 (completion 100)."""
    sim, result = _run_with({"mode": "requeue", "exempt_time_s": 25})
    assert _ends(result) == {"L1": 135, "L2": 100, "H": 15}
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.lost_pod_s) == (1, 25.0)


def test_grace_time_lets_the_victim_run_on_before_it_is_requeued() -> None:
    """QOS low GraceTime 30 s (preempt.html: the victim's end is set to now + GraceTime, SIGTERM now): L2,
    chosen at 20, runs on to 50 and is requeued then; H starts at 50 on its node and ends at 60 (completion
    40); L2 starts again at 60 (H's node is free) and ends at 160 (completion 155); lost 50 − 5 = 45 s."""
    sim, result = _run_with({"mode": "requeue", "grace_time_s": 30})
    assert _ends(result) == {"L1": 100, "L2": 155, "H": 40}
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.lost_pod_s) == (1, 45.0)


def test_grace_time_with_cancel_ends_the_victim_at_the_grace_end() -> None:
    """CANCEL with GraceTime 30 s: L2 is cancelled at 50 (never completes, lost 45 s); H starts in that
    instant and ends at 60 (completion 40)."""
    sim, result = _run_with({"mode": "cancel", "grace_time_s": 30})
    ends = _ends(result)
    assert ends["H"] == 40 and ends["L1"] == 100 and math.isnan(ends["L2"])
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.cancelled_jobs, feature.lost_pod_s) == (1, 45.0)


def test_a_victim_that_finishes_in_its_grace_time_is_not_preempted() -> None:
    """L2 runs 30 s (5 → 35); chosen at 20 with GraceTime 60 s it completes at 35, before its grace ends:
    nothing is lost, and H takes its node at 35 (completion 25)."""
    sim, result = _run_with({"mode": "requeue", "grace_time_s": 60}, l2_runtime=30)
    assert _ends(result) == {"L1": 100, "L2": 30, "H": 25}
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.lost_pod_s) == (0, 0.0)


def test_a_gang_victim_gets_its_grace_time_and_is_requeued_whole() -> None:
    """G (QOS low, a gang of two 4-CPU pods, 100 s) holds both nodes 0 → 100; H (QOS high) arrives at 20.
    With GraceTime 30 s, G is signalled at 20 and requeued whole at 50 (both pods off their nodes); H runs
    50 → 60; G starts again at 60 on both nodes and ends at 160. Lost: 2 pods × (50 − 0) s = 100 pod-s."""
    gang = {**_job("G", "low", 0, 100), "pods": 2, "gang": True}
    rules = {"classes": [{"name": "high", "priority": 100, "preempts": ["low"]},
                         {"name": "low", "priority": 10, "grace_time_s": 30}]}  # fmt: skip
    resolved = scenario(
        [NODES], [gang, _job("H", "high", 20, 10)], scheduler={"tie_break": "first"}, batch_preemption=rules
    )
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    assert _ends(result) == {"G": 160, "H": 40}
    feature = sim.features.batch_preemption
    assert feature is not None and (feature.preempted_jobs, feature.lost_pod_s) == (1, 100.0)
