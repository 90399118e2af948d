"""The FGD paper's policies (Weng et al., USENIX ATC 2023) as policies of the main simulator: FGD picks the
node and GPU with the least growth of F_n(M), and on arrival-only workloads every policy places each pod
where the paper's own replay (fleetlab.placement.share_policies over a ShareState) puts it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import pod_columns
from fleetlab.placement.fragmentation import fragmentation_of, target_workload
from fleetlab.placement.share_policies import place
from fleetlab.placement.sharing import PodRequest, ShareState
from fleetlab.spec.loader import load

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sharing" / "fgd-sharing.yaml"
CPU_MILLI = 64_000


def _share(job_id: str, milli: int, submit_s: float) -> dict[str, Any]:
    return job(job_id, gpus=0, submit_s=submit_s, runtime="100h", gpu_milli=milli)


def test_fgd_colocates_the_second_half_gpu_share_as_the_formula_says() -> None:
    """M = {500-milli share: ½, whole GPU: ½}. After a first share on node 0 GPU 0 (free [500, 1000]),
    F_0(M) = ½·500 (the 500 remnant is a fragment for whole-GPU pods) + ½·0 = 250 and F_1(M) = 0. A second
    share on node 0 GPU 0 gives F = 0 (Δ −250); on node 0 GPU 1 or on node 1, F = 500 or 250 (Δ +250), so
    FGD takes node 0 GPU 0. kube-scheduler's default profile (LeastAllocated) spreads it to node 1."""
    jobs = [
        _share("s1", 500, 0),
        _share("s2", 500, 1),
        job("w1", gpus=1, submit_s=10, runtime="100h"),
        job("w2", gpus=1, submit_s=11, runtime="100h"),
    ]
    target = target_workload(
        np.full(4, 1000),
        np.ones(4, dtype=np.int64),
        np.asarray([500, 500, 1000, 1000]),
        np.zeros(4, np.int64),
    )
    cpu = CPU_MILLI - 1000
    assert fragmentation_of([500, 1000], cpu, 0, target) == pytest.approx(250)
    assert fragmentation_of([0, 1000], cpu - 1000, 0, target) == pytest.approx(0)
    assert fragmentation_of([500, 500], cpu - 1000, 0, target) == pytest.approx(500)
    assert fragmentation_of([500, 1000], CPU_MILLI - 1000, 0, target) == pytest.approx(250)
    res = scenario([pool("g", count=2, gpus=2)], jobs, scheduler={"tie_break": "first"})
    fgd = pod_columns(run_one(res, "fgd").result)
    assert fgd["node"][:2] == ["g-0", "g-0"] and fgd["gpus"][:2] == ["0", "0"]
    default = pod_columns(run_one(res, "default").result)
    assert default["node"][:2] == ["g-0", "g-1"]


