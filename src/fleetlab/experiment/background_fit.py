"""Whether calibrate offers a ``background_share`` (room held by work the record does not list), and the
evidence it prints in words either way (docs/calibration.md, "Work the record does not list").

A history may list only part of what ran on its nodes (one tenant's pods, one partition's jobs). Where a
node-usage import recorded the nodes' allocation (``scontrol show node`` snapshots), the room it shows held
beyond what the listed jobs held is measured (metrics/unlisted_use.py): at ``MEASURED_AT_LEAST`` of the
nodes' capacity or more the knob is offered with the measured share among its candidates; below it, not.
Without such a record the only sign is indirect: the listed jobs never filled the nodes (their peak use is
under ``PEAK_USE_BELOW`` of what the nodes offer) and yet they waited, mostly while the listed work left room
for them (``capacity_explained_wait_share`` under ``CAPACITY_EXPLAINED_BELOW``). Then, and only then, the
fit tries a constant share of every fixed pool held by unlisted work (``BACKGROUND_GRID``); policy (limits,
queue order) can make the same waits, which is why a fitted share is flagged, never silent.
"""

from __future__ import annotations

from typing import Any

from fleetlab.metrics.unlisted_use import UnlistedUse
from fleetlab.metrics.wait_causes import WaitCauses

#: The listed jobs' peak use of the nodes below which the record may list only part of the work.
PEAK_USE_BELOW = 0.5
#: The share of waiting the listed work explains by capacity below which unlisted work may explain more.
CAPACITY_EXPLAINED_BELOW = 0.5
#: Candidate shares of every fixed pool held by unlisted work (0 first: the simplest value wins ties).
BACKGROUND_GRID = (0.0, 0.25, 0.5, 0.75, 0.9)
#: A measured share of the nodes held by unlisted work below which it is taken for snapshot noise (a job
#: starting or ending between the snapshot and the accounting record).
MEASURED_AT_LEAST = 0.02


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def background_grid(use: UnlistedUse | None) -> list[float]:
    """The candidate shares: ``BACKGROUND_GRID`` and, when measured, the measured share (to 0.01)."""
    grid = set(BACKGROUND_GRID)
    if use is not None and use.unlisted_share >= MEASURED_AT_LEAST:
        grid.add(round(min(use.unlisted_share, 0.99), 2))
    return sorted(grid)


def _measured(use: UnlistedUse) -> tuple[bool, str]:
    seen = (
        f"the nodes' recorded allocation ({use.samples:,} snapshot rows of {use.nodes:,} nodes) held "
        f"{_pct(use.recorded_share)} of their {use.resource.upper()}s, the listed jobs "
        f"{_pct(use.listed_share)}, "
        f"work the record does not list {_pct(use.unlisted_share)}"
    )
    if use.unlisted_share < MEASURED_AT_LEAST:
        return False, f"background_share left at 0: {seen} (under {_pct(MEASURED_AT_LEAST)})"
    return True, (
        f"background_share offered: {seen}, measured; the fit tries it ({round(use.unlisted_share, 2):g}) "
        "among the candidates"
    )


def background_evidence(causes: WaitCauses, use: UnlistedUse | None = None) -> tuple[bool, str]:
    """(offer the knob, the evidence in words); ``use``: what a node-usage import measured."""
    if use is not None:
        return _measured(use)
    lacks = "the record carries no node-level usage (utilisation or allocation of its nodes) beyond its jobs"
    row = causes.row()
    peak, what = causes.peak_use_share, causes.peak_use_resource.upper()
    if not causes.capacity_known or peak is None:
        return False, f"background_share left at 0: the history has no node list, and {lacks}"
    if row is None or row.wait_hours <= 0 or row.capacity_explained_wait_share is None:
        return False, f"background_share left at 0: no waiting to explain ({lacks})"
    explained = row.capacity_explained_wait_share
    seen = (
        f"the listed jobs held at most {_pct(peak)} of the nodes' {what}s at once and capacity explains "
        f"{_pct(explained)} of their {row.wait_hours:,.1f} h of waiting"
    )
    if peak >= PEAK_USE_BELOW or explained >= CAPACITY_EXPLAINED_BELOW:
        return False, (
            f"background_share left at 0: {seen}, so the record's own work accounts for its nodes; {lacks}"
        )
    return True, (
        f"background_share offered: {seen} — the record may list only part of the work on its nodes "
        "(other tenants, partitions, reservations), or the waits are policy; the fit tries a constant share "
        f"of every fixed pool held by unlisted work ({', '.join(f'{s:g}' for s in BACKGROUND_GRID)})"
    )


def background_flag(share: float, evidence: str, measured: bool = False) -> str:
    """The flag of a fitted share above 0: what it stands for and what it rests on."""
    if measured:
        return (
            f"background_share {share:g} fitted: {share:.0%} of every fixed pool is held by work the record "
            f"does not list, chosen with the nodes' recorded allocation in view ({evidence})"
        )
    return (
        f"background_share {share:g} fitted: {share:.0%} of every fixed pool is held by work the record "
        f"does not list, inferred from the waits alone, not measured ({evidence}); check it against the "
        "cluster's own utilisation before trusting a what-if on capacity"
    )


def background_kept_at_zero(tried: list[dict[str, Any]], min_gain: float) -> str:
    """Why an offered share stayed 0: no candidate scored enough better than none (the fit's own rows)."""
    scores = ", ".join(f"{r['value']:g}: {r['score']:.3g}" for r in tried)
    return (
        f"background_share tried and left at 0: no share scored more than {min_gain:.0%} better than none "
        f"(score by share: {scores}); holding room for unlisted work does not bring the replay's waits "
        "closer, so what the record does not show is its policy, not its capacity"
    )
