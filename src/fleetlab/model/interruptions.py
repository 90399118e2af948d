"""How a spot pool's nodes are reclaimed: a Poisson rate per node-hour, or a trace of interruption times.

The provider's notice period defaults per cloud — AWS sends a Spot interruption notice two minutes before
it stops or terminates the instance; GCP gives Spot VMs 30 s between ACPI soft-off and hard-off; Azure
Spot evictions come with 30 s notice (Scheduled Events). A pool that names no cloud gets AWS's 120 s.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fleetlab.model.limits import Float
from fleetlab.model.units import Seconds

#: Notice before reclaim, seconds, per cloud (AWS EC2 Spot docs; GCP Compute Engine Spot VM docs,
#: ``skipGuestOsShutdown``; Azure Spot Virtual Machines docs / Scheduled Events).
NOTICE_S_BY_CLOUD: dict[str, float] = {"aws": 120.0, "gcp": 30.0, "azure": 30.0}
DEFAULT_NOTICE_CLOUD = "aws"


class SpotInterruptions(BaseModel):
    """Exactly one of ``rate_per_node_hour``, ``mtbi`` (mean time between interruptions per node) or
    ``trace`` (CSV with columns time, pool and optionally node); ``notice_s`` overrides the cloud's."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    rate_per_node_hour: Float | None = Field(default=None, gt=0)
    mtbi: Seconds | None = None
    trace: str | None = Field(default=None, min_length=1)
    notice_s: Seconds | None = None

    @model_validator(mode="after")
    def _one_source(self) -> SpotInterruptions:
        given = [n for n in ("rate_per_node_hour", "mtbi", "trace") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of rate_per_node_hour, mtbi or trace (got {', '.join(given) or 'none'})"
            )
        if self.mtbi is not None and self.mtbi <= 0:
            raise ValueError("mtbi must be a duration > 0, e.g. 6h")
        return self

    def per_node_hour(self) -> float | None:
        """The Poisson rate per node-hour (None for a trace)."""
        if self.rate_per_node_hour is not None:
            return self.rate_per_node_hour
        if self.mtbi is not None:
            return 3600.0 / self.mtbi
        return None

    def notice_for(self, cloud: str | None) -> float:
        """Seconds between the interruption notice and the reclaim."""
        if self.notice_s is not None:
            return self.notice_s
        return NOTICE_S_BY_CLOUD[cloud or DEFAULT_NOTICE_CLOUD]
