"""GPU sharing reaches a service in a whole run (sim/replica_speed.py, sim/services.py), worked by hand.

Every world: one replica of service ``chat`` serving μ = 10 requests/s alone (one server, exponential
service), offered λ = 5 requests/s, on a one-GPU H100 node, evaluated every 60 s for 4 h. The first sample
(t = 0) is taken before the replica is placed: no server, saturated, a miss (as for every service).

* time-slicing, α = 1 (the issue's case, ``examples/services/shared-gpu.yaml``): a batch pod with 1 h of
  work shares the GPU from 0; two pods each run at 1/(1 + 1·1) = 1/2, so the batch pod ends at 2 h and the
  replica serves 10/2 = 5 = λ until then: saturated. Alone afterwards: M/M/1, p99 = ln(100)/(10 − 5) s =
  921.03 ms ≤ 1000 ms. SLO attainment (14400 − 7200)/14400 = 50 %.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from builders import job, pool, scenario
from fleetlab.cli import app
from fleetlab.experiment.run import profile_for
from fleetlab.metrics.services import service_rows
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "services" / "shared-gpu.yaml"
HOUR = 3600.0
LN100 = math.log(100)
P99_ALONE_MS = 1000.0 * LN100 / (10 - 5)  # 921.034 ms


def _run(pools: list[dict[str, Any]], jobs: list[dict[str, Any]], **svc: Any) -> SimulationResult:
    service: dict[str, Any] = {
        "name": "chat",
        "replicas": {"min": 1},
        "cpu_per_replica": "4",
        "memory_per_replica": "16Gi",
        "performance": {"H100": {"throughput_rps": 10}},
        "slo": {"p99_ms": 1000},
        "rate": {"kind": "constant", "rps": 5},
    }
    service.update(svc)
    resolved = scenario(pools, jobs, horizon_s=4 * HOUR, services=[service])
    return Simulator(resolved, profile_for(resolved, None)).run()


def _h100(**extra: Any) -> dict[str, Any]:
    return pool("h100", gpus=1, **extra)


def test_the_issue_case_through_fleetlab_simulate(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", str(EXAMPLE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    (chat,) = json.loads((out / "summary.json").read_text())["services"]
    assert chat["slo_attainment_pct"] == pytest.approx(50.0)
    assert chat["saturated_pct"] == pytest.approx(50.0)
    # only the unshared half has a finite p99: its mean is the M/M/1 figure, with no spread
    assert chat["p99_ms_mean"] == pytest.approx(P99_ALONE_MS, rel=1e-9)
    assert chat["p99_ms_std"] == pytest.approx(0.0, abs=1e-9)
    # speed 1/2 from 60 s to 2 h, 1 from 2 h to 4 h (no replica serves in the first minute)
    assert chat["replica_speed_mean"] == pytest.approx((7140 * 0.5 + 7200 * 1.0) / 14340)
    # late: every request of the saturated first 2 h, and P(T > 1 s) = e^{-(10-5)·1} of the rest
    assert chat["late_requests"] == pytest.approx(5 * 7200 + 5 * 7200 * math.exp(-5.0))
    services = pq.read_table(out / "services.parquet").to_pydict()
    at = {t: k for k, t in enumerate(services["time_s"])}
    assert services["replica_speed"][at[60.0]] == 0.5 and services["replica_speed"][at[7200.0]] == 1.0
    assert math.isinf(services["p99_ms"][at[7140.0]])
    assert services["p99_ms"][at[7200.0]] == pytest.approx(P99_ALONE_MS, rel=1e-9)
    jobs = pq.read_table(out / "jobs.parquet").to_pydict()
    batch = jobs["job_id"].index("batch")
    assert jobs["completion_s"][batch] == 7200.0 and jobs["time_slicing_slowdown"][batch] == 2.0


def test_a_milder_slowdown_misses_without_saturating_and_spreads_p99() -> None:
    """α = 0.5: both pods run at 1/1.5, the batch pod's 1 h of work takes 1.5 h (ends at 5400 s) and the
    replica serves 10/1.5 = 6.667 requests/s meanwhile: p99 = ln(100)/(6.667 − 5) s = 2763.1 ms, a miss
    but finite. Met from 5400 s: attainment 9000/14400 = 62.5 %; saturated only the first 60 s; p99 spread
    over 5340 s at 2763.1 ms and 9000 s at 921.0 ms."""
    result = _run(
        [_h100(time_slicing={"replicas": 4, "slowdown_per_extra_pod": 0.5})], [job("batch", runtime=HOUR)]
    )
    (row,) = service_rows(result)
    shared_ms = 1000.0 * LN100 / (10 / 1.5 - 5)
    assert row.slo_attainment_pct == pytest.approx(62.5)
    assert row.saturated_pct == pytest.approx(100 * 60 / 14400)
    weights = (5340.0, 9000.0)
    mean = (weights[0] * shared_ms + weights[1] * P99_ALONE_MS) / sum(weights)
    std = math.sqrt(
        (weights[0] * (shared_ms - mean) ** 2 + weights[1] * (P99_ALONE_MS - mean) ** 2) / sum(weights)
    )
    assert row.p99_ms_mean == pytest.approx(mean, rel=1e-9)
    assert row.p99_ms_std == pytest.approx(std, rel=1e-9)


def test_mps_confines_the_replica_to_its_share_whoever_else_runs() -> None:
    """``mps: {replicas: 2}``: each client computes at 1/2 of the GPU all the time. Offered 4 requests/s the
    replica (10/2 = 5 requests/s) has p99 = ln(100)/(5 − 4) s = 4605.2 ms, the same while the batch pod runs
    (its 1 h of work at 1/2 takes 2 h) and after it ends: target 5 s met after the first minute,
    attainment 14340/14400, no spread. The batch pod is slowed by MPS too (slowdown 2 alone or not)."""
    result = _run(
        [_h100(mps={"replicas": 2})],
        [job("batch", runtime=HOUR)],
        rate={"kind": "constant", "rps": 4},
        slo={"p99_ms": 5000},
    )
    (row,) = service_rows(result)
    assert row.slo_attainment_pct == pytest.approx(100 * 14340 / 14400)
    assert row.p99_ms_mean == pytest.approx(1000.0 * LN100 / (5 - 4), rel=1e-9)
    assert row.p99_ms_std == pytest.approx(0.0, abs=1e-9)
    assert row.replica_speed_mean == pytest.approx(0.5)
    batch = result.jobs.ids.index("batch")
    assert int(result.jobs.end_ms[batch]) == 2 * 3_600_000


def test_a_mig_instance_serves_its_slices_and_ignores_the_neighbour() -> None:
    """One H100 split 4g.40gb + 3g.40gb (mixed strategy). The replica takes the 4g instance: 4 of 7 compute
    slices, μ = 40/7 = 5.714 requests/s, p99 = ln(100)/(40/7 − 5) s = 6447.2 ms against a 10 s target; the
    batch pod on the 3g instance (0 → 1 h) changes nothing: attainment 14340/14400, no spread."""
    mig = {"strategy": "mixed", "layout": ["4g.40gb", "3g.40gb"]}
    batch = job("batch", gpus=0, runtime=HOUR)
    batch["requests"]["nvidia.com/mig-3g.40gb"] = 1
    result = _run([_h100(mig=mig)], [batch], mig_profile="4g.40gb", slo={"p99_ms": 10_000})
    (row,) = service_rows(result)
    assert row.p99_ms_mean == pytest.approx(1000.0 * LN100 / (40 / 7 - 5), rel=1e-9)
    assert row.p99_ms_std == pytest.approx(0.0, abs=1e-9)
    assert row.slo_attainment_pct == pytest.approx(100 * 14340 / 14400)
    assert row.replica_speed_mean == pytest.approx(4 / 7)


def test_a_fraction_shares_compute_with_the_other_share() -> None:
    """The replica holds gpu_milli 500 of a plain H100, a batch pod the other 500 for 1 h (shares are not
    slowed in fleetlab, so it ends at 1 h). While both compute the replica gets 1/2: 5 = λ, saturated;
    from 1 h it is alone: met. Attainment (14400 − 3600)/14400 = 75 %."""
    result = _run([_h100()], [job("batch", gpus=0, runtime=HOUR, gpu_milli=500)], gpu_milli=500)
    (row,) = service_rows(result)
    assert row.slo_attainment_pct == pytest.approx(75.0)
    assert row.saturated_pct == pytest.approx(25.0)
    assert row.replica_speed_mean == pytest.approx((3540 * 0.5 + 10800 * 1.0) / 14340)


def test_services_on_unshared_gpus_record_no_speeds() -> None:
    """Whole GPUs of their own: no replica speeds, and summary.json's service rows keep their keys."""
    result = _run([pool("h100", gpus=2)], [job("batch", runtime=HOUR)])
    assert result.services is not None and result.services.services[0].speed is None
    (row,) = service_rows(result)
    assert "saturated_pct" not in row.as_dict() and row.slo_attainment_pct == pytest.approx(
        100 * 14340 / 14400
    )


