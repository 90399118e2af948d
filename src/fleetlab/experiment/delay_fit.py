"""A scheduling delay drawn per job, read from the waits the record leaves unexplained, as the alternative
to one constant latency that the fit judges (docs/calibration.md, "A delay drawn per job").

The sample is the waits of the jobs that, for their whole wait, had room on their eligible nodes and no
other job of the same user (nor of the policy's group) running (``metrics.wait_causes.free_waits``):
neither capacity nor a per-group limit holds them back, so what they waited is what the replay's capacity
and policy cannot make. Such a job that had not started when the part read ends (or was cancelled
first) waited at least that long: its wait is censored there, and the distribution is the product-limit
(Kaplan–Meier) estimate over both (``product_limit``), never the started jobs alone, which would leave
only the waits that ended in time — a sample biased short. Its quantiles become the
scenario's ``scheduler.scheduling_delay``, each job drawing its own delay. It has no parameter to tune; it
is read from the part of the record the candidate is judged against only through the jobs it was read
from, and it is always flagged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.experiment.calibration_compare import Measured
from fleetlab.metrics.wait_causes import free_waits
from fleetlab.model.history import History
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.sim.scheduling_delay import delay_at, drawn_delays_s

FloatArray = NDArray[np.float64]

#: The knob's value (``Knobs.scheduling_delay``) for a delay drawn from the unexplained waits.
UNEXPLAINED = "unexplained-waits"
#: Fewest unexplained waits of started jobs a distribution is read from (fewer: not offered).
MIN_DELAY_JOBS = 20
#: Most quantile points written to the scenario (every 1 % of the distribution).
DELAY_POINTS = 101


def product_limit(waits: FloatArray, started: NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
    """The Kaplan–Meier estimate of the wait distribution: the sorted waits of the started jobs (and the
    longest wait when it is censored) and the probability mass at each (summing to 1). At a tie the
    starts come before the censored waits (a job censored at t was still waiting at t); each start takes
    S/n of the surviving share S, n being the jobs still waiting just before it, and a censored wait
    passes its share on to the longer ones. When the longest wait is censored, what survives it is put
    there (the tail is at least that long)."""
    order = np.lexsort((~started, waits))
    times = waits[order]
    event = started[order].copy()
    if len(event):
        event[-1] = True
    at_risk = len(times) - np.arange(len(times), dtype=np.float64)
    after = np.cumprod(np.where(event, 1.0 - 1.0 / at_risk, 1.0))
    before = np.concatenate(([1.0], after[:-1]))
    return times[event], np.asarray(before - after, dtype=np.float64)[event]


def weighted_quantiles(values: FloatArray, masses: FloatArray, levels: FloatArray) -> FloatArray:
    """Quantiles of sorted ``values`` carrying ``masses``, linear in between: value k sits at the level
    (mass before it) / (mass before the last value) — with equal masses (k − 1) / (n − 1), numpy's default
    (linear) quantile, which it then is."""
    if len(values) == 1:
        return np.full(len(levels), values[0])
    below = np.cumsum(masses) - masses
    return np.asarray(np.interp(levels, below / below[-1], values), dtype=np.float64)


def unexplained_delay(history: History, grouping: str | None) -> tuple[SchedulingDelay | None, str]:
    """The delay read from ``history``'s unexplained waits (None when it cannot be), and why in words."""
    free = free_waits(history, grouping)
    if free is None:
        return None, "no delay drawn per job: the history has no node list, so room for a job is unknown"
    waits, started = free
    group = "" if grouping in (None, "user") else f" or {grouping}"
    who = f"no other job of the same user{group} running"
    done = waits[started]
    if len(done) < MIN_DELAY_JOBS or not np.any(done > 0):
        return None, (
            f"no delay drawn per job: {len(done)} started job(s) had room on their nodes and {who} for "
            f"their whole wait (at least {MIN_DELAY_JOBS}, some waiting, are needed)"
        )
    censored = int((~started).sum())
    if censored:
        values, masses = product_limit(waits, started)
        levels = np.linspace(0.0, 1.0, min(len(values), DELAY_POINTS))
        quantiles = weighted_quantiles(values, masses, levels)
        still = (
            f", and the {censored} such job(s) not started by then, censored at their end or the part's "
            f"(the longest {float(waits[~started].max()):.0f} s): a product-limit estimate"
        )
    else:  # nothing censored: the product-limit estimate is the sample's own distribution
        quantiles = np.quantile(done, np.linspace(0.0, 1.0, min(len(done), DELAY_POINTS)))
        still = ""
    source = (
        f"the measured waits of the {len(done)} started job(s) submitted before "
        f"{float(history.end_s):.0f} s that had room on their nodes and {who} for their whole wait{still}"
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
    median, p95 = (float(q) for q in delay_at(delay, np.array([0.5, 0.95])))
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
