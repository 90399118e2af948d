"""The per-ClusterQueue ``lent`` samples the report charts: in a flat cohort of two ClusterQueues, what the
lender has lent is exactly what the borrower borrows (usage above its nominalQuota), at every recorded
step, also when several admissions and finishes fall in the same millisecond."""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.experiment.run import run_one
from fleetlab.spec.loader import load


@pytest.mark.parametrize("seed", [1, 2])
def test_lent_by_one_queue_equals_borrowed_by_the_other_in_a_two_queue_cohort(seed: int) -> None:
    result = run_one(load("two-teams", seed=seed), None, seed).result
    samples = result.queue_samples
    assert samples is not None
    a = samples.keys.index(("team-a", "h100/nvidia.com/gpu"))
    b = samples.keys.index(("team-b", "h100/nvidia.com/gpu"))
    borrowed = np.maximum(samples.usage - samples.subtree_quota, 0)
    assert borrowed[:, a].max() > 0  # team-a borrows team-b's idle GPUs in this scenario
    assert borrowed[:, a].tolist() == samples.lent[:, b].tolist()
    assert borrowed[:, b].tolist() == samples.lent[:, a].tolist()
