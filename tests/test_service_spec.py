"""Service declarations in scenario files, request-rate curves and rate traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from fleetlab.model.service import ConstantRate, DiurnalRate, ReplicaPerformance, TraceRate
from fleetlab.services.rates import rate_at
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load_scenario
from fleetlab.spec.service_trace import parse_rate_trace

BASE = {
    "name": "svc",
    "horizon_s": "2h",
    "cluster": {
        "pools": [
            {
                "name": "gpu",
                "count": 2,
                "gpu_model": "H100",
                "gpus_per_node": 8,
                "cpu": "96",
                "memory": "1000Gi",
            }
        ]
    },
    "workload": {"jobs": []},
}


def _service(**over: object) -> dict[str, object]:
    svc: dict[str, object] = {
        "name": "chat",
        "replicas": {"min": 2, "max": 6},
        "performance": {"H100": {"throughput_rps": 20, "service_time_ms": 200}},
        "slo": {"p99_ms": 800},
        "rate": {"kind": "constant", "rps": 30},
    }
    svc.update(over)
    return svc


def _write(tmp_path: Path, data: dict[str, object]) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def test_a_service_is_read_with_its_rate_and_slo(tmp_path: Path) -> None:
    scenario, _, _ = load_scenario(_write(tmp_path, {**BASE, "services": [_service()]}))
    (svc,) = scenario.services
    assert svc.replicas.min == 2 and svc.replicas.upper == 6
    assert svc.perf_on("H100") == ReplicaPerformance(throughput_rps=20, service_time_ms=200)
    assert svc.perf_on("A100-80GB") is None
    assert isinstance(svc.rate, ConstantRate)


def test_services_need_a_horizon(tmp_path: Path) -> None:
    data = {**BASE, "services": [_service()]}
    del data["horizon_s"]
    with pytest.raises(SpecError, match="set horizon_s"):
        load_scenario(_write(tmp_path, data))


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"replicas": {"min": 4, "max": 2}}, "must be >= replicas.min"),
        ({"performance": {"B300X": {"throughput_rps": 1}}}, "unknown GPU model"),
        ({"slo": {}}, "p50_ms and/or p99_ms"),
        ({"rate": {"kind": "diurnal", "mean_rps": 5, "amplitude": 1.5}}, "amplitude"),
        ({"rate": {"kind": "poisson", "rps": 5}}, "rate"),
        ({"gpu_model": "A100-80GB"}, "no entry for gpu_model"),
    ],
)
def test_bad_service_fields_are_named(tmp_path: Path, over: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_scenario(_write(tmp_path, {**BASE, "services": [_service(**over)]}))


def test_replica_concurrency_is_throughput_times_service_time() -> None:
    perf = ReplicaPerformance(throughput_rps=20, service_time_ms=200)
    assert perf.servers() == 4
    assert perf.server_rate() == pytest.approx(5.0)
    assert ReplicaPerformance(throughput_rps=7).servers() == 1


def test_diurnal_rate_peaks_at_its_hour_and_averages_its_mean() -> None:
    curve = DiurnalRate(kind="diurnal", mean_rps=100, amplitude=0.4, peak_hour=15)
    t = np.arange(0, 86400, 60.0)
    rps = rate_at(curve, t)
    assert rps.mean() == pytest.approx(100.0)
    assert t[int(np.argmax(rps))] == 15 * 3600
    assert rps.max() == pytest.approx(140.0) and rps.min() == pytest.approx(60.0)


def test_trace_rate_holds_each_row_until_the_next() -> None:
    curve = TraceRate(kind="trace", path="x.csv", times_s=(0.0, 600.0, 1200.0), rps=(5.0, 50.0, 10.0))
    assert rate_at(curve, [0, 599, 600, 1199, 1e6]).tolist() == [5.0, 5.0, 50.0, 50.0, 10.0]
    late = TraceRate(kind="trace", path="x.csv", times_s=(100.0,), rps=(3.0,))
    assert rate_at(late, [0, 100]).tolist() == [0.0, 3.0]


def test_trace_file_is_read_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "rate.csv").write_text("time,rps\n0,10\n30m,40\n", encoding="utf-8")
    rate = {"kind": "trace", "path": "rate.csv"}
    scenario, _, _ = load_scenario(_write(tmp_path, {**BASE, "services": [_service(rate=rate)]}))
    curve = scenario.services[0].rate
    assert isinstance(curve, TraceRate)
    assert curve.times_s == (0.0, 1800.0) and curve.rps == (10.0, 40.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("t,rps\n0,1\n", "header must be 'time,rps'"),
        ("time,rps\n0,abc\n", "line 2, column rps: 'abc' is not a number"),
        ("time,rps\n0,-1\n", "line 2, column rps: '-1' must be a finite number >= 0"),
        ("time,rps\n10,1\n5,2\n", "line 3, column time: 5 s is not after"),
        ("time,rps\nsoon,1\n", "line 2, column time"),
        ("time,rps\n0,1,2\n", "line 2: 3 column"),
        ("time,rps\n", "no rows"),
    ],
)
def test_bad_trace_rows_are_named(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_rate_trace("rate.csv", text)


def test_missing_trace_file_is_a_spec_error(tmp_path: Path) -> None:
    rate = {"kind": "trace", "path": "nope.csv"}
    with pytest.raises(SpecError, match="request-rate trace file not found"):
        load_scenario(_write(tmp_path, {**BASE, "services": [_service(rate=rate)]}))
