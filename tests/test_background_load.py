"""Background load (scenario ``background:``, sim/background.py): room held by work the history does not
list — placement sees it as used, the cost split bills it apart — worked out by hand on small worlds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from builders import assert_accounting_checks, assert_cost_split_exact, by_job, job, pool, scenario
from fleetlab.cost.ledger_io import ledger_table
from fleetlab.experiment.run import profile_for, run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import node_columns
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

HOUR_MS = 3_600_000


def _run(pools: list[dict[str, Any]], jobs: list[dict[str, Any]], **extra: Any) -> SimulationResult:
    resolved = scenario(pools, jobs, **extra)
    return Simulator(resolved, profile_for(resolved, None)).run()


def _steps(*steps: tuple[float, int]) -> list[dict[str, Any]]:
    return [{"pool": "gpu", "steps": [{"start_s": s, "gpus": g} for s, g in steps]}]


def test_an_eight_gpu_job_waits_for_the_background_a_four_gpu_job_does_not() -> None:
    """One 8-GPU node; the unlisted work holds 4 GPUs from 0 to 3600 s. ``wide`` (8 GPUs, 100 s, submitted
    at 0) cannot fit until the 4 GPUs come back at 3600 s: it waits 3600 s and ends at 3700 s. ``half``
    (4 GPUs, 100 s, submitted at 0) fits beside the background on the other 4 GPUs: no wait, ends at 100 s.
    (Without the background ``half`` and ``wide`` could not run together either, but ``wide``, submitted
    first, would start at 0.)"""
    jobs = [job("wide", gpus=8, runtime=100), job("half", gpus=4, runtime=100)]
    result = _run([pool("gpu")], jobs, background=_steps((0, 4), (3600, 0)))
    assert by_job(result, "queue_wait_s") == {"wide": 3600.0, "half": 0.0}
    assert by_job(result, "completion_s") == {"wide": 3700.0, "half": 100.0}
    assert result.end_ms == 3_700_000
    plain = _run([pool("gpu")], jobs)
    assert by_job(plain, "queue_wait_s") == {"wide": 0.0, "half": 100.0}


def test_the_background_bucket_is_billed_apart_from_the_jobs_compute() -> None:
    """One 8-GPU node at 8 $/h (1 $ per GPU-hour), billed 0 → 3700 s: 8 × 3700 / 3600 = 8.2222 GPU-h.

    * background: 4 GPUs × 3600 s = 4 GPU-h → 4 $;
    * compute: ``half`` 4 GPUs × 100 s + ``wide`` 8 GPUs × 100 s = 1200 GPU-s = 0.3333 GPU-h → 0.3333 $;
    * idle: the rest, 8.2222 − 4 − 0.3333 = 3.8889 GPU-h (4 GPUs × 3500 s waiting for ``wide``).
    The jobs' cost (what their pods held) is the compute alone: the background is nobody's job."""
    jobs = [job("wide", gpus=8, runtime=100), job("half", gpus=4, runtime=100)]
    result = _run([pool("gpu")], jobs, background=_steps((0, 4), (3600, 0)))
    cost = assert_cost_split_exact(result)
    assert cost.buckets[-1] == "background"
    assert int(cost.units["background"][0]) == 4 * HOUR_MS
    assert int(cost.units["compute"][0]) == 1_200_000
    assert int(cost.unit_total[0]) == 8 * 3_700_000
    assert int(cost.units["idle"][0]) == 8 * 3_700_000 - 4 * HOUR_MS - 1_200_000 == 4 * 3_500_000
    assert float(cost.total("background")) == pytest.approx(4.0)
    summary = summarize(result)
    assert summary.gpu_hours_background == pytest.approx(4.0)
    assert summary.cost_background == pytest.approx(4.0)
    assert summary.gpu_hours_idle == pytest.approx(4 * 3500 / 3600)
    assert summary.gpu_hours_busy == pytest.approx(1200 / 3600)
    columns = node_columns(result)
    assert list(columns["gpu_hours_background"]) == [pytest.approx(4.0)]
    assert list(columns["cost_background_usd"]) == [pytest.approx(4.0)]


def test_the_ledger_has_a_background_row_and_still_adds_up_to_the_bill() -> None:
    """The same run's ledger: one node row ``background`` of 4 GPU-h at 1 $ per GPU-hour = 4 $; every row
    together is the 8.2222 $ bill."""
    jobs = [job("wide", gpus=8, runtime=100), job("half", gpus=4, runtime=100)]
    resolved = scenario([pool("gpu")], jobs, background=_steps((0, 4), (3600, 0)))
    result = run_one(resolved, None).result
    ledger = ledger_table(resolved.scenario.cluster.pools, result, "r").to_pydict()
    rows = [i for i, c in enumerate(ledger["category"]) if c == "background"]
    assert len(rows) == 1 and ledger["job_id"][rows[0]] in ("", None)
    assert int(ledger["unit_ms"][rows[0]]) == 4 * HOUR_MS
    assert ledger["cost_usd"][rows[0]] == pytest.approx(4.0)
    assert sum(ledger["cost_usd"]) == pytest.approx(8 * 3700 / 3600)


def test_a_run_without_background_has_no_bucket_and_no_summary_field() -> None:
    result = _run([pool("gpu")], [job("a", gpus=1)])
    assert "background" not in assert_cost_split_exact(result).buckets
    assert "cost_background" not in summarize(result).as_dict()
    assert "cost_background_usd" not in node_columns(result)


def test_background_never_evicts_and_takes_room_as_it_frees_before_a_pending_pod() -> None:
    """One 8-GPU node. ``first`` (8 GPUs, 1000 s) starts at 0. The background wants 4 GPUs from 500 s: the
    node is full, so nothing is evicted; the 4 GPUs are taken at 1000 s when ``first`` ends, in the same
    step, before ``next`` (8 GPUs, submitted at 600 s) is tried. They come back at 2000 s: ``next`` runs
    2000 → 2100 s (waits 2000 − 600 = 1400 s). ``small`` (4 GPUs, 50 s, submitted at 700 s) takes the other
    4 GPUs at 1000 s (waits 300 s). Background held 4 GPUs 1000 → 2000 s = 4000 GPU-s."""
    jobs = [
        job("first", gpus=8, runtime=1000),
        job("next", gpus=8, submit_s=600, runtime=100),
        job("small", gpus=4, submit_s=700, runtime=50),
    ]
    result = _run([pool("gpu")], jobs, background=_steps((500, 4), (2000, 0)))
    assert by_job(result, "evictions") == {"first": 0, "next": 0, "small": 0}
    assert by_job(result, "queue_wait_s") == {"first": 0.0, "next": 1400.0, "small": 300.0}
    cost = assert_cost_split_exact(result)
    assert int(cost.units["background"][0]) == 4 * 1_000_000


def test_a_share_is_packed_onto_the_first_nodes_and_cpu_only_pools_count_cpu() -> None:
    """Two 8-GPU nodes, a share of 0.5 = 8 GPUs held from 0, packed onto gpu-0: an 8-GPU job runs on gpu-1
    at once, a second 8-GPU job waits for it (100 s). On a CPU-only pool of two 64-CPU nodes a share of 0.25
    holds 32 CPUs of cpu-0: a 40-CPU job fits only on cpu-1."""
    jobs = [job("a", gpus=8, runtime=100), job("b", gpus=8, runtime=100)]
    result = _run([pool("gpu", count=2)], jobs, background=[{"pool": "gpu", "share": 0.5}])
    assert by_job(result, "queue_wait_s") == {"a": 0.0, "b": 100.0}
    cost = assert_cost_split_exact(result)
    assert [int(u) for u in cost.units["background"]] == [8 * 200_000, 0]
    cpu_jobs = [job(n, gpus=0, runtime=100, requests={"cpu": "40", "memory": "1Gi"}) for n in ("x", "y")]
    cpu = _run([pool("cpu", count=2, gpus=0)], cpu_jobs, background=[{"pool": "cpu", "share": 0.25}])
    assert by_job(cpu, "queue_wait_s") == {"x": 0.0, "y": 100.0}
    assert [int(u) for u in assert_cost_split_exact(cpu).units["background"]] == [32_000 * 200_000, 0]


def test_the_written_run_passes_the_accounting_checks_with_the_bucket() -> None:
    resolved = scenario(
        [pool("gpu")], [job("wide", gpus=8, runtime=100)], background=_steps((0, 4), (3600, 0))
    )
    assert_accounting_checks(run_one(resolved, None))


@pytest.mark.parametrize(
    ("load", "message"),
    [
        ({"pool": "nope", "share": 0.1}, "not a pool of the cluster"),
        ({"pool": "gpu"}, "either share or steps"),
        ({"pool": "gpu", "share": 0.1, "steps": [{"start_s": 0, "gpus": 1}]}, "either share or steps"),
        ({"pool": "gpu", "steps": [{"start_s": 10, "gpus": 1}, {"start_s": 5}]}, "increasing start_s"),
        ({"pool": "gpu", "steps": [{"start_s": 0, "gpus": 9}]}, "more than pool"),
        ({"pool": "gpu", "share": 1.5}, "less than or equal to 1"),
    ],
)
def test_bad_background_sections_are_refused_with_their_place(load: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        scenario([pool("gpu")], [job("a")], background=[load])


def test_the_experiment_cost_split_shows_the_bucket_only_when_a_run_had_it() -> None:
    """Two variants, one seed each: ``plain`` has no background column values (null), ``bg`` 4 $ of it."""
    import duckdb

    from fleetlab.cost.billing import BUCKETS
    from fleetlab.report.experiment_data import cost_split

    con = duckdb.connect()
    names = ", ".join(f"cost_{b}_usd DOUBLE" for b in (*BUCKETS, "background"))
    con.execute(f"CREATE TABLE costs (variant VARCHAR, seed BIGINT, {names})")
    plain = [1.0] * len(BUCKETS)
    con.execute("INSERT INTO costs VALUES (?, ?, " + ", ".join("?" * (len(BUCKETS) + 1)) + ")",
                ["plain", 0, *plain, None])  # fmt: skip
    con.execute("INSERT INTO costs VALUES (?, ?, " + ", ".join("?" * (len(BUCKETS) + 1)) + ")",
                ["bg", 0, *plain, 4.0])  # fmt: skip
    split = cost_split(con)
    assert split["bg"]["background"] == 4.0 and split["plain"]["background"] == 0.0
    assert sum(split["bg"].values()) == len(BUCKETS) + 4.0
    bare = duckdb.connect()
    bare.execute("CREATE TABLE costs (variant VARCHAR, seed BIGINT, " + names.rsplit(",", 1)[0] + ")")
    bare.execute(
        "INSERT INTO costs VALUES (?, ?, " + ", ".join("?" * len(BUCKETS)) + ")", ["plain", 0, *plain]
    )
    assert list(cost_split(bare)["plain"]) == list(BUCKETS)
