"""``int_sums`` (cost/billing.py): per-index integer sums equal to ``np.add.at``'s, by bincount or not."""

from __future__ import annotations

import numpy as np

from fleetlab.cost.billing import int_sums


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
