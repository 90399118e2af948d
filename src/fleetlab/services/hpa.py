"""The HorizontalPodAutoscaler's replica calculation for one metric (utilisation), as upstream computes it.

From kube-controller-manager's podautoscaler: ``desired = ceil(ready × utilisation / target)`` unless the
ratio is within the tolerance (default 0.1) of 1; recommendations are stabilised over the behavior's
windows (a scale-up takes the lowest recommendation of the up window, a scale-down the highest of the
down window; defaults 0 s and 300 s); the default scale-up policy allows at most
``max(2 × current, current + 4)`` replicas per step; the result is clamped to [min, max].
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

#: Default scaleUp policies of autoscaling/v2: 100 % or 4 pods per period, whichever is more.
SCALE_UP_PERCENT = 100
SCALE_UP_PODS = 4


def raw_recommendation(current: int, ready: int, utilization: float, target: float, tolerance: float) -> int:
    """The metric's replica count before stabilisation; ``current`` when there is no ready pod."""
    if ready <= 0:
        return current
    ratio = utilization / target
    if abs(ratio - 1.0) <= tolerance:
        return current
    return math.ceil(ratio * ready - 1e-9)


@dataclass
class HpaState:
    """Recommendations kept for the stabilisation windows (time in ms, replicas)."""

    up_window_ms: int
    down_window_ms: int
    history: deque[tuple[int, int]] = field(default_factory=deque)

    def stabilise(self, now_ms: int, current: int, recommendation: int) -> int:
        """Upstream's stabilizeRecommendationWithBehaviors: keep the change every window agrees on."""
        self.history.append((now_ms, recommendation))
        keep = max(self.up_window_ms, self.down_window_ms)
        while self.history and self.history[0][0] < now_ms - keep:
            self.history.popleft()
        up = down = recommendation
        for t, value in self.history:
            if t >= now_ms - self.up_window_ms:
                up = min(up, value)
            if t >= now_ms - self.down_window_ms:
                down = max(down, value)
        out = current
        if out < up:
            out = up
        if out > down:
            out = down
        return out


def desired_replicas(
    state: HpaState,
    now_ms: int,
    current: int,
    ready: int,
    utilization: float,
    target: float,
    tolerance: float,
    bounds: tuple[int, int],
) -> int:
    """One HPA sync: the replica count to set."""
    recommendation = raw_recommendation(current, ready, utilization, target, tolerance)
    stable = state.stabilise(now_ms, current, recommendation)
    if stable > current:
        stable = min(stable, max(current * (100 + SCALE_UP_PERCENT) // 100, current + SCALE_UP_PODS))
    low, high = bounds
    return min(max(stable, low), high)
