"""Buy vs rent: the owned server's yearly cost lines, the break-even utilisation, demand percentiles and the
hybrid plan; the CLI reads a real `fleetlab simulate --out` folder.

The worked example is the pricing notes' §5.2 (8x H100 node, capex $341k, 8 kW, PUE 1.56, $0.0806/kWh,
$184.06/kW-month on 10.2 kW, $20k staff): $136,591 a year on a 4-year life; break-even 28 % at $6.88/GPU-h
(AWS p5 on-demand), 49 % at $3.99, 81 % at $2.40, 18 % at $10.98.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cost.tco import (
    DemandCurve,
    break_even_utilisation,
    cloud_gpu_hour_price,
    default_server,
    hybrid_option,
)
from fleetlab.cost.tco_defaults import default_rates
from fleetlab.spec.catalog import builtin_catalog

runner = CliRunner()

SMALL = """\
name: small
seed: 3
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 8, cpu: "64", memory: 512Gi, price_per_hour: 55.04}
workload:
  generator:
    classes:
      - name: exp
        class: experiment
        arrivals_per_hour: 30
        count: 20
        gpus_per_pod: {values: [1, 2, 4], weights: [3, 2, 1]}
        cpu_per_gpu: "4"
        memory_per_gpu: 32Gi
        duration: {kind: lognormal, median: 30m, sigma: 0.5}
