"""The interference model (fleetlab.model.interference): co-located pods contending for a node's CPU,
memory bandwidth, network or disk slow down by max(1, Σ demand / capacity) ** alpha, re-timed at every
start and finish on the node through the same pacing as NVIDIA time-slicing (sim/pod_pace.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import job_columns
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load_scenario


def _run(
    jobs: list[dict[str, Any]], model: dict[str, Any] | None, policy: str = "default", **pool_extra: Any
) -> SimulationResult:
    extra = {} if model is None else {"interference": model}
    return run_one(scenario([pool(**pool_extra)], jobs, **extra), policy).result


NET = {"network": 0.8}


def test_two_pods_over_a_saturated_resource_share_it() -> None:
    """Σ network = 1.6 of capacity 1, alpha = 1: both 100 s pods run at 1/1.6 speed and end at 160 s."""
    jobs = [job("a", interference_demand=NET), job("b", interference_demand=NET)]
    result = _run(jobs, {"alpha": 1.0})
    assert by_job(result, "completion_s") == {"a": pytest.approx(160.0), "b": pytest.approx(160.0)}
    assert by_job(result, "interference_slowdown") == {"a": pytest.approx(1.6), "b": pytest.approx(1.6)}
    assert by_job(result, "interference_extra_s") == {"a": pytest.approx(60.0), "b": pytest.approx(60.0)}
    assert summarize(result).interference_extra_hours == pytest.approx(120.0 / 3600.0)


def test_slowdown_is_retimed_when_a_neighbour_starts_and_finishes() -> None:
    """a alone 0..50 (50 s of work), then with b at 1/1.6: its last 50 s take 80 → ends 130; b did 50 s of
    work by then and ends alone at 180 (completion 130 after its submit at 50)."""
    jobs = [job("a", interference_demand=NET), job("b", submit_s=50, interference_demand=NET)]
    end = by_job(_run(jobs, {}), "completion_s")
    assert end == {"a": pytest.approx(130.0), "b": pytest.approx(130.0)}


def test_alpha_and_pool_capacity_scale_the_factor() -> None:
    """alpha = 0.5 gives sqrt(1.6); a pool with network capacity 2 is not saturated by 1.6."""
    jobs = [job("a", interference_demand=NET), job("b", interference_demand=NET)]
    slow = by_job(_run(jobs, {"alpha": 0.5}), "interference_slowdown")
    assert slow["a"] == pytest.approx(1.6**0.5)
    roomy = _run(jobs, {"capacity": {"gpu": {"network": 2.0}}})
    assert by_job(roomy, "completion_s") == {"a": pytest.approx(100.0), "b": pytest.approx(100.0)}


def test_pods_contending_for_different_resources_do_not_slow_each_other() -> None:
    """Network-bound and disk-bound pods on one node: neither resource is over capacity."""
    jobs = [job("a", interference_demand=NET), job("b", interference_demand={"disk": 0.8})]
    assert by_job(_run(jobs, {}), "interference_slowdown") == {"a": 1.0, "b": 1.0}


def test_class_defaults_apply_to_jobs_that_declare_nothing() -> None:
    """class_demand gives training pods 0.7 of memory bandwidth; a job's own declaration overrides it."""
    jobs = [
        job("t1", **{"class": "training"}),
        job("t2", **{"class": "training"}),
        job("own", interference_demand={}),
    ]
    model = {"class_demand": {"training": {"memory_bandwidth": 0.7}}}
    slow = by_job(_run(jobs, model), "interference_slowdown")
    assert slow == {"t1": pytest.approx(1.4), "t2": pytest.approx(1.4), "own": 1.0}


def test_model_off_by_default_adds_no_columns() -> None:
    jobs = [job("a", interference_demand=NET), job("b", interference_demand=NET)]
    result = _run(jobs, None)
    assert "interference_slowdown" not in job_columns(result)
    assert by_job(result, "completion_s") == {"a": 100.0, "b": 100.0}


def test_most_allocated_packs_and_pays_in_slowdown_where_least_allocated_spreads() -> None:
    """Two 8-GPU nodes, two 1-GPU network-heavy pods: MostAllocated puts both on one node (1.6 × slower),
    LeastAllocated spreads them (no slowdown)."""
    jobs = [job("a", interference_demand=NET), job("b", submit_s=1, interference_demand=NET)]
    packed = by_job(_run(jobs, {}, "most-allocated", count=2), "interference_slowdown")
    spread = by_job(_run(jobs, {}, "least-allocated", count=2), "interference_slowdown")
    assert packed["b"] > 1.3 and spread == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("alpha: 0", "greater than 0"),
        ("class_demand: {training: {gpu_cache: 1}}", "unknown resource 'gpu_cache'"),
        ("class_demand: {training: {network: -1}}", "must be >= 0"),
        ("capacity: {nope: {network: 1}}", "unknown pool(s) nope"),
        ("capacity: {gpu: {network: 0}}", "must be > 0"),
    ],
)
def test_bad_sections_are_clear_errors(section: str, message: str, tmp_path: Path) -> None:
    text = (
        "cluster: {pools: [{name: gpu, count: 1, cpu: '8', memory: 64Gi, gpu_model: H100, gpus_per_node: 8,"
        " price_per_hour: 1}]}\n"
        "workload: {jobs: [{id: a, requests: {cpu: '1'}, runtime: 10}]}\n"
        f"interference: {{{section}}}\n"
    )
    file = tmp_path / "s.yaml"
    file.write_text(text)
    with pytest.raises(SpecError) as info:
        load_scenario(str(file))
    assert message in str(info.value)


def test_the_documented_example_trades_free_nodes_for_slowdown() -> None:
    """docs/interference.md's figures: packing keeps more whole nodes free and pays in interference."""
    from fleetlab.spec.loader import load

    resolved = load(str(Path(__file__).parents[1] / "examples" / "interference" / "pack-vs-spread.yaml"))
    spread = summarize(run_one(resolved, "least-allocated").result)
    packed = summarize(run_one(resolved, "most-allocated").result)
    assert packed.whole_free_gpu_nodes_mean == pytest.approx(3.39, abs=0.005)
    assert spread.whole_free_gpu_nodes_mean == pytest.approx(0.62, abs=0.005)
    assert packed.interference_extra_hours == pytest.approx(14.07, abs=0.005)
    assert spread.interference_extra_hours == 0.0
    assert packed.gpu_utilization_ratio < spread.gpu_utilization_ratio
    assert packed.gpu_allocation_ratio > spread.gpu_allocation_ratio
