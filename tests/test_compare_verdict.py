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

from fleetlab.experiment.effects import MinEffect, ModelError
from fleetlab.experiment.seeded import SeedsError, parse_seeds
from fleetlab.experiment.verdict import DECISION_METRICS, DecisionRules, verdicts
from fleetlab.report.compare_seeds import job_states
from fleetlab.report.metric_names import format_change, format_value
from fleetlab.report.verdict_text import finding_line, finding_text, verdict_lines, verdict_summary
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


ANY_CHANGE = {m: MinEffect() for m in DECISION_METRICS}  # no practical floor: only the statistics


def test_verdict_gives_every_metric_its_word_and_interval() -> None:
    [v] = verdicts(_samples(), "A", rules=DecisionRules(min_effects=ANY_CHANGE))
    assert v.candidate == "B" and v.baseline == "A" and v.pairs == 3
    found = {f.metric: f for f in v.findings}
    # queue wait mean: per-seed differences 30, 30, 20 -> mean 26.667; s = sqrt((3.333² + 3.333² + 6.667²)/2)
    # = 5.7735; s/√3 = 3.3333; t(0.975, 2) = 4.302653 -> half-width 14.342 -> [12.32, 41.01]: excludes 0.
    # Paired t = 26.667 / 3.333 = 8.0; with 2 df, p = 1 − t/√(t² + 2) = 1 − 8/√66 = 0.01527. The Holm family
    # is the metrics with an interval: this and cost (p = 1 − 0.5/√2.25 = 0.6667): 2 × 0.01527 = 0.0305 < 0.05.
    wait = found["queue_wait_mean_s"]
    assert wait.word == "worse" and v.family == 2
    assert wait.difference.mean == pytest.approx(26.6667, abs=1e-3)
    assert wait.difference.low == pytest.approx(12.325, abs=1e-2)
    assert wait.difference.high == pytest.approx(41.009, abs=1e-2)
    assert wait.p_value == pytest.approx(1 - 8 / math.sqrt(66)) and wait.p_holm == pytest.approx(
        2 * wait.p_value
    )
    assert wait.relative == pytest.approx((80 / 3) / 200.0)  # baseline mean (100+200+300)/3 = 200
    assert finding_text(wait) == "queue wait mean +27s (+13%, interval +12s .. +41s)"
    # cost per completed job: differences 1, -1, 1 -> mean 0.333, half-width 4.3027·1.1547/√3 = 2.868: the
    # interval holds 0: inconclusive, with its interval, never "no difference".
    cost = found["cost_per_completed_job"]
    assert cost.word == "inconclusive" and cost.p_value == pytest.approx(1 - 0.5 / 1.5)
    assert finding_line(cost).startswith("inconclusive (−$2.54 .. +$3.20): cost per completed job")
    # p95 wait: identical in all three replicates: an exact difference of 0, never a zero-width interval.
    p95 = found["queue_wait_p95_s"]
    assert p95.exact and p95.word == "no practical difference" and math.isnan(p95.difference.low)
    # completion p95: the baseline has a value, the candidate none -> named as missing; SLO: nobody has
    # services, so it is not part of the verdict at all.
    assert v.no_data == ("completion_p95_s",) and "service_slo_attainment_pct" not in found
    assert verdict_summary(v) == "worse"
    assert verdict_lines(v)[0] == "B: worse"


def test_a_change_under_its_minimum_effect_is_no_practical_difference() -> None:
    """The same samples under the default floors: queue wait mean must move by max(60 s, 10 % of 200 s)
    = 60 s; its interval [12.3 s, 41.0 s] lies inside ±60 s, so it is no practical difference."""
    [v] = verdicts(_samples(), "A")
    wait = next(f for f in v.findings if f.metric == "queue_wait_mean_s")
    assert wait.min_effect == 60.0 and wait.word == "no practical difference"
    assert finding_line(wait) == (
        "no practical difference (+12s .. +41s; the minimum effect is ±60s): queue wait mean"
    )


