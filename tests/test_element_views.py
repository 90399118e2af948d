"""The flat memoryviews the hot paths read and write through (fleetlab.placement.element_views)."""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.placement.devices import GpuDevices
from fleetlab.placement.element_views import float_elements, int_elements


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
