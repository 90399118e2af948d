"""The outcome scenarios of docs/dynamics.md are the default scenario plus what their headers say, and each
ten-seed experiment variant is exactly the scenario file its single-seed ``compare`` runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleetlab.experiment.plan import load_experiment
from fleetlab.model.scenario import Scenario
from fleetlab.spec.loader import load

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "dynamics"
FILES = ("static", "autoscaled", "autoscaled-stockout", "failures-pack", "failures-spread")


def _scenario(name: str) -> Scenario:
    return load(str(EXAMPLES / f"service-{name}.yaml")).scenario


def _same_run(a: Scenario, b: Scenario) -> bool:
    """Same cluster, workload, services and scheduler (names and descriptions aside)."""
    fields = ("cluster", "workload", "services", "scheduler", "horizon_s")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


@pytest.mark.parametrize("name", FILES)
def test_each_outcome_scenario_is_the_default_plus_a_burst_pool_and_the_service(name: str) -> None:
    default = load("default").scenario
    scenario = _scenario(name)
    assert scenario.workload == default.workload
    pools = {p.name: p for p in scenario.cluster.pools}
    for pool in default.cluster.pools:  # every default pool as it is, bar failures on the A100-80GB one
        assert pools[pool.name].model_copy(update={"failures": None}) == pool
    assert set(pools) - {p.name for p in default.cluster.pools} == {"h100-burst"}
    [service] = scenario.services
    assert service.name == "assistant" and service.gpu_model == "A100-80GB"


def test_pack_and_spread_differ_only_in_the_replicas_hostname_constraint() -> None:
    pack, spread = _scenario("failures-pack"), _scenario("failures-spread")
    assert pack.scheduler.policy == "most-allocated"
    assert pack.scheduler.pod_topology_spread.defaulting_type == "List"
    assert not pack.scheduler.pod_topology_spread.default_constraints
    [constraint] = spread.services[0].topology_spread
    assert (constraint.topology_key, constraint.max_skew) == ("kubernetes.io/hostname", 1)
    assert constraint.when_unsatisfiable == "DoNotSchedule"
    unspread = spread.model_copy(
        update={"services": (spread.services[0].model_copy(update={"topology_spread": ()}),)}
    )
    assert _same_run(unspread, pack)


@pytest.mark.parametrize(
    ("experiment", "variant_files"),
    [
        (
            "service-autoscaling",
            {"autoscaled": "autoscaled", "stockout": "autoscaled-stockout", "static": "static"},
        ),
        ("service-pack-vs-spread", {"pack": "failures-pack", "spread": "failures-spread"}),
    ],
)
def test_experiment_variants_are_the_compare_scenarios(
    experiment: str, variant_files: dict[str, str]
) -> None:
    plan = load_experiment(EXAMPLES / f"{experiment}.yaml")
    assert len(plan.seeds) == 10
    for variant, name in variant_files.items():
        data = plan.variant(variant).scenario_data
        assert _same_run(Scenario.model_validate(data), _scenario(name)), variant
    assert yaml.safe_load((EXAMPLES / f"{experiment}.yaml").read_text())["baseline"] in variant_files
