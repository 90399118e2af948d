"""examples/dra/gpus-and-mig.yaml worked out by hand, and both DRA and TAS examples through ``experiment``.

The NVIDIA GPU DRA driver (``NVIDIA/k8s-dra-driver-gpu``, ``cmd/gpu-kubelet-plugin/deviceinfo.go`` and
``partitions.go``) publishes per GPU a device ``gpu-<minor>`` (type gpu) and, on a partitionable node, one
device per MIG placement ``gpu-<minor>-mig-<profileId>-<start>-<size>`` (type mig), all drawing on the
GPU's counter set; the whole GPU draws on every memory slice, so it cannot be allocated while any of its
slices is. The A100-80GB's 1g.10gb profile is profile id 19 with placements at memory slices 0..6. The
structured allocator takes devices in slice order, first fit.
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.experiment.run import run_one
from fleetlab.export.write import render
from fleetlab.metrics.tables import job_columns, node_columns, pod_columns
from fleetlab.spec.loader import load
from test_tas_roundtrip import crd_validator_for

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DRA_EXAMPLE = EXAMPLES / "dra" / "gpus-and-mig.yaml"
TAS_EXAMPLE = EXAMPLES / "tas" / "racks.yaml"


def test_example_dra_outcome() -> None:
    """* train-h100 (t=0): 2 devices of class gpu.nvidia.com whose productName is the H100's; only h100-0's
      gpu-0 and gpu-1 match → both, 0 → 7200 s.
    * notebooks (t=0, 3 pods, one claim each from mig-1g): class mig.nvidia.com with profile 1g.10gb →
      only a100-0's MIG devices; first fit in slice order gives gpu-0's placements at slices 0, 1 and 2,
      0 → 3600 s each.
    * finetune-a100 (t=60): 2 whole GPUs, architecture Ampere and memory ≥ 80Gi → a100-0's gpu-0 and
      gpu-1 (the H100s are Hopper). gpu-1 is free but gpu-0's memory slices 0–2 are held by the
      notebooks, so the claim cannot be allocated until they end at 3600 s: it waits 3600 − 60 = 3540 s
      for a node (not for quota: there is no Kueue) and runs 3600 → 5400 s.
    * Device-hours: h100-0 2 × 2 h = 4; a100-0 3 slices × 1 h + 2 GPUs × 0.5 h = 4.
    """
    resolved = load(str(DRA_EXAMPLE))
    assert resolved.warnings == ()  # nothing in the dra: section is left out of the run
    result = run_one(resolved).result
    pods = pod_columns(result)
    devices: dict[str, list[tuple[str, str]]] = {}
    for job, node, held in zip(pods["job_id"], pods["node"], pods["dra_devices"], strict=True):
        devices.setdefault(job, []).append((node, held))
    assert devices == {
        "train-h100": [("h100-0", "gpu.nvidia.com/h100-0/gpu-0;gpu.nvidia.com/h100-0/gpu-1")],
        "notebooks": [("a100-0", f"gpu.nvidia.com/a100-0/gpu-0-mig-19-{start}-1") for start in range(3)],
        "finetune-a100": [("a100-0", "gpu.nvidia.com/a100-0/gpu-0;gpu.nvidia.com/a100-0/gpu-1")],
    }
    jobs = job_columns(result)
    assert jobs["queue_wait_s"].tolist() == [0.0, 0.0, 3540.0]
    assert jobs["node_wait_s"].tolist() == [0.0, 0.0, 3540.0]
    assert jobs["completion_s"].tolist() == [7200.0, 3600.0, 5400.0 - 60.0]
    nodes = node_columns(result)
    assert nodes["node"] == ["h100-0", "a100-0"]
    assert nodes["dra_device_hours"].tolist() == pytest.approx([4.0, 4.0])


def test_examples_export_what_the_schemas_take() -> None:
    """The DRA example's templates come out of export as kubernetes-validate 1.35 takes them (CEL
    selectors included); the TAS example's Topology and flavor keep the scenario's levels and pass
    Kueue's v1beta2 CRD schemas."""
    dra_docs = list(yaml.safe_load_all(render(load(str(DRA_EXAMPLE)).scenario)["dra.yaml"]))
    assert [d["metadata"]["name"] for d in dra_docs] == ["h100-pair", "mig-1g", "ampere-80g"]
    for doc in dra_docs:
        assert kubernetes_validate.validate(doc, "1.35", strict=True) == "1.35"
    kueue_docs = [d for d in yaml.safe_load_all(render(load(str(TAS_EXAMPLE)).scenario)["kueue.yaml"]) if d]
    (topology,) = [d for d in kueue_docs if d["kind"] == "Topology"]
    levels = [level["nodeLabel"] for level in topology["spec"]["levels"]]
    assert levels == ["example.com/block", "example.com/rack", "kubernetes.io/hostname"]
    for doc in kueue_docs:
        if doc["kind"] in ("Topology", "ResourceFlavor"):
            assert list(crd_validator_for(doc["kind"]).iter_errors(doc)) == []


@pytest.mark.parametrize("example", [DRA_EXAMPLE, TAS_EXAMPLE], ids=["dra", "tas"])
def test_examples_run_as_an_experiment(example: Path, tmp_path: Path) -> None:
    """Each example as the base of a two-variant experiment over two seeds: every run finishes all its
    jobs (the experiment's replicates bootstrap the job list) without a warning that DRA or TAS objects
    were left out."""
    plan = tmp_path / "experiment.yaml"
    plan.write_text(
        f"name: check\nbase: {example}\nseeds: [1, 2]\nvariants:\n  - name: as-written\n"
        "  - name: most-allocated\n    policy: most-allocated\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    ran = CliRunner().invoke(app, ["experiment", "run", str(plan), "--out", str(out), "--jobs", "1"])
    assert ran.exit_code == 0, ran.output
    runs = sorted((out / "runs").glob("*/seed-*"))
    assert len(runs) == 4
    for run in runs:
        assert json.loads((run / "run.json").read_text())["warnings"] == []
        states = set(pq.read_table(run / "jobs.parquet").column("state").to_pylist())
        assert states == {"completed"}
