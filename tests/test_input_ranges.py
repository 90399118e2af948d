"""Numbers without bounds and sizes without caps: each is refused at load, naming the field and the limit.

The minimal case of each family: a value past int64, past what fits in memory, or not finite, in the
smallest valid scenario (tests/test_spec_errors.py ``minimal``), loaded as ``fleetlab validate`` loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetlab.model.limits import MAX_NODES, MAX_QUANTITY, MAX_SECONDS
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load
from test_spec_errors import job0, minimal, spec_error, write


def pool0(data: dict[str, Any]) -> dict[str, Any]:
    return data["cluster"]["pools"][0]


CASES: list[tuple[str, str, Any, str]] = [
    # (name, where, value, expected words); where is "pool", "job" or "top"
    ("cpu_9Ei_overflows_int64", "pool.cpu", "9Ei", "(2**53)"),
    ("memory_9Ei_overflows_int64", "pool.memory", "9Ei", "(2**53)"),
    ("gpus_per_node_2_pow_64", "pool.gpus_per_node", 2**64, "less than or equal to 64"),
    ("gpus_per_node_1e12", "pool.gpus_per_node", 10**12, "less than or equal to 64"),
    ("pool_count_one_million", "pool.count", 1_000_000, f"less than or equal to {MAX_NODES}"),
    ("price_per_hour_infinite", "pool.price_per_hour", float("inf"), "finite number"),
    ("priority_2_pow_64", "job.priority", 2**64, "less than or equal to 2147483647"),
    ("pods_one_billion", "job.pods", 10**9, "less than or equal to 150000"),
    ("submit_s_1e20", "job.submit_s", 1e20, f"{MAX_SECONDS:,} s"),
    ("data_size_8Ei_is_not_free", "job.data_size", "8Ei", "(2**53)"),
    ("seed_2_pow_64", "top.seed", 2**64, "less than or equal to 9223372036854775807"),
    ("seed_negative", "top.seed", -1, "greater than or equal to 0"),
    ("horizon_1e308", "top.horizon_s", 1e308, f"{MAX_SECONDS:,} s"),
]


@pytest.mark.parametrize(("name", "where", "value", "words"), CASES, ids=[c[0] for c in CASES])
def test_out_of_range_number_is_refused(
    tmp_path: Path, name: str, where: str, value: Any, words: str
) -> None:
    data = minimal()
    scope, field = where.split(".")
    target = {"pool": pool0(data), "job": job0(data), "top": data}[scope]
    target[field] = value
    err = spec_error(write(tmp_path, data))
    assert any(field in p and words in p for p in err.problems), err.problems


def test_autoscaling_max_1e9_is_refused_up_front(tmp_path: Path) -> None:
    data = minimal()
    pool0(data)["autoscaling"] = {"min": 0, "max": 10**9}
    err = spec_error(write(tmp_path, data))
    assert "autoscaling.max: Input should be less than or equal to 65000" in str(err)


def test_nodes_summed_over_pools_are_capped(tmp_path: Path) -> None:
    # Two pools of 40,000 nodes each: 80,000 > 65,000 although each pool alone is allowed.
    data = minimal()
    second = dict(pool0(data), name="gpu-b")
    pool0(data)["count"] = 40_000
    second["count"] = 40_000
    data["cluster"]["pools"].append(second)
    err = spec_error(write(tmp_path, data))
    assert "up to 80,000 nodes" in str(err) and f"at most {MAX_NODES:,}" in str(err)


def test_time_slicing_replicas_1e12_is_refused(tmp_path: Path) -> None:
    data = minimal()
    pool0(data)["time_slicing"] = {"replicas": 10**12}
    err = spec_error(write(tmp_path, data))
    assert "time_slicing.replicas: Input should be less than or equal to 1024" in str(err)


def test_slowdown_per_extra_pod_infinite_is_refused(tmp_path: Path) -> None:
    data = minimal()
    pool0(data)["time_slicing"] = {"replicas": 2, "slowdown_per_extra_pod": float("inf")}
    err = spec_error(write(tmp_path, data))
    assert "slowdown_per_extra_pod: Input should be a finite number" in str(err)


def test_quantity_at_the_limit_is_accepted(tmp_path: Path) -> None:
    # 2**53 bytes is exactly the cap (8 PiB): accepted; one byte more is refused.
    data = minimal()
    job0(data)["data_size"] = MAX_QUANTITY
    load(str(write(tmp_path, data)))
    job0(data)["data_size"] = MAX_QUANTITY + 1
    with pytest.raises(SpecError, match="larger than 9,007,199,254,740,992"):
        load(str(write(tmp_path, data)))


def test_generator_that_could_draw_too_many_pods_is_refused_before_drawing(tmp_path: Path) -> None:
    # 10,000,000 jobs x up to 1,000 pods each = 10**10 pods > 5,000,000: refused at load, before a
    # single job is generated.
    data = minimal()
    data["workload"] = {
        "generator": {
            "classes": [
                {
                    "name": "big",
                    "class": "training",
                    "arrivals_per_hour": 1,
                    "count": 10_000_000,
                    "pods": {"values": [1, 1000]},
                    "duration": {"kind": "lognormal", "median": "1h", "sigma": 0.5},
                }
            ]
        }
    }
    err = spec_error(write(tmp_path, data))
    assert "up to 10,000,000,000 pods" in str(err) and "at most 5,000,000" in str(err)


def test_inline_workload_pods_are_summed_against_the_cap(tmp_path: Path) -> None:
    # 40 jobs of 150,000 pods each = 6,000,000 pods > 5,000,000.
    data = minimal()
    template = job0(data)
    data["workload"]["jobs"] = [dict(template, id=f"j{i}", pods=150_000) for i in range(40)]
    with pytest.raises(SpecError, match="the workload has 6,000,000 pods; at most 5,000,000"):
        load(str(write(tmp_path, data)))
