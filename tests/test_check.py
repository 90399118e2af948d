"""The independent accounting check (fleetlab.metrics.check): recomputed from the output files alone,
every headline figure agrees with summary.json — on every example scenario and experiment variant of the
repository and on random worlds mixing time-slicing, interference, MIG, spot, failures, autoscaling,
Kueue and services; and it does catch a figure that disagrees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assert_accounting_checks, job, mig_pool, pool, scenario, service
from fleetlab.experiment.output import write_results
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.run import run_one
from fleetlab.metrics.check import check_run
from fleetlab.model.scenario import Scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load_scenario, resolve

EXAMPLES = Path(__file__).parents[1] / "examples"
#: Example runs are cut at this horizon (s) to keep the test fast; the check holds at any end.
HORIZON_CAP_S = 3 * 3600.0


def _capped(scen: Scenario) -> Scenario:
    horizon = HORIZON_CAP_S if scen.horizon_s is None else min(scen.horizon_s, HORIZON_CAP_S)
    return scen.model_copy(update={"horizon_s": horizon})


def _example_runs() -> list[tuple[str, Any]]:
    """(label, resolved) for each scenario file and each experiment variant (first seed) in examples/."""
    out: list[tuple[str, Any]] = []
    for file in sorted(EXAMPLES.glob("*/*.yaml")):
        label = str(file.relative_to(EXAMPLES))
        try:
            experiment = load_experiment(file)
        except (SpecError, ValueError, KeyError, TypeError):
            experiment = None
        if experiment is not None:
            for variant in experiment.variants:
                data = {**variant.scenario_data, "seed": experiment.seeds[0]}
                base = Path(variant.base_dir) if variant.base_dir else None
                out.append((f"{label}:{variant.name}", (_capped(Scenario.model_validate(data)), base)))
            continue
        try:
            scen, _, base = load_scenario(str(file))
        except SpecError:
            continue  # plan inputs (examples/plan/*-serving.yaml) are not scenarios
        out.append((label, (_capped(scen), base)))
    return out


EXAMPLE_RUNS = _example_runs()


def test_every_example_is_covered() -> None:
    labels = [label for label, _ in EXAMPLE_RUNS]
    assert len(labels) >= 30
    assert any(":" in label for label in labels)  # experiment variants too


@pytest.mark.parametrize(("label", "loaded"), EXAMPLE_RUNS, ids=[label for label, _ in EXAMPLE_RUNS])
def test_every_example_checks(label: str, loaded: Any) -> None:
    scen, base = loaded
    assert_accounting_checks(run_one(resolve(scen, label, base), None))


@st.composite
def mixed_worlds(draw: st.DrawFn) -> Any:
    """Whole, MIG, time-sliced and spot or failing pools, one autoscaled; interference; Kueue; a service."""
    plain: dict[str, Any] = pool("plain", count=draw(st.integers(1, 2)), gpus=4)
    if draw(st.booleans()):
        plain.update(
            capacity_type="spot", interruptions={"mtbi": draw(st.sampled_from(["20m", "2h"])), "notice_s": 60}
        )
    if draw(st.booleans()):
        plain["failures"] = {"mtbf": draw(st.sampled_from(["40m", "3h"])), "repair_time": "10m"}
    pools = [
        plain,
        mig_pool(count=1, gpus=2),
        pool(
            "sliced",
            count=1,
            gpus=2,
            time_slicing={"replicas": 3, "slowdown_per_extra_pod": draw(st.sampled_from([0.5, 1.0]))},
        ),
        pool(
            "auto",
            count=0,
            gpus=8,
            autoscaling={"min": 0, "max": 2, "scale_down_unneeded_time": 120},
            boot_time_s=60,
        ),
    ]
    use_kueue = draw(st.booleans())
    jobs = []
    for j in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["whole", "mig", "share", "sliced"]))
        extra: dict[str, Any] = {"interference_demand": {"network": draw(st.sampled_from([0.0, 0.6]))}}
        if kind == "mig":
            extra["requests"] = {"cpu": "1", "nvidia.com/mig-1g.10gb": 1}
        elif kind == "share":
            extra["gpu_milli"] = draw(st.sampled_from([250, 500]))
        elif kind == "sliced":
            extra["gpu_memory"] = f"{draw(st.sampled_from([10, 50]))}Gi"
        if kind == "whole":
            extra["priority"] = draw(st.integers(0, 2))
            if draw(st.booleans()):
                extra["checkpoint_interval_s"] = 120
            if use_kueue and draw(st.booleans()):
                extra.update(queue="q", namespace="a")
        gpus = draw(st.sampled_from([1, 2, 8])) if kind in ("whole", "sliced") else 0
        if kind == "sliced":
            gpus = 1
        extra.update(submit_s=draw(st.integers(0, 1800)), runtime=draw(st.integers(30, 2400)))
        jobs.append(job(f"j{j}", gpus, **extra))
    extra_world: dict[str, Any] = {
        "interference": {"alpha": 1.0},
        "horizon_s": draw(st.sampled_from([None, None, 5400])),
        "seed": draw(st.integers(0, 3)),
        "scheduler": {"scheduling_latency_s": draw(st.sampled_from([0, 5]))},
    }
    if use_kueue:
        extra_world["kueue"] = _kueue_objects(draw(st.sampled_from([4, 8, 16])))
    if draw(st.booleans()):
        extra_world["services"] = [service(replicas={"min": 1}, rate={"kind": "constant", "rps": 10})]
        extra_world["horizon_s"] = 5400
    return scenario(pools, jobs, **extra_world), draw(st.sampled_from(["default", "most-allocated"]))


def _kueue_objects(gpus: int) -> list[dict[str, Any]]:
    resources = [
        {"name": "cpu", "nominalQuota": "256"},
        {"name": "memory", "nominalQuota": "2Ti"},
        {"name": "nvidia.com/gpu", "nominalQuota": gpus},
    ]
    group = {
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "f", "resources": resources}],
    }
    return [
        {"kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}},
        {"kind": "ClusterQueue", "metadata": {"name": "a"}, "spec": {"resourceGroups": [group]}},
        {"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "a"}, "spec": {"clusterQueue": "a"}},
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_worlds())
def test_the_check_holds_on_mixed_random_worlds(world: tuple[Any, str]) -> None:
    resolved, policy = world
    assert_accounting_checks(run_one(resolved, policy))


def _written(tmp_path: Path) -> Path:
    jobs = [job("a", runtime=3600), job("b", runtime=3600, submit_s=1800)]
    run = run_one(
        scenario([pool(gpus=1, time_slicing={"replicas": 2, "slowdown_per_extra_pod": 1.0})], jobs), "default"
    )
    out = tmp_path / "run"
    write_results([run], out, single=True)
    return out


def test_a_figure_that_disagrees_is_reported(tmp_path: Path) -> None:
    """The bill of the time-sliced pair is $16.00 (2 h × $8); a summary saying $20.00 (the figure a stale
    finish event used to give) and a makespan of 2.5 h are both caught."""
    out = _written(tmp_path)
    assert check_run(out).ok
    payload = json.loads((out / "summary.json").read_text())
    payload["summary"]["cost_total"] = 20.0
    payload["summary"]["makespan_s"] = 9000.0
    (out / "summary.json").write_text(json.dumps(payload))
    report = check_run(out)
    assert not report.ok
    assert any(m.startswith("cost_total: recomputed 16.0") for m in report.mismatches)
    assert any(m.startswith("makespan_s: recomputed 7200.0") for m in report.mismatches)


def test_check_command_exit_codes(tmp_path: Path) -> None:
    """0 when every figure agrees, 1 on a mismatch, 2 for a folder that is not a run or a file that names
    a job or node the other files do not have."""
    from typer.testing import CliRunner

    from fleetlab.cli import app

    out = _written(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(app, ["check", str(out), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["mismatches"] == []
    payload = json.loads((out / "summary.json").read_text())
    payload["summary"]["jobs_pending_at_end"] = 1
    (out / "summary.json").write_text(json.dumps(payload))
    bad = runner.invoke(app, ["check", str(out)])
    assert bad.exit_code == 1 and "jobs_pending_at_end: recomputed 0" in bad.stdout
    assert runner.invoke(app, ["check", str(tmp_path / "nowhere")]).exit_code == 2
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"job_id": ["ghost"], "node": [""], "end_s": [1.0]}), out / "pods.parquet")
    stray = runner.invoke(app, ["check", str(out)])
    assert stray.exit_code == 2 and "job_id 'ghost' is not in jobs.parquet" in stray.stderr
