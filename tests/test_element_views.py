"""The element views and cached row views the hot paths read and write through stay aliases of their arrays."""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.placement.devices import GpuDevices
from fleetlab.placement.element_views import float_elements, int64_elements, int_elements
from fleetlab.placement.state import ClusterState, NodeInfo
from fleetlab.sim.book import PodBook


def test_int_elements_are_row_major_and_write_through() -> None:
    array = np.arange(12, dtype=np.int64).reshape(3, 4)
    view = int_elements(array)
    assert len(view) == 12 and view[1 * 4 + 2] == 6 and type(view[0]) is int
    view[2 * 4 + 3] += 100
    assert array[2, 3] == 111


def test_float_elements_write_through() -> None:
    array = np.zeros(3, dtype=np.float64)
    view = float_elements(array)
    view[1] = 0.25
    assert array.tolist() == [0.0, 0.25, 0.0] and type(view[1]) is float


def test_views_refuse_other_dtypes_and_strided_arrays() -> None:
    with pytest.raises(TypeError):
        int_elements(np.zeros(3, dtype=np.int32))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        float_elements(np.zeros(3, dtype=np.int64))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        int_elements(np.zeros((4, 4), dtype=np.int64)[:, 1])


def test_whole_gpus_taken_and_released_through_the_views() -> None:
    devices = GpuDevices(3, 4)
    devices.milli_cap[:] = 1000
    devices.mem_cap[:] = 80
    devices.milli_cap[1, 0] = 0  # a MIG-like slot: never a whole GPU
    first = devices.take_whole(1, 2)
    second = devices.take_whole(1, 1)
    assert first.gpus == (1, 2) and second.gpus == (3,)
    assert devices.pods[1].tolist() == [0, 1, 1, 1] and devices.pods[[0, 2]].sum() == 0
    assert devices.milli_used[1].tolist() == [0, 1000, 1000, 1000]
    assert devices.mem_used[1].tolist() == [0, 80, 80, 80]
    with pytest.raises(RuntimeError):
        devices.take_whole(1, 1)
    devices.release(1, first)
    assert devices.pods[1].tolist() == [0, 0, 0, 1] and devices.milli_used[1].tolist() == [0, 0, 0, 1000]
    assert devices.take_whole(1, 2) is first  # one shared Holding per tuple of GPUs


def test_pod_book_views_alias_its_columns() -> None:
    first_pod = np.array([0, 2, 3], dtype=np.int64)
    book = PodBook(3, 2, np.array([0, 0, 1], dtype=np.int64), first_pod)
    book.node_at[1] = 7
    book.done_fraction_at[2] = 0.5
    book.attempt_at[0] += 1
    assert book.node.tolist() == [-1, 7, -1] and book.done_fraction[2] == 0.5 and book.attempt[0] == 1
    assert book.pods_of(0) == range(0, 2) and book.pods_of(1) == range(2, 3)
    book.log_release(1, 50, 0, False)
    assert [(s.pod, s.node, s.ready_ms, s.end_ms) for s in book.segments] == [(1, 7, 50, 50)]


def test_state_rows_and_usage_key_follow_bind_and_release() -> None:
    nodes = [NodeInfo(f"n{i}", 0, {}, (), {"cpu": 8000 * (i + 1), "pods": 110}) for i in range(3)]
    state = ClusterState(nodes)
    request = np.zeros(len(state.resource_names), dtype=np.int64)
    request[state.cpu_col], request[state.pods_col] = 1500, 1
    nonzero = np.array([1500, 0], dtype=np.int64)
    state.bind(1, request, nonzero)
    state.bind(1, request, nonzero)
    state.release(1, request, nonzero)
    assert state.requested[1].tolist() == request.tolist() and state.requested[[0, 2]].sum() == 0
    assert (state.free == state.allocatable - state.requested).all()
    assert state.nonzero_requested[1].tolist() == [1500, 0] and state.pod_count.tolist() == [0, 1, 0]
    assert state.requested_at[1 * state.row_width + state.cpu_col] == 1500
    expected = np.concatenate(
        [state.requested[1], state.nonzero_requested[1], state.free[1], [state.alloc_class[1]]]
    ).astype(np.int64)
    assert state.node_usage_key(1) == expected.tobytes()


def test_int64_elements_reads_any_integer_column_as_python_ints() -> None:
    """An int32 column is converted (a copy: writing the column later is not seen); an int64 column is read
    in place (a write to the column is seen)."""
    small = np.array([3, -1, 70000], dtype=np.int32)
    view = int64_elements(small)
    assert list(view) == [3, -1, 70000] and type(view[2]) is int
    small[0] = 9
    assert view[0] == 3
    wide = np.array([5, 2**40], dtype=np.int64)
    same = int64_elements(wide)
    wide[0] = 6
    assert list(same) == [6, 2**40]
    assert len(int64_elements(np.zeros(0, dtype=np.int16))) == 0
