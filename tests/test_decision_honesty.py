"""What a decision may claim, each rule on a world worked by hand: cost over the common window on a fixed
cluster, deterministic replicates said so (never zero-width intervals), resampled replicates of a recorded
workload, the one-change rule (a two-change ``set`` refused; files that differ in two things warned),
minimum effects and ``--seeds auto``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from builders import job, scenario
from fleetlab import cli
from fleetlab.experiment.effects import DEFAULT_MIN_EFFECTS, parse_min_effects
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.replicates import Resampling, resample_jobs, variation
from fleetlab.experiment.seeded import parse_seed_plan, seeds_to_add
from fleetlab.experiment.stats import Interval
from fleetlab.experiment.verdict import CandidateVerdict, Finding
from fleetlab.spec.errors import SpecError

runner = CliRunner()

#: A fixed cluster of 2 nodes × 2 H100 at $10/h and three 1 h jobs: j1 (1 GPU) at 0, j2 (1 GPU) at 1 s,
#: j3 (2 GPUs) at 2 s. default spreads j1 and j2 over both nodes, so j3 waits for j1: it runs 1 h → 2 h and
#: the run ends at 7200 s, billed 2 × $10 × 2 h = $40, $13.33 per job. most-allocated packs j1 and j2 on one
#: node and starts j3 at once on the other: the run ends at 3602 s, billed 2 × $10 × 3602/3600 h = $20.01,
#: $6.67 per job. Over the common window (the latest end, 7200 s) most-allocated's two nodes bill on for
#: 3598 s: + 2 × $10 × 3598/3600 = $19.99, so $40.00 and $13.33 per job: the same as default, as a fixed
#: cluster costs the same whatever the policy.
S_FRAG = """\
name: s_frag
seed: 1
cluster:
  pools:
    - {name: gpu, count: 2, gpu_model: H100, gpus_per_node: 2, cpu: "8", memory: 64Gi, price_per_hour: 10}
workload:
  jobs:
    - {id: j1, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}, runtime: 1h}
    - {id: j2, submit_s: 1, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}, runtime: 1h}
    - {id: j3, submit_s: 2, requests: {cpu: "2", memory: 2Gi, nvidia.com/gpu: 2}, runtime: 1h}
