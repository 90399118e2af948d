"""Inference services in the experiment store: every run writes a services table (empty without services)
and the report's SLO attainment reads it back per variant."""

from __future__ import annotations

from pathlib import Path

import duckdb

from builders import pool, scenario, service
from fleetlab.experiment.run import run_one
from fleetlab.experiment.store import build_database, write_run
from fleetlab.metrics.services import service_columns
from fleetlab.report import experiment_data as data


def test_services_table_round_trips_into_the_slo_chart(tmp_path: Path) -> None:
    folders, records = [], []
    for variant, services in (
        ("calm", [service(replicas={"min": 2}, rate={"kind": "constant", "rps": 10})]),
        ("busy", [service(replicas={"min": 2}, rate={"kind": "constant", "rps": 400})]),
        ("none", []),
    ):
        resolved = scenario([pool("gpu", count=1)], [], services=services, horizon_s=1800)
        result = run_one(resolved, "scenario").result
        folder = tmp_path / "runs" / variant / "seed-1"
        records.append(write_run(folder, result, {"variant": variant, "seed": 1}))
        folders.append(folder)
        if services:
            expected = service_columns(result)["slo_met"]
            if variant == "calm":
                calm_share = sum(expected) / len(expected)
    db = build_database(tmp_path, folders, records, {"calm": "", "busy": "", "none": ""}, "calm")
    con = duckdb.connect(str(db), read_only=True)
    rows = {r.variant: r for r in data.service_slo(con)}
    assert set(rows) == {"calm", "busy"}  # the run without services adds no rows
    assert abs(rows["calm"].attained - calm_share) < 1e-12
    assert rows["busy"].attained == 0.0  # 400 rps against 2 replicas x 20 rps: saturated throughout