"""


def test_every_default_rate_has_a_source() -> None:
    for name, entry in default_rates().items():
        assert set(entry) == {"value", "source"} and len(entry["source"]) > 10, name


def test_worked_example_yearly_lines() -> None:
    server = default_server()
    assert server.capex == pytest.approx(341_000)
    yearly = server.yearly()
    assert yearly["depreciation"] == pytest.approx(85_250)
    assert yearly["power"] == pytest.approx(8_812, abs=1)
    assert yearly["colocation"] == pytest.approx(22_529, abs=1)
    assert yearly["total"] == pytest.approx(136_591, abs=1)
    assert default_server(life_years=3).yearly()["total"] == pytest.approx(165_007, abs=1)
    assert default_server(life_years=5).yearly()["total"] == pytest.approx(119_541, abs=1)


@pytest.mark.parametrize(("price", "expected"), [(6.88, 0.28), (3.99, 0.49), (2.40, 0.81), (10.98, 0.18)])
def test_break_even_utilisation_reference_values(price: float, expected: float) -> None:
    assert round(break_even_utilisation(default_server(), price), 2) == expected


def test_downtime_and_maintenance_raise_the_break_even() -> None:
    base = break_even_utilisation(default_server(), 6.88)
    assert break_even_utilisation(default_server(downtime_pct=10), 6.88) == pytest.approx(base / 0.9)
    with_support = default_server(maintenance_pct=20)
    assert with_support.yearly()["total"] == pytest.approx(136_591 + 0.2 * 341_000, abs=1)
    # at the break-even utilisation owned and rented cost the same per used GPU-hour
    assert default_server().cost_per_used_gpu_hour(base) == pytest.approx(6.88)


def test_default_cloud_price_is_the_catalog_p5() -> None:
    assert cloud_gpu_hour_price(
        builtin_catalog("aws"), "p5.48xlarge", "us-east-1", "on-demand"
    ) == pytest.approx(6.88)
    with pytest.raises(ValueError, match="not in"):
        cloud_gpu_hour_price(builtin_catalog("aws"), "p9.huge", "us-east-1", "on-demand")
    with pytest.raises(ValueError, match="no offer in region 'mars-1'"):
        cloud_gpu_hour_price(builtin_catalog("aws"), "p5.48xlarge", "mars-1", "on-demand")


def curve() -> DemandCurve:
    # 0 GPUs for 1 h, 8 for 2 h, 16 for 1 h
    return DemandCurve(np.array([0.0, 3600, 10800]), np.array([0.0, 8, 16]), 14400.0)


def test_time_weighted_percentiles_and_split() -> None:
    c = curve()
    assert c.percentile(0) == 0 and c.percentile(25) == 0
    assert c.percentile(50) == 8 and c.percentile(75) == 8
    assert c.percentile(90) == 16 and c.percentile(100) == 16
    assert c.gpu_hours(8) == pytest.approx((16 + 8, 8))
    assert c.gpu_hours() == pytest.approx((32, 0))


def test_hybrid_owns_whole_servers_and_rents_the_peak() -> None:
    server = default_server()
    option = hybrid_option(curve(), 50, server, 6.88, 0.09, 2.0)
    scale = 8760 / 4  # the 4-hour curve repeated all year
    assert option.servers == 1
    assert option.owned_usd == pytest.approx(server.yearly()["total"])
    assert option.rented_gpu_hours == pytest.approx(8 * scale)
    assert option.rented_usd == pytest.approx(8 * scale * 6.88)
    assert option.transfer_usd == pytest.approx(8 * scale * 2 * 0.09)
    assert hybrid_option(curve(), 100, server, 6.88, 0.09, 2.0).servers == 2
    assert hybrid_option(curve(), 0, server, 6.88, 0.09, 2.0).owned_usd == 0


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run")
    (root / "small.yaml").write_text(SMALL)
    result = runner.invoke(cli.app, ["simulate", str(root / "small.yaml"), "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    return root / "out"


def test_cli_reads_the_run_utilisation_and_demand(run_dir: Path) -> None:
    result = runner.invoke(cli.app, ["plan", "buy-vs-rent", "--from-run", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    assert data["utilisation"] == pytest.approx(summary["gpu_allocation_ratio"])
    assert data["break_even_utilisation"] == pytest.approx(136_591 / (70_080 * 6.88), rel=1e-4)
    assert [h["percentile"] for h in data["hybrid"]] == [0, 25, 50, 75, 90, 100]
    assert data["hybrid"][-1]["rented_gpu_hours_per_year"] == 0
    table = runner.invoke(cli.app, ["plan", "buy-vs-rent", "--from-run", str(run_dir), "--percentile", "60"])
    assert (
        table.exit_code == 0 and "break-even utilisation: 28.3%" in table.stdout and "p60 *" in table.stdout
    )


def test_cli_bad_input_exit_2(tmp_path: Path) -> None:
    cases = [
        (["--from-run", str(tmp_path / "nope")], "not a folder"),
        (["--from-run", str(tmp_path)], "no summary.json"),
        (["--utilisation", "0.5", "--instance", "p9.huge"], "is not in"),
        (["--utilisation", "0.5", "--capacity", "reserved"], "allowed: on-demand, spot"),
        ([], "give --from-run DIR"),
    ]
    for args, message in cases:
        result = runner.invoke(cli.app, ["plan", "buy-vs-rent", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
    negative = runner.invoke(cli.app, ["plan", "buy-vs-rent", "--utilisation", "0.5", "--pue", "0.5"])
    assert negative.exit_code == 2
    (tmp_path / "summary.json").write_text('{"runs": []}')
    many = runner.invoke(cli.app, ["plan", "buy-vs-rent", "--from-run", str(tmp_path)])
    assert many.exit_code == 2 and "several runs" in many.output


def test_waiting_instead_of_renting_is_a_fluid_queue() -> None:
    """Own 8 GPUs against curve(): the 8 GPU-hours above them in the last hour queue and are served in the
    first (idle) hour of the next period, each unit exactly 1 h later: backlog area 4 (rising triangle,
    8 GPU-h × 1 h / 2) + 4 (draining triangle) = 8 GPU-h·h; mean delay = 8 / 8 GPU-h = 1 h."""
    c = curve()
    assert c.backlog_gpu_hour_hours(8) == pytest.approx(8.0)
    option = hybrid_option(c, 50, default_server(), 6.88, 0.09, 2.0)
    assert option.mean_wait_h == pytest.approx(1.0)
    assert option.as_dict()["mean_wait_hours_without_renting"] == pytest.approx(1.0)
    # Mean demand (32 GPU-h over 4 h = 8 GPUs) above 7 owned GPUs: the backlog grows every period.
    assert c.backlog_gpu_hour_hours(7) == float("inf")
    assert c.backlog_gpu_hour_hours(16) == 0.0
