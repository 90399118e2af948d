"""StepSeries: the columnar recorder behind the timeline and the fragmentation / stranded samples."""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.sim.step_series import StepSeries


def test_rows_are_kept_only_when_values_change_and_a_same_time_row_replaces_the_last() -> None:
    series = StepSeries(3)
    assert not series and len(series) == 0
    assert series.rows().shape == (0, 3)
    series.record(0, (4, 1))
    series.record(5, (4, 1))  # unchanged: no row
    series.record(10, (6, 1))  # changed: a row at 10
    series.record(10, (7, 2))  # same instant: replaces the row at 10
    series.record(20, (7, 2))  # unchanged
    series.record(30, (0, 0))
    assert len(series) == 3 and series
    assert series.last() == (30, 0, 0)
    expected = [[0, 4, 1], [10, 7, 2], [30, 0, 0]]
    assert series.rows().tolist() == expected
    assert series.rows().dtype == np.int64
    columns = series.columns()
    assert columns.tolist() == [[0, 10, 30], [4, 7, 0], [1, 2, 0]]
    assert columns[1].flags.c_contiguous


def test_a_same_time_replacement_compares_with_the_replaced_row_only() -> None:
    """The rule is the old list's: compare with the last row; at the same time overwrite it. Going back to
    the value of the row before leaves two equal rows (both instants are real steps of the run)."""
    series = StepSeries(2)
    series.record(0, (1,))
    series.record(10, (2,))
    series.record(10, (1,))  # replaces (10, 2) by (10, 1): equal to the row at 0, still kept
    assert series.rows().tolist() == [[0, 1], [10, 1]]


def test_many_rows_round_trip_through_the_flat_buffer() -> None:
    series = StepSeries(4)
    for t in range(1000):
        series.record(t, (t, 2 * t, t % 7))
    rows = series.rows()
    assert (series.columns() == rows.T).all()
    assert rows.shape == (1000, 4)
    assert (rows[:, 0] == np.arange(1000)).all() and (rows[:, 2] == 2 * np.arange(1000)).all()


def test_a_row_of_the_wrong_width_is_refused_and_an_empty_series_has_no_last_row() -> None:
    series = StepSeries(3)
    with pytest.raises(ValueError, match="2"):
        series.record(0, (1,))
    with pytest.raises(IndexError):
        series.last()


def test_close_hands_over_the_buffer_as_the_rows_worked_by_hand() -> None:
    """Rows (0, 4, 1) and (10, 7, 2) go into the buffer at the next change; (30, 0, 0) is held apart until
    ``close`` appends it. The rows returned are the buffer itself: writing to them is seen in their
    transpose, and the series is empty afterwards."""
    series = StepSeries(3)
    series.record(0, (4, 1))
    series.record(10, (6, 1))
    series.record(10, (7, 2))
    series.record(30, (0, 0))
    rows = series.close()
    assert rows.dtype == np.int64 and rows.shape == (3, 3)
    assert rows.tolist() == [[0, 4, 1], [10, 7, 2], [30, 0, 0]]
    columns = rows.T
    assert columns.tolist() == [[0, 10, 30], [4, 7, 0], [1, 2, 0]]
    rows[1, 1] = 99
    assert columns[1, 1] == 99  # a view, not a copy
    assert len(series) == 0 and not series
    assert StepSeries(2).close().shape == (0, 2)


def test_close_gives_the_rows_and_columns_the_copies_gave_on_random_series() -> None:
    rng = np.random.default_rng(7)
    for width in (2, 3, 9):
        for _ in range(20):
            a, b = StepSeries(width), StepSeries(width)
            now = 0
            for _ in range(int(rng.integers(0, 200))):
                now += int(rng.integers(0, 3))  # same-instant replacements are frequent
                values = tuple(int(v) for v in rng.integers(0, 3, width - 1))
                a.record(now, values)
                b.record(now, values)
            rows, columns = a.rows(), a.columns()
            closed = b.close()
            assert closed.shape == rows.shape and (closed == rows).all()
            assert (columns == closed.T).all()
