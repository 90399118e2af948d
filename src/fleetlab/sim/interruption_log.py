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

    def boot_ms_per_node(self, n_nodes: int, end_ms: int) -> IntArray:
        """Billed ms each node slot spent booting a replacement, clipped to the run's end."""
        out = np.zeros(n_nodes, dtype=np.int64)
        if len(self.node):
            start = np.minimum(self.reclaim_ms, end_ms)
            stop = np.minimum(self.ready_ms, end_ms)
            np.add.at(out, self.node, np.maximum(stop - start, 0))
        return out
