"""A latency target below what any replica count can reach is named, with the best reachable figure,
by validate and by the run (it used to read 0 % SLO attainment with no word why)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from builders import job, pool, scenario, service
from fleetlab.cli import app
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.services.slo_reach import best_percentile_ms


def test_best_reachable_percentiles_by_hand() -> None:
    """200 ms mean service (rate 5/s): exponential p99 = ln(100) / 5 s = 921.03 ms, p50 = ln 2 / 5 s =
    138.63 ms; deterministic: 200 ms at every percentile."""
    assert best_percentile_ms(0.99, 5.0, "exponential") == pytest.approx(1000 * math.log(100) / 5)
    assert best_percentile_ms(0.5, 5.0, "exponential") == pytest.approx(1000 * math.log(2) / 5)
    assert best_percentile_ms(0.99, 5.0, "deterministic") == pytest.approx(200.0)


def _chat(p99_ms: float) -> dict[str, object]:
    """20 rps per replica at 200 ms: 4 servers of 5/s each; up to 8 replicas against 10 rps."""
    return service(slo={"p99_ms": p99_ms}, replicas={"min": 8}, rate={"kind": "constant", "rps": 10})


def test_an_unreachable_p99_is_named_by_the_run() -> None:
    """p99 target 500 ms < 921 ms: unreachable at any replica count, attainment 0 %, and the run says why."""
    resolved = scenario([pool(count=1)], [job("j", runtime=60)], services=[_chat(500)], horizon_s=3600)
    result = run_one(resolved, "default").result
    assert summarize(result).service_slo_attainment_pct == 0.0
    [warning] = [w for w in result.warnings if "unreachable" in w]
    assert warning.startswith("service chat: slo.p99_ms 500 ms is unreachable on H100")
    assert "best reachable p99 is 921 ms" in warning


def test_a_reachable_target_is_not_flagged() -> None:
    resolved = scenario([pool(count=1)], [job("j", runtime=60)], services=[_chat(2000)], horizon_s=3600)
    assert not [w for w in run_one(resolved, "default").result.warnings if "unreachable" in w]


def test_validate_says_it(tmp_path: Path) -> None:
    data = {
        "horizon_s": 3600,
        "cluster": {"pools": [pool(count=1)]},
        "workload": {"jobs": [job("j", runtime=60)]},
        "services": [_chat(500)],
    }
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(data))
    out = CliRunner().invoke(app, ["validate", str(file)])
    assert out.exit_code == 0 and "slo.p99_ms 500 ms is unreachable on H100" in out.stderr
