"""Write examples/plan/gcp-billing-export.csv: a synthetic bill in the column layout of the GCP Cloud Billing
standard usage cost export, for the run of examples/plan/gcp-cluster.yaml starting 2026-11-02 00:00 UTC.

Not a real bill. Instance lines follow the run's ledger hour by hour (GKE cost-allocation style labels per
team, unallocated capacity without team labels), split into GPU, core and RAM SKUs; on top of that the bill
has what a real one has and the estimate does not price: boot and data disks, Cloud Storage, internet and
inter-zone egress, the GKE cluster fee with its free-tier credit. H100 GPU hours are billed at the GPU part of
a3-highgpu-8g in us-east4 (9.79655 $/GPU-h), where the catalog's us-central1 figure (4.20076) is flagged as
anomalous in the pricing notes. SKU and billing-account ids are placeholders.

Run: .venv/bin/python examples/plan/make_billing_fixture.py [OUT.csv]   (default: the file above)
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fleetlab.cost.ledger import ledger_columns
from fleetlab.cost.reconcile import spread
from fleetlab.experiment.run import run_one
from fleetlab.spec.loader import load

HERE = Path(__file__).resolve().parent
START = datetime(2026, 11, 2, tzinfo=UTC)
ACCOUNT, PROJECT, CLUSTER = "01A2B3-C4D5E6-F7A8B9", "acme-ml-prod", "ml-prod"
COMPUTE, GKE, GCS = ("6F81-5844-456A", "Compute Engine"), ("CCD8-9BF1-090E", "Kubernetes Engine"), (
    "95FF-2EF5-5EA1",
    "Cloud Storage",
)
# pool -> (family, GPU SKU, vCPUs, memory GiB, core $/vCPU-h, ram $/GiB-h, GPU bill factor)
H100_FACTOR = 9.79655 / 4.20076
POOLS = {
    "h100": ("A3", "Nvidia H100 80GB GPU running in Americas", 208, 1872, 0.020614, 0.002763, H100_FACTOR),
    "a100": ("A2", "Nvidia A100 80GB GPU running in Americas", 96, 1360, 0.031611, 0.004237, 1.0),
    "l4": ("G2", "Nvidia L4 GPU running in Americas", 48, 192, 0.024988, 0.002927, 1.0),
    "cpu": ("N2", None, 32, 128, 0.031611, 0.004237, 1.0),
}
HEADER = [
    "billing_account_id", "service.id", "service.description", "sku.id", "sku.description",
    "usage_start_time", "usage_end_time", "project.id", "project.name", "labels", "system_labels",
    "location.location", "location.country", "location.region", "location.zone", "cost", "currency",
    "currency_conversion_rate", "usage.amount", "usage.unit", "usage.amount_in_pricing_units",
    "usage.pricing_unit", "credits", "invoice.month", "cost_type", "export_time",
]


def sku_id(text: str) -> str:
    digits = f"{abs(hash_text(text)):012X}"[:12]
    return f"{digits[:4]}-{digits[4:8]}-{digits[8:12]}"


def hash_text(text: str) -> int:
    value = 1469598103934665603
    for ch in text.encode():
        value = (value ^ ch) * 1099511628211 % 2**64
    return value


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def labels(team: str | None) -> str:
    items = [{"key": "goog-k8s-cluster-name", "value": CLUSTER}]
    if team:
        items += [{"key": "k8s-namespace", "value": team}, {"key": "k8s-label/team", "value": team}]
    return json.dumps(items, separators=(",", ":"))


def main(out: Path) -> None:
    resolved = load(str(HERE / "gcp-cluster.yaml"))
    run = run_one(resolved)
    columns = ledger_columns(run.pools, run.result, "fixture")
    # string columns come as Arrow arrays, numbers as numpy arrays: read them all as Python values
    ledger = {k: v.to_pylist() if hasattr(v, "to_pylist") else v for k, v in columns.items()}
    host: dict[tuple[datetime, str, str], float] = defaultdict(float)
    gpu: dict[tuple[datetime, str, str], float] = defaultdict(float)
    for i in range(len(ledger["cost_usd"])):
        begin = START + timedelta(seconds=ledger["period_start_s"][i])
        end = START + timedelta(seconds=ledger["period_end_s"][i])
        team = ledger["team"][i]
        total = ledger["cost_usd"][i]
        for when, part in spread(begin, end, 1.0, "hour"):
            host[(when, ledger["pool"][i], team)] += ledger["host_cost_usd"][i] * part
            gpu[(when, ledger["pool"][i], team)] += ledger["gpu_cost_usd"][i] * part
        assert abs(ledger["host_cost_usd"][i] + ledger["gpu_cost_usd"][i] - total) < 1e-9
    rows: list[list[str]] = []

    def add(hour: datetime, service: tuple[str, str], sku: str, team: str | None, cost: float, amount: float,
            unit: str, pricing_amount: float, pricing_unit: str, credits: str = "[]") -> None:
        if cost <= 0:
            return
        rows.append([
            ACCOUNT, service[0], service[1], sku_id(sku), sku, stamp(hour), stamp(hour + timedelta(hours=1)),
            PROJECT, "ACME ML production", labels(team), "[]", "us-central1", "US", "us-central1",
            "us-central1-a", f"{cost:.6f}", "USD", "1.0", f"{amount:.1f}", unit, f"{pricing_amount:.6f}",
            pricing_unit, credits, "202611", "regular", stamp(hour + timedelta(hours=3, minutes=17)),
        ])

    hours = sorted({k[0] for k in host} | {k[0] for k in gpu})
    for hour in hours:
        for (when, pool, team), value in sorted(host.items()):
            if when != hour:
                continue
            family, _, vcpus, mem, core, ram, _ = POOLS[pool]
            core_share = vcpus * core / (vcpus * core + mem * ram)
            core_cost, ram_cost = value * core_share, value * (1 - core_share)
            core_h, ram_h = core_cost / core, ram_cost / ram
            add(hour, COMPUTE, f"{family} Instance Core running in Americas", team or None, core_cost,
                core_h * 3600, "seconds", core_h, "hour")
            add(hour, COMPUTE, f"{family} Instance Ram running in Americas", team or None, ram_cost,
                ram_h * 3600 * 2**30, "byte-seconds", ram_h, "gibibyte hour")
        for (when, pool, team), value in sorted(gpu.items()):
            if when != hour or POOLS[pool][1] is None:
                continue
            factor = POOLS[pool][6]
            per_gpu = {"h100": 4.20076, "a100": 1.846198, "l4": 0.56004}[pool]
            gpu_h = value / per_gpu
            add(hour, COMPUTE, str(POOLS[pool][1]), team or None, value * factor, gpu_h * 3600, "seconds",
                gpu_h, "hour")
        disk_gib_h = 8 * 100
        add(hour, COMPUTE, "Balanced PD Capacity", None, disk_gib_h * 0.10 / 730, disk_gib_h * 3600 * 2**30,
            "byte-seconds", disk_gib_h / 730, "gibibyte month")
        add(hour, COMPUTE, "SSD backed PD Capacity", "research", 2048 * 0.17 / 730, 2048 * 3600 * 2**30,
            "byte-seconds", 2048 / 730, "gibibyte month")
        add(hour, GCS, "Standard Storage US Multi-region", "research", 5120 * 0.026 / 730,
            5120 * 3600 * 2**30, "byte-seconds", 5120 / 730, "gibibyte month")
        add(hour, COMPUTE, "Network Internet Egress from Americas to Americas", "serving", 15 * 0.12,
            15 * 2**30, "bytes", 15, "gibibyte")
        add(hour, COMPUTE, "Network Inter Zone Egress", "research", 40 * 0.01, 40 * 2**30, "bytes", 40,
            "gibibyte")
        free = json.dumps([{"name": "Free tier", "amount": -0.1, "full_name": "Free tier", "id": "",
                            "type": "FREE_TIER"}], separators=(",", ":"))
        add(hour, GKE, "Zonal Kubernetes Clusters", None, 0.1, 3600, "seconds", 1.0, "hour", free)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    print(f"{len(rows)} rows written")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "gcp-billing-export.csv")
