"""Work the job record does not list, measured from a node-usage import (``scontrol show node`` snapshots;
metrics/unlisted_use.py) and offered to calibrate's ``background_share`` (experiment/background_fit.py) —
worked out by hand on the world of tests/data/history/slurm_partitions (see tests/test_slurm_partitions.py).

Snapshots at 30 s and 90 s of nodes n01, n03, g1 (16 CPUs each, no GPUs: the resource is CPU):

| t  | node | allocated | listed jobs running then (recorded start ≤ t < end)      | unlisted |
|----|------|-----------|-----------------------------------------------------------|----------|
| 30 | n01  | 16        | A (0–1000, 16)                                            | 0        |
| 30 | n03  | 16        | B (0–1000, 16)                                            | 0        |
| 30 | g1   | 16        | C (10–110, 8); D starts only at 110                       | 8        |
| 90 | n01  | 16        | A                                                         | 0        |
| 90 | n03  | 16        | B                                                         | 0        |
| 90 | g1   | 8         | C (8)                                                     | 0        |

Capacity 6 × 16 = 96: recorded 88/96, listed 80/96, unlisted 8/96."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fleetlab.experiment.background_fit import background_evidence, background_grid
from fleetlab.experiment.calibration import calibrate
from fleetlab.metrics.unlisted_use import unlisted_use
from fleetlab.metrics.wait_causes import diagnose_waits
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.store import load_history, write_history

WORLD = Path(__file__).parent / "data" / "history" / "slurm_partitions"
FILES = [str(WORLD / n) for n in ("sacct.txt", "partitions.txt", "nodes.txt", "config.txt")]


def test_unlisted_share_by_hand(tmp_path: Path) -> None:
    h = import_sources(FILES)
    write_history(h, tmp_path / "h")
    again = load_history(tmp_path / "h")  # node_usage.parquet round-trips
    assert again.node_usage.equals(h.node_usage)
    use = unlisted_use(again)
    assert use is not None and (use.resource, use.samples, use.nodes) == ("cpu", 6, 3)
    assert use.recorded_share == pytest.approx(88 / 96)
    assert use.listed_share == pytest.approx(80 / 96)
    assert use.unlisted_share == pytest.approx(8 / 96)


def test_a_measured_share_is_offered_with_its_value_among_the_candidates() -> None:
    h = import_sources(FILES)
    use = unlisted_use(h)
    offer, words = background_evidence(diagnose_waits(h), use)
    assert offer and "measured" in words and "8.3 %" in words
    assert background_grid(use) == [0.0, 0.08, 0.25, 0.5, 0.75, 0.9]  # 8/96 = 0.0833 -> 0.08


def test_no_offer_when_the_listed_jobs_hold_what_was_recorded() -> None:
    """Without the 30 s snapshot's g1 row (8 CPUs unlisted), everything recorded is listed: 0 %."""
    h = import_sources(FILES)
    usage = h.node_usage
    keep = [not (n == "g1" and t == 30) for n, t in zip(usage.column("node").to_pylist(),
                                                         usage.column("time_s").to_pylist(), strict=True)]  # fmt: skip
    h = dataclasses.replace(h, node_usage=usage.filter(keep))
    use = unlisted_use(h)
    assert use is not None and use.unlisted_share == 0.0
    offer, words = background_evidence(diagnose_waits(h), use)
    assert not offer and words.startswith("background_share left at 0")
    assert background_grid(use) == [0.0, 0.25, 0.5, 0.75, 0.9]


def test_calibrate_replays_the_recorded_policy_and_prints_the_measured_evidence() -> None:
    """calibrate on the whole world (no fit: the recorded policy only): the scenario carries the
    partitions, tiers, preemption and backfill settings, and the notes say what the snapshots measured."""
    h = import_sources(FILES)
    result = calibrate(h, fit=False)
    scenario = result.scenario
    assert scenario.batch_preemption is not None and [c.name for c in scenario.priority_classes] == [
        "slurm-tier-1", "slurm-tier-10",
    ]  # fmt: skip
    assert scenario.scheduler.backfill_interval_s == 60
    assert any("work the record does not list 8.3 %" in n for n in result.notes)
