"""What spot interruptions did in one run: one row per reclaimed node (columnar, like the other tables)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]


def _ints() -> IntArray:
    return np.zeros(0, dtype=np.int64)


@dataclass
class InterruptionLog:
    """Per interruption: the node slot, notice, reclaim and replacement-ready times (ms), pods evicted,
    compute lost (billing-unit ms: GPU-ms on GPU nodes) and its dollars; ``skipped``: trace rows that met
    no running node."""

    node: IntArray = field(default_factory=_ints)
    notice_ms: IntArray = field(default_factory=_ints)
    reclaim_ms: IntArray = field(default_factory=_ints)
    ready_ms: IntArray = field(default_factory=_ints)
    pods_evicted: IntArray = field(default_factory=_ints)
    lost_unit_ms: IntArray = field(default_factory=_ints)
    lost_gpu_ms: IntArray = field(default_factory=_ints)
    lost_dollars: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.node)
