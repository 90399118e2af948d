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
