"""Slurm's multifactor priority beyond fair share (``scheduler.fair_share``: job size, partition, QOS, TRES) and its
recalculation period (``calc_period_s``), sim/job_priority.py — worked out by hand.

Semantics from https://slurm.schedmd.com/priority_multifactor.html and SchedMD/slurm
src/plugins/priority/multifactor/priority_multifactor.c @01551acc1914b8c69b622c9cd951131df54d87eb
(``set_priority_factors``: job size ``(nodes/N + cpus/C)/2``, favor small ``((N-nodes)/N + (C-cpus)/C)/2``,
SMALL_RELATIVE_TO_TIME ``max(nodes·C/N, cpus)/minutes/C``; partition and QOS factors are ``norm_priority``,
the value over the largest; ``_get_priority_internal``: the weighted sum cast to uint32, at least 1;
``decay_apply_weighted_factors`` recomputes pending jobs on the decay thread, every PriorityCalcPeriod;
the TRES factors: ``set_priority_factors`` sets each ``priority_tres`` to the job's allocated, else requested,
count of the TRES over its partition's ``tres_cnt``, and ``_get_priority_internal`` adds each times its
PriorityWeightTRES weight, unclamped).
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import by_job, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.model.batch_policy import FairShare as Config
from fleetlab.sim.job_priority import job_size_factor, tres_part
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

NODES = {"name": "p", "count": 4, "cpu": "1", "memory": "8Gi", "price_per_hour": 1.0}


def _job(job_id: str, pods: int, submit: float, runtime: float, **labels: str) -> dict[str, Any]:
    tags = {f"fleetlab.io/{k}": v for k, v in labels.items()}
    return {"id": job_id, "submit_s": submit, "pods": pods, "gang": True, "runtime": runtime,
            "requests": {"cpu": "1", "memory": "1Gi"}, "labels": tags}  # fmt: skip


def _run(
    nodes: dict[str, Any], jobs: list[dict[str, Any]], **fair: Any
) -> tuple[Simulator, SimulationResult]:
    config = {"weight_fairshare": 0, **fair}
    resolved = scenario(
        [nodes], jobs, scheduler={"queueing": "fifo", "tie_break": "first", "fair_share": config}
    )
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def _starts(result: SimulationResult) -> dict[str, float]:
    submit = by_job(result, "submit_s")
    return {k: round(v + submit[k], 3) for k, v in by_job(result, "queue_wait_s").items()}


def _world() -> list[dict[str, Any]]:
    """B holds all 4 one-CPU nodes 0 → 100; Q (3 nodes, QOS high), L (4 nodes, QOS low) and S (2 nodes, QOS
    low) arrive at 1, 2, 3 and wait; each runs 100 s. Fifo: the head blocks everyone behind it."""
    return [
        _job("B", 4, 0, 100),
        _job("Q", 3, 1, 100, qos="high"),
        _job("L", 4, 2, 100, qos="low"),
        _job("S", 2, 3, 100, qos="low"),
    ]


def test_job_size_and_qos_order_the_queue_favouring_large_jobs() -> None:
    """N = 4 nodes, C = 4 cores. Job size (favour large), weight 1000: Q (3/4 + 3/4)/2 = 0.75 → 750,
    L (4/4 + 4/4)/2 = 1 → 1000, S (2/4 + 2/4)/2 = 0.5 → 500. QOS weight 2000, priorities high 10, low 5:
    high 10/10 = 1 → 2000, low 5/10 = 0.5 → 1000. Totals Q 2750, L 2000, S 1500: Q starts at 100 (ends
    200), L at 200, S at 300 (submit order would be the same; the next case reverses L and S)."""
    _, result = _run(
        NODES, _world(), weight_job_size=1000, weight_qos=2000, qos_priorities={"high": 10, "low": 5}
    )
    assert _starts(result) == {"B": 0, "Q": 100, "L": 200, "S": 300}


def test_favor_small_puts_the_small_job_before_the_large_one() -> None:
    """PriorityFavorSmall: Q ((4−3)/4 + (4−3)/4)/2 = 0.25 → 250, L 0, S ((4−2)/4 + (4−2)/4)/2 = 0.5 → 500;
    plus QOS: Q 2250, L 1000, S 1500. Q starts at 100, S at 200 (2 of the 4 nodes; L still waits for
    all 4), L at 300 — before S without the job-size weight: submit order Q, L, S."""
    _, result = _run(
        NODES, _world(), weight_job_size=1000, favor_small=True, weight_qos=2000,
        qos_priorities={"high": 10, "low": 5},
    )  # fmt: skip
    assert _starts(result) == {"B": 0, "Q": 100, "S": 200, "L": 300}
    _, plain = _run(NODES, _world())
    assert _starts(plain) == {"B": 0, "Q": 100, "L": 200, "S": 300}


def test_partition_factor_is_the_job_factor_over_the_largest() -> None:
    """Partitions a (PriorityJobFactor 4) and b (1): factors 4/4 = 1 and 1/4 = 0.25; weight 1000. Q in b
    (250), L in b (250), S in a (1000): S starts at 100 (2 nodes), then Q and L tie at 250 and go in submit
    order: Q at 200 (3 nodes), L at 300."""
    jobs = _world()
    for job, part in zip(jobs, ("a", "b", "b", "a"), strict=True):
        job["labels"]["fleetlab.io/partition"] = part
    _, result = _run(NODES, jobs, weight_partition=1000, partition_job_factors={"a": 4, "b": 1})
    assert _starts(result) == {"B": 0, "S": 100, "Q": 200, "L": 300}


def test_tres_memory_weight_orders_the_queue() -> None:
    """PriorityWeightTRES Mem=2000: 4 nodes of 8 GiB = 32 GiB; each pod asks 1 GiB. Q 3/32 · 2000 = 187.5,
    L 4/32 · 2000 = 250, S 2/32 · 2000 = 125: L starts at 100 (all 4 nodes), Q at 200 (3 nodes; S's 2 do
    not fit beside it), S at 300. Without the weight the order is Q, L, S (the job-size case above)."""
    _, result = _run(NODES, _world(), tres_weights={"mem": 2000})
    assert _starts(result) == {"B": 0, "L": 100, "Q": 200, "S": 300}


def test_tres_factors_are_over_the_jobs_partition() -> None:
    """Pool small: 2 nodes (4 CPUs, 16 GiB, 1 GPU each) labelled for partition small; pool big: 6 nodes
    (8 CPUs, 32 GiB, 2 GPUs) for partition big. Weights cpu 600, node 300, gres/gpu 1000.

    J (partition small, 2 pods of 2 CPUs + 1 GPU): cpu 4 / 8 · 600 = 300, node 2 / 2 · 300 = 300, GPU 2 / 2
    · 1000 = 1000: 1600. K (big, the same pods): 4 / 48 · 600 = 50, 2 / 6 · 300 = 100, 2 / 12 · 1000 =
    166.67: 316.67. M (no partition: the whole cluster, 8 nodes, 56 CPUs, 16 GPUs; 1 pod of 1 CPU, no GPU):
    1 / 56 · 600 + 1 / 8 · 300 = 10.71 + 37.5 = 48.21."""
    key = "partition.slurm.fleetlab.io/"
    pools = [
        {"name": "small", "count": 2, "cpu": "4", "memory": "16Gi", "gpus_per_node": 1, "gpu_model": "H100",
         "price_per_hour": 1.0, "labels": {key + "small": "true"}},
        {"name": "big", "count": 6, "cpu": "8", "memory": "32Gi", "gpus_per_node": 2, "gpu_model": "H100",
         "price_per_hour": 1.0, "labels": {key + "big": "true"}},
    ]  # fmt: skip
    pod = {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1}
    jobs = [
        {"id": "J", "submit_s": 0, "pods": 2, "gang": True, "runtime": 10, "requests": pod,
         "labels": {"fleetlab.io/partition": "small"}},
        {"id": "K", "submit_s": 0, "pods": 2, "gang": True, "runtime": 10, "requests": pod,
         "labels": {"fleetlab.io/partition": "big"}},
        {"id": "M", "submit_s": 0, "pods": 1, "runtime": 10, "requests": {"cpu": "1", "memory": "1Gi"}},
    ]  # fmt: skip
    resolved = scenario(
        pools, jobs, scheduler={"queueing": "fifo", "tie_break": "first", "fair_share": {
            "weight_fairshare": 0, "tres_weights": {"cpu": 600, "node": 300, "gres/gpu": 1000}}},
    )  # fmt: skip
    sim = Simulator(resolved, profile_for(resolved, None))
    priority = sim.features.job_priority
    assert priority is not None
    assert priority.fixed == pytest.approx([1600.0, 50 + 100 + 1000 * 2 / 12, 600 / 56 + 37.5])


def test_tres_part_skips_what_the_job_or_partition_lacks() -> None:
    """A TRES the job does not ask (GPUs) or the partition does not hold adds nothing (Slurm tests
    ``value && part tres_cnt[i]``); one over the partition's total is not clamped: 3 nodes of 2 → 1.5."""
    totals = {"cpu": 8000.0, "mem": 0.0, "node": 2.0, "gres/gpu": 0.0}
    weights = {"cpu": 100.0, "mem": 100.0, "node": 10.0, "gres/gpu": 100.0}
    assert tres_part({"cpu": 2000, "memory": 1 << 30}, 3, weights, totals) == pytest.approx(
        100 * 6000 / 8000 + 10 * 3 / 2
    )


