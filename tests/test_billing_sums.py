"""cost/billing.py: ``int_sums``, per-index integer sums equal to ``np.add.at``'s (by bincount or not), and
``node_costs`` computed once per run while the run and its tables stay the same objects."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from fractions import Fraction

import numpy as np

from builders import job, pool, scenario
from fleetlab.cost.billing import int_sums, node_costs
from fleetlab.experiment.run import run_one


def test_small_sums_worked_by_hand() -> None:
    # index 0: 5 + (-2) = 3; index 1: nothing = 0; index 2: 7; index 3 (n=4): 0
    out = int_sums(np.array([0, 2, 0]), np.array([5, 7, -2], dtype=np.int64), 4)
    assert out.dtype == np.int64
    assert out.tolist() == [3, 0, 7, 0]


def test_no_values_gives_zeros() -> None:
    assert int_sums(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 3).tolist() == [0, 0, 0]


def test_sums_past_float_precision_stay_exact() -> None:
    # 2**53 + 1 is not a float64: the sum must come out as the integer, as np.add.at gives it
    values = np.array([2**53, 1, 2**60, 3], dtype=np.int64)
    out = int_sums(np.array([1, 1, 0, 0]), values, 2)
    assert out.tolist() == [2**60 + 3, 2**53 + 1]


def test_random_sums_match_add_at() -> None:
    rng = np.random.default_rng(7)
    for high in (10, 2**20, 2**40, 2**58):
        index = rng.integers(0, 50, size=5000)
        values = rng.integers(-high, high, size=5000, dtype=np.int64)
        expected = np.zeros(50, dtype=np.int64)
        np.add.at(expected, index, values)
        assert int_sums(index, values, 50).tolist() == expected.tolist()


def test_node_costs_are_reused_for_the_same_run_only() -> None:
    # one 8-GPU node (the builders' default pool) runs a 4-GPU job for 3600 s: compute is 4 x 3600 s of
    # GPU time, half the node's GPU-ms over the hour
    result = run_one(scenario([pool("gpu", count=1)], [job("a", gpus=4, runtime=3600)]), "scenario").result
    first = node_costs(result)
    assert node_costs(result) is first  # asked again for the same run: the same figures, not recomputed
    assert first.units["compute"].tolist() == [4 * 3_600_000]
    shifted = dataclasses.replace(result, segments=dataclasses.replace(result.segments))
    again = node_costs(shifted)  # another result object: computed anew, to the same figures
    assert again is not first
    assert again.billed == first.billed and again.dollars["compute"] == first.dollars["compute"]
    other = dataclasses.replace(shifted, end_ms=shifted.end_ms)
    assert node_costs(other) is not again
    assert isinstance(first.billed[0], Fraction)
    gone = weakref.ref(result)
    del result, shifted, other
    gc.collect()
    assert gone() is None  # the cache does not keep a run alive