def test_holm_worked_example_of_the_docs() -> None:
    """docs/decision.md, "A worked example": baseline A waits 600, 700, 800 s (mean 700: floor max(60 s,
    70 s) = 70 s); 3 candidates x 1 metric = a Holm family of 3.
    B: differences −130, −120, −140: mean −130, s 10, s/√3 5.774; interval −130 ± 4.303 × 5.774 =
       [−154.8, −105.2]; t against the floor (130 − 70)/5.774 = 10.39, p = 1 − 10.39/√(10.39² + 2) = 0.0091.
    C: differences −125, −105, −145: mean −125, s 20, s/√3 11.55; interval [−174.7, −75.3], beyond the floor
       on its own; t = (125 − 70)/11.55 = 4.763, p = 1 − 4.763/√(4.763² + 2) = 0.0414.
    D: differences −10, +5, −25: mean −10, s 15; interval [−47.3, +27.3], inside ±70: p = 1.
    Holm: 0.0091 × 3 = 0.027 < 0.05 (B better); 0.0414 × 2 = 0.083 ≥ 0.05 (C stays inconclusive, and with
    α/3 a fourth seed would do: t(1 − 0.05/6, 3) = 4.857, 4.857 × 20/√4 = 48.6 < 125 − 70); D: no practical
    difference."""
    waits = {"A": (600, 700, 800), "B": (470, 580, 660), "C": (475, 595, 655), "D": (590, 705, 775)}
    samples = {k: {s + 1: {"queue_wait_mean_s": float(w)} for s, w in enumerate(v)} for k, v in waits.items()}
    b, c, d = verdicts(samples, "A", metrics=("queue_wait_mean_s",))
    fb, fc, fd = b.findings[0], c.findings[0], d.findings[0]
    assert (fb.word, fc.word, fd.word) == ("better", "inconclusive", "no practical difference")
    assert (fb.difference.low, fb.difference.high) == (
        pytest.approx(-154.84, abs=0.01),
        pytest.approx(-105.16, abs=0.01),
    )
    assert (fc.difference.low, fc.difference.high) == (
        pytest.approx(-174.68, abs=0.01),
        pytest.approx(-75.32, abs=0.01),
    )
    assert fb.p_value == pytest.approx(0.00913, abs=1e-4) and fb.p_holm == pytest.approx(3 * fb.p_value)
    assert fc.p_value == pytest.approx(0.04136, abs=1e-4) and fc.p_holm == pytest.approx(2 * fc.p_value)
    assert fc.more_pairs == 1 and fd.p_value == 1.0 and fb.min_effect == 70.0


def test_a_lower_mean_within_noise_is_never_called_better() -> None:
    samples = {
        "A": {s: {"cost_per_completed_job": c} for s, c in ((1, 10.0), (2, 12.0), (3, 9.0))},
        "B": {s: {"cost_per_completed_job": c} for s, c in ((1, 9.0), (2, 12.5), (3, 8.0))},
    }
    [v] = verdicts(samples, "A", metrics=("cost_per_completed_job",))
    # differences -1, +0.5, -1: mean -0.5 (lower), but s = 0.866, half-width 4.303·0.866/√3 = 2.15 -> the
    # interval [−2.65, +1.65] holds 0 and reaches past the floor (2 % of $10.33 = $0.21): inconclusive.
    [f] = v.findings
    assert f.word == "inconclusive" and not v.better
    assert verdict_summary(v) == "inconclusive"
    assert "inconclusive (−$2.65 .. +$1.65)" in finding_line(f)


def test_one_seed_cannot_call_anything() -> None:
    samples = {"A": {1: {"queue_wait_mean_s": 10.0}}, "B": {1: {"queue_wait_mean_s": 99.0}}}
    [v] = verdicts(samples, "A", metrics=("queue_wait_mean_s",))
    assert v.better == v.worse == () and verdict_summary(v) == "not enough seeds to tell"


def test_deterministic_replicates_take_the_first_as_the_answer() -> None:
    """Replicates that vary only tie-breaks: the first seed is compared exactly against the floor. Seed 7:
    A waits 9000 s, B 8885 s: −115 s, under max(60 s, 10 % of 9000 s = 900 s): no practical difference,
    exact, never the zero-width interval that 5 identical replicates would give."""
    samples = {
        "A": {s: {"queue_wait_mean_s": 9000.0} for s in range(7, 12)},
        "B": {s: {"queue_wait_mean_s": 8885.0} for s in range(7, 12)},
    }
    [v] = verdicts(samples, "A", rules=DecisionRules(deterministic=True))
    [f] = v.findings
    assert v.deterministic and f.exact and f.difference.n == 1 and math.isnan(f.difference.low)
    assert f.word == "no practical difference" and f.min_effect == 900.0
    assert (
        finding_line(f)
        == "no practical difference (−115s, exact; the minimum effect is ±15.0m): queue wait mean"
    )
    # Against a floor of 60 s it is better, exactly, on the first seed.
    [v] = verdicts(
        samples,
        "A",
        rules=DecisionRules(deterministic=True, min_effects={"queue_wait_mean_s": MinEffect(60.0)}),
    )
    assert v.findings[0].word == "better" and "exact: seed 7" in finding_text(v.findings[0])


def test_an_effect_smaller_than_the_model_error_is_within_model_error() -> None:
    """Calibration missed the mean wait by 2.27 h (8172 s): a −115 s what-if, however sure, cannot be told
    apart from the model's own error."""
    samples = {
        "A": {s: {"queue_wait_mean_s": 9000.0 + s} for s in range(1, 6)},
        "B": {s: {"queue_wait_mean_s": 8885.0 + s + (s % 2)} for s in range(1, 6)},
    }
    error = {"queue_wait_mean_s": ModelError("queue_wait_mean_s", absolute=8172.0, source="calibration")}
    effects = {"queue_wait_mean_s": MinEffect(60.0)}
    [v] = verdicts(samples, "A", rules=DecisionRules(min_effects=effects, model_errors=error))
    [f] = v.findings
    assert f.word == "within model error" and f.model_error == 8172.0
    assert "calibration's error is ±2.27h" in finding_line(f)


