"""The shipped service examples load, and compare prints the service table and writes services.parquet."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.spec.loader import load

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "services"


def test_service_examples_declare_the_shared_service() -> None:
    for name in ("services.yaml", "services-failures.yaml"):
        resolved = load(str(EXAMPLES / name))
        [service] = resolved.scenario.services
        assert service.gpu_model == "A100-80GB" and service.autoscaling is not None
        assert resolved.scenario.horizon_s == 36000


def test_compare_prints_the_service_table_and_writes_the_series(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [
        "compare",
        str(EXAMPLES / "services-failures.yaml"),
        "--policy",
        "most-allocated",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "inference services" in result.output and "SLO attainment" in result.output
    table = pq.read_table(out / "most-allocated" / "services.parquet")
    assert table.num_rows == 601  # one row a minute from 0 s to the 10 h horizon
    assert set(table.column("service").to_pylist()) == {"assistant"}


def test_a_bad_rate_trace_row_exits_2_with_the_line(tmp_path: Path) -> None:
    text = (EXAMPLES / "services.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "rate: {kind: diurnal, mean_rps: 90, amplitude: 0.5, peak_hour: 4}",
        "rate: {kind: trace, path: r.csv}",
    )
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "r.csv").write_text("time,rps\n0,10\n60,lots\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["simulate", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2
    assert "line 3, column rps: 'lots' is not a number" in result.output
    assert "Traceback" not in result.output
