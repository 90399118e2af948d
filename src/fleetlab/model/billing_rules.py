"""Billing rules of a node pool beyond price × seconds: a minimum billed time per VM start, committed
nodes, and per-GB charges for the data jobs download and keep. Every rate has a documented default.

* Minimum: AWS EC2 bills Linux On-Demand, Spot and Reserved instances per second with a 60-second minimum;
  Compute Engine bills per second with a 1-minute minimum (pricing.md §2.1). Azure documents per-second
  billing with no minimum we could verify, so its default is 0. A pool naming no cloud gets 60 s.
* Commitments: ``committed_nodes`` are billed for the whole run whether used or not, at
  ``committed_price_per_hour`` — by default the pool's price less 37 %, GCP's 1-year resource-based
  committed use discount for accelerator-optimized machines (pricing.md §2.3). Commitments that exceed the
  pool's nodes are billed as unused commitment.
* Data: ``data_transfer_per_gb`` per download of a job's ``data_size`` to a node (default $0: S3 to EC2
  in the same region is free; $0.02/GB cross-region — AWS S3 pricing, data transfer); ``storage_per_gb_month``
  for keeping the data set from submission to completion (default $0.023, S3 Standard, us-east-1, first
  50 TB — AWS S3 pricing). GB = 10^9 bytes, a month = 730 h, as the providers bill.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from fleetlab.model.units import Seconds

MINIMUM_BILLED_S_BY_CLOUD: dict[str, float] = {"aws": 60.0, "gcp": 60.0, "azure": 0.0}
DEFAULT_MINIMUM_CLOUD = "aws"
COMMITTED_DISCOUNT = 0.37
TRANSFER_PER_GB = 0.0
STORAGE_PER_GB_MONTH = 0.023
BYTES_PER_GB = 1_000_000_000
HOURS_PER_MONTH = 730.0


class PoolBilling(BaseModel):
    """A pool's ``billing`` section; absent means plain per-second billing and no data charges."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    minimum_billed_s: Seconds | None = None
    committed_nodes: int = Field(default=0, ge=0)
    committed_price_per_hour: float | None = Field(default=None, ge=0)
    data_transfer_per_gb: float = Field(default=TRANSFER_PER_GB, ge=0)
    storage_per_gb_month: float = Field(default=STORAGE_PER_GB_MONTH, ge=0)

    def minimum_for(self, cloud: str | None) -> float:
        """Seconds every VM start is billed at least."""
        if self.minimum_billed_s is not None:
            return self.minimum_billed_s
        return MINIMUM_BILLED_S_BY_CLOUD[cloud or DEFAULT_MINIMUM_CLOUD]

    def committed_rate(self, price_per_hour: float) -> float:
        """Hourly price of one committed node."""
        if self.committed_price_per_hour is not None:
            return self.committed_price_per_hour
        return round(price_per_hour * (1.0 - COMMITTED_DISCOUNT), 6)
