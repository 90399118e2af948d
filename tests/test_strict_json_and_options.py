"""Every ``--json`` output parses with a strict JSON parser, and every float option refuses inf and NaN."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from fleetlab.report.strict_json import finite_or_null, strict_dumps
from test_cli import files, invoke  # noqa: F401  (fixture)


def strict_loads(text: str) -> Any:
    """json.loads that refuses NaN and Infinity, as jq, JSON.parse and Go's decoder do."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_null_at_any_depth() -> None:
    value = {"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": (2.5, "x"), "e": 3}
    assert finite_or_null(value) == {"a": None, "b": [1.0, None, {"c": None}], "d": [2.5, "x"], "e": 3}
    assert strict_loads(strict_dumps(value)) == finite_or_null(value)


def test_simulate_json_with_unfinished_jobs_is_strict_json(files: dict[str, Path]) -> None:  # noqa: F811
    # The oversized scenario has a job that never fits: averages over finished jobs have no value.
    result = invoke("simulate", str(files["oversized"]), "--json")
    assert result.exit_code == 0, result.output
    summary = strict_loads(result.stdout)
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout
    assert isinstance(summary, dict)


@pytest.mark.parametrize(
    "args",
    [
        ("plan", "gpus", "--reference-gpu", "H100", "--steps", "10", "--throughput", "inf"),
        ("plan", "gpus", "--reference-gpu", "H100", "--steps", "10", "--throughput", "1e308"),
        ("plan", "gpus", "--reference-gpu", "H100", "--steps", "10", "--throughput", "nan"),
        ("cost", "checkpoint", "--write-time", "5m", "--rate-per-hour", "inf"),
        ("cost", "checkpoint", "--write-time", "5m", "--price-per-hour", "nan", "--mtbi", "6h"),
    ],
    ids=["throughput_inf", "throughput_1e308", "throughput_nan", "rate_inf", "price_nan"],
)
def test_non_finite_or_huge_float_option_exits_2(args: tuple[str, ...]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_checkpoint_mtbi_1ms_is_refused_not_an_overflow() -> None:
    # 1 ms between interruptions with a 5-minute write: no interval lets the job progress.
    result = invoke("cost", "checkpoint", "--write-time", "5m", "--mtbi", "1ms")
    assert result.exit_code == 2, result.output
    assert "never make progress" in result.stderr


def test_checkpoint_restart_far_longer_than_mtbi_is_refused() -> None:
    result = invoke("cost", "checkpoint", "--write-time", "1s", "--mtbi", "2s", "--restart-time", "10m")
    assert result.exit_code == 2, result.output
    assert "never make progress" in result.stderr


def test_negative_seed_option_is_refused(files: dict[str, Path]) -> None:  # noqa: F811
    result = invoke("simulate", str(files["small"]), "--seed", "-5")
    assert result.exit_code == 2, result.output
    assert "--seed: -5 is outside 0..9,223,372,036,854,775,807" in result.stderr


def test_fgd_seed_range_of_a_billion_is_refused_before_allocating() -> None:
    from fleetlab.cli.fgd import parse_seeds

    with pytest.raises(ValueError, match="number at most 1,000"):
        parse_seeds("0-1000000000")
    assert parse_seeds("42-44,43") == [42, 43, 44]
