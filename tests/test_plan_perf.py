"""GPU performance profiles and the runtime model: roofline scaling from a reference GPU, measured
overrides, the hierarchical ring all-reduce (2(s-1)/s x bytes / bandwidth per stage), and the catalog plan.

Expected values are worked by hand from the datasheet figures in gpus.md (H100 989 TFLOPS / 3.35 TB/s,
A100-80GB 312 / 2.039, NVLink 900 and 600 GB/s both directions = 450 and 300 GB/s per direction).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleetlab.cost.gpu_plan import PricedOffer, plan_job, priced_offers, scaling_options
from fleetlab.model.gpu_specs import faster_models, gpu_specs
from fleetlab.model.perf import Layout, allreduce_s, single_gpu_throughput, step_time, time_factor
from fleetlab.model.plan_job import PlanJob, WorkProfile
from fleetlab.spec.catalog import parse_catalog
from fleetlab.spec.errors import SpecError
from fleetlab.spec.plan_job import load_plan_job, plan_job_from_data

GPUS_MD = next((p for p in (Path("/work/shared/reference/gpus.md"),) if p.is_file()), None)
REQUIRED = ("V100", "T4", "L4", "A100-40GB", "A100-80GB", "H100", "H200", "B200")


def profile(**extra: object) -> WorkProfile:
    base: dict[str, object] = {
        "reference_gpu": "A100-80GB",
        "reference_throughput": 1000.0,
        "compute_fraction": 0.5,
        "memory_fraction": 0.3,
    }
    base.update(extra)
    return WorkProfile.model_validate(base)


def test_every_required_model_has_a_sourced_profile() -> None:
    specs = gpu_specs()
    for name in REQUIRED:
        s = specs[name]
        assert s.dense_tflops > 0 and s.memory_bandwidth_tbps > 0 and s.memory_gb > 0 and s.source
    assert specs["H100"].interconnect_gbps == specs["H100"].nvlink_gbps / 2


@pytest.mark.skipif(GPUS_MD is None, reason="/work/shared/reference/gpus.md not present")
def test_dense_tflops_and_bandwidth_match_the_reference_table() -> None:
    assert GPUS_MD is not None
    rows = {
        "V100": "V100 SXM2",
        "T4": "T4",
        "L4": "L4",
        "A100-40GB": "A100 40GB",
        "A100-80GB": "A100 80GB",
        "H100": "H100 SXM5",
        "H200": "H200",
        "B200": "B200",
    }
    lines = GPUS_MD.read_text(encoding="utf-8").splitlines()
    for name, lead in rows.items():
        line = next(ln for ln in lines if ln.startswith(f"| {lead} "))
        numbers = {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", line)}
        s = gpu_specs()[name]
        assert s.dense_tflops in numbers, name
        assert s.memory_bandwidth_tbps in numbers or s.memory_bandwidth_tbps * 1000 in numbers, name


def test_roofline_factor_hand_worked_a100_to_h100() -> None:
    # 0.5 * 312/989 + 0.3 * 2.039/3.35 + 0.2 = 0.157735 + 0.182597 + 0.2
    assert time_factor(profile(), "H100") == pytest.approx(0.540332, rel=1e-5)
    assert single_gpu_throughput(profile(), "H100") == pytest.approx(1000 / 0.540332, rel=1e-5)
    assert time_factor(profile(), "A100-80GB") == pytest.approx(1.0)
    # H200 only differs in bandwidth: 0.5 * 312/989 + 0.3 * 2.039/4.8 + 0.2
    assert time_factor(profile(), "H200") == pytest.approx(0.157735 + 0.127438 + 0.2, rel=1e-5)


def test_pure_memory_bound_work_scales_with_bandwidth_only() -> None:
    p = profile(compute_fraction=0.0, memory_fraction=1.0)
    assert single_gpu_throughput(p, "H100") / single_gpu_throughput(p, "A100-80GB") == pytest.approx(
        3.35 / 2.039
    )
    assert single_gpu_throughput(p, "A100-40GB") == pytest.approx(1000 * 1.555 / 2.039)


def test_measured_throughput_overrides_the_model() -> None:
    p = profile(measured_throughput={"H100": 2100.0})
    assert single_gpu_throughput(p, "H100") == 2100.0
    assert single_gpu_throughput(p, "H200") == pytest.approx(1000 / (0.157735 + 0.127438 + 0.2), rel=1e-5)


def test_ring_allreduce_one_node_is_the_flat_ring() -> None:
    # 2 * 7/8 * 10 GB / 450 GB/s
    assert allreduce_s(10e9, Layout("H100", 1, 8, 0.0)) == pytest.approx(1.75 * 10 / 450)
    assert allreduce_s(10e9, Layout("H100", 1, 1, 0.0)) == 0.0
    assert allreduce_s(0.0, Layout("H100", 2, 8, 100.0)) == 0.0


def test_one_8gpu_node_beats_two_4gpu_nodes() -> None:
    one = allreduce_s(10e9, Layout("H100", 1, 8, 3200.0))
    two = allreduce_s(10e9, Layout("H100", 2, 4, 3200.0))
    # 2 * 3/4 * 10/450 (NVLink) + 2 * 1/2 * 10/400 (3200 Gbit/s = 400 GB/s)
    assert two == pytest.approx(1.5 * 10 / 450 + 10 / 400)
    assert one == pytest.approx(1.75 * 10 / 450)
    assert two > one
    slow = allreduce_s(10e9, Layout("H100", 2, 4, 100.0))
    assert slow == pytest.approx(1.5 * 10 / 450 + 10 / 12.5)
    p = profile(gradient_bytes=10e9)
    assert (
        step_time(p, 8000, Layout("H100", 2, 4, 100.0)).step_s
        > step_time(p, 8000, Layout("H100", 1, 8, 0)).step_s
    )


def test_overlap_hides_communication_up_to_its_share_of_compute() -> None:
    # A100-80GB: 4000 samples / (4 GPUs x 1000/s) = 1.0 s compute; comm 2 * 3/4 * 60 GB / 300 GB/s = 0.3 s
    p = profile(gradient_bytes=60e9, overlap=0.2)
    st = step_time(p, 4000, Layout("A100-80GB", 1, 4, 0))
    assert st.compute_s == pytest.approx(1.0)
    assert st.comm_s == pytest.approx(0.3)
    assert st.step_s == pytest.approx(1.0 + 0.3 - 0.2)
    full = step_time(profile(gradient_bytes=60e9, overlap=1.0), 4000, Layout("A100-80GB", 1, 4, 0))
    assert full.step_s == pytest.approx(1.0)


def test_faster_models_order_by_tflops_then_bandwidth() -> None:
    assert faster_models("A100-80GB")[:3] == ["H100", "H200", "B200"]
    assert faster_models("A100-40GB")[0] == "A100-80GB"
    assert faster_models("B200") == []


def test_profile_validation_names_the_field() -> None:
    with pytest.raises(SpecError, match=r"profile: .*add up to at most 1"):
        plan_job_from_data(
            "job.yaml",
            {
                "profile": {**profile().model_dump(), "compute_fraction": 0.9},
                "training": {"steps": 1, "samples_per_step": 1},
            },
        )
    with pytest.raises(SpecError, match=r"profile.reference_gpu: unknown GPU model 'X100'"):
        plan_job_from_data(
            "job.yaml",
            {
                "profile": {**profile().model_dump(), "reference_gpu": "X100"},
                "training": {"steps": 1, "samples_per_step": 1},
            },
        )
    with pytest.raises(SpecError, match=r"training.steps: .*greater than 0"):
        plan_job_from_data(
            "job.yaml", {"profile": profile().model_dump(), "training": {"steps": -5, "samples_per_step": 1}}
        )


AWS = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch
p5.48xlarge,H100,8.0,192.0,2048.0,,55.04,20.0,us-east-1,use1-az1,x86_64
p5.48xlarge,H100,8.0,192.0,2048.0,,55.04,18.0,us-east-1,use1-az2,x86_64
p4de.24xlarge,A100-80GB,8.0,96.0,1152.0,,27.44705,,us-east-1,use1-az1,x86_64
"""


