"""MIG geometry (NVIDIA MIG User Guide, ``nvidia-smi mig -lgipp`` placements; reference gpus.md §3) and MIG
node pools as the NVIDIA device plugin advertises them (mixed: ``nvidia.com/mig-<profile>``; single:
``nvidia.com/gpu``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.model.mig import MigLayoutError, available, place_layout, profiles
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load
from shared_data import shared_path

REFERENCE = shared_path("reference", "gpus", "mig_profiles.json")


def test_profile_names_per_model_follow_nvidia_tables() -> None:
    """Names change with the memory per slice (MIG User Guide: A100-80GB 1g.10gb … 7g.80gb)."""
    assert list(profiles("A100-80GB")) == [
        "1g.10gb",
        "1g.10gb+me",
        "1g.20gb",
        "2g.20gb",
        "3g.40gb",
        "4g.40gb",
        "7g.80gb",
    ]
    assert "1g.5gb" in profiles("A100-40GB") and "7g.141gb" in profiles("H200")
    assert "3g.90gb" in profiles("B200") and "7g.94gb" in profiles("H100-NVL")
    with pytest.raises(MigLayoutError, match="has no MIG support"):
        profiles("L4")


def test_counts_interact_after_one_3g_instance() -> None:
    """gpus.md §3.1 rule 2: one 3g.40gb on an empty A100-80GB takes 3g availability from 2 to 1 and 1g.10gb
    from 7 to 3 (the 3g sits on memory slices 0-3; 1g may start at 4, 5, 6)."""
    assert available("A100-80GB", [])["3g.40gb"] == 2
    assert available("A100-80GB", [])["1g.10gb"] == 7
    placed = place_layout("A100-80GB", ["3g.40gb"])
    assert placed[0].start == 0
    free = available("A100-80GB", placed)
    assert free["3g.40gb"] == 1 and free["1g.10gb"] == 3 and free["4g.40gb"] == 0 and free["7g.80gb"] == 0


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (["2g.10gb@6"], r"2g.10gb cannot start at memory slice 6 on A100-40GB: allowed starts \{0,2,4\}:2"),
        (["1g.10gb@1"], r"cannot start at memory slice 1 .* \{0,2,4,6\}:2"),
        (["3g.20gb@0", "4g.20gb@0"], r"4g.20gb at slice 0 overlaps 3g.20gb at slice 0 \(memory slices 0-3\)"),
        (["1g.5gb+me", "1g.5gb+me"], r"at most one \+me instance per GPU|at most 1 instance"),
        (["1g.5gb"] * 8, r"layout entry 7 '1g.5gb': no room left"),
        (["4g.20gb", "4g.20gb"], r"layout entry 1"),
        (["5g.30gb"], r"A100-40GB has no MIG profile '5g.30gb'"),
    ],
)
def test_invalid_layouts_say_which_profile_cannot_start_where(layout: list[str], message: str) -> None:
    with pytest.raises(MigLayoutError, match=message):
        place_layout("A100-40GB", layout)


def test_valid_full_layouts() -> None:
    """gpus.md §3.1 rule 1: 4g + 3g, 3g + 3g, 3g + 2g + 1g, 2g ×3 + 1g and 7 × 1g all fit."""
    for layout in (
        ["4g.20gb", "3g.20gb"],
        ["3g.20gb", "3g.20gb"],
        ["3g.20gb", "2g.10gb", "1g.5gb"],
        ["2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb"],
        ["1g.5gb"] * 7,
    ):
        placed = place_layout("A100-40GB", layout)
        assert len(placed) == len(layout)
    assert [p.start for p in place_layout("A100-40GB", ["3g.20gb", "2g.10gb", "1g.5gb"])] == [0, 4, 6]


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference not present")
def test_reference_example_layouts() -> None:
    """Every valid example layout of the reference table places; every invalid one is refused."""
    data = json.loads(REFERENCE.read_text())
    by_id = {p.profile_id: p.name for p in profiles("A100-40GB").values()}
    examples = data["example_layouts"]
    for case in examples["valid"]:
        entries = [f"{by_id[pid]}@{start}" for pid, start in case["layout"]]
        assert len(place_layout("A100-40GB", entries)) == len(entries), case["names"]
    for case in examples["invalid"]:
        entries = [f"{by_id[pid]}@{start}" for pid, start in case["layout"]]
        with pytest.raises(MigLayoutError):
            place_layout("A100-40GB", entries)


def _mig_pool(**mig: Any) -> dict[str, Any]:
    return pool(count=1, gpus=8, gpu_model="A100-80GB", mig=mig)


def test_mixed_pool_advertises_one_resource_per_profile_and_places_pods() -> None:
    """mixed strategy: 4 MIG GPUs × (3g.40gb + 2g.20gb + 1g.10gb) and 4 whole GPUs; a pod asking for
    nvidia.com/mig-3g.40gb binds to an instance, the fifth such pod waits with kube-scheduler's message."""
    jobs = [job(f"m{i}", gpus=0, runtime=100) for i in range(5)]
    for entry in jobs:
        entry["requests"]["nvidia.com/mig-3g.40gb"] = 1
    resolved = scenario([_mig_pool(layout=["3g.40gb", "2g.20gb", "1g.10gb"], gpus=4)], jobs)
    node_pool = resolved.scenario.cluster.pools[0]
    assert node_pool.device_resources() == {
        "nvidia.com/gpu": 4,
        "nvidia.com/mig-3g.40gb": 4,
        "nvidia.com/mig-2g.20gb": 4,
        "nvidia.com/mig-1g.10gb": 4,
    }
    labels = node_pool.node_labels(0)
    assert labels["nvidia.com/mig.strategy"] == "mixed" and labels["nvidia.com/mig-3g.40gb.count"] == "4"
    result = run_one(resolved, "default").result
    assert result.jobs.completed.all()
    starts = sorted(int(s) for s in result.segments.start_ms)
    assert starts == [0, 0, 0, 0, 100_000]  # four instances, the fifth pod waits for one to free up


def test_single_strategy_advertises_instances_as_gpus_and_needs_one_profile() -> None:
    node_pool = scenario([_mig_pool(strategy="single", layout=["1g.10gb"] * 7)], []).scenario.cluster.pools[0]
    assert node_pool.device_resources() == {"nvidia.com/gpu": 56}
    with pytest.raises(ValidationError, match="single strategy needs every MIG device"):
        scenario([_mig_pool(strategy="single", layout=["3g.40gb", "1g.10gb"])], [])


def test_invalid_pool_layout_is_a_clear_spec_error(tmp_path: Path) -> None:
    """A scenario file with an impossible layout fails to load, naming the pool field and the entry: two
    3g.40gb fill all 8 memory slices of an A100-80GB (starts {0,4}:4), so no 2g.20gb fits in any placement.
    (3g.40gb + 4g.40gb, once refused here in that order, is valid: 4g.40gb at 0, 3g.40gb at 4.)"""
    data = {
        "cluster": {"pools": [_mig_pool(layout=["3g.40gb", "3g.40gb", "2g.20gb"])]},
        "workload": {"jobs": [job("j", gpus=1)]},
    }
    path = tmp_path / "mig.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        SpecError, match=r"cluster\.pools\[0\].*layout entry 2 '2g.20gb': no room left"
    ) as err:
        load(str(path))
    assert "overlaps 3g.40gb at slice 4" in str(err.value)
    with pytest.raises(ValidationError, match="has no MIG support"):
        scenario([pool(count=1, gpus=8, gpu_model="L4", mig={"layout": ["1g.10gb"]})], [])
