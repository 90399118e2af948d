"""A scheduling delay drawn per job (``scheduler.scheduling_delay``, sim/scheduling_delay.py): each job's
level from (seed, its position), its delay the quantile function at that level, and the replay holding the
job that long before anything else sees it — every figure worked out by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from builders import by_job, job, pool, scenario
from fleetlab.experiment.plan import VariantSpec, variant_data
from fleetlab.experiment.run import profile_for, run_one
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.sim.scheduling_delay import DELAY_STREAM, delay_at, job_levels
from fleetlab.sim.simulator import Simulator

MASK = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    """SplitMix64's output function of x + 0x9E3779B97F4A7C15, written out with Python integers mod 2**64."""
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def test_each_level_is_splitmix64_of_the_seed_and_the_position() -> None:
    # Seed 0: key = splitmix64(0 xor 0xDE1A) = 0x7E682B381A427588; job 0's hash splitmix64(key + 0) =
    # 0x70E3F6ED5F7A898E, whose top 53 bits over 2**53 are 0.44098...
    key = _splitmix64(0 ^ DELAY_STREAM)
    assert key == 0x7E682B381A427588
    assert _splitmix64(key) == 0x70E3F6ED5F7A898E
    by_hand = [(_splitmix64((key + p) & MASK) >> 11) / 2**53 for p in range(4)]
    assert by_hand == pytest.approx([0.4409784631, 0.6507811700, 0.0393334964, 0.1757282010], abs=1e-9)
    assert job_levels(0, np.arange(4)).tolist() == by_hand
    # A job's level depends on its position only: asked alone or in another order it is the same.
    assert job_levels(0, np.asarray([3, 1])).tolist() == [by_hand[3], by_hand[1]]
    # Another seed, other levels; every level in [0, 1).
    other = job_levels(7, np.arange(1000))
    assert other[0] != by_hand[0] and float(other.min()) >= 0.0 and float(other.max()) < 1.0


def test_the_delay_is_the_quantile_function_linear_between_its_points() -> None:
    # Points 0, 100, 300 s at levels 0, 0.5, 1: level 0.25 -> 50 s, 0.75 -> 100 + 200 * 0.5 = 200 s.
    delay = SchedulingDelay(quantiles_s=(0.0, 100.0, 300.0))
    assert delay_at(delay, np.asarray([0.0, 0.25, 0.5, 0.75, 1.0])).tolist() == [
        0.0,
        50.0,
        100.0,
        200.0,
        300.0,
    ]
    assert delay_at(SchedulingDelay(quantiles_s=(7.0,)), np.asarray([0.1, 0.9])).tolist() == [7.0, 7.0]


def test_a_delay_is_a_quantile_function_and_bounded() -> None:
    assert SchedulingDelay(quantiles_s=("0s", "1m", "1h")).quantiles_s == (0.0, 60.0, 3600.0)
    with pytest.raises(ValidationError, match="point 2 is 10 s after 60 s"):
        SchedulingDelay(quantiles_s=(0, 60, 10))
    with pytest.raises(ValidationError, match="at least 1 item"):
        SchedulingDelay(quantiles_s=())
    with pytest.raises(ValidationError, match="at most 1001 items"):
        SchedulingDelay(quantiles_s=tuple(range(1002)))
    with pytest.raises(ValidationError, match="finite duration >= 0"):
        SchedulingDelay(quantiles_s=(-1,))


def _four_jobs(**scheduler: Any) -> Any:
    """One 8-GPU node and four 1-GPU jobs: room for all of them at once, so each waits only its delay."""
    jobs = [job(f"j{k}", submit_s=10 * k, runtime=100) for k in range(4)]
    return scenario([pool()], jobs, scheduler=scheduler)


def test_each_job_waits_its_own_drawn_delay_on_top_of_the_latency() -> None:
    # Seed 0, levels (above) 0.440978, 0.650781, 0.039333, 0.175728 for positions 0..3; points 0, 100,
    # 300 s: j0 200 * 0.440978 = 88.196 s, j1 100 + 400 * (0.650781 - 0.5) = 160.312 s, j2 7.867 s,
    # j3 35.146 s (to the millisecond); plus the 5 s latency.
    resolved = _four_jobs(scheduling_latency_s=5, scheduling_delay={"quantiles_s": [0, 100, 300]})
    run = run_one(resolved)
    waits = by_job(run.result, "queue_wait_s")
    assert waits == {"j0": 93.196, "j1": 165.312, "j2": 12.867, "j3": 40.146}
    # The same delays under another placement policy and with other jobs' runtimes: a job's delay is its
    # own, whatever else happens in the run.
    other = run_one(resolved, "most-allocated")
    assert by_job(other.result, "queue_wait_s") == waits
    # A run seed of 7 draws other levels: 0.321722 -> 64.344 s for j0.
    sim = Simulator(resolved, profile_for(resolved, None), seed=7)
    assert by_job(sim.run(), "queue_wait_s")["j0"] == pytest.approx(5 + 64.344, abs=1e-3)


def test_one_point_is_a_constant_delay_and_none_is_the_plain_latency() -> None:
    constant = run_one(_four_jobs(scheduling_delay={"quantiles_s": [30]}))
    latency = run_one(_four_jobs(scheduling_latency_s=30))
    assert (
        by_job(constant.result, "queue_wait_s")
        == by_job(latency.result, "queue_wait_s")
        == {f"j{k}": 30.0 for k in range(4)}
    )
    plain = Simulator(_four_jobs(), profile_for(_four_jobs(), None))
    plain.run()
    assert plain.features.scheduling_delay is None  # not built: nothing per job without a drawn delay


def test_a_job_withdrawn_while_held_never_reaches_the_queue() -> None:
    # j0 draws 88.196 s (above) and is withdrawn at 50 s, before its delay passed: cancelled, never started,
    # its wait censored at 50 s; the timer that would have handed it on at 88.196 s is stale and does not
    # move the clock. The others run: the run ends when j1 (arrives 10 + 160.312 s) ends 100 s later.
    resolved = _four_jobs(scheduling_delay={"quantiles_s": [0, 100, 300]})
    data = resolved.scenario.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data["recorded"] = {"withdraw_s": {"j0": 50}}
    run = run_one(scenario(data["cluster"]["pools"], data["workload"]["jobs"], scheduler=data["scheduler"],
                           recorded=data["recorded"]))  # fmt: skip
    assert by_job(run.result, "queue_wait_so_far_s")["j0"] == 50.0
    assert np.isnan(by_job(run.result, "queue_wait_s")["j0"])
    assert run.result.end_ms == 10_000 + 160_312 + 100_000


def test_a_what_if_on_the_scenario_keeps_the_drawn_delay() -> None:
    base = _four_jobs(
        scheduling_delay={"quantiles_s": [0, 100, 300], "source": "the record's unexplained waits"}
    )
    data = yaml.safe_load(
        yaml.safe_dump(base.scenario.model_dump(mode="json", by_alias=True, exclude_defaults=True))
    )
    changed = Scenario.model_validate(
        variant_data(data, VariantSpec(name="fifo", scheduler={"queueing": "fifo"}))
    )
    assert changed.scheduler.queueing == "fifo"
    assert changed.scheduler.scheduling_delay == base.scenario.scheduler.scheduling_delay
