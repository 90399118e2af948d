"""A batch scheduler's policy in a calibrated replay (experiment/history_batch.py), worked out by hand:
recorded Slurm job-count limits and fair share become the scenario's ``job_limits`` and
``scheduler.fair_share``; inferred running-job ceilings; the queueing discipline as a fitted knob."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from builders import by_job
from fleetlab.experiment.calibration import _Setup, queueing_grid
from fleetlab.experiment.history_batch import inferred_job_limits, recorded_fair_share, recorded_job_limits
from fleetlab.experiment.history_policy import inferred_policy, recorded_policy
from fleetlab.experiment.history_scenario import Knobs
from fleetlab.experiment.run import run_one
from fleetlab.metrics.policy_evidence import JobSpans
from fleetlab.model.batch_policy import JobLimit
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.loader import resolve
from history_builders import history, nodes_table
from test_calibration_policy import LIMITED, ONE_NODE, GiB

POLICY = Path(__file__).parent / "data" / "history" / "policy"

# alice (account physics) and bob (account chemistry), one job each.
SACCT = (
    "JobID|User|Account|QOS|State|Submit|Start|End|Timelimit|AllocTRES|NodeList\n"
    "1|alice|physics|normal|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:01:00|2024-05-01T11:00:00|02:00:00|cpu=8,mem=8G,node=1|n01\n"
    "2|bob|chemistry|normal|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T11:00:00|02:00:00|cpu=8,mem=8G,node=1|n02\n"
)  # fmt: skip


def _slurm(tmp_path: Path) -> object:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(SACCT)
    names = ("assoc.txt", "qos.txt", "sshare.txt", "config.txt")
    return import_sources([str(POLICY / n) for n in names] + [str(sacct)])


def test_slurm_job_count_limits_are_replayed_smallest_first(tmp_path: Path) -> None:
    h = _slurm(tmp_path)
    limits, _ = recorded_job_limits(h)  # type: ignore[arg-type]
    # alice's association: MaxJobs 10, MaxSubmit 50; her QOSes normal (MaxJobsPU 1,000,001) and long
    # (MaxJobsPU 2, MaxSubmitPU 5): the smallest of each holds -> 2 running, 5 submitted. bob's association
    # sets no count and names QOS normal: 1,000,001 running. The account associations set no GrpJobs,
    # GrpSubmit or MaxJobs.
    assert limits == [
        JobLimit(per="user", name="alice", max_running=2, max_submitted=5),
        JobLimit(per="user", name="bob", max_running=1_000_001),
    ]
    replay = recorded_policy(h)  # type: ignore[arg-type]
    assert replay is not None and replay.job_limits == limits
    assert any("2 recorded Slurm job-count limit(s) replayed" in n for n in replay.notes)


def test_slurm_fair_share_orders_the_replay_per_user_with_the_account_share_for_parent_users(
    tmp_path: Path,
) -> None:
    h = _slurm(tmp_path)
    fair = recorded_fair_share(h)  # type: ignore[arg-type]
    # PriorityType multifactor, PriorityWeightFairshare 10000, PriorityWeightAge 1000. sshare has a user row
    # (bob, NormShares 0.25), so fair share is per user; alice has no row of her own: physics' 0.75.
    assert fair is not None and (fair.by, fair.weight_fairshare, fair.weight_age) == ("user", 10_000, 1_000)
    assert fair.shares == {"alice": 0.75, "bob": 0.25}
    h = dataclasses.replace(
        h, nodes=nodes_table([{"node": n, "cpu": 16.0, "memory": 64 * GiB} for n in ("n01", "n02")])
    )  # type: ignore[type-var]
    scenario, _ = _Setup(h, recorded_policy(h), None, JobSpans.of(h)).scenario(Knobs())  # type: ignore[arg-type]
    assert scenario.scheduler.fair_share == fair
    assert [j.user for j in scenario.workload.jobs or ()] == ["alice", "bob"]
    assert scenario.job_limits[0] == JobLimit(per="user", name="alice", max_running=2, max_submitted=5)


def test_no_fair_share_without_a_fair_share_weight(tmp_path: Path) -> None:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(SACCT)
    assert recorded_fair_share(import_sources([str(sacct)])) is None


def test_inferred_running_job_ceiling_recovers_a_one_job_limit() -> None:
    """LIMITED (tests/test_calibration_policy.py): u1 runs its eight 4-CPU jobs one at a time while it has
    jobs waiting, so its ceiling at quantile 1 (and 0.5) is 1 job; u2 never waited, so nothing shows a cap
    of its own: it gets none (its one job is its demand, not a limit)."""
    h = history(LIMITED, ONE_NODE, end_s=800.0)
    limits, levels = inferred_job_limits(h, "user", 1.0, {"u1": "user-u1", "u2": "user-u2"})
    assert levels == {"u1": 1.0}
    assert limits == [JobLimit(per="namespace", name="user-u1", max_running=1)]
    policy = inferred_policy(h, "user", None, job_quantile=0.5)
    assert [c.as_dict()["value"] for c in policy.evidence if c.as_dict()["resource"] == "jobs"] == [1.0]
    # Replayed with the job ceilings alone (no CPU quota), u1's job k starts at 100 k s, as recorded.
    scenario, _ = _Setup(h, None, "user", JobSpans.of(h)).scenario(Knobs(job_limit_quantile=1.0))
    assert {limit.name for limit in scenario.job_limits} == {"user-u1"}
    run = run_one(resolve(scenario, label="t"), None)
    waits, submits = by_job(run.result, "queue_wait_so_far_s"), by_job(run.result, "submit_s")
    assert {k: submits[k] + waits[k] for k in waits} == {
        **{f"u1-{k}": 100.0 * k for k in range(8)},
        "u2-0": 0,
    }


def test_the_queueing_discipline_is_fitted_only_among_those_the_record_supports() -> None:
    nodes = [{"node": "n0", "cpu": 16.0, "memory": 64 * GiB}]
    assert queueing_grid(history(LIMITED, nodes)) == ["best-effort-fifo", "fifo"]
    timed = [{**row, "walltime_s": 200.0} for row in LIMITED]
    assert queueing_grid(history(timed, nodes)) == ["best-effort-fifo", "fifo", "easy-backfill"]