def test_an_interval_inside_the_model_error_but_not_the_practical_minimum_is_within_model_error() -> None:
    """Mean wait 500 s; minimum effect 60 s; calibration's error 600 s. Paired differences −120, +100, −50,
    +20, 0 s: mean −10 s, sd √(26800 / 4) = 81.85 s, t(4, 0.975) = 2.776, half width 2.776 × 81.85 / √5
    = 101.6 s, so −111.6 .. +91.6 s. That is inside ±600 s but not inside ±60 s: a practical effect is possible and the
    model cannot tell it, so "within model error", not "no practical difference". Differences −5, +5, 0,
    +3, −3 s (sd √(68 / 4) = 4.12 s, half width 5.1 s: −5.1 .. +5.1 s) are inside ±60 s: "no practical difference"."""
    base = {s: {"queue_wait_mean_s": 500.0} for s in range(1, 6)}
    error = {"queue_wait_mean_s": ModelError("queue_wait_mean_s", absolute=600.0, source="calibration")}
    rules = DecisionRules(min_effects={"queue_wait_mean_s": MinEffect(60.0)}, model_errors=error)
    for diffs, word in (
        ((-120, 100, -50, 20, 0), "within model error"),
        ((-5, 5, 0, 3, -3), "no practical difference"),
    ):
        cand = {s: {"queue_wait_mean_s": 500.0 + d} for s, d in zip(range(1, 6), diffs, strict=True)}
        [v] = verdicts({"A": base, "B": cand}, "A", rules=rules)
        [f] = v.findings
        assert f.word == word, (diffs, f)
        if word == "within model error":
            assert (f.difference.low, f.difference.high) == (
                pytest.approx(-111.6, abs=0.1),
                pytest.approx(91.6, abs=0.1),
            )
    assert (f.difference.low, f.difference.high) == (
        pytest.approx(-5.1, abs=0.05),
        pytest.approx(5.1, abs=0.05),
    )
    assert "the minimum effect is ±60s" in finding_line(f)


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
    assert "*" not in result.stdout.split("┏")[1].split("level: mean")[0]


@pytest.mark.parametrize("seeds", ["0", "abc", "2,2"])
def test_bad_seeds_exit_2(small: Path, seeds: str) -> None:
    assert_clean_failure(invoke("compare", str(small), "--seeds", seeds), "--seeds")


def test_table_renders_at_80_columns_without_error(small: Path) -> None:
    from fleetlab.experiment.decision_context import compare_context
    from fleetlab.experiment.seeded import compare_seeds
    from fleetlab.report.compare_seeds import print_seeded

    cmp = compare_seeds([str(small)], ["default", "bin-packing"], (1, 2), workers=1)
    console = Console(width=80, record=True, color_system=None)
    print_seeded(console, cmp, compare_context(cmp))
    text = console.export_text()
    assert "Verdict against default (2 paired seeds" in text
    assert "bin-packing: " in text


def test_an_improvement_reads_with_a_minus_sign_throughout() -> None:
    samples = {
        "A": {s: {"queue_wait_mean_s": w} for s, w in ((1, 600.0), (2, 700.0), (3, 800.0))},
        "B": {s: {"queue_wait_mean_s": w} for s, w in ((1, 300.0), (2, 390.0), (3, 510.0))},
    }
    [v] = verdicts(samples, "A", metrics=("queue_wait_mean_s",))
    # differences −300, −310, −290: mean −300 s = −5.0m, −300/700 = −43 %; s = 10, half-width 4.303·10/√3 = 24.8 s;
    # floor max(60 s, 70 s) = 70 s: t = (300 − 70)/5.774 = 39.8, p = 1 − 39.8/√(39.8² + 2) = 0.0006
    assert verdict_summary(v) == "better"
    assert finding_text(v.findings[0]) == "queue wait mean −5.0m (−43%, interval −5.4m .. −4.6m)"


def test_level_intervals_are_clipped_to_what_the_figure_can_be() -> None:
    """Free GPUs no job can use: mean 6.40, half-width 17.77 over 5 seeds -> [−11.37, 24.17]; a count is
    never negative, so the level reads [0.00, 24.17]. An allocation ratio's interval stops at 100 %."""
    from fleetlab.experiment.stats import Interval
    from fleetlab.report.compare_seeds import level_text

    assert (
        level_text("stranded_gpus_end", Interval(6.40, 6.40 - 17.77, 6.40 + 17.77, 5)) == "6.40 [0.00, 24.17]"
    )
    assert level_text("gpu_allocation_ratio", Interval(0.95, 0.85, 1.05, 5)) == "95.0% [85.0%, 100.0%]"
    assert level_text("queue_wait_mean_s", Interval(546.0, -54.0, 1146.0, 5)) == "9.1m [0s, 19.1m]"
