"""IdColumn (sim/id_column.py): the result's job ids kept as the workload's Arrow array, read as strings,
against the list of strings the result held before."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

from fleetlab.sim import id_column
from fleetlab.sim.id_column import IdColumn


def test_a_small_column_worked_by_hand() -> None:
    ids = IdColumn(pa.array(["a", "bb", "job-3"], pa.large_string()))
    assert len(ids) == 3
    assert ids[0] == "a" and ids[2] == "job-3" and ids[-1] == "job-3" and ids[np.int64(1)] == "bb"
    assert list(ids) == ["a", "bb", "job-3"]
    assert ids == ["a", "bb", "job-3"] and ids != ["a", "bb"] and ids != ["a", "bb", "job-4"]
    assert ids.index("bb") == 1 and "job-3" in ids and "c" not in ids
    assert list(ids[1:]) == ["bb", "job-3"]
    assert list(ids[np.array([True, False, True])]) == ["a", "job-3"]  # a boolean mask keeps rows
    assert list(ids[np.array([2, 0])]) == ["job-3", "a"]  # positions take rows
    with pytest.raises(IndexError):
        ids[3]
    with pytest.raises(IndexError):
        ids[-4]
    assert IdColumn(["x", "y"]) == IdColumn(pa.array(["x", "y"], pa.string()))  # another Arrow type


def test_random_columns_read_as_the_list_did(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(id_column, "BLOCK_ROWS", 7)  # iteration crosses many blocks
    rng = random.Random(11)
    for _ in range(30):
        n = rng.randrange(0, 60)
        old = [f"job-{rng.randrange(10**9)}" for _ in range(n)]
        ids = IdColumn(pa.array(old, pa.large_string()))
        assert len(ids) == n and list(ids) == old and ids == old
        assert [ids[i] for i in range(n)] == old and [ids[-i - 1] for i in range(n)] == old[::-1]
        keep = np.asarray([rng.random() < 0.5 for _ in range(n)], dtype=bool)
        assert list(ids[keep]) == [v for v, k in zip(old, keep, strict=True) if k]
        assert pickle.loads(pickle.dumps(ids)) == old
