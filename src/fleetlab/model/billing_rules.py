"""Billing rules of a node pool beyond price × seconds: a minimum billed time per VM start, committed
nodes, and per-GB charges for the data jobs download and keep. Every rate has a documented default.

* Minimum: AWS EC2 bills Linux On-Demand, Spot and Reserved instances per second with a 60-second minimum;
  Compute Engine bills per second with a 1-minute minimum (pricing.md §2.1). Azure documents per-second
  billing with no minimum we could verify, so its default is 0. A pool naming no cloud gets 60 s.
* Commitments: ``committed_nodes`` are billed for the whole run whether used or not, at
  ``committed_price_per_hour`` — by default the pool's price less the discount of ``commitment_term``:
  37 % for 1 year, GCP's resource-based committed use discount for accelerator-optimized machines as the
  billing catalog shows it (a2-highgpu-1g in africa-south1 and asia-east1), and 55 % for 3 years, the low
  end of the 55–65 % the same catalog and third-party summaries give (less certain; pricing.md §2.3).
  Commitments that exceed the pool's nodes are billed as unused commitment. A capacity reservation
  without a discount is billed the same way: ``committed_nodes`` with ``committed_price_per_hour`` equal
  to the on-demand price (its capacity guarantee against stockouts is not modelled).
* Data: ``data_transfer_per_gb`` per download of a job's ``data_size`` to a node (default $0: S3 to EC2
  in the same region is free; $0.02/GB cross-region — AWS S3 pricing, data transfer); ``storage_per_gb_month``
  for keeping the data set from submission to completion (default $0.023, S3 Standard, us-east-1, first
  50 TB — AWS S3 pricing). GB = 10^9 bytes, a month = 730 h, as the providers bill.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fleetlab.model.limits import Float, Int
from fleetlab.model.units import Seconds

MINIMUM_BILLED_S_BY_CLOUD: dict[str, float] = {"aws": 60.0, "gcp": 60.0, "azure": 0.0}
DEFAULT_MINIMUM_CLOUD = "aws"
#: Committed use discount by term (pricing.md §2.3; the 3-year figure is the uncertain one).
COMMITTED_DISCOUNT: dict[str, float] = {"1y": 0.37, "3y": 0.55}
TRANSFER_PER_GB = 0.0
STORAGE_PER_GB_MONTH = 0.023
BYTES_PER_GB = 1_000_000_000
HOURS_PER_MONTH = 730.0


class PoolBilling(BaseModel):
    """A pool's ``billing`` section; absent means plain per-second billing and no data charges."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    minimum_billed_s: Seconds | None = None
    committed_nodes: Int = Field(default=0, ge=0)
    committed_price_per_hour: Float | None = Field(default=None, ge=0)
    commitment_term: Literal["1y", "3y"] = "1y"
    data_transfer_per_gb: Float = Field(default=TRANSFER_PER_GB, ge=0)
    storage_per_gb_month: Float = Field(default=STORAGE_PER_GB_MONTH, ge=0)

    def minimum_for(self, cloud: str | None) -> float:
        """Seconds every VM start is billed at least."""
        if self.minimum_billed_s is not None:
            return self.minimum_billed_s
        return MINIMUM_BILLED_S_BY_CLOUD[cloud or DEFAULT_MINIMUM_CLOUD]

    def committed_rate(self, price_per_hour: float) -> float:
        """Hourly price of one committed node."""
        if self.committed_price_per_hour is not None:
            return self.committed_price_per_hour
        return round(price_per_hour * (1.0 - COMMITTED_DISCOUNT[self.commitment_term]), 6)
