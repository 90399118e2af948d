"""When a run without a horizon must stop because nothing can make progress any more.

Kueue retries and preemptions can undo each other forever (upstream allows some such loops); a replay
should then stop and say so rather than spin. The Kueue bridge names preemption loops itself; these
guards are the last resort for everything else.
"""

from __future__ import annotations

#: A livelock guard: this many steps at one simulated instant means nothing can make progress (a step
#: handles every event due then, and legitimate chains at one instant are a few steps long).
MAX_STEPS_AT_ONE_TIME = 1_000
#: Without a horizon, a run stops when no pod has finished for max(this, 20 × the longest runtime).
STALL_MIN_MS = 30 * 24 * 3_600_000


class ProgressGuard:
    """Watches the clock and the last completion; ``check`` returns why to stop, or ``""``."""

    def __init__(self, longest_runtime_ms: int, has_horizon: bool) -> None:
        self.stall_ms = max(STALL_MIN_MS, 20 * longest_runtime_ms)
        self.has_horizon = has_horizon
        self.same_time = 0
        self.last_progress_ms = 0

    def check(
        self, t: int, now: int, first_step: bool, last_completion_ms: int, submitting: bool = False
    ) -> str:
        """Called before each step at time ``t`` (``now`` is the previous step's time); ``submitting`` says a
        job arrives at ``t``. A completion or an arrival is progress: a quiet gap before a late submission
        is not a stall."""
        progress = self.last_progress_ms  # the latest completion or arrival (plain comparisons: every step)
        if last_completion_ms > progress:
            progress = last_completion_ms
        if submitting and t > progress:
            progress = t
        self.last_progress_ms = progress
        if not self.has_horizon and t - self.last_progress_ms > self.stall_ms:
            return (
                f"stopped at {t / 3.6e6:.1f} h: no job completed for {self.stall_ms / 3.6e6:.0f} h (and none "
                "arrived) while "
                "work kept being retried (e.g. Kueue requeues or preemptions undoing each other); "
                "unfinished jobs are left as they were"
            )
        if t == now and not first_step:
            self.same_time += 1
            if self.same_time > MAX_STEPS_AT_ONE_TIME:
                return (
                    f"stopped at {t / 3.6e6:.1f} h: {self.same_time} steps at t={t / 1000:.3f} s without "
                    "the clock moving (admission, preemption and placement keep undoing each other); "
                    "unfinished jobs are left as they were"
                )
        else:
            self.same_time = 0
        return ""