def test_plan_prices_every_offer_and_layout() -> None:
    offers = priced_offers([("aws", parse_catalog("t.csv", AWS))])
    assert {(o.instance_type, o.capacity_type, o.price_per_hour) for o in offers} == {
        ("p5.48xlarge", "on-demand", 55.04),
        ("p5.48xlarge", "spot", 18.0),
        ("p4de.24xlarge", "on-demand", 27.44705),
    }
    job = PlanJob.model_validate(
        {
            "profile": profile(gradient_bytes=1e9).model_dump(),
            "training": {"steps": 100, "samples_per_step": 16000, "gpus": 16},
        }
    )
    plan = plan_job(job, offers)
    by = {(r.offer.instance_type, r.offer.capacity_type): r for r in plan.rows}
    a100 = by[("p4de.24xlarge", "on-demand")]
    # 16000 / (16 x 1000) = 1.0 s compute; comm 2*7/8*1/300 + 2*1/2*1/50 (400 Gbit/s) s; 2 nodes
    step = 1.0 + 1.75 / 300 + 1 / 50
    assert a100.layout == "2x8" and a100.instances == 2
    assert a100.hours == pytest.approx(100 * step / 3600)
    assert a100.cost_usd == pytest.approx(2 * 27.44705 * 100 * step / 3600)
    assert a100.cost_per_million_samples == pytest.approx(a100.cost_usd / 1.6e6 * 1e6)
    assert plan.rows[0].offer.capacity_type == "spot"
    twelve = job.model_copy(update={"training": job.training.model_copy(update={"gpus": 12})})  # type: ignore[union-attr]
    assert plan_job(twelve, offers).rows == []
    options = scaling_options(job, [o for o in offers if o.capacity_type == "on-demand"], "A100-80GB")
    assert [o.label for o in options] == [
        "A100-80GB x 16",
        "A100-80GB x 32",
        "A100-80GB x 64",
        "H100 x 16 (next model up)",
    ]
    assert options[1].row is not None and options[1].row.hours < a100.hours


