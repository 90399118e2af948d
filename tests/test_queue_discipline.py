"""Queueing disciplines (``scheduler.queueing``: fifo, best-effort-fifo, easy-backfill) and fair-share
ordering (``scheduler.fair_share``), sim/queue_discipline.py and sim/fair_share.py — worked out by hand.

The EASY cases follow the algorithm as Mu'alem & Feitelson (IEEE TPDS 12(6), 2001, section 2) state it:
the first queued job that cannot start gets a reservation at its *shadow time* (when enough of the running
jobs' processors are planned to be free, by their requested times); a later job starts now if it fits and
either ends by the shadow time or uses only *extra* processors (those the reservation leaves free). The
worlds are 10 nodes of 1 CPU, so a processor is a node and a job of n processors a gang of n 1-CPU pods;
every runtime equals its requested wall time (exact estimates) unless a case says otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import by_job, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

NODES = {"name": "p", "count": 10, "cpu": "1", "memory": "8Gi", "price_per_hour": 1.0}


def _job(job_id: str, procs: int, submit: float, runtime: float, **extra: Any) -> dict[str, Any]:
    return {"id": job_id, "submit_s": submit, "pods": procs, "gang": True, "runtime": runtime,
            "requests": {"cpu": "1", "memory": "1Gi"}, **extra}  # fmt: skip


def _run(
    jobs: list[dict[str, Any]], queueing: str, walltime: dict[str, float] | None = None, **scheduler: Any
) -> tuple[Simulator, SimulationResult]:
    recorded = {"walltime_s": walltime} if walltime else None
    resolved = scenario(
        [NODES], jobs, scheduler={"queueing": queueing, "tie_break": "first", **scheduler},
        **({"recorded": recorded} if recorded else {}),
    )  # fmt: skip
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def _starts(result: SimulationResult) -> dict[str, float]:
    return {k: v + by_job(result, "submit_s")[k] for k, v in by_job(result, "queue_wait_s").items()}


def _textbook() -> list[dict[str, Any]]:
    return [
        _job("J1", 6, 0, 10),
        _job("J2", 6, 1, 5),
        _job("J3", 2, 2, 5),
        _job("J4", 2, 3, 20),
        _job("J5", 2, 4, 20),
    ]


def test_easy_backfill_textbook_case_short_jobs_and_extra_processors() -> None:
    """J1 (6 processors, 10 s) starts at 0. J2 (6, 5 s) at 1 finds 4 free: it is the head; its shadow time
    is 10 (J1's planned end frees 6 + 4 = 10 ≥ 6), and its reservation takes J1's 6 nodes, leaving 4 extra.

    * J3 (2, 5 s) at 2 fits and ends at 7 ≤ 10: starts at 2.
    * J4 (2, 20 s) at 3 ends at 23 > 10 but fits on the extra nodes (2 left): starts at 3.
    * J5 (2, 20 s) at 4: nothing free. At 7 J3 ends; the shadow is still 10, J5 (ends 27) fits on the 2
      nodes J3 freed, outside the reservation: starts at 7.
    * J2 starts at 10, as reserved (J1's nodes), not delayed by any backfilled job.

    First-come-first-served instead: J2, J3, J4 start at 10 (6 + 2 + 2 = 10), J5 when J2 and J3 end at 15.
    """
    walltime = {"J1": 10, "J2": 5, "J3": 5, "J4": 20, "J5": 20}
    _, easy = _run(_textbook(), "easy-backfill", walltime)
    assert _starts(easy) == {"J1": 0, "J2": 10, "J3": 2, "J4": 3, "J5": 7}
    _, fifo = _run(_textbook(), "fifo", walltime)
    assert _starts(fifo) == {"J1": 0, "J2": 10, "J3": 10, "J4": 10, "J5": 15}


def _protecting() -> list[dict[str, Any]]:
    return [
        _job("J1", 6, 0, 10),
        _job("J2", 8, 1, 5),
        _job("J3", 3, 2, 20),
        _job("J4", 2, 3, 20),
        _job("J5", 2, 4, 4),
    ]


def test_easy_backfill_never_delays_the_head_best_effort_does() -> None:
    """J1 (6, 10 s) runs 0 → 10. J2 (8, 5 s) at 1 is the head: shadow 10, reserved J1's 6 nodes and 2 of
    the 4 free ones (the nodes freed last first, then by index), so 2 nodes are extra.

    * J3 (3, 20 s) at 2: ends 22 > 10 and 3 > 2 extra nodes: waits (it would delay J2).
    * J4 (2, 20 s) at 3: fits on the 2 extra nodes: starts at 3.
    * J5 (2, 4 s) at 4: ends at 8 ≤ 10, fits on the 2 reserved free nodes: starts at 4, ends 8.
    * J2 starts at 10 (J1's 6 + J5's 2), ends 15; J3 starts at 15 (10 - J4's 2 = 8 free ≥ 3).

    Best effort (kube-scheduler's queue): J3 starts at 2 (4 free), so at 10 only 7 are free: J2 fails,
    J4 and J5 start at 10; J2 starts only when J3 ends, at 22.
    First come first served: J2 at 10; J3 cannot start before J2 ends (2 free), all three at 15.
    """
    walltime = {"J1": 10, "J2": 5, "J3": 20, "J4": 20, "J5": 4}
    _, easy = _run(_protecting(), "easy-backfill", walltime)
    assert _starts(easy) == {"J1": 0, "J2": 10, "J3": 15, "J4": 3, "J5": 4}
    _, best = _run(_protecting(), "best-effort-fifo", walltime)
    assert _starts(best) == {"J1": 0, "J2": 22, "J3": 2, "J4": 10, "J5": 10}
    _, fifo = _run(_protecting(), "fifo", walltime)
    assert _starts(fifo) == {"J1": 0, "J2": 10, "J3": 15, "J4": 15, "J5": 15}


def test_easy_backfill_plans_with_wall_times_not_runtimes() -> None:
    """J1 (6 processors) asked for 20 s and ran 10 s. J2 (8, 5 s) at 1 is the head with 4 nodes free: its
    shadow time is J1's *planned* end, 20; reserved J1's 6 nodes and 2 free ones, 2 extra.

    * J3 (3, 15 s) at 2 ends at 17 ≤ 20: it may use any free node and starts at 2 (1 node left free).
    * J1 really ends at 10: 7 free < 8, J2 waits for J3 — it starts at 17, still before its reservation (20).

    Without recorded wall times every job is planned with its runtime: the shadow time is 10, J3 (ends 17)
    needs 3 extra nodes and only 2 are: it waits; J2 starts at 10, J3 at 15 when J2 ends."""
    jobs = [_job("J1", 6, 0, 10), _job("J2", 8, 1, 5), _job("J3", 3, 2, 15)]
    _, planned = _run(jobs, "easy-backfill", {"J1": 20, "J2": 5, "J3": 15})
    assert _starts(planned) == {"J1": 0, "J2": 17, "J3": 2}
    _, exact = _run(jobs, "easy-backfill")
    assert _starts(exact) == {"J1": 0, "J2": 10, "J3": 15}


def test_a_job_wider_than_the_cluster_blocks_nobody() -> None:
    """W (11 processors) can never start on 10 nodes: neither fifo nor EASY lets it hold the queue;
    J (2, 5 s) behind it starts at once."""
    jobs = [_job("W", 11, 0, 5), _job("J", 2, 1, 5)]
    for queueing in ("fifo", "easy-backfill"):
        _, result = _run(jobs, queueing)
        assert by_job(result, "queue_wait_s")["J"] == 0.0
        assert by_job(result, "state")["W"] == "pending"


def test_fair_share_orders_the_queue_by_decayed_usage() -> None:
    """One 1-CPU node; fair share per user, half-life 100 s, weight 1000, equal shares.

    a1 (user u1, 100 s) runs 0 → 100. a2 (u1) arrives at 5 and b1 (u2) at 10, both 100 s. At 100 u1's
    usage is ∫0..100 2^(-(100-s)/100) ds = (1 - 1/2) · 100 / ln 2 = c (c = 50 / ln 2 ≈ 72.1 CPU-s), u2's 0:
    u1's factor 2^(-(c/c)/0.5) = 1/4, u2's 2^0 = 1. b1 goes first (100 → 200), a2 after (200 → 300), although
    a2 was submitted first (without fair share a2 runs 100 → 200).

    At 300: U1 = c · 2^-2 + c (a2's run) = 1.25 c, U2 = c · 2^-1 = 0.5 c (b1's run, decayed 100 s):
    F1 = 2^(-(1.25/1.75)/0.5) = 2^(-10/7), F2 = 2^(-(0.5/1.75)/0.5) = 2^(-4/7)."""
    one = dict(NODES, count=1)
    jobs = [
        {"id": "a1", "user": "u1", "runtime": 100, "requests": {"cpu": "1"}},
        {"id": "a2", "user": "u1", "submit_s": 5, "runtime": 100, "requests": {"cpu": "1"}},
        {"id": "b1", "user": "u2", "submit_s": 10, "runtime": 100, "requests": {"cpu": "1"}},
    ]
    fair = {"fair_share": {"half_life_s": 100, "weight_fairshare": 1000}}
    resolved = scenario([one], jobs, scheduler=fair)
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    assert _starts(result) == {"a1": 0, "a2": 200, "b1": 100}
    assert sim.features.fair_share is not None
    assert sim.features.fair_share.factors(300_000) == pytest.approx([2 ** (-10 / 7), 2 ** (-4 / 7)])
    plain = scenario([one], jobs)
    assert _starts(Simulator(plain, profile_for(plain, None)).run()) == {"a1": 0, "a2": 100, "b1": 200}


def test_fair_share_without_decay_counts_all_usage_and_honours_shares() -> None:
    """Half-life 0 (no decay), shares u1: 3, u2: 1 (S1 = 3/4, S2 = 1/4). After a1 (u1, 100 CPU-s) and b1
    (u2, 100 CPU-s) have run, U1 = U2 = 100 of 200: F1 = 2^(-0.5/0.75) = 2^(-2/3), F2 = 2^(-0.5/0.25) = 1/4:
    u1's next job goes before u2's even though u2 submitted first."""
    one = dict(NODES, count=1)
    jobs = [
        {"id": "a1", "user": "u1", "runtime": 100, "requests": {"cpu": "1"}},
        {"id": "b1", "user": "u2", "submit_s": 1, "runtime": 100, "requests": {"cpu": "1"}},
        {"id": "b2", "user": "u2", "submit_s": 2, "runtime": 100, "requests": {"cpu": "1"}},
        {"id": "a2", "user": "u1", "submit_s": 3, "runtime": 100, "requests": {"cpu": "1"}},
    ]
    fair = {"fair_share": {"half_life_s": 0, "weight_fairshare": 1000, "shares": {"u1": 3, "u2": 1}}}
    resolved = scenario([one], jobs, scheduler=fair)
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    # At 100: U1 = 100, U2 = 0: F1 = 2^(-1/0.75), F2 = 1: b1 first (100 → 200). At 200: F1 = 2^(-2/3) >
    # F2 = 2^(-2) = 1/4: a2 (200 → 300), then b2 (300 → 400).
    assert _starts(result) == {"a1": 0, "b1": 100, "a2": 200, "b2": 300}
    assert sim.features.fair_share is not None
    assert sim.features.fair_share.factors(200_000) == pytest.approx([2 ** (-2 / 3), 0.25])
