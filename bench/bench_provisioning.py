"""CPU time of a run where many workloads hold quota while their provisioning check waits.

One pool of 4 fixed nodes (8 H100 each); a ClusterQueue with quota for every job and a check-capacity
provisioning AdmissionCheck; ``--jobs`` jobs of one 8-GPU pod, 600 s each, all submitted at 0. Four run
at a time; the rest wait with quota reserved, their requests due an autoscaler look every 10 s until the
cluster has room. Prints the simulate CPU seconds, the looks that read the cluster and those skipped, and
a digest of every job's completion and provisioning wait (equal digests: the same outputs).

Run: PYTHONPATH=src .venv/bin/python bench/bench_provisioning.py --jobs 200
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from typing import Any

from fleetlab.experiment.run import profile_for
from fleetlab.metrics.tables import job_columns
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve

API = "kueue.x-k8s.io/v1beta2"


def kueue_objects(gpus: int) -> list[dict[str, Any]]:
    """Flavor ``f``, ClusterQueue ``cq`` of ``gpus`` GPUs held by check ``prov`` (check-capacity class),
    LocalQueue ``lq``."""
    resources = [
        {"name": "cpu", "nominalQuota": "100000"},
        {"name": "memory", "nominalQuota": "100000Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": gpus},
    ]
    group = {
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "f", "resources": resources}],
    }
    params = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "p"}
    return [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {
            "apiVersion": API,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"resourceGroups": [group], "admissionChecks": ["prov"]},
        },
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
        {
            "apiVersion": API,
            "kind": "AdmissionCheck",
            "metadata": {"name": "prov"},
            "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": params},
        },
        {
            "apiVersion": API,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "p"},
            "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"},
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs submitted at 0 (default 200)")
    args = parser.parse_args()
    pool = {
        "name": "gpu",
        "count": 4,
        "cpu": "64",
        "memory": "512Gi",
        "gpu_model": "H100",
        "gpus_per_node": 8,
    }
    pool["price_per_hour"] = 8.0
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 8}
    jobs = [
        {"id": f"j{i}", "submit_s": 0, "requests": requests, "runtime": 600, "queue": "lq"}
        for i in range(args.jobs)
    ]
    data = {"cluster": {"pools": [pool]}, "workload": {"jobs": jobs}, "kueue": kueue_objects(8 * args.jobs)}
    resolved = resolve(Scenario.model_validate(data))
    sim = Simulator(resolved, profile_for(resolved, None))
    t0 = time.process_time()
    result = sim.run()
    simulate_s = time.process_time() - t0
    cols = job_columns(result)
    names = ("job_id", "completion_s", "provisioning_wait_s", "quota_wait_s", "node_wait_s")
    rows = [[str(v) for v in cols[name]] for name in names]
    checks = sim.features.admission_checks
    out = {
        "jobs": args.jobs,
        "simulate_cpu_s": round(simulate_s, 2),
        "looks": getattr(checks, "looks", None),
        "skipped_looks": getattr(checks, "skipped_looks", None),
        "outputs_sha256": hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