def test_inference_replicas_latency_and_memory_fit() -> None:
    offer = PricedOffer("aws", "p5.48xlarge", "us-east-1", "on-demand", "H100", 8, 55.04, 3200)
    job = PlanJob.model_validate(
        {
            "kind": "inference",
            "profile": profile(measured_throughput={"H100": 2000.0}, memory_gb_per_gpu=70).model_dump(),
            "inference": {"target_throughput": 30000, "hours": 10, "latency_ms": 50, "max_latency_ms": 30},
        }
    )
    row = plan_job(job, [offer]).rows[0]
    # 30000 / 2000 = 15 replicas of 1 GPU -> 2 instances of 8; latency 50 x 1000/2000 = 25 ms
    assert (row.gpus_used, row.instances) == (15, 2)
    assert row.latency_ms == pytest.approx(25.0)
    assert row.cost_usd == pytest.approx(2 * 55.04 * 10)
    assert row.cost_per_million_samples == pytest.approx(2 * 55.04 * 10 / (30000 * 36000) * 1e6)
    a100 = PricedOffer("aws", "p4de.24xlarge", "us-east-1", "on-demand", "A100-80GB", 8, 27.0, 400)
    assert plan_job(job, [a100]).rows == []  # 50 ms > 30 ms
    a40 = PricedOffer("aws", "p4d.24xlarge", "us-east-1", "on-demand", "A100-40GB", 8, 22.0, 400)
    assert "70 GB per GPU needed, 40 GB available" in plan_job(job, [a40]).excluded[0]


def test_example_job_files_load() -> None:
    root = Path(__file__).resolve().parents[1] / "examples" / "plan"
    for file in (root / "llm-finetune.yaml", root / "chat-serving.yaml"):
        assert load_plan_job(file).profile.reference_gpu in gpu_specs()