def _random_jobs(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    shapes = [(0, 300), (0, 500), (0, 750), (0, 250), (1, 0), (2, 0), (4, 0), (-1, 0)]
    out = []
    for i in range(n):
        gpus, milli = shapes[int(rng.integers(len(shapes)))]
        cpu = int(rng.integers(1, 9))
        spec = job(f"j{i:03d}", gpus=max(gpus, 0), submit_s=i, runtime="1000h")
        spec["requests"]["cpu"] = str(cpu)
        if milli:
            spec["gpu_milli"] = milli
        out.append(spec)
    return out


def _request(spec: dict[str, Any]) -> PodRequest:
    cpu = int(spec["requests"]["cpu"]) * 1000
    if "gpu_milli" in spec:
        return PodRequest(cpu, 1024, 1, int(spec["gpu_milli"]), 0)
    gpus = int(spec["requests"].get("nvidia.com/gpu", 0))
    return PodRequest(cpu, 1024, gpus, 1000 if gpus else 0, 0)


@pytest.mark.parametrize("policy", ["fgd", "bestfit", "dotprod", "packing", "clustering"])
def test_arrival_only_placements_match_the_papers_replay(policy: str) -> None:
    """With no departures and first-index ties, every pod lands on the node and GPU the paper's replay
    chooses for the same arrivals (upstream: shared FGD/BestFit/... scores, lowest node on ties); a pod with
    no room on arrival fails there and waits here."""
    rng = np.random.default_rng(5)
    jobs = _random_jobs(rng, 70)
    pools = [pool("a", count=3, gpus=8), pool("b", count=3, gpus=4, cpu="24"), pool("c", count=2, gpus=2)]
    res = scenario(pools, jobs, scheduler={"tie_break": "first"})
    result = run_one(res, policy).result
    cols = pod_columns(result)
    requests = [_request(j) for j in jobs]
    target = target_workload(
        np.asarray([r.cpu_milli for r in requests]),
        np.asarray([r.num_gpu for r in requests]),
        np.asarray([r.gpu_milli for r in requests]),
        np.zeros(len(requests), dtype=np.int64),
    )
    cpu = np.asarray([64_000] * 3 + [24_000] * 3 + [64_000] * 2, dtype=np.int64)
    state = ShareState(
        cpu, np.full(8, 512 * 1024), np.asarray([8] * 3 + [4] * 3 + [2] * 2), np.zeros(8), target
    )
    names = list(result.nodes.names)
    placed = 0
    rows = zip(jobs, requests, cols["node"], cols["gpus"], cols["bound_s"], strict=True)
    for spec, request, node, gpus, bound_s in rows:
        choice = place(state, request, policy, np.random.default_rng(0))
        if choice is None:  # no room on arrival: the simulator retries it only once all arrivals are in
            assert bound_s != spec["submit_s"], spec["id"]
            continue
        assert names[choice.node] == node, (spec["id"], policy)
        if request.sharing:
            assert str(choice.gpu) == gpus, (spec["id"], policy)
        state.bind(request, choice.node, choice.gpu)
        placed += 1
    assert placed > 35


def test_fgd_on_the_sharing_example_leaves_fewer_fragmented_gpus_than_default() -> None:
    """examples/sharing/fgd-sharing.yaml: FGD's time-weighted F_N(M) is below the default profile's."""
    res = load(str(EXAMPLE))
    default = summarize(run_one(res, "default").result)
    fgd = summarize(run_one(res, "fgd").result)
    assert fgd.frag_gpu_milli_mean < default.frag_gpu_milli_mean
    assert fgd.jobs_completed >= default.jobs_completed


def test_share_policies_are_accepted_in_the_scenario_and_listed_on_error() -> None:
    res = scenario([pool("g", count=1, gpus=2)], [_share("s", 300, 0)], scheduler={"policy": "fgd"})
    assert run_one(res).profile.share_policy == "fgd"
    with pytest.raises(ValueError, match="fgd"):
        scenario([pool("g")], [job("x")], scheduler={"policy": "nope"})


@pytest.mark.parametrize("policy", ["fgd", "random"])
def test_share_policies_are_deterministic_for_a_seed(policy: str) -> None:
    """Same scenario and seed: the same node and GPU for every pod (Random draws from the seeded stream)."""
    rng = np.random.default_rng(9)
    jobs = _random_jobs(rng, 40)
    for spec in jobs:
        spec["runtime"] = int(rng.integers(5, 60))
    res = scenario([pool("a", count=3, gpus=8), pool("b", count=2, gpus=4)], jobs)
    first, second = (pod_columns(run_one(res, policy).result) for _ in range(2))
    assert first["node"] == second["node"] and first["gpus"] == second["gpus"]
    other = pod_columns(run_one(res, policy, seed=123).result)
    assert policy == "fgd" or other["node"] != first["node"]


def test_a_class_profile_can_use_fgd_and_its_pods_get_fgds_gpus() -> None:
    """``class_profiles: {inference: fgd}``: a 300-milli share goes where FGD puts it, not best fit. After a
    400 share on GPU 0 (free [600, 1000]) and with M = {400: 1/6, 300: 1/6, 500: 4/6}, the 300 share on
    GPU 0 leaves a 300 remnant that the 400 and 500 shapes cannot use (F = 250), on GPU 1 none (F = 0)."""
    jobs = [_share("s400", 400, 0), _share("s300", 300, 1)]
    jobs += [_share(f"s500-{i}", 500, 10 + i) for i in range(4)]
    for spec in jobs:
        spec["class"] = "inference"
    pools = [pool("a", count=1, gpus=2)]
    by_class = scenario(pools, jobs, scheduler={"tie_break": "first", "class_profiles": {"inference": "fgd"}})
    preset = scenario(pools, jobs, scheduler={"tie_break": "first"})
    assert pod_columns(run_one(by_class).result)["gpus"][:2] == ["0", "1"]
    assert pod_columns(run_one(preset).result)["gpus"][:2] == ["0", "0"]  # best fit
