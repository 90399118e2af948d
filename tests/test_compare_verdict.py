"""``compare`` over seeds: the verdict in words, intervals, folded rows, ``--seeds`` and ``--json``.

The statistics are checked on small hand-worked samples; the CLI's figures are checked against
``simulate --json`` run seed by seed, so the paired difference is recomputed from independent runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from fleetlab.experiment.seeded import SeedsError, parse_seeds
from fleetlab.experiment.verdict import verdicts
from fleetlab.report.compare_seeds import finding_text, job_states, verdict_lines, verdict_summary
from fleetlab.report.metric_names import format_change, format_value
from test_cli import SMALL, assert_clean_failure, invoke

NAN = math.nan


def _samples() -> dict[str, dict[int, dict[str, float]]]:
    base = {
        1: {"queue_wait_mean_s": 100.0, "queue_wait_p95_s": 50.0, "cost_per_completed_job": 10.0},
        2: {"queue_wait_mean_s": 200.0, "queue_wait_p95_s": 60.0, "cost_per_completed_job": 12.0},
        3: {"queue_wait_mean_s": 300.0, "queue_wait_p95_s": 70.0, "cost_per_completed_job": 14.0},
    }
    cand = {
        1: {"queue_wait_mean_s": 130.0, "queue_wait_p95_s": 50.0, "cost_per_completed_job": 11.0},
        2: {"queue_wait_mean_s": 230.0, "queue_wait_p95_s": 60.0, "cost_per_completed_job": 11.0},
        3: {"queue_wait_mean_s": 320.0, "queue_wait_p95_s": 70.0, "cost_per_completed_job": 15.0},
    }
    for seed in (1, 2, 3):
        base[seed] |= {"completion_p95_s": 1000.0, "service_slo_attainment_pct": NAN}
        cand[seed] |= {"completion_p95_s": NAN, "service_slo_attainment_pct": NAN}
    return {"A": base, "B": cand}


def test_verdict_names_only_significant_changes_with_their_size() -> None:
    [v] = verdicts(_samples(), "A")
    assert v.candidate == "B" and v.baseline == "A" and v.pairs == 3
    # queue wait mean: per-seed differences 30, 30, 20 -> mean 26.667; s = sqrt((3.333² + 3.333² + 6.667²)/2)
    # = 5.7735; s/√3 = 3.3333; t(0.975, 2) = 4.302653 -> half-width 14.342 -> [12.32, 41.01]: excludes 0.
    [finding] = v.findings
    assert finding.metric == "queue_wait_mean_s" and finding.word == "worse"
    assert finding.difference.mean == pytest.approx(26.6667, abs=1e-3)
    assert finding.difference.low == pytest.approx(12.325, abs=1e-2)
    assert finding.difference.high == pytest.approx(41.009, abs=1e-2)
    assert finding.relative == pytest.approx((80 / 3) / 200.0)  # baseline mean (100+200+300)/3 = 200
    assert finding_text(finding) == "queue wait mean +27s (+13%, interval +12s .. +41s)"
    # cost per completed job: differences 1, -1, 1 -> mean 0.333, half-width 4.3027·1.1547/√3 = 2.868:
    # the interval holds 0, so it is within noise, not "better". p95 wait: identical -> within noise.
    assert set(v.unchanged) == {"queue_wait_p95_s", "cost_per_completed_job"}
    # completion p95: the baseline has a value, the candidate none -> named as missing; SLO: nobody has
    # services, so it is not part of the verdict at all.
    assert v.no_data == ("completion_p95_s",)
    assert verdict_summary(v) == "worse"
    assert verdict_lines(v)[0] == "B: worse"


def test_a_lower_mean_within_noise_is_never_called_better() -> None:
    samples = {
        "A": {s: {"cost_per_completed_job": c} for s, c in ((1, 10.0), (2, 12.0), (3, 9.0))},
        "B": {s: {"cost_per_completed_job": c} for s, c in ((1, 9.0), (2, 12.5), (3, 8.0))},
    }
    [v] = verdicts(samples, "A", metrics=("cost_per_completed_job",))
    # differences -1, +0.5, -1: mean -0.5 (lower), but s = 0.866, half-width 4.303·0.866/√3 = 2.15 -> n.s.
    assert v.findings == () and v.unchanged == ("cost_per_completed_job",)
    assert verdict_summary(v) == "no significant difference"


def test_one_seed_cannot_call_anything() -> None:
    samples = {"A": {1: {"queue_wait_mean_s": 10.0}}, "B": {1: {"queue_wait_mean_s": 99.0}}}
    [v] = verdicts(samples, "A", metrics=("queue_wait_mean_s",))
    assert v.findings == () and verdict_summary(v) == "not enough seeds to tell"


def test_percentage_points_and_units() -> None:
    assert format_value("gpu_allocation_ratio", 0.567) == "56.7%"
    assert format_change("gpu_allocation_ratio", 0.042) == "+4.2 pp"  # 56.7% -> 60.9%
    assert format_change("service_slo_attainment_pct", -1.25) == "−1.2 pp"
    assert format_change("cost_per_completed_job", -0.355) == "−$0.35"
    assert format_change("queue_wait_mean_s", 462.0) == "+7.7m"
    assert format_change("evictions", 0.0) == "±0"
    assert format_value("frag_gpu_milli_mean", 27.25) == "27.25"


def test_job_states_fill_running_from_the_total() -> None:
    # 10 jobs: 6 completed, 2 never started, 1 failed -> 1 started and still running at the end.
    figures = {"jobs": 10.0, "jobs_completed": 6.0, "jobs_pending": 2.0, "jobs_failed": 1.0}
    assert job_states(figures) == {"completed": 6.0, "running": 1.0, "pending": 2.0, "failed": 1.0}


def test_parse_seeds() -> None:
    assert parse_seeds(None, 7) == (7, 8, 9, 10, 11)
    assert parse_seeds("3", 0) == (0, 1, 2)
    assert parse_seeds("9, 4,2", 0) == (9, 4, 2)
    for bad in ("0", "1001", "x", "1,1", "-1,2", "1,,2", "4294967296,1"):
        with pytest.raises(SeedsError, match="--seeds"):
            parse_seeds(bad, 0)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verdict") / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def test_json_differences_are_the_mean_of_per_seed_simulate_runs(small: Path) -> None:
    args = ("--policy", "default", "--policy", "most-allocated", "--seeds", "3")
    result = invoke("compare", str(small), *args, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["columns"] == ["default", "most-allocated"] and payload["seeds"] == [1, 2, 3]
    assert payload["baseline"] == "default" and payload["confidence"] == 0.95
    per_seed = {}
    for policy in ("default", "most-allocated"):
        for seed in (1, 2, 3):
            one = invoke("simulate", str(small), "--policy", policy, "--seed", str(seed), "--json")
            per_seed[policy, seed] = json.loads(one.stdout)
    rows = {m["metric"]: m for m in payload["metrics"]}
    for metric in ("queue_wait_mean_s", "cost_total", "completion_p95_s"):
        if metric not in rows:
            continue
        diffs = [per_seed["most-allocated", s][metric] - per_seed["default", s][metric] for s in (1, 2, 3)]
        got = rows[metric]["differences"]["most-allocated"]
        assert got["mean"] == pytest.approx(sum(diffs) / 3)
        assert got["significant"] == (got["low"] > 0 or got["high"] < 0)
        base = [per_seed["default", s][metric] for s in (1, 2, 3)]
        assert rows[metric]["values"]["default"]["mean"] == pytest.approx(sum(base) / 3)
    # Folded rows are zero in every run of both columns; nothing shown is zero everywhere.
    for metric in payload["folded_zero_everywhere"]:
        assert all(not per_seed[k].get(metric) for k in per_seed), metric
    [v] = payload["verdict"]
    assert v["candidate"] == "most-allocated" and v["pairs"] == 3
    assert v["text"].startswith("most-allocated: ")
    states = payload["jobs_by_state"]["default"]
    assert sum(states.values()) == pytest.approx(50)  # the small scenario's 50 jobs, every one in a state


def test_single_seed_says_no_change_can_be_called(small: Path) -> None:
    result = invoke("compare", str(small), "--seeds", "1")
    assert result.exit_code == 0, result.output
    assert "one seed gives no interval" in result.stdout
    assert "*" not in result.stdout.split("┏")[1].split("mean ±")[0]


@pytest.mark.parametrize("seeds", ["0", "abc", "2,2"])
def test_bad_seeds_exit_2(small: Path, seeds: str) -> None:
    assert_clean_failure(invoke("compare", str(small), "--seeds", seeds), "--seeds")


def test_table_renders_at_80_columns_without_error(small: Path) -> None:
    from fleetlab.experiment.seeded import compare_seeds
    from fleetlab.report.compare_seeds import print_seeded

    cmp = compare_seeds([str(small)], ["default", "bin-packing"], (1, 2), workers=1)
    console = Console(width=80, record=True, color_system=None)
    print_seeded(console, cmp)
    text = console.export_text()
    assert text.startswith("Verdict against default (2 paired seeds")
    assert "bin-packing: " in text


def test_an_improvement_reads_with_a_minus_sign_throughout() -> None:
    samples = {
        "A": {s: {"queue_wait_mean_s": w} for s, w in ((1, 600.0), (2, 700.0), (3, 800.0))},
        "B": {s: {"queue_wait_mean_s": w} for s, w in ((1, 300.0), (2, 390.0), (3, 510.0))},
    }
    [v] = verdicts(samples, "A", metrics=("queue_wait_mean_s",))
    # differences −300, −310, −290: mean −300 s = −5.0m, −300/700 = −43 %; s = 10, half-width 4.303·10/√3 = 24.8 s
    assert verdict_summary(v) == "better"
    assert finding_text(v.findings[0]) == "queue wait mean −5.0m (−43%, interval −5.4m .. −4.6m)"