@pytest.mark.parametrize(
    ("nodes", "cores", "favor_small", "relative", "minutes", "expected"),
    [
        (1, 8, False, False, 1, (1 / 10 + 8 / 80) / 2),  # 0.1
        (1, 8, True, False, 1, (9 / 10 + 72 / 80) / 2),  # 0.9
        (2, 4, False, True, 60, max(2 * 80 / 10, 4) / 60 / 80),  # 16 cores by nodes / 60 min / 80 = 1/300
        (2, 4, True, True, 60, 1 - 16 / 60 / 80),
        (20, 200, False, False, 1, 1.0),  # clamped to 1
    ],
)
def test_job_size_factor_formulas(
    nodes: int, cores: float, favor_small: bool, relative: bool, minutes: float, expected: float
) -> None:
    """A cluster of N = 10 nodes and C = 80 cores (the module docstring's formulas)."""
    config = Config(favor_small=favor_small, small_relative_to_time=relative)
    assert job_size_factor(nodes, cores, 10, 80.0, config, minutes) == pytest.approx(expected)


def test_priority_changes_only_at_the_recalculation_period() -> None:
    """One node; B runs 0 → 1000. X (QOS low, priority 0) arrives at 10, Y (QOS high) at 950; each 100 s.
    Age weight 1000 over max age 1000 s, QOS weight 900 (high 10/10 = 1, low 0).

    Recomputed at every cycle, at 1000: X = 1000 · 990/1000 = 990, Y = 1000 · 50/1000 + 900 = 950: X runs
    1000 → 1100, Y 1100 → 1200.

    PriorityCalcPeriod 300 s: X gets 1 when queued at 10 (0, at least 1), 290 at 300, 590 at 600, 890 at
    900; Y gets 0 + 900 = 900 when queued at 950. At 1000 (no recalculation) Y (900) goes before X (890):
    Y runs 1000 → 1100, X 1100 → 1200. Recalculations at 300, 600, 900 (the run wakes for them while jobs
    wait) and 1200 (X's end)."""
    one = dict(NODES, count=1)
    jobs = [_job("B", 1, 0, 1000), _job("X", 1, 10, 100, qos="low"), _job("Y", 1, 950, 100, qos="high")]
    weights = {
        "weight_age": 1000,
        "max_age_s": 1000,
        "weight_qos": 900,
        "qos_priorities": {"high": 10, "low": 0},
    }
    _, continuous = _run(one, jobs, **weights)
    assert _starts(continuous) == {"B": 0, "X": 1000, "Y": 1100}
    sim, periodic = _run(one, jobs, calc_period_s=300, **weights)
    assert _starts(periodic) == {"B": 0, "Y": 1000, "X": 1100}
    feature = sim.features.job_priority
    assert feature is not None and feature.recalculations == 4
