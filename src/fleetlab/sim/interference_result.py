"""What the interference model did in a run (plain data; see fleetlab.sim.interference)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass
class InterferenceTable:
    """Per job (scenario order): wall ms its pods computed under the model, and the extra ms it cost."""

    job_interfered_ms: NDArray[np.float64]
    job_extra_ms: NDArray[np.float64]

    def job_slowdown(self) -> NDArray[np.float64]:
        """Wall time over work done while under the model (1.0 for jobs it never slowed)."""
        work = self.job_interfered_ms - self.job_extra_ms
        return np.where(work > 0, self.job_interfered_ms / np.where(work > 0, work, 1.0), 1.0)
