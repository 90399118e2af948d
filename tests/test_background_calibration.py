"""calibrate's ``background_share``: offered only where the record suggests it lists part of the work, with
its evidence in words, fitted on a small world worked out by hand, and flagged when fitted."""

from __future__ import annotations

from typing import Any

import pytest

from fleetlab.experiment.background_fit import background_evidence
from fleetlab.experiment.calibration import calibrate
from fleetlab.metrics.wait_causes import diagnose_waits
from history_builders import history

NODE = [{"node": "n1", "gpus": 8, "gpu_model": "H100", "cpu": 64.0}]


def _pairs(count: int, gpus: float = 3.0) -> list[dict[str, Any]]:
    """Pairs of 3-GPU jobs submitted together every 1000 s: ``a`` runs 0 → 100 s at once, ``b`` waits
    for it (100 s) and runs 100 → 200 s. Never more than 3 of the node's 8 GPUs are held, 5 stay free
    while ``b`` waits: the listed work leaves room, so something the record does not list held it."""
    rows = []
    for k in range(count):
        t = 1000.0 * k
        rows += [
            {"job_id": f"a{k}", "state": "completed", "submit_s": t, "scheduled_s": t, "running_s": t,
             "end_s": t + 100, "gpus_per_pod": gpus, "nodes": "n1", "gpu_model": "H100"},
            {"job_id": f"b{k}", "state": "completed", "submit_s": t, "scheduled_s": t + 100,
             "running_s": t + 100, "end_s": t + 200, "gpus_per_pod": gpus, "nodes": "n1", "gpu_model": "H100"},
        ]  # fmt: skip
    return rows


def test_the_knob_is_offered_when_the_listed_jobs_leave_room_yet_wait() -> None:
    """Peak use 3 of 8 GPUs = 37.5 % (< 50 %); capacity explains 0 % of the 6 × 100 s of waiting."""
    offered, words = background_evidence(diagnose_waits(history(_pairs(6), NODE, end_s=6000.0)))
    assert offered
    assert "at most 37.5 % of the nodes' GPUs" in words and "capacity explains 0.0 %" in words


def test_the_knob_is_left_at_zero_when_the_listed_jobs_fill_the_nodes() -> None:
    """With 8-GPU jobs the listed work holds all 8 GPUs (peak 100 %) and explains every wait."""
    offered, words = background_evidence(diagnose_waits(history(_pairs(6, 8.0), NODE, end_s=6000.0)))
    assert not offered
    assert words.startswith("background_share left at 0: the listed jobs held at most 100.0 %")
    assert "no node-level usage" in words
    offered, words = background_evidence(diagnose_waits(history(_pairs(2), [], end_s=6000.0)))
    assert not offered and "no node list" in words


def test_calibrate_fits_the_share_that_reproduces_the_waits_and_flags_it() -> None:
    """In the replay with share s the node has 8 − ⌊8 s⌋ GPUs for the listed jobs: s = 0 or 0.25 leaves 8
    or 6, both 3-GPU jobs of a pair run at once (waits 0, 0: KS 0.5 against 0, 100); s = 0.5 leaves 4, one
    at a time (waits 0, 100: KS 0); s = 0.75 leaves 2, nothing starts. The fit picks 0.5 and flags it."""
    result = calibrate(history(_pairs(6), NODE, end_s=6000.0))
    assert result.knobs.background_share == 0.5
    assert "background_share" in result.fitted
    assert any(n.startswith("background_share offered") for n in result.notes)
    assert any(f.startswith("background_share 0.5 fitted: 50% of every fixed pool") for f in result.flags)
    assert [b.model_dump() for b in result.scenario.background] == [
        {"pool": result.scenario.cluster.pools[0].name, "share": 0.5, "steps": ()}
    ]
    waits = {r.metric: r for r in result.rows if r.job_class == "all"}
    assert waits["wait_ks"].error == pytest.approx(0.0)


def test_calibrate_says_why_it_left_the_share_at_zero() -> None:
    result = calibrate(history(_pairs(6, 8.0), NODE, end_s=6000.0))
    assert result.knobs.background_share == 0.0 and "background_share" not in result.fitted
    assert any(n.startswith("background_share left at 0") for n in result.notes)
    assert not result.scenario.background


def test_an_offered_share_that_does_not_help_is_left_at_zero_with_its_scores() -> None:
    """Eight 8-GPU nodes (64 GPUs), pairs of 1-GPU jobs where the second waits 100 s: peak use 1/64,
    capacity explains 0, so the share is offered. Even the largest share, 0.9, holds ⌊0.9 × 64⌋ = 57
    GPUs and leaves 7: both jobs of a pair run at once (waits 0, 0: KS 0.5), as with no share at all. No
    candidate scores better, so the share stays 0 and a note gives the scores."""
    nodes = [{"node": f"n{i}", "gpus": 8, "gpu_model": "H100", "cpu": 64.0} for i in range(8)]
    result = calibrate(history(_pairs(6, 1.0), nodes, end_s=6000.0))
    assert any(n.startswith("background_share offered") for n in result.notes)
    assert result.knobs.background_share == 0.0
    kept = [n for n in result.notes if n.startswith("background_share tried and left at 0")]
    assert len(kept) == 1 and "0.9: " in kept[0]