"""


@pytest.fixture(scope="module")
def s_frag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sfrag") / "s_frag.yaml"
    path.write_text(S_FRAG, encoding="utf-8")
    return path


def _compare(path: Path, *extra: str) -> dict[str, object]:
    args = ["compare", str(path), "--policy", "default", "--policy", "most-allocated", "--seeds", "3"]
    result = runner.invoke(cli.app, [*args, *extra, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def as_given(s_frag: Path) -> dict[str, object]:
    """``compare --json`` of S_FRAG replayed as given, 3 seeds."""
    return _compare(s_frag, "--resample", "off")


def _metric(payload: dict[str, object], key: str) -> dict[str, object]:
    return next(m for m in payload["metrics"] if m["metric"] == key)  # type: ignore[attr-defined,index,union-attr]


def test_cost_is_compared_over_the_common_window_on_a_fixed_cluster(
    s_frag: Path, as_given: dict[str, object]
) -> None:
    payload = as_given
    own = _metric(payload, "cost_per_completed_job")["values"]
    assert own["default"]["mean"] == pytest.approx(40 / 3)  # type: ignore[index]
    assert own["most-allocated"]["mean"] == pytest.approx(2 * 10 * 3602 / 3600 / 3)  # type: ignore[index]
    window = _metric(payload, "cost_per_completed_job_window")["values"]
    assert window["default"]["mean"] == pytest.approx(40 / 3)  # type: ignore[index]
    assert window["most-allocated"]["mean"] == pytest.approx(40 / 3)  # type: ignore[index]
    extension = _metric(payload, "cost_window_extension")["values"]["most-allocated"]  # type: ignore[index]
    assert extension["mean"] == pytest.approx(2 * 10 * 3598 / 3600)
    assert _metric(payload, "accounting_window_s")["values"]["default"]["mean"] == 7200.0  # type: ignore[index]
    # the rates at this load: $40 over 2 h = $20/h, × 730 h = $14,600 a month, for both
    rate = _metric(payload, "cost_rate_per_hour")["values"]
    assert rate["default"]["mean"] == rate["most-allocated"]["mean"] == pytest.approx(20.0)  # type: ignore[index]
    assert _metric(payload, "cost_per_month")["values"]["default"]["mean"] == pytest.approx(14_600.0)  # type: ignore[index]
    [verdict] = payload["verdict"]  # type: ignore[misc]
    cost = next(f for f in verdict["findings"] if f["metric"] == "cost_per_completed_job_window")
    assert cost["verdict"] == "no practical difference" and cost["difference"]["mean"] == pytest.approx(
        0, abs=1e-9
    )
    assert payload["accounting_window"] == "latest end"
    table = runner.invoke(cli.app, ["compare", str(s_frag), "--policy", "default", "--policy", "most-allocated",
                                    "--seeds", "2", "--resample", "off"])  # fmt: skip
    assert (
        "total cost, common window" in table.stdout
        and "cost per completed job, common window" in table.stdout
    )


def test_replicates_that_vary_only_tie_breaks_are_said_to_be_deterministic(
    s_frag: Path, as_given: dict[str, object]
) -> None:
    """The same world replayed as given: the seeds change nothing but tie-breaks (3 identical replicates),
    so one replicate is the answer: the waits of most-allocated are better exactly (seed 1: mean wait
    default (0 + 0 + 3598 s)/3 = 1199.3 s, most-allocated 0: −20.0 m), with no interval at all."""
    payload = as_given
    assert payload["replicates"]["deterministic"] is True  # type: ignore[index]
    assert "tie-breaks" in payload["replicates"]["vary"]  # type: ignore[index]
    [verdict] = payload["verdict"]  # type: ignore[misc]
    assert verdict["deterministic"] is True
    for finding in verdict["findings"]:
        assert finding["exact"] and finding["difference"]["low"] is None and finding["difference"]["n"] == 1
    wait = next(f for f in verdict["findings"] if f["metric"] == "queue_wait_mean_s")
    assert wait["verdict"] == "better" and wait["difference"]["mean"] == pytest.approx(-3598 / 3)
    text = runner.invoke(cli.app, ["compare", str(s_frag), "--seeds", "2", "--resample", "off"]).stdout
    assert "deterministic: one replicate is the answer" in text
    # Resampled (the default), the seeds vary the workload itself and the verdict says so.
    resampled = _compare(s_frag)
    assert resampled["replicates"]["deterministic"] is False  # type: ignore[index]
    assert "bootstrap of its 3 jobs by class and 1 h submit window" in resampled["replicates"]["vary"]  # type: ignore[index]


def test_bootstrap_keeps_the_class_and_window_mix_and_draws_runtimes_per_class() -> None:
    """Six jobs: training a (100 s), b (200 s) submitted in the first hour, c (300 s) in the second; batch
    d, e, f (10, 20, 30 s) in the first hour. Each (class, hour) stratum draws as many jobs as it has, so
    every replicate has 2 training jobs from the first hour, 1 from the second (c), 3 batch ones from the
    first; each runtime is one of its class's measured ones; arrivals move by at most the jitter."""
    jobs = [
        job("a", runtime=100, submit_s=10, **{"class": "training"}),
        job("b", runtime=200, submit_s=20, **{"class": "training"}),
        job("c", runtime=300, submit_s=4000, **{"class": "training"}),
        *(job(x, runtime=r, submit_s=30, **{"class": "batch"}) for x, r in (("d", 10), ("e", 20), ("f", 30))),
    ]
    table = scenario([{"name": "gpu", "count": 1, "cpu": "64", "memory": "512Gi", "gpu_model": "H100",
                       "gpus_per_node": 8}], jobs).jobs  # fmt: skip
    plan = Resampling(jitter_s=5.0)
    seen_runtimes: set[float] = set()
    draws = []
    for seed in range(20):
        out = resample_jobs(table, seed, plan)
        assert len(out) == 6 and len(set(out.ids.to_pylist())) == 6  # copies get ~2, ~3: ids stay unique
        ids = [i.split("~")[0] for i in out.ids.to_pylist()]
        classes = [t.job_class.value for t in (out.template_of(i) for i in range(6))]
        submit, runtime = out.column("submit_s"), out.column("runtime_s")
        assert np.all(np.diff(submit) >= 0)  # submit order kept
        late = [k for k in range(6) if submit[k] > 3600]
        assert [ids[k] for k in late] == ["c"]  # the second hour's only training job
        assert sorted(classes) == ["batch"] * 3 + ["training"] * 3
        for k in range(6):
            pool = {100.0, 200.0, 300.0} if classes[k] == "training" else {10.0, 20.0, 30.0}
            assert runtime[k] in pool
            seen_runtimes.add(float(runtime[k]))
        original = {"a": 10, "b": 20, "c": 4000, "d": 30, "e": 30, "f": 30}
        assert all(abs(submit[k] - original[ids[k]]) <= 5.0 for k in range(6))
        draws.append(tuple(ids))
        assert out == resample_jobs(table, seed, plan)  # the same seed, the same replicate
    assert len(set(draws)) > 5 and seen_runtimes == {10.0, 20.0, 30.0, 100.0, 200.0, 300.0}
    assert resample_jobs(table, 3, Resampling("off")) is table


