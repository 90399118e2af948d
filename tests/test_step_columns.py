"""Step columns kept as their changes (sim/step_columns.py) against rows written out whole."""

from __future__ import annotations

import random

import numpy as np

from fleetlab.sim.step_columns import ChangeLog, StepColumns, changes_of


def dense(records: list[tuple[int, list[int]]], width: int) -> tuple[list[int], list[list[int]]]:
    """The rows as the recorder kept them before: one full row per time, a same-time row replacing it."""
    times: list[int] = []
    rows: list[list[int]] = []
    for now, row in records:
        if times and times[-1] == now:
            rows[-1] = row
        else:
            times.append(now)
            rows.append(row)
    return times, rows


def test_a_small_log_worked_by_hand() -> None:
    log = ChangeLog(3)
    log.record(0, [0, 5, 0])  # row 0: column 1 changes to 5
    log.record(10, [2, 5, 0])  # row 1: column 0 to 2
    log.record(10, [2, 7, 0])  # replaces row 1: column 0 to 2 and column 1 to 7 (against row 0)
    log.record(20, [2, 7, 0])  # row 2: nothing changes
    log.record(30, [0, 7, 4])  # row 3: columns 0 and 2
    steps = log.steps()
    assert list(log.times) == [0, 10, 20, 30]
    assert steps.rows == 4
    assert [(a.tolist(), v.tolist()) for a, v in steps.changes] == [
        ([1, 3], [2, 0]),
        ([0, 1], [5, 7]),
        ([3], [4]),
    ]
    assert steps.matrix().tolist() == [[0, 5, 0], [2, 7, 0], [2, 7, 0], [0, 7, 4]]


def test_random_logs_match_rows_written_out() -> None:
    rng = random.Random(7)
    for _ in range(200):
        width = rng.randint(0, 6)
        now, row = 0, [0] * width
        records = []
        for _ in range(rng.randint(0, 40)):
            now += rng.choice((0, 0, 1, 5))  # a same-time row replaces the last one
            row = [v if rng.random() < 0.6 else rng.randint(-3, 3) for v in row]
            records.append((now, list(row)))
        log = ChangeLog(width)
        for t, r in records:
            log.record(t, r)
        times, rows = dense(records, width)
        steps = log.steps()
        assert list(log.times) == times
        expected = np.asarray(rows, dtype=np.int64).reshape(len(rows), width)
        assert steps.matrix().tolist() == expected.tolist()
        again = StepColumns(len(rows), [changes_of(expected[:, k].copy(), len(rows)) for k in range(width)])
        assert again.matrix().tolist() == expected.tolist()
        for k in range(width):  # each change is a real change: no row repeats the value before it
            values = again.changes[k][1]
            before = np.concatenate(([0], values[:-1]))
            assert (values != before).all()
        log.record(now + 1, [9] * width)  # the log grows again once the steps were taken
        assert len(log.times) == len(times) + 1
