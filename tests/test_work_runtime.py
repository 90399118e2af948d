"""Jobs that declare a work profile get their runtime from model.perf on the GPU model and layout their
pods landed on: the same 2 x 4-GPU gang on one 8-GPU node (NVLink ring only) and on two 4-GPU nodes (plus
a ring across the nodes' network) runs for different times, each the perf model's figure."""

from __future__ import annotations

import random
from typing import Any

import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.model.perf import Layout, training_seconds
from fleetlab.model.plan_job import WorkProfile
from fleetlab.sim.events import to_ms
from fleetlab.sim.runtime_model import WorkRuntimes

WORK: dict[str, Any] = {
    "profile": {
        "reference_gpu": "A100-80GB",
        "reference_throughput": 400.0,
        "compute_fraction": 0.7,
        "memory_fraction": 0.2,
        "gradient_bytes": 2.0e9,
    },
    "steps": 500,
    "samples_per_step": 1024,
}


def _gang(**extra: Any) -> dict[str, Any]:
    return job("train", gpus=4, runtime=99_999, pods=2, gang=True, work=WORK, **extra)


def _runtime_s(pools: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> float:
    result = run_one(scenario(pools, jobs, scheduler={"gang_scheduling": True})).result
    assert result.jobs.completed.all()
    return float(result.jobs.end_ms[0] - result.jobs.running_ms[0]) / 1000.0


def test_one_node_vs_two_nodes_follow_the_ring_allreduce_model() -> None:
    profile = WorkProfile.model_validate(WORK["profile"])
    one = _runtime_s([pool("big", count=1, gpus=8)], [_gang()])
    two = _runtime_s([pool("small", count=2, gpus=4)], [_gang()])
    expected_one = training_seconds(profile, 500, 1024, Layout("H100", 1, 8, 100.0))
    expected_two = training_seconds(profile, 500, 1024, Layout("H100", 2, 4, 100.0))
    assert one == pytest.approx(to_ms(expected_one) / 1000.0, abs=1e-3)
    assert two == pytest.approx(to_ms(expected_two) / 1000.0, abs=1e-3)
    assert two > one  # 2 GB over 100 Gbit/s each step outweighs the NVLink ring


def test_pool_instance_network_and_job_override() -> None:
    """p5.48xlarge nodes are linked at 3200 Gbit/s (instance_network.json); a job may set its own."""
    profile = WorkProfile.model_validate(WORK["profile"])
    p5 = pool("p5", count=2, gpus=4, instance_type="p5.48xlarge")
    fast = _runtime_s([p5], [_gang()])
    assert fast == pytest.approx(
        to_ms(training_seconds(profile, 500, 1024, Layout("H100", 2, 4, 3200.0))) / 1000
    )
    slow_work = {**WORK, "network_gbps": 10.0}
    slow = _runtime_s([p5], [job("train", gpus=4, runtime=99_999, pods=2, gang=True, work=slow_work)])
    assert slow == pytest.approx(
        to_ms(training_seconds(profile, 500, 1024, Layout("H100", 2, 4, 10.0))) / 1000
    )


def test_models_without_a_profile_and_jobs_without_work_keep_their_runtime() -> None:
    unprofiled = pool("x", count=1, gpus=8, gpu_model="L40S")  # a cluster model without a perf profile
    plain = job("plain", gpus=8, runtime=321)
    assert _runtime_s([pool("big", count=1, gpus=8)], [plain]) == 321.0
    assert _runtime_s([unprofiled], [_gang()]) == 99_999.0


def test_single_pod_job_and_measured_table() -> None:
    work = {**WORK, "profile": {**WORK["profile"], "measured_table": {"H100": {128: 2000.0}}}}
    runtime = _runtime_s([pool("big", count=1, gpus=8)], [job("one", gpus=8, runtime=1, work=work)])
    # 1024 samples on 8 GPUs = 128 per GPU at the measured 2000 samples/s, plus the in-node ring
    profile = WorkProfile.model_validate(work["profile"])
    expected = training_seconds(profile, 500, 1024, Layout("H100", 1, 8, 100.0))
    assert runtime == pytest.approx(to_ms(expected) / 1000.0, abs=1e-3)
    assert expected > 500 * 1024 / (8 * 2000.0)


def test_work_needs_whole_gpus() -> None:
    from fleetlab.spec.errors import SpecError

    with pytest.raises((SpecError, ValueError), match="work profile needs whole GPUs"):
        scenario([pool("big")], [job("cpu", gpus=0, work=WORK)])


def test_scenario_job_reads_a_recorded_profile_file(tmp_path: Any) -> None:
    """A job's work.measured_file (relative to the scenario) feeds the runtime model: on one 8-GPU node
    with no gradients the runtime is steps x per-GPU batch / measured samples/s."""
    import json

    import yaml

    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.loader import load

    recorded = {
        "format": "fleetlab-measured-profile/v1", "gpu_model": None, "device": "cpu",
        "measurements": [{"batch_size": 128, "warmup_steps": 1, "steps": 3, "step_s_mean": 0.5,
                          "step_s_median": 0.5, "step_s_min": 0.5, "step_s_max": 0.5, "samples_per_s": 256.0}],
    }  # fmt: skip
    (tmp_path / "cpu.json").write_text(json.dumps(recorded))
    work = {**WORK, "profile": {**WORK["profile"], "gradient_bytes": 0}, "measured_file": "cpu.json"}
    data = {
        "cluster": {"pools": [pool("big", count=1, gpus=8)]},
        "workload": {"jobs": [job("one", gpus=8, runtime=1, work=work)]},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="set measured_gpu next to measured_file"):
        load(str(tmp_path / "s.yaml"))
    data["workload"]["jobs"][0]["work"]["measured_gpu"] = "H100"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    result = run_one(load(str(tmp_path / "s.yaml"))).result
    runtime = (result.jobs.end_ms[0] - result.jobs.running_ms[0]) / 1000.0
    assert runtime == pytest.approx(500 * 128 / 256.0)


def test_a_gangs_longest_runtime_asks_each_gpu_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``longest_on_ms`` is ``max(runtime_ms(job, n) for n in nodes)``: checked on every gang start of a run
    whose gangs span an H100 pool (a 300 s override), an A100 pool (the 500 s default), and a pool of
    another model (a 200 s override), and on random node lists of the same run; the run itself starts
    each 3-pod gang on two models at once (2 + 1 GPUs free), so its runtime is the longer one's."""
    longest = WorkRuntimes.longest_on_ms
    asked: list[int] = []
    rnd = random.Random(7)

    def checked(work: WorkRuntimes, job_index: int, nodes: Any) -> int:
        value = longest(work, job_index, nodes)
        assert value == max(work.runtime_ms(job_index, n) for n in nodes)
        everyone = range(len(work.sim.state.gpu_model))
        for _ in range(20):
            picked = [rnd.choice(everyone) for _ in range(rnd.randint(1, 6))]
            assert longest(work, job_index, picked) == max(work.runtime_ms(job_index, n) for n in picked)
        asked.append(value)
        return value

    monkeypatch.setattr(WorkRuntimes, "longest_on_ms", checked)
    runtime = {"default": 500, "by_gpu": {"H100": 300, "L4": 200}}
    pools = [
        pool("h100", count=1, gpus=2),
        pool("a100", count=1, gpus=1, gpu_model="A100-80GB"),
        pool("l4", count=1, gpus=1, gpu_model="L4"),
    ]
    jobs = [job(f"g{k}", gpus=1, runtime=runtime, pods=3, gang=True, submit_s=k) for k in range(3)]
    result = run_one(scenario(pools, jobs, scheduler={"gang_scheduling": True})).result
    assert result.jobs.completed.all() and len(asked) == 3
    assert all(v in (300_000, 500_000) for v in asked) and 500_000 in asked
