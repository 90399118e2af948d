"""Slurm's backfill on its own clock (``scheduler.backfill_interval_s`` = ``bf_interval``,
``backfill_window_s`` = ``bf_window``; sim/queue_discipline.py), worked out by hand on the EASY worlds of
tests/test_queue_discipline.py (10 nodes of 1 CPU; a job of n processors is a gang of n 1-CPU pods).

Slurm runs two schedulers (slurm.conf(5), SchedulerParameters ``bf_interval``: "the number of seconds
between backfill iterations", default 30; ``bf_window``: "the number of minutes into the future to look
when considering jobs to schedule", default one day; https://slurm.schedmd.com/sched_config.html): the main
scheduler starts jobs in priority order at events and stops at the first that cannot start; only a
backfill pass plans a reservation for it and starts later jobs that do not delay it."""

from __future__ import annotations

from builders import scenario
from fleetlab.experiment.run import profile_for
from fleetlab.sim.simulator import Simulator
from test_queue_discipline import NODES, _job, _protecting, _run, _starts, _textbook

WALL_TEXTBOOK = {"J1": 10, "J2": 5, "J3": 5, "J4": 20, "J5": 20}


def test_backfill_starts_wait_for_the_next_pass() -> None:
    """Passes every 5 s (at 5, 10, ...). J1 (6 nodes, 10 s) starts at 0 (main scheduler). J2 (6) at 1 is
    blocked (4 free); J3 (2, 5 s) at 2, J4 (2, 20 s) at 3 and J5 (2, 20 s) at 4 wait behind it: the main
    scheduler stops at J2.

    * pass at 5: J2's shadow is 10 (J1's planned end), its reservation J1's 6 nodes; J3 ends at 5 + 5 = 10
      ≤ 10: starts at 5; J4 (ends 25) fits on the 2 extra nodes left: starts at 5; J5: no node left.
    * at 10 J1 and J3 end: the main scheduler starts J2 (6 of 8 free) and J5 (the last 2) in order.

    Backfilling at every event instead (no interval): J3 at 2, J4 at 3, J5 at 7 (when J3 ends)."""
    _, passes = _run(_textbook(), "easy-backfill", WALL_TEXTBOOK, backfill_interval_s=5)
    assert _starts(passes) == {"J1": 0, "J2": 10, "J3": 5, "J4": 5, "J5": 10}
    _, every = _run(_textbook(), "easy-backfill", WALL_TEXTBOOK)
    assert _starts(every) == {"J1": 0, "J2": 10, "J3": 2, "J4": 3, "J5": 7}


def test_a_pass_is_counted_only_when_entries_wait_behind_a_blocked_head() -> None:
    """Passes every 4 s. J3 at 2 waits behind J2: the pass at 4 starts J3 (ends 9 ≤ 10) and J4 (extra
    nodes); J5, arriving at 4 before the pass, finds no node. The main cycle at 4 (J5's arrival) leaves J5
    behind J2, so the run wakes at 8: no room (J3 until 9). J3's end at 9 wakes the main cycle again: a
    pass is due at 12, but at 10 J1 ends and the main scheduler starts J2 and J5; nothing waits, so no pass
    runs at 12. Passes: 4 and 8 — and at 10? No: 10 is not a multiple of 4."""
    sim, result = _run(_textbook(), "easy-backfill", WALL_TEXTBOOK, backfill_interval_s=4)
    assert _starts(result) == {"J1": 0, "J2": 10, "J3": 4, "J4": 4, "J5": 10}
    assert sim.features.discipline is not None and sim.features.discipline.passes == 2


def test_a_head_beyond_the_window_gets_no_reservation() -> None:
    """bf_window 5 s on the world where EASY protects the head (J1 6 nodes 0 → 10; J2 8 nodes at 1; J3 3
    nodes 20 s at 2; J4 2 nodes 20 s at 3; J5 2 nodes 4 s at 4). At 2 J2's shadow time is 10, 8 s ahead >
    5: no reservation, so J3 takes 3 of the 4 free nodes at once. From then on J2's shadow is J3's end,
    22: never within 5 s before 17, and at 10 (J1 ends, 7 free) J4 and J5 start in order behind the
    blocked J2, which starts when J3 ends at 22 (7 − 4 + 2 (J5 ended at 14) + 3 = 8). The same as
    kube-scheduler's best effort; with a 10 s window the reservation holds as in plain EASY."""
    wall = {"J1": 10, "J2": 5, "J3": 20, "J4": 20, "J5": 4}
    _, narrow = _run(_protecting(), "easy-backfill", wall, backfill_window_s=5)
    assert _starts(narrow) == {"J1": 0, "J2": 22, "J3": 2, "J4": 10, "J5": 10}
    _, wide = _run(_protecting(), "easy-backfill", wall, backfill_window_s=10)
    assert _starts(wide) == {"J1": 0, "J2": 10, "J3": 15, "J4": 3, "J5": 4}


def test_the_main_scheduler_blocks_a_partition_not_the_whole_queue() -> None:
    """The textbook jobs on partition p (10 nodes labelled part=p) and a second partition q (2 nodes): R
    (1 node of q, 5 s) arrives at 2, while J3 waits behind the blocked J2 of p. Slurm's main scheduler
    leaves p's later jobs waiting but starts R at once; p's starts are those of the first test (passes
    every 5 s)."""
    pools = [{**NODES, "labels": {"part": "p"}}, {**NODES, "name": "q", "count": 2, "labels": {"part": "q"}}]
    jobs = [{**j, "nodeSelector": {"part": "p"}} for j in _textbook()]
    jobs.append(_job("R", 1, 2, 5, nodeSelector={"part": "q"}))
    resolved = scenario(
        pools, jobs, scheduler={"queueing": "easy-backfill", "tie_break": "first", "backfill_interval_s": 5},
        recorded={"walltime_s": {**WALL_TEXTBOOK, "R": 5}},
    )  # fmt: skip
    result = Simulator(resolved, profile_for(resolved, None)).run()
    assert _starts(result) == {"J1": 0, "J2": 10, "J3": 5, "J4": 5, "J5": 10, "R": 2}