def test_variation_names_what_the_seeds_vary() -> None:
    resolved = scenario([{"name": "gpu", "count": 1, "cpu": "8", "memory": "64Gi"}], [job("a", gpus=0)])
    fixed = variation(resolved.scenario, 1, Resampling("off"))
    assert (
        fixed.deterministic
        and fixed.text() == "the scheduler's tie-breaks; fixed: the workload (as given: 1 jobs)"
    )
    assert not variation(resolved.scenario, 1, Resampling()).deterministic


TWO_CHANGES = """\
name: two
base: two-teams
seeds: [1]
variants:
  - name: base
  - name: both
    set:
      pools[h100].count: 9
      scheduler.gang_scheduling: false
"""


def test_a_set_with_two_changes_is_refused_unless_it_is_a_bundle(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(TWO_CHANGES, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert "variants[1] ('both'): makes 2 changes" in message and "bundle: true" in message
    assert (
        "cluster.pools[h100].count: 4 → 9" in message
        and "scheduler.gang_scheduling: (absent) → false" in message
    )
    result = runner.invoke(cli.app, ["experiment", "run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "makes 2 changes" in result.output and "Traceback" not in result.output
    path.write_text(
        TWO_CHANGES.replace("  - name: both\n", "  - name: both\n    bundle: true\n"), encoding="utf-8"
    )
    experiment = load_experiment(path)
    both = experiment.variant("both")
    assert both.bundle and both.change.startswith("bundle of 2: ") and len(both.differences) == 2
    # The same edit on several entries of one list is one change (two ClusterQueues leave the cohort).
    path.write_text(TWO_CHANGES.replace(
        "      pools[h100].count: 9\n      scheduler.gang_scheduling: false\n",
        "      kueue[team-a].spec.cohortName: null\n      kueue[team-b].spec.cohortName: null\n",
    ), encoding="utf-8")  # fmt: skip
    assert load_experiment(path).variant("both").differences == (
        "kueue[*].spec.cohortName: research → null (2 entries)",
    )


def test_compare_prints_what_differs_and_warns_on_more_than_one_thing(tmp_path: Path) -> None:
    base = tmp_path / "a.yaml"
    base.write_text(S_FRAG, encoding="utf-8")
    one = tmp_path / "b.yaml"
    one.write_text(
        S_FRAG.replace("name: s_frag", "name: b").replace("price_per_hour: 10", "price_per_hour: 12")
    )
    two = tmp_path / "c.yaml"
    two.write_text(S_FRAG.replace("name: s_frag", "name: c").replace("count: 2", "count: 3")
                   .replace("runtime: 1h}\n    - {id: j2", "runtime: 2h}\n    - {id: j2"))  # fmt: skip
    result = runner.invoke(
        cli.app, ["compare", str(base), str(one), str(two), "--seeds", "2", "--resample", "off"]
    )
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "change: cluster.pools[gpu].price_per_hour: 10 → 12" in text
    assert "c (bundle): " in text and "a bundle of changes, not one: cluster.pools[gpu].count: 2 → 3" in text
    assert "warning: c differs from s_frag in 2 things" in text and "warning: b differs" not in text


def test_min_effects_parse_and_refuse_bad_values() -> None:
    effects = parse_min_effects(["queue_wait_mean_s=2m", "cost_per_completed_job=5%", "completion_p95_s=0"])
    assert (
        effects["queue_wait_mean_s"].of(10_000.0) == 120.0
    )  # an amount replaces the default max(60 s, 10 %)
    assert effects["cost_per_completed_job_window"].of(8.0) == pytest.approx(0.4)  # 5 % of $8
    assert effects["completion_p95_s"].of(5000.0) == 0.0
    assert DEFAULT_MIN_EFFECTS["queue_wait_p95_s"].of(3000.0) == 300.0  # max(60 s, 10 % of 3000 s)
    for bad in (
        "queue_wait_mean_s",
        "nope=1",
        "queue_wait_mean_s=abc",
        "cost_per_completed_job=-1",
        "queue_wait_mean_s=2000%",
    ):
        with pytest.raises(SpecError, match="--min-effect"):
            parse_min_effects([bad])
    result = runner.invoke(cli.app, ["compare", "--seeds", "2", "--min-effect", "queue_wait_mean_s=soon"])
    assert result.exit_code == 2 and "--min-effect" in result.output and "Traceback" not in result.output


def _open(more: int | None) -> CandidateVerdict:
    finding = Finding("queue_wait_mean_s", 700.0, Interval(-125.0, -174.7, -75.3, 3), "inconclusive", 70.0,
                      more_pairs=more)  # fmt: skip
    return CandidateVerdict("C", "A", 3, (finding,), family=3)


def test_seeds_auto_adds_seeds_until_decided_or_the_cap() -> None:
    assert parse_seed_plan("auto", 7).seeds == (7, 8, 9, 10, 11) and parse_seed_plan("auto", 7).cap == 40
    assert parse_seed_plan("auto:12", 0).cap == 12 and parse_seed_plan("4", 0).cap is None
    # The docs' worked example: C needs 1 more pair; at least 2 are added, at most doubling, within the cap.
    assert seeds_to_add([_open(1)], 3, 40) == 2
    assert seeds_to_add([_open(30)], 5, 40) == 5  # at most doubling: the estimate is refined on the way
    assert seeds_to_add([_open(30)], 5, 20) == 0  # 35 seeds would be needed, over the cap: stop now
    assert seeds_to_add([_open(None)], 5, 40) == 0  # on its minimum effect: more seeds will not settle it
    decided = CandidateVerdict(
        "B", "A", 3, (Finding("queue_wait_mean_s", 700.0, Interval(-130, -154, -105, 3), "better"),)
    )
    assert seeds_to_add([decided], 3, 40) == 0
    for bad in ("auto:3", "auto:x", "autox"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seed_plan(bad, 0)


def test_seeds_auto_on_the_command_line_says_how_the_seeds_grew(tmp_path: Path) -> None:
    from test_cli import SMALL

    path = tmp_path / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    args = ["compare", str(path), "--policy", "default", "--policy", "bin-packing", "--seeds", "auto:9"]
    result = runner.invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    assert "--seeds auto: 5 → " in result.stdout and "(at most 9)" in result.stdout
    grown = int(result.stdout.split("--seeds auto: 5 → ")[1].split()[0])
    assert 5 <= grown <= 9 and not math.isnan(grown)


def test_report_with_seeds_auto_grows_its_own_experiment_file(tmp_path: Path) -> None:
    from test_cli import SMALL

    path = tmp_path / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    args = [
        "report",
        str(path),
        "--out",
        str(tmp_path / "out"),
        "--policy",
        "default",
        "--policy",
        "bin-packing",
    ]
    result = runner.invoke(cli.app, [*args, "--seeds", "auto:7", "--jobs", "1", "--date", "2026-01-01"])
    assert result.exit_code == 0, result.output
    assert "--seeds auto: 5 → " in result.stdout and "Recommended: " in result.stdout
    grown = json.loads((tmp_path / "out" / "sweep" / "experiment.json").read_text())["seeds"]
    assert grown[:5] == [1, 2, 3, 4, 5] and 5 <= len(grown) <= 7
    manifest = json.loads((tmp_path / "out" / "sweep" / "manifest.json").read_text())
    assert manifest["finished"] == 2 * len(grown) and all("accounting" in r for r in manifest["runs"])
    page = (tmp_path / "out" / "report" / "index.html").read_text()
    assert "Report date 2026-01-01 (--date)" in page and "Placement policies on small" in page
    bad = runner.invoke(cli.app, ["report", str(path), "--out", str(tmp_path / "x"), "--resample", "maybe"])
    assert bad.exit_code == 2 and "--resample" in bad.output and "Traceback" not in bad.output
