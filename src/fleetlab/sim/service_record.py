"""What a run recorded about its inference services: one sample per service per evaluation step."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.service import Service

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass
class ServiceSamples:
    """Columns of one service's samples; a sample holds from its time to the next one (or the end)."""

    spec: Service
    t_ms: IntArray
    ready: IntArray
    desired: IntArray
    #: Queueing servers of the ready replicas (replicas × concurrent requests each) and their mean rate.
    servers: IntArray
    server_rate: FloatArray
    rps: FloatArray
    #: Replica pod indices (the simulator's pod numbering), to attribute evictions afterwards.
    pods: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Mean speed of the serving replicas under GPU sharing (1 = a GPU of their own; sim/replica_speed.py;
    #: NaN while no replica serves); None on a cluster where no replica can share a GPU.
    speed: FloatArray | None = None

    @property
    def name(self) -> str:
        """The service's name."""
        return self.spec.name


@dataclass
class ServiceRecord:
    """Every service of the run, in scenario order."""

    services: list[ServiceSamples] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
