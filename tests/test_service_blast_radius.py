"""Direction of the headline pack-vs-spread result (docs/dynamics.md) on a hand-sized cluster: replicas
spread by a DoNotSchedule hostname constraint lose fewer of themselves, and fewer requests, to one node
failure than replicas packed by MostAllocated with kube-scheduler's default spreading turned off."""

from __future__ import annotations

from builders import pool, scenario, service
from fleetlab.experiment.run import run_one
from fleetlab.metrics.services import service_rows
from fleetlab.sim.result import SimulationResult

HOSTNAME_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule",
}


def _run(spread: bool) -> SimulationResult:
    """4 nodes × 8 GPUs, 4 one-GPU replicas at 30 rps (each serves 20), gpu-0 fails at 10 min for 1 h."""
    chat = service(replicas={"min": 4}, image={"name": "triton", "size": "12Gi"})
    if spread:
        chat["topology_spread"] = [HOSTNAME_SPREAD]
    failures = {"trace": [{"node": "gpu-0", "at_s": 600, "repair_s": 3600}]}
    resolved = scenario(
        [pool("gpu", count=4, failures=failures, image_pull_bandwidth="100Mi")],
        [],
        services=[chat],
        horizon_s=7200,
        # kube-scheduler's default spreading (PodTopologySpreadArgs System) off: List with no constraints.
        scheduler={"tie_break": "first", "podTopologySpread": {"defaultingType": "List"}},
    )
    return run_one(resolved, "most-allocated").result


def test_spread_replicas_lose_fewer_replicas_and_requests_per_failure_than_packed_ones() -> None:
    pack, spread = _run(spread=False), _run(spread=True)
    assert pack.lifecycle is not None and spread.lifecycle is not None
    [pack_failure] = pack.lifecycle.failures
    [spread_failure] = spread.lifecycle.failures
    # MostAllocated stacks every replica on one node; the constraint puts one on each.
    assert pack_failure.pods_evicted > spread_failure.pods_evicted >= 1
    [pack_row] = service_rows(pack)
    [spread_row] = service_rows(spread)
    assert pack_row.replicas_lost_to_failures > spread_row.replicas_lost_to_failures
    # Three spread replicas still carry 30 rps; the packed service has none ready until its replicas
    # are placed again and have pulled their image.
    assert pack_row.late_requests > spread_row.late_requests
    assert pack_row.slo_attainment_pct < spread_row.slo_attainment_pct
