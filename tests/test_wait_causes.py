"""Why jobs waited, from the record alone: every share worked out by hand on small worlds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from fleetlab.experiment.history_split import history_until
from fleetlab.metrics.intervals import steps, time_short, time_where
from fleetlab.metrics.wait_causes import diagnose_waits, free_waits, unexplained_waits
from fleetlab.model.history import NODE_DOWN_SCHEMA
from history_builders import history

GiB = 1 << 30
# Two 4-CPU nodes, one queue. Record end H = 100.
NODES = [{"node": "n1", "cpu": 4.0}, {"node": "n2", "cpu": 4.0}]
JOBS = [
    # j1: one pod of 6 CPUs (wider than either node), runs 0..50.
    {"job_id": "j1", "user": "u1", "state": "completed", "submit_s": 0.0, "scheduled_s": 0.0, "end_s": 50.0,
     "cpu_per_pod": 6.0},
    # j2 waits 10..50: j1 holds 6 of 8 CPUs, 2 free < 4 -> no room all 40 s; u1's j1 runs all 40 s.
    {"job_id": "j2", "user": "u1", "state": "completed", "submit_s": 10.0, "scheduled_s": 50.0, "end_s": 80.0,
     "cpu_per_pod": 4.0},
    # j3 waits 20..60: room throughout (2 free 20..50, 4 free 50..60); behind j2 (submitted earlier, waiting
    # until 50) for 30 s; no other u2 job runs.
    {"job_id": "j3", "user": "u2", "state": "completed", "submit_s": 20.0, "scheduled_s": 60.0, "end_s": 70.0,
     "cpu_per_pod": 2.0},
    # j4 waits 85..95 while nothing at all runs (j2 ended 80, j3 70).
    {"job_id": "j4", "user": "u2", "state": "completed", "submit_s": 85.0, "scheduled_s": 95.0, "end_s": 100.0,
     "cpu_per_pod": 2.0},
    # j5 was deleted while pending at 40: its wait 30..40 is censored; behind j2 all 10 s; room (2 free).
    {"job_id": "j5", "user": "u3", "state": "cancelled", "submit_s": 30.0, "end_s": 40.0, "cpu_per_pod": 2.0},
]  # fmt: skip


def test_each_cause_is_its_share_of_the_waiting_time() -> None:
    causes = diagnose_waits(history(JOBS, NODES, end_s=100.0))
    row = causes.row()
    assert row is not None
    # Waiting: j2 40 + j3 40 + j4 10 + j5 10 = 100 s.
    assert (row.jobs, row.waited, row.wait_hours) == (5, 4, pytest.approx(100 / 3600))
    assert row.capacity_explained_wait_share == pytest.approx(40 / 100)  # j2's 40 s
    assert row.same_user_running_share == pytest.approx(40 / 100)  # j2 while u1's j1 ran
    assert row.behind_earlier_share == pytest.approx((30 + 10) / 100)  # j3 and j5 behind j2
    assert row.nothing_running_share == pytest.approx(10 / 100)  # j4
    assert (row.cancelled_pending_jobs, row.cancelled_pending_share) == (1, pytest.approx(0.1))
    assert row.same_team_running_share is None and row.node_down_share is None  # no teams, no windows
    assert causes.wider_than_any_node == 1 and causes.wait_unmeasured == 0
    u1, u2 = causes.row("user", "u1"), causes.row("user", "u2")
    assert u1 is not None and u2 is not None
    assert u1.capacity_explained_wait_share == 1.0  # all of u1's 40 s
    # u2: j3 40 + j4 10 = 50 s; behind 30, nothing running 10, capacity 0.
    assert (u2.capacity_explained_wait_share, u2.behind_earlier_share, u2.nothing_running_share) == (
        0.0, pytest.approx(0.6), pytest.approx(0.2)
    )  # fmt: skip
    # Waited per user: u2 50, u1 40, u3 10: 50 + 40 = 90 < 95, so all three carry 95 %.
    assert causes.concentration == {"user": (3, 3)}


def test_a_down_window_takes_its_node_out_of_the_room() -> None:
    base = history(JOBS, NODES, end_s=100.0)
    down = pa.Table.from_pylist(
        [
            {
                "node": "n2",
                "start_s": 55.0,
                "end_s": 65.0,
                "state": "down",
                "reason": "NODE_FAIL",
                "source": "t",
            }
        ],
        schema=NODE_DOWN_SCHEMA,
    )
    causes = diagnose_waits(dataclasses.replace(base, node_down=down))
    row = causes.row()
    assert row is not None
    # j3 (2 CPUs) waits to 60: from 55, n2 is down, n1's 4 CPUs hold j2's 4 -> 0 free: 5 s more no room.
    assert row.capacity_explained_wait_share == pytest.approx((40 + 5) / 100)
    assert row.node_down_share == pytest.approx(5 / 100)


def test_gpu_jobs_only_count_nodes_of_their_model() -> None:
    nodes = [{"node": "a", "gpus": 8, "gpu_model": "A100-80GB", "cpu": 64.0},
             {"node": "v", "gpus": 8, "gpu_model": "V100", "cpu": 64.0}]  # fmt: skip
    jobs = [
        # r1 holds all 8 A100s on node a, 0..100.
        {"job_id": "r1", "state": "completed", "submit_s": 0.0, "scheduled_s": 0.0, "end_s": 100.0,
         "gpus_per_pod": 8.0, "gpu_model": "A100-80GB", "nodes": "a"},
        # w1 needs an A100: no room 10..100 (90 s). w2 takes any GPU: the V100s are free (20 s, room).
        {"job_id": "w1", "state": "completed", "submit_s": 10.0, "scheduled_s": 100.0, "end_s": 150.0,
         "gpus_per_pod": 1.0, "gpu_model": "A100-80GB"},
        {"job_id": "w2", "state": "completed", "submit_s": 10.0, "scheduled_s": 30.0, "end_s": 150.0,
         "gpus_per_pod": 1.0},
    ]  # fmt: skip
    row = diagnose_waits(history(jobs, nodes, end_s=200.0)).row()
    assert row is not None and row.capacity_explained_wait_share == pytest.approx(90 / 110)


def test_without_a_node_list_capacity_is_not_measured() -> None:
    causes = diagnose_waits(history(JOBS, [], end_s=100.0))
    row = causes.row()
    assert row is not None and row.capacity_explained_wait_share is None and not causes.capacity_known
    assert unexplained_waits(history(JOBS, [], end_s=100.0)) is None  # room is not measurable


def test_unexplained_waits_had_room_and_no_job_of_their_group_running() -> None:
    # j1 started at once (wait 0: nothing held it); j2 had no room all 40 s (and u1's j1 ran): out; j3 had
    # room for all 40 s and no other u2 job ran: in; j4 waited 10 s with nothing running: in; j5 never
    # started (its wait is censored): out. In job order: 0, 40, 10.
    h = history(JOBS, NODES, end_s=100.0)
    waits = unexplained_waits(h)
    assert waits is not None and waits.tolist() == [0.0, 40.0, 10.0]
    # With the censored waits beside them: j5 (deleted while pending at 40) had room (2 of 8 CPUs free
    # after j1's 6, it asks 2) and no other u3 job for its 10 s: in, censored at 10 s (not started).
    free = free_waits(h)
    assert free is not None and free[0].tolist() == [0.0, 40.0, 10.0, 10.0]
    assert free[1].tolist() == [True, True, True, False]
    # Cut at 90 s, j4 (submitted 85) has not started: censored at 90 − 85 = 5 s, nothing running, in.
    cut = free_waits(history_until(h, 90.0))
    assert cut is not None and cut[0].tolist() == [0.0, 40.0, 5.0, 10.0]
    assert cut[1].tolist() == [True, True, False, False]
    # With n2 down from 55 s, j3 has no room 55..60: out.
    down = pa.Table.from_pylist(
        [{"node": "n2", "start_s": 55.0, "end_s": 65.0, "state": "down", "reason": "x", "source": "t"}],
        schema=NODE_DOWN_SCHEMA,
    )
    waits = unexplained_waits(dataclasses.replace(h, node_down=down))
    assert waits is not None and waits.tolist() == [0.0, 10.0]
    # Grouped by team, with j2 and j3 in team t: j2 runs 50..80 while j3 waits to 60, so j3 is out; by
    # user alone (the default) it stays in.
    teams = [{**j, "team": "t"} if j["job_id"] in ("j2", "j3") else j for j in JOBS]
    by_team = unexplained_waits(history(teams, NODES, end_s=100.0), "team")
    by_user = unexplained_waits(history(teams, NODES, end_s=100.0), "user")
    assert by_team is not None and by_team.tolist() == [0.0, 10.0]
    assert by_user is not None and by_user.tolist() == [0.0, 40.0, 10.0]


def test_step_functions_and_window_times_by_hand() -> None:
    s = steps(np.array([0.0, 5.0]), np.array([10.0, 8.0]), np.array([1.0, 2.0]))
    # 0..5: 1, 5..8: 3, 8..10: 1, after 10: 0.
    assert s.times.tolist() == [0.0, 5.0, 8.0, 10.0] and s.levels.tolist() == [1.0, 3.0, 1.0, 0.0]
    # Time the level was above 1 in [4, 9): 5..8 -> 3 s; in [-5, 2): 0 s.
    assert time_where(s.times, s.levels > 1, np.array([4.0, -5.0]), np.array([9.0, 2.0])).tolist() == [
        3.0,
        0.0,
    ]
    free = 4.0 - s.levels.reshape(-1, 1)  # 3, 1, 3, 4 free of 4
    # A window needing 2 in [0, 12): short only 5..8 (1 free) -> 3 s; needing 0 of it: never short.
    short = time_short(s.times, free, np.array([[2.0], [0.0]]), np.array([0.0, 0.0]), np.array([12.0, 12.0]))
    assert short.tolist() == [3.0, 0.0]
