"""Work, checkpoints and what an eviction costs.

A running pod writes a checkpoint after every ``interval`` of compute, each taking ``write`` of wall time
(compute pauses while it is written). Evicted, it keeps the work up to its last completed checkpoint and
loses the rest; with no checkpoints it loses everything it computed in that run.
"""

from __future__ import annotations


def wall_needed(work_ms: int, interval_ms: int | None, write_ms: int) -> int:
    """Wall time to compute ``work_ms`` more, writing a checkpoint after each full interval but the last."""
    if work_ms <= 0:
        return 0
    if not interval_ms:
        return work_ms
    checkpoints = (work_ms - 1) // interval_ms
    return work_ms + checkpoints * write_ms


def progress_at(elapsed_ms: int, interval_ms: int | None, write_ms: int) -> tuple[int, int]:
    """(saved work, lost work) after running ``elapsed_ms`` of wall time when the pod is stopped."""
    if elapsed_ms <= 0:
        return 0, 0
    if not interval_ms:
        return 0, elapsed_ms
    period = interval_ms + write_ms
    cycles = elapsed_ms // period
    within = elapsed_ms - cycles * period
    return cycles * interval_ms, min(within, interval_ms)
