"""A scheduling delay drawn per job, read from the waits the record leaves unexplained, as the alternative
to one constant latency that the fit judges (docs/calibration.md, "A delay drawn per job").

The sample is the measured waits of the started jobs that, for their whole wait, had room on their
eligible nodes and no other job of the same user (nor of the policy's group) running
(``metrics.wait_causes.unexplained_waits``): neither capacity nor a per-group limit holds them back, so
what they waited is what the replay's capacity and policy cannot make. Their quantiles become the
scenario's ``scheduler.scheduling_delay``, each job drawing its own delay. It has no parameter to tune; it
is read from the part of the record the candidate is judged against only through the jobs it was read
from, and it is always flagged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fleetlab.experiment.calibration_compare import Measured
from fleetlab.metrics.wait_causes import unexplained_waits
from fleetlab.model.history import History
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.sim.scheduling_delay import drawn_delays_s

#: The knob's value (``Knobs.scheduling_delay``) for a delay drawn from the unexplained waits.
UNEXPLAINED = "unexplained-waits"
#: Fewest unexplained waits a distribution is read from (fewer: not offered).
MIN_DELAY_JOBS = 20
#: Most quantile points written to the scenario (every 1 % of the distribution).
DELAY_POINTS = 101


def unexplained_delay(history: History, grouping: str | None) -> tuple[SchedulingDelay | None, str]:
    """The delay read from ``history``'s unexplained waits (None when it cannot be), and why in words."""
    waits = unexplained_waits(history, grouping)
    if waits is None:
        return None, "no delay drawn per job: the history has no node list, so room for a job is unknown"
    group = "" if grouping in (None, "user") else f" or {grouping}"
    who = f"no other job of the same user{group} running"
    if len(waits) < MIN_DELAY_JOBS or not np.any(waits > 0):
        return None, (
            f"no delay drawn per job: {len(waits)} started job(s) had room on their nodes and {who} for "
            f"their whole wait (at least {MIN_DELAY_JOBS}, some waiting, are needed)"
        )
    points = min(len(waits), DELAY_POINTS)
    quantiles = np.quantile(waits, np.linspace(0.0, 1.0, points))
    source = (
        f"the measured waits of the {len(waits)} started job(s) submitted before "
        f"{float(history.end_s):.0f} s that had room on their nodes and {who} for their whole wait"
    )
    delay = SchedulingDelay(quantiles_s=tuple(round(float(q), 3) for q in quantiles), source=source)
    return delay, f"a delay drawn per job is offered, read from {source}"


def absorbed_share(scenario: Scenario, measured: Measured, part: np.ndarray) -> float | None:
    """The drawn delays of the ``part``'s jobs whose wait is known (the replay's own draws: its seed and
    the jobs' positions) over their measured waiting; None without a drawn delay or any waiting."""
    delay = scenario.scheduler.scheduling_delay
    jobs = np.nonzero(part & measured.known)[0]
    waited = float(measured.waits[jobs].sum())
    if delay is None or waited <= 0:
        return None
    return float(drawn_delays_s(delay, scenario.seed, jobs.astype(np.int64)).sum()) / waited


def delay_flag(scenario: Scenario, measured: Measured, part: np.ndarray) -> str | None:
    """The words that flag a fitted drawn delay: what it was read from, how much of the measured waiting
    it absorbs, and that it is neither capacity nor a policy the record shows."""
    delay = scenario.scheduler.scheduling_delay
    share = absorbed_share(scenario, measured, part)
    if delay is None or share is None:
        return None
    q = np.asarray(delay.quantiles_s)
    levels = np.linspace(0.0, 1.0, len(q))
    median, p95 = (float(np.interp(level, levels, q)) for level in (0.5, 0.95))
    return (
        f"scheduling_delay is drawn per job from {delay.source} (median {median:,.0f} s, p95 {p95:,.0f} s): "
        f"it absorbs {100 * share:.1f} % of the fit part's measured waiting; it is not capacity and not a "
        "policy the record shows (holds, reservations, what the scheduler did not record)"
    )


def delay_note(words: str, tried: list[dict[str, Any]], chosen: bool, min_gain: float) -> str:
    """What became of the drawn delay: not offered (why), or its score against the best constant latency
    and whether the fit took it (``chosen``: it scored more than ``min_gain`` of the score lower)."""
    rows = [r for r in tried if r["knob"] == "scheduling_delay"]
    if not rows:
        return words
    constant = next(r["score"] for r in rows if r["value"] is None)
    drawn = next(r["score"] for r in rows if r["value"] == UNEXPLAINED)
    verdict = (
        "it replaces the constant latency"
        if chosen
        else f"the constant latency is kept (the drawn delay must score more than {min_gain:.0%} lower)"
    )
    return f"{words}; scored {drawn:.3g} against {constant:.3g} with the constant latency: {verdict}"
