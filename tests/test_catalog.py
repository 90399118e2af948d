"""SkyPilot-format price catalogs: reading, GCP host + accelerator rows, checks, and catalog-priced pools.

Reference figures are the SkyPilot catalog values in /work/shared/reference/pricing.md (§0, Appendix B).
Tests on the shared catalog extracts skip when /work/shared is absent; the built-in snapshot is always there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.spec.catalog import builtin_catalog, parse_catalog, read_catalog
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load
from shared_data import shared_path

_SKYPILOT = shared_path("catalogs", "skypilot")
SHARED = _SKYPILOT if _SKYPILOT.is_dir() else None
needs_shared = pytest.mark.skipif(SHARED is None, reason="shared SkyPilot catalog extracts not present")

AWS_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch"


def offers(catalog_cloud: str, instance_type: str, region: str) -> list[tuple[float | None, float | None]]:
    cat = builtin_catalog(catalog_cloud)
    return [
        (o.price, o.spot_price) for o in cat.offers if o.instance_type == instance_type and o.region == region
    ]


def test_gcp_gpu_machine_is_host_row_plus_accelerator_row() -> None:
    """SkyPilot gcp_catalog: a2-highgpu-1g us-central1 = VM 0.73948 + 1×A100 2.93391 = 3.67339; spot 0.36975 + 1.4341."""
    cat = builtin_catalog("gcp")
    a2 = [o for o in cat.offers if o.instance_type == "a2-highgpu-1g" and o.zone == "us-central1-a"]
    assert len(a2) == 1
    assert a2[0].price == pytest.approx(3.67339)
    assert a2[0].spot_price == pytest.approx(1.80385)
    assert (a2[0].accelerator, a2[0].gpus, a2[0].gpu_memory_mib) == ("A100", 1, 40960)
    # a4-highgpu-8g: the VM rows are 0.0 and the 8×B200 row carries the whole price.
    a4 = {
        (o.price, o.spot_price)
        for o in cat.offers
        if o.instance_type == "a4-highgpu-8g" and o.region == "us-central1"
    }
    assert a4 == {(90.216, 32.6064)}
    assert offers("gcp", "a3-highgpu-8g", "us-east4")[0][0] == pytest.approx(87.83247)
    # No accelerator row is a priced offer of its own.
    assert all(o.instance_type for o in cat.offers)


def test_aws_and_azure_rows_are_whole_instance_prices() -> None:
    assert {p for p, _ in offers("aws", "p5.48xlarge", "us-east-1")} == {55.04}
    assert {p for p, _ in offers("aws", "p4d.24xlarge", "us-east-1")} == {21.957642}
    assert {p for p, _ in offers("azure", "Standard_ND96asr_v4", "eastus")} == {27.197}


def test_azure_nd_h100_v5_count_disagreement_is_warned_and_corrected() -> None:
    """Azure v6 lists ND96isr_H100_v5 with 12 GPUs; the ND H100 v5 VM has 8."""
    cat = builtin_catalog("azure")
    nd = [o for o in cat.offers if o.instance_type == "Standard_ND96isr_H100_v5"]
    assert nd and all(o.gpus == 8 for o in nd)
    text = [w for o in nd for w in cat.warnings[o.line]]
    assert any("AcceleratorCount 12 disagrees" in w and f"line {nd[0].line}" in w for w in text)


def test_spot_above_on_demand_and_missing_region_warn_with_file_and_line() -> None:
    text = "\n".join(
        [
            AWS_HEADER,
            "x1.big,H100,8.0,192.0,2048.0,,10.0,12.5,us-east-1,use1-az1,x86_64",
            "x1.big,H100,8.0,192.0,2048.0,,10.0,4.0,,use1-az2,x86_64",
            "p5.48xlarge,H100,4.0,192.0,2048.0,,55.04,20.0,us-east-1,use1-az1,x86_64",
        ]
    )
    cat = parse_catalog("mine.csv", text)
    warnings = cat.all_warnings()
    assert any(w.startswith("mine.csv, line 2:") and "spot price 12.5 is above" in w for w in warnings)
    assert any(w.startswith("mine.csv, line 3:") and "no Region" in w for w in warnings)
    assert any(w.startswith("mine.csv, line 4:") and "AcceleratorCount 4 disagrees" in w for w in warnings)
    assert len(cat.offers) == 2


@pytest.mark.parametrize(
    ("row", "needles"),
    [
        ("x1,H100,8,192,2048,,ten,4.0,us-east-1,a,x86_64", ["line 2, column Price", "'ten' is not a number"]),
        (
            "x1,H100,8,192,2048,,10,-4.0,us-east-1,a,x86_64",
            ["line 2, column SpotPrice", "outside the allowed 0..1e+06"],
        ),
        (
            "x1,H100,8,192,2048,,1e300,4,us-east-1,a,x86_64",
            ["line 2, column Price", "'1e300' is outside the allowed"],
        ),
        (
            "x1,H100,8,192,1e308,,10,4,us-east-1,a,x86_64",
            ["line 2, column MemoryGiB", "outside the allowed 0..8.38861e+06"],
        ),
        ("x1,H100,eight,192,2048,,10,4,us-east-1,a,x86_64", ["line 2, column AcceleratorCount"]),
    ],
)
def test_unreadable_prices_are_errors_naming_file_line_and_column(row: str, needles: list[str]) -> None:
    with pytest.raises(SpecError) as err:
        parse_catalog("mine.csv", AWS_HEADER + "\n" + row)
    message = str(err.value)
    assert message.startswith("mine.csv: ")
    for needle in needles:
        assert needle in message


def test_missing_columns_are_an_error() -> None:
    with pytest.raises(SpecError, match=r"mine.csv: line 1: missing column\(s\) SpotPrice, Region"):
        parse_catalog(
            "mine.csv", "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price\nx,,,1,1,1"
        )


@needs_shared
def test_shared_extracts_read_and_snapshot_agrees_with_them() -> None:
    """Every built-in row is an unchanged upstream row: the same offers come out of the shared extracts."""
    assert SHARED is not None
    files = {
        "aws": SHARED / "aws" / "vms_gpu_subset.csv",
        "gcp": SHARED / "gcp" / "vms_gpu_subset.csv",
        "azure": SHARED / "azure" / "vms_v6_nseries_subset.csv",
    }
    for cloud, path in files.items():
        full = read_catalog(path)
        index = {(o.instance_type, o.region, o.zone): (o.price, o.spot_price, o.gpus) for o in full.offers}
        snapshot = builtin_catalog(cloud)
        assert snapshot.offers
        for o in snapshot.offers:
            if cloud == "aws" and o.instance_type in AWS_G_FAMILY:
                continue  # not in the shared extract; checked against upstream in the test below
            assert index[(o.instance_type, o.region, o.zone)] == (o.price, o.spot_price, o.gpus)
    gcp = read_catalog(files["gcp"])
    # pricing.md §1.5: H200 spot above on-demand in asia-south1, europe-west1, europe-west4, us-south1.
    h200 = {
        w.split(" in ")[1].split(":")[0]
        for w in gcp.all_warnings()
        if "H200 accelerator row in" in w and "spot" in w
    }
    assert {z.rsplit("-", 1)[0] for z in h200} == {"asia-south1", "europe-west1", "europe-west4", "us-south1"}
    # pricing.md §0: a3-megagpu-8g us-central1 $92.21427, a3-ultragpu-8g $86.75992.
    by = {(o.instance_type, o.region): o.price for o in gcp.offers}
    assert by[("a3-megagpu-8g", "us-central1")] == pytest.approx(92.21427)
    assert by[("a3-ultragpu-8g", "us-central1")] == pytest.approx(86.75992)


#: The AWS g-family rows appended to the snapshot: (instance type, region) -> (GPU model, GPUs, on-demand,
#: spot), as skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @00148f2a has them (first AZ row per region).
AWS_G_FAMILY = {
    "g4dn.xlarge",
    "g5.4xlarge",
    "g5.12xlarge",
    "g6.2xlarge",
    "g6.24xlarge",
    "g6e.xlarge",
    "g6e.24xlarge",
}
AWS_G_ROWS = {
    ("g4dn.xlarge", "us-east-1"): ("T4", 1, 0.526, 0.2158),
    ("g4dn.xlarge", "us-west-2"): ("T4", 1, 0.526, 0.2464),
    ("g5.4xlarge", "us-east-1"): ("A10G", 1, 1.624, 0.6603),
    ("g5.4xlarge", "us-west-2"): ("A10G", 1, 1.624, 0.5516),
    ("g5.12xlarge", "us-east-1"): ("A10G", 4, 5.672, 2.7804),
    ("g5.12xlarge", "us-west-2"): ("A10G", 4, 5.672, 3.3699),
    ("g6.2xlarge", "us-east-1"): ("L4", 1, 0.9776, 0.5772),
    ("g6.24xlarge", "us-east-1"): ("L4", 4, 6.6752, 2.5043),
    ("g6.24xlarge", "us-west-2"): ("L4", 4, 6.6752, 3.3145),
    ("g6e.xlarge", "us-east-1"): ("L40S", 1, 1.861, 1.1975),
    ("g6e.xlarge", "us-west-2"): ("L40S", 1, 1.861, 0.9228),
    ("g6e.24xlarge", "us-east-1"): ("L40S", 4, 15.06559, 5.3367),
    ("g6e.24xlarge", "us-west-2"): ("L40S", 4, 15.06559, 5.3328),
}


def test_a10g_l4_l40s_rows_price_whole_instances() -> None:
    """AWS g4dn/g5/g6/g6e rows as upstream has them; GCP g2 = host + L4 rows; Azure NVads A10 v5 (1 or 2 A10)."""
    aws = {
        (o.instance_type, o.region): o
        for o in builtin_catalog("aws").offers
        if o.instance_type in AWS_G_FAMILY
    }
    assert {k: (o.accelerator, o.gpus, o.price, o.spot_price) for k, o in aws.items()} == AWS_G_ROWS
    assert not builtin_catalog("aws").all_warnings()
    # g2-standard-16 us-central1-a: host 0.58717 + 1x L4 0.56004 = 1.14721; spot 0.23494 + 0.2231 = 0.45804.
    g2 = [
        o
        for o in builtin_catalog("gcp").offers
        if o.instance_type == "g2-standard-16" and o.zone == "us-central1-a"
    ]
    assert [(o.accelerator, o.gpus) for o in g2] == [("L4", 1)]
    assert g2[0].price == pytest.approx(1.14721) and g2[0].spot_price == pytest.approx(0.45804)
    nv = {(o.instance_type, o.region): (o.gpus, o.price) for o in builtin_catalog("azure").offers}
    assert nv[("Standard_NV72ads_A10_v5", "eastus")] == (2, 6.52)
    assert nv[("Standard_NV36adms_A10_v5", "westus")] == (1, 5.876)


def test_a10g_pool_is_priced_from_the_catalog(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path, "{name: a10g, count: 2, cloud: aws, region: us-east-1, instance_type: g5.12xlarge}"
    )
    pool = load(str(path)).scenario.cluster.pools[0]
    assert (pool.gpu_model, pool.gpus_per_node, pool.price_per_hour) == ("A10G", 4, 5.672)


POOLS = """\
cluster:
  pools:
{pools}
workload:
  jobs:
    - {{id: j1, requests: {{cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}, runtime: 10m}}
"""


def scenario_file(tmp_path: Path, *pools: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(POOLS.format(pools="\n".join(f"    - {p}" for p in pools)), encoding="utf-8")
    return path


def test_pool_price_and_shape_come_from_the_catalog(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        "{name: od, count: 1, cloud: aws, instance_type: p5.48xlarge, region: us-east-1}",
        "{name: sp, count: 1, cloud: gcp, instance_type: a2-highgpu-1g, region: us-central1, capacity_type: spot}",
        "{name: mine, count: 1, cloud: aws, instance_type: p4d.24xlarge, region: us-east-1, price_per_hour: 15, cpu: '90'}",
    )
    pools = {p.name: p for p in load(str(path)).scenario.cluster.pools}
    od, sp, mine = pools["od"], pools["sp"], pools["mine"]
    assert (od.price_per_hour, od.gpu_model, od.gpus_per_node, od.cpu, od.memory) == (
        55.04,
        "H100",
        8,
        192_000,
        2048 * 1024**3,
    )
    assert od.node_labels(0)["topology.kubernetes.io/region"] == "us-east-1"
    gcp_spot = [
        o.spot_price
        for o in builtin_catalog("gcp").offers
        if o.instance_type == "a2-highgpu-1g" and o.region == "us-central1"
    ]
    assert sp.price_per_hour == pytest.approx(min(s for s in gcp_spot if s is not None))
    assert (sp.gpu_model, sp.gpus_per_node) == ("A100-40GB", 1)
    assert (mine.price_per_hour, mine.cpu, mine.gpu_model) == (15, 90_000, "A100-40GB")


def test_catalog_warnings_on_used_rows_reach_the_scenario(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        "{name: nd, count: 1, cloud: azure, instance_type: Standard_ND96isr_H100_v5, region: eastus}",
    )
    resolved = load(str(path))
    assert resolved.scenario.cluster.pools[0].gpus_per_node == 8
    assert any("AcceleratorCount 12 disagrees" in w for w in resolved.warnings)


@pytest.mark.parametrize(
    ("pool", "needles"),
    [
        (
            "{name: a, count: 1, cloud: aws, instance_type: p5.48xlarg, region: us-east-1}",
            ["cluster.pools[0].instance_type", "close matches: p5.48xlarge"],
        ),
        (
            "{name: a, count: 1, cloud: aws, instance_type: p5.48xlarge, region: us-east1}",
            ["cluster.pools[0].region", "close matches: us-east-1"],
        ),
        (
            "{name: a, count: 1, cloud: aws, instance_type: p5.4xlarge, region: us-east-1, capacity_type: spot}",
            ["no spot price"],
        ),
        (
            "{name: a, count: 1, cloud: ibm, instance_type: p5.48xlarge, region: us-east-1}",
            ["unknown cloud 'ibm'"],
        ),
        ("{name: a, count: 1, cloud: aws, region: us-east-1}", ["needs instance_type and region"]),
    ],
)
def test_bad_catalog_pools_fail_cleanly_from_the_cli(tmp_path: Path, pool: str, needles: list[str]) -> None:
    result = CliRunner().invoke(cli.app, ["validate", str(scenario_file(tmp_path, pool))])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output.replace("\n", " ") or needle in result.stderr.replace("\n", " ")


def test_user_catalog_file_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text(
        AWS_HEADER
        + "\nmy.gpu,L4,4.0,48.0,192.0,,3.5,1.25,eu-x,eu-x-1,x86_64\nmy.gpu,L4,4.0,48.0,192.0,,3.5,1.5,eu-x,eu-x-2,x86_64\n",
        encoding="utf-8",
    )
    path = scenario_file(
        tmp_path,
        "{name: a, count: 2, cloud: aws, catalog: prices.csv, instance_type: my.gpu, region: eu-x, capacity_type: spot}",
    )
    p = load(str(path)).scenario.cluster.pools[0]
    assert (p.price_per_hour, p.gpu_model, p.gpus_per_node, p.cpu) == (1.25, "L4", 4, 48_000)


def test_bad_user_catalog_is_a_spec_error(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text(
        AWS_HEADER + "\nmy.gpu,L4,4.0,48.0,192.0,,abc,1.25,eu-x,eu-x-1,x86_64\n", encoding="utf-8"
    )
    path = scenario_file(
        tmp_path, "{name: a, count: 1, cloud: aws, catalog: prices.csv, instance_type: my.gpu, region: eu-x}"
    )
    with pytest.raises(SpecError, match=r"prices.csv: line 2, column Price: 'abc' is not a number"):
        load(str(path))
    missing = scenario_file(
        tmp_path, "{name: a, count: 1, cloud: aws, catalog: nope.csv, instance_type: my.gpu, region: eu-x}"
    )
    with pytest.raises(SpecError, match="catalog file not found"):
        load(str(missing))
