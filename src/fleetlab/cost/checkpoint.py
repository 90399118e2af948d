"""Checkpoint intervals under Poisson interruptions: Young's and Daly's optimum and the expected overhead.

With checkpoint write time C, restart time R and mean time between interruptions M:
Young (1974, CACM 17(9):530) τ ≈ √(2CM); Daly (2006, FGCS 22(3):303) τ = √(2CM)·[1 + ⅓√(C/2M) +
(1/9)(C/2M)] − C for C < 2M, else M. Daly's expected wall time for T of work checkpointed every τ is
T_w = M·e^{R/M}·(e^{(τ+C)/M} − 1)·T/τ, so the overhead fraction is T_w/T − 1 (the figures of
/work/shared/reference/pricing.md §4.2 are reproduced by tests/test_checkpoint_cli.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleetlab.model.limits import MAX_SECONDS

#: Fewest interruptions per hour: one in MAX_SECONDS (100 years), the longest mean time between them that
#: fleetlab models (a smaller rate gives intervals of centuries and overheads that round to nothing).
MIN_RATE_PER_HOUR = 3600.0 / MAX_SECONDS


def young_interval(write_s: float, mtbi_s: float) -> float:
    """Young's first-order optimum interval (seconds of compute between checkpoints)."""
    return math.sqrt(2.0 * write_s * mtbi_s)


def daly_interval(write_s: float, mtbi_s: float) -> float:
    """Daly's higher-order optimum interval; M itself when a write takes as long as 2M or more."""
    if write_s >= 2.0 * mtbi_s:
        return mtbi_s
    ratio = write_s / (2.0 * mtbi_s)
    return math.sqrt(2.0 * write_s * mtbi_s) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - write_s


def overhead_fraction(interval_s: float, write_s: float, restart_s: float, mtbi_s: float) -> float:
    """Expected extra wall time per unit of work (Daly's exponential model): T_w/T − 1."""
    m = mtbi_s
    return m * math.exp(restart_s / m) * math.expm1((interval_s + write_s) / m) / interval_s - 1.0


def lost_per_interruption(interval_s: float, write_s: float) -> float:
    """Expected compute lost per interruption when the interruption falls uniformly in a
    checkpoint cycle (compute τ then a write C; work in the write is not yet saved): (τ²/2 + Cτ)/(τ + C)."""
    return (interval_s * interval_s / 2.0 + write_s * interval_s) / (interval_s + write_s)


@dataclass(frozen=True)
class IntervalRow:
    """One interval of the comparison table."""

    label: str
    interval_s: float
    overhead: float
    lost_per_interruption_s: float
    cost_per_work_hour: float | None


def interval_table(
    write_s: float, mtbi_s: float, restart_s: float, price_per_hour: float | None
) -> list[IntervalRow]:
    """Young's and Daly's intervals and a few around them, shortest first, with expected cost."""
    young = young_interval(write_s, mtbi_s)
    daly = daly_interval(write_s, mtbi_s)
    picks = {"Daly": daly, "Young": young}
    for factor in (0.25, 0.5, 2.0, 4.0):
        picks[f"{factor:g} × Young"] = young * factor
    rows = []
    for label, interval in sorted(picks.items(), key=lambda kv: (kv[1], kv[0])):
        overhead = overhead_fraction(interval, write_s, restart_s, mtbi_s)
        cost = None if price_per_hour is None else price_per_hour * (1.0 + overhead)
        rows.append(IntervalRow(label, interval, overhead, lost_per_interruption(interval, write_s), cost))
    return rows
