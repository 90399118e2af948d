"""Calibration's new semantics on small worlds worked out by hand: gangs of node-sized pods, the split at
--fit-until, the policy evidence (ceilings, overtakes, levels while waiting), inferred limits as Kueue
objects and their recovery by the fit, recorded down windows, the calibrated scenario's record."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from fleetlab.experiment.calibration import calibrate
from fleetlab.experiment.history_gangs import PodPlan, node_sized
from fleetlab.experiment.history_policy import choose_grouping, inferred_policy
from fleetlab.experiment.history_scenario import Knobs, history_scenario
from fleetlab.experiment.history_split import history_until, split_instant
from fleetlab.metrics.policy_evidence import (
    JobSpans,
    ceilings,
    group_labels,
    level_while_waiting,
    order_between,
    overtakes,
)
from fleetlab.model.calibration_record import CalibrationRecord, MetricError
from fleetlab.model.history import NODE_DOWN_SCHEMA
from fleetlab.spec.errors import SpecError
from history_builders import history

GiB = 1 << 30


@pytest.mark.parametrize(
    ("pods", "cpu", "gpus", "memory", "owner", "expected"),
    [
        # 64 processors on 2-CPU nodes: 32 pods of 2, all-or-nothing.
        (1, 64.0, 0, 0, "SWFJob", PodPlan(32, 2.0, 0, 0, gang=True, split=True)),
        # 3 processors: 2 pods of 1.5 (rounded up to the milli-core), as Maui would place it on two nodes.
        (1, 3.0, 0, 0, "SWFJob", PodPlan(2, 1.5, 0, 0, gang=True, split=True)),
        # 2 processors fit one node: unchanged, not a gang (one pod).
        (1, 2.0, 0, 0, "SWFJob", PodPlan(1, 2.0, 0, 0, gang=False)),
        # A Slurm job over 2 nodes that fit: a gang of its 2 pods; a Kubernetes Job's pods stay independent.
        (2, 2.0, 0, 0, "SlurmJob", PodPlan(2, 2.0, 0, 0, gang=True)),
        (2, 2.0, 0, 0, "Job", PodPlan(2, 2.0, 0, 0, gang=False)),
    ],
)
def test_jobs_wider_than_any_node_become_gangs_of_node_sized_pods(
    pods: int, cpu: float, gpus: int, memory: int, owner: str, expected: PodPlan
) -> None:
    assert node_sized(pods, cpu, gpus, memory, [(2.0, 0, 1 * GiB)], owner) == expected


def test_gpu_jobs_split_into_whole_gpus_on_the_widest_gpu_node() -> None:
    shapes = [(64.0, 8, 512 * GiB), (16.0, 0, 64 * GiB)]
    # 12 GPUs on 8-GPU nodes: ceil(12 / 8) = 2 pods of 6; 9 GPUs: 2 pods would hold 4.5, so 3 of 3.
    assert node_sized(1, 32.0, 12, 0, shapes, "SlurmJob") == PodPlan(2, 16.0, 6, 0, gang=True, split=True)
    assert node_sized(1, 9.0, 9, 0, shapes, "SlurmJob") == PodPlan(3, 3.0, 3, 0, gang=True, split=True)


def test_a_history_job_is_replayed_as_its_gang() -> None:
    h = history(
        [{"job_id": "wide", "owner_kind": "SWFJob", "state": "completed", "submit_s": 0.0, "scheduled_s": 0.0,
          "running_s": 0.0, "end_s": 50.0, "cpu_per_pod": 6.0, "memory_per_pod": 0}],
        [{"node": f"n{i}", "cpu": 2.0, "memory": GiB} for i in range(4)],
    )  # fmt: skip
    (job,) = history_scenario(h, Knobs()).workload.jobs or ()
    assert (job.pods, job.requests["cpu"], job.gang) == (3, 2000, True)


# One 16-CPU node. User u1 runs eight 4-CPU jobs one after another (a limit of one job, 4 CPUs, at a time):
# job k is submitted at k s and starts at 100 k s, when job k - 1 ends (so it waits 99 k s); u2's one job
# runs 0..50 s. The node always had room (at most 8 of 16 CPUs held), so no capacity model queues u1.
LIMITED = [
    *({"job_id": f"u1-{k}", "user": "u1", "state": "completed", "submit_s": float(k), "scheduled_s": 100.0 * k,
       "running_s": 100.0 * k, "end_s": 100.0 * k + 100, "cpu_per_pod": 4.0, "memory_per_pod": GiB}
      for k in range(8)),
    {"job_id": "u2-0", "user": "u2", "state": "completed", "submit_s": 0.0, "scheduled_s": 0.0, "running_s": 0.0,
     "end_s": 50.0, "cpu_per_pod": 4.0, "memory_per_pod": GiB},
]  # fmt: skip
ONE_NODE = [{"node": "n1", "cpu": 16.0, "memory": 64 * GiB}]


def test_ceilings_overtakes_and_levels_by_hand() -> None:
    h = history(LIMITED, ONE_NODE, end_s=800.0)
    spans = JobSpans.of(h)
    found = {(c.group_by, c.group, c.resource): c for c in ceilings(h, spans)}
    jobs, cpu = found[("user", "u1", "jobs")], found[("user", "u1", "cpu")]
    # u1 held one job (4 CPUs) the whole 800 s it was busy: reached 100 %; during all of its waiting one
    # more job would have made 2 > 1 (8 > 4 CPUs): explained 100 %. Waiting: 99 x (1 + ... + 7) = 2772 s.
    assert (jobs.value, jobs.reached_share, jobs.explained_share) == (1.0, 1.0, 1.0)
    assert (cpu.value, cpu.explained_share, cpu.wait_hours) == (4.0, 1.0, pytest.approx(2772 / 3600))
    assert found[("user", "u2", "cpu")].explained_share is None  # u2 never waited
    rates = overtakes(group_labels(h, "user"), spans)
    # Pairs where a later u1 job arrived while an earlier one waited: job k (k >= 1) waited until 100 k
    # and every later job had arrived by then: 6 + 5 + ... + 1 = 21; none started first.
    assert (rates["u1"].pairs, rates["u1"].overtaken, rates["u1"].rate) == (21, 0, 0.0)
    # While u1 had work waiting (1..700 s) it held 4 CPUs: every quantile of its level is 4.
    mine = group_labels(h, "user") == "u1"
    assert level_while_waiting(spans, mine, 1, 0.5) == 4.0 == level_while_waiting(spans, mine, 1, 1.0)
    # u2's job arrived at 0 s, before any u1 job waited, and never waited itself: no chance either way.
    assert order_between(group_labels(h, "user"), spans) == []


def test_overtakes_count_jobs_that_started_before_an_earlier_waiting_one() -> None:
    # a waits 0..100; b (submitted 10) starts at 20, before a: one overtake of one chance; c arrives at
    # 150, after a started: no chance.
    jobs = [
        {"job_id": "a", "state": "completed", "submit_s": 0.0, "scheduled_s": 100.0, "end_s": 200.0},
        {"job_id": "b", "state": "completed", "submit_s": 10.0, "scheduled_s": 20.0, "end_s": 30.0},
        {"job_id": "c", "state": "completed", "submit_s": 150.0, "scheduled_s": 150.0, "end_s": 160.0},
    ]
    h = history(jobs, ONE_NODE, end_s=300.0)
    spans = JobSpans.of(h)
    rate = overtakes(np.full(3, "all", dtype=object), spans)["all"]
    assert (rate.pairs, rate.overtaken) == (1, 1)
    # With a in queue A and b, c in B: B jumped A once in its one chance; A never waited behind B.
    labels = np.asarray(["A", "B", "B"], dtype=object)
    assert order_between(labels, spans) == [{"waiting": "A", "arriving": "B", "pairs": 1, "started_first": 1}]


def test_inferred_limits_are_kueue_objects_a_person_can_read() -> None:
    h = history(LIMITED, ONE_NODE, end_s=800.0)
    assert choose_grouping(h, JobSpans.of(h)) == "user"
    policy = inferred_policy(h, "user", 1.0)
    queues = {o["metadata"]["name"]: o["spec"] for o in policy.objects if o["kind"] == "ClusterQueue"}
    assert sorted(queues) == ["user-u1", "user-u2"]
    u1 = {r["name"]: r for r in queues["user-u1"]["resourceGroups"][0]["flavors"][0]["resources"]}
    # u1's CPU quota is its ceiling, 4 cores, lent to no one; memory gets the whole node (not limited).
    assert u1["cpu"] == {"name": "cpu", "nominalQuota": "4000m", "borrowingLimit": "0"}
    assert u1["memory"] == {"name": "memory", "nominalQuota": str(64 * GiB)}
    # 21 chances, no overtake: u1's queue is StrictFIFO; u2 had no chance to judge: BestEffortFIFO.
    assert (queues["user-u1"]["queueingStrategy"], queues["user-u2"]["queueingStrategy"]) == (
        "StrictFIFO", "BestEffortFIFO"
    )  # fmt: skip
    assert policy.assignment["u1-3"] == ("user-u1", "history") and policy.assignment["u2-0"] == (
        "user-u2",
        "history",
    )


def test_the_fit_recovers_a_per_user_limit_that_capacity_cannot_explain() -> None:
    c = calibrate(history(LIMITED, ONE_NODE, end_s=800.0), fit_until=1.0)
    assert c.wait_causes is not None
    row = c.wait_causes.row()
    assert row is not None and row.capacity_explained_wait_share == 0.0  # always room on the node
    assert row.same_user_running_share == 1.0
    # No limit: u1's jobs start as soon as 16 CPUs allow, far from the record; the hard ceiling (1.0)
    # replays it exactly, and the later candidates cannot do better (ties keep the earlier value).
    scores = {r["value"]: r["wait_ks"] for r in c.fit if r["knob"] == "limit_quantile"}
    assert scores[None] > 0.3 and scores[1.0] == pytest.approx(0.0, abs=1e-9)
    assert c.knobs.limit_quantile == 1.0 and c.policy is not None and c.policy.source == "inferred"
    rows = {(r.job_class, r.metric): r for r in c.rows}
    assert rows[("all", "wait_ks")].error == pytest.approx(0.0, abs=1e-9) and c.verdict == "pass"
    assert c.scenario.kueue is not None and len(c.scenario.kueue.cluster_queues) == 2


def test_split_keeps_what_the_record_showed_at_the_instant() -> None:
    h = history(LIMITED, ONE_NODE, end_s=800.0)
    # Nine submits 0, 0, 1, ..., 7: the default two thirds split at index ceil(2/3 x 9) = 6, submit 5 s.
    assert split_instant(h, None) == 5.0
    assert (
        split_instant(h, "0.5") == 4.0 and split_instant(h, 300.0) == 300.0 and split_instant(h, 1.0) == 800.0
    )
    assert split_instant(h, "2026-01-01T00:02:00Z") == 120.0  # the epoch is 2026-01-01T00:00:00Z
    with pytest.raises(SpecError, match="fit-until"):
        split_instant(h, "soon")
    part = history_until(h, 250.0)
    jobs = {j["job_id"]: j for j in part.jobs.to_pylist()}
    # u1-2 started at 200 and ends at 300: running at 250 (end unknown); u1-3 had not started: pending.
    assert (jobs["u1-2"]["state"], jobs["u1-2"]["end_s"], jobs["u1-2"]["run_s"]) == ("running", None, None)
    assert (jobs["u1-3"]["state"], jobs["u1-3"]["scheduled_s"]) == ("pending", None)
    assert jobs["u1-1"]["state"] == "completed" and part.end_s == 250.0


def test_down_windows_fail_nodes_and_what_is_not_replayed_is_kept() -> None:
    jobs = [
        {"job_id": "a", "state": "completed", "submit_s": 0.0, "scheduled_s": 0.0, "running_s": 0.0,
         "end_s": 100.0, "walltime_s": 3600.0},
        {"job_id": "b", "state": "cancelled", "submit_s": 10.0, "end_s": 40.0},
    ]  # fmt: skip
    nodes = [{"node": "x1", "pool": "p"}, {"node": "x2", "pool": "p"}]
    down = pa.Table.from_pylist(
        [{"node": "x2", "start_s": 20.0, "end_s": 80.0, "state": "down", "reason": "NODE_FAIL", "source": "t"},
         {"node": "x1", "start_s": 50.0, "end_s": None, "state": "drain", "reason": "upgrade", "source": "t"},
         {"node": "ghost", "start_s": 5.0, "end_s": 9.0, "state": "drain", "reason": "?", "source": "t"}],
        schema=NODE_DOWN_SCHEMA,
    )  # fmt: skip
    h = dataclasses.replace(history(jobs, nodes, end_s=200.0), node_down=down)
    scenario = history_scenario(h, Knobs())
    (pool,) = scenario.cluster.pools
    # x2 is the pool's second node, p-1: it fails at 20 s and is repaired after 60 s.
    assert pool.failures is not None
    assert [(f.node, f.at_s, f.repair_s) for f in pool.failures.trace] == [("p-1", 20.0, 60.0)]
    recorded = scenario.recorded
    assert recorded is not None
    assert recorded.walltime_s == {"a": 3600.0} and recorded.withdraw_s == {"b": 40.0}
    # x1's drain window is kept (the replay cordons it), naming x1 as the replay does: p-0; the window of
    # "ghost", a node the history does not list, is left out (the replay has no such node).
    assert [(w.node, w.start_s, w.end_s, w.state) for w in recorded.windows] == [("p-0", 50.0, None, "drain")]


def test_the_record_gives_the_error_a_what_if_must_exceed() -> None:
    errors = (
        MetricError(metric="wait_p95_s", source="fit", kind="absolute", unit="s", error=30.0, tolerance=60.0,
                    within=True),
        MetricError(metric="wait_p95_s", source="validation", kind="absolute", unit="s", error=120.0,
                    tolerance=60.0, within=False),
        MetricError(metric="gpu_hours_allocated", source="fit", kind="relative", error=0.02, tolerance=0.05,
                    within=True),
    )  # fmt: skip
    record = CalibrationRecord(verdict="pass", validation_verdict="fail", errors=errors)
    # An experiment's queue_wait_p95_s is bounded by the validation error (120 s), not the fit's.
    found = record.model_error("queue_wait_p95_s")
    assert found is not None and (found.source, found.error) == ("validation", 120.0)
    gpu = record.model_error("gpu_hours_allocated")
    assert gpu is not None and (gpu.source, gpu.kind) == ("fit", "relative")
    assert record.model_error("wait_ks") is None