def test_sharing_fields_are_checked() -> None:
    """MPS is a pool's only sharing strategy and not with MIG (the device plugin uses one); a replica takes
    a share or MIG instances, not both, and a share is of one GPU."""
    from pydantic import ValidationError

    from fleetlab.model.cluster import NodePool
    from fleetlab.model.service import Service

    with pytest.raises(ValidationError, match="give time_slicing or mps, not both"):
        NodePool.model_validate(_h100(mps={"replicas": 2}, time_slicing={"replicas": 2}))
    with pytest.raises(ValidationError, match="mps needs gpu_model"):
        NodePool.model_validate(_h100(mps={"replicas": 2}, mig={"layout": ["7g.80gb"]}))
    with pytest.raises(ValidationError, match="greater than or equal to 2"):
        NodePool.model_validate(_h100(mps={"replicas": 1}))
    labels = NodePool.model_validate(_h100(mps={"replicas": 3})).node_labels(0)
    assert labels["nvidia.com/gpu.sharing-strategy"] == "mps" and labels["nvidia.com/gpu.replicas"] == "3"
    assert NodePool.model_validate(_h100(mps={"replicas": 3})).device_resources()["nvidia.com/gpu"] == 3
    base = {"name": "s", "performance": {"default": {"throughput_rps": 1}}, "slo": {"p99_ms": 1}}
    base["rate"] = {"kind": "constant", "rps": 1}
    with pytest.raises(ValidationError, match="not both"):
        Service.model_validate({**base, "gpu_milli": 500, "mig_profile": "1g.10gb"})
    with pytest.raises(ValidationError, match="share of one GPU"):
        Service.model_validate({**base, "gpu_milli": 500, "gpus_per_replica": 2})
