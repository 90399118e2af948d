"""A scheduling delay drawn per job: the part of the waiting a replay's capacity and policy do not make,
as a distribution instead of one constant (docs/scenario.md, "Scheduling delay drawn per job").

Real clusters hold some jobs back for reasons no record shows (holds, reservations, admins, a scheduler
pass that skipped them). ``scheduling_latency_s`` delays every job by the same time; a delay drawn per job
can reproduce both the jobs that started at once and the ones held back for hours. ``fleetlab calibrate``
reads it from the waits its record leaves unexplained and flags it: it is not capacity, nor a policy the
record shows.
"""

from __future__ import annotations

from itertools import pairwise

from pydantic import Field, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.units import Seconds

#: Most quantile points a delay may list (one per 0.1 % of the distribution).
MAX_DELAY_QUANTILES = 1001


class SchedulingDelay(SpecModel):
    """The delay's quantile function: ``quantiles_s[i]`` is its quantile at level i / (k − 1) for k points,
    linear in between. Each job draws a level from (seed, its position in the workload), so a job's delay
    does not depend on what else happens in the run."""

    #: Nondecreasing delays at equally spaced levels 0 .. 1 (one point: every job gets that delay).
    quantiles_s: tuple[Seconds, ...] = Field(min_length=1, max_length=MAX_DELAY_QUANTILES)
    #: Where the distribution was read from, in words (``fleetlab calibrate`` writes it).
    source: str = Field(default="", max_length=1000)

    @model_validator(mode="after")
    def _nondecreasing(self) -> SchedulingDelay:
        for i, (a, b) in enumerate(pairwise(self.quantiles_s), start=1):
            if b < a:
                raise ValueError(
                    f"quantiles_s must not decrease: point {i} is {b:g} s after {a:g} s (a quantile "
                    "function rises with its level)"
                )
        return self
