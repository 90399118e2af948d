"""Small scenario builders, and the cost-split check, shared by the engine, cost and property tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from fleetlab.cost.billing import NodeCost, node_costs
from fleetlab.metrics.tables import job_columns
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.loader import resolve


def pool(name: str = "gpu", count: int = 1, gpus: int = 8, **extra: Any) -> dict[str, Any]:
    """A node pool dict: 8×H100 nodes with 64 CPUs and 512Gi by default ($8/h)."""
    out: dict[str, Any] = {
        "name": name,
        "count": count,
        "cpu": "64",
        "memory": "512Gi",
        "price_per_hour": 8.0,
    }
    if gpus:
        out.update(gpu_model="H100", gpus_per_node=gpus)
    out.update(extra)
    return out


def mig_pool(name: str = "mig", count: int = 1, gpus: int = 4) -> dict[str, Any]:
    """A pool of A100-80GB nodes with their first 2 GPUs partitioned 3g.40gb + 2g.20gb + 1g.10gb."""
    return pool(
        name,
        count=count,
        gpus=gpus,
        gpu_model="A100-80GB",
        mig={"layout": ["3g.40gb", "2g.20gb", "1g.10gb"], "gpus": 2},
    )


def job(job_id: str, gpus: int = 1, submit_s: float = 0, runtime: Any = 100, **extra: Any) -> dict[str, Any]:
    """A job dict with one pod requesting ``gpus`` GPUs, 1 CPU and 1Gi."""
    requests: dict[str, Any] = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    out: dict[str, Any] = {"id": job_id, "submit_s": submit_s, "requests": requests, "runtime": runtime}
    out.update(extra)
    return out


def scenario(pools: list[dict[str, Any]], jobs: list[dict[str, Any]], **extra: Any) -> ResolvedScenario:
    """Validate and resolve an inline scenario."""
    data: dict[str, Any] = {"cluster": {"pools": pools}, "workload": {"jobs": jobs}}
    data.update(extra)
    return resolve(Scenario.model_validate(data))


def service(**over: Any) -> dict[str, Any]:
    """An inference service dict: 3 one-GPU replicas (1 CPU, 1Gi) serving 20 rps each on H100 against a
    constant 30 rps, p99 SLO 2 s; ``over`` replaces whole top-level fields."""
    out: dict[str, Any] = {
        "name": "chat",
        "replicas": {"min": 3},
        "cpu_per_replica": "1",
        "memory_per_replica": "1Gi",
        "performance": {"H100": {"throughput_rps": 20, "service_time_ms": 200}},
        "slo": {"p99_ms": 2000},
        "rate": {"kind": "constant", "rps": 30},
    }
    out.update(over)
    return out


def assert_cost_split_exact(result: SimulationResult) -> NodeCost:
    """The node bills' split, checked: no bucket negative, the unit-ms buckets add up to each node's total
    and the dollar buckets to its bill exactly (the invariant every property test holds the run to)."""
    cost = node_costs(result)
    for bucket in cost.buckets:
        assert np.all(cost.units[bucket] >= 0), bucket
    assert np.array_equal(sum(cost.units[b] for b in cost.buckets), cost.unit_total)
    for i, billed in enumerate(cost.billed):
        assert sum(cost.dollars[b][i] for b in cost.buckets) == billed
    return cost


def by_job(result: SimulationResult, column: str) -> dict[str, Any]:
    """One column of the run's jobs table keyed by job id."""
    cols = job_columns(result)
    return dict(zip(cols["job_id"], list(cols[column]), strict=True))


def assert_accounting_checks(run: Any) -> None:
    """Write the run as ``simulate --out`` does and recompute its headline figures from the files alone
    (fleetlab.metrics.check): every figure must agree with summary.json."""
    import tempfile
    from pathlib import Path

    from fleetlab.experiment.output import write_results
    from fleetlab.metrics.check import check_run

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        write_results([run], out, single=True)
        report = check_run(out)
    assert report.ok, "\n".join(report.mismatches[:20])
    assert report.checked > 0


def kueue_queue(gpus: int, **cq_spec: Any) -> list[dict[str, Any]]:
    """Kueue objects for one queue: flavor ``f``, ClusterQueue ``cq`` of 64 CPUs, 512Gi and ``gpus`` GPUs
    (``cq_spec`` adds spec fields), LocalQueue ``lq`` in namespace default."""
    api = "kueue.x-k8s.io/v1beta2"
    resources = [
        {"name": "cpu", "nominalQuota": "64"},
        {"name": "memory", "nominalQuota": "512Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": gpus},
    ]
    group = {
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "f", "resources": resources}],
    }
    return [
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"resourceGroups": [group], **cq_spec},
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
    ]


def provisioning_check(name: str = "prov", config: str = "p") -> dict[str, Any]:
    """An AdmissionCheck of Kueue's provisioning controller naming ProvisioningRequestConfig ``config``."""
    params = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config}
    spec = {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": params}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": spec,
    }


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, np.ndarray):
        return bool(np.array_equal(left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_equal(v, right[k]) for k, v in left.items())
    return bool(left == right)


def assert_same_pod_tables(a: SimulationResult, b: SimulationResult) -> None:
    """Two runs' pod, segment and timeline tables column by column, and their ends, are the same (a
    restructured engine path against the one it replaces)."""
    for table in ("pods", "segments", "timeline"):
        left, right = vars(getattr(a, table)), vars(getattr(b, table))
        assert left.keys() == right.keys()
        for name, column in left.items():
            assert _equal(column, right[name]), (table, name)
    assert a.end_ms == b.end_ms
