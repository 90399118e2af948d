"""Calibration on real logs from ../shared/traces (skipped when absent): why the HPC2N "Seth" log and the
Alibaba 2023 pod list waited, and the HPC2N replay on its real 120 x 2-CPU nodes. Figures are those
docs/calibration.md quotes; the full fit (about 25 s) runs with FLEETLAB_SLOW_TESTS=1."""

from __future__ import annotations

import os

import pytest

from fleetlab.experiment.calibration import calibrate
from fleetlab.metrics.wait_causes import diagnose_waits
from fleetlab.model.history import History
from fleetlab.report.calibration_text import cause_lines
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.swf import SwfNodes
from shared_data import shared_path

HPC2N = shared_path("traces", "pwa-hpc2n", "hpc2n-seth-2002-first3170.swf")
OPENB = shared_path("traces", "alibaba-gpu-v2023")
needs_hpc2n = pytest.mark.skipif(not HPC2N.is_file(), reason="shared HPC2N log absent")
needs_openb = pytest.mark.skipif(not (OPENB / "openb_pod_list_default.csv").is_file(), reason="openb absent")


@pytest.fixture(scope="module")
def seth() -> History:
    """The log on its real machine: 120 nodes of 2 CPUs (the archive's Alea machine file)."""
    return import_sources([str(HPC2N)], swf_nodes=SwfNodes(120, 2))


@needs_hpc2n
def test_hpc2n_waits_are_not_capacity_waits(seth: History) -> None:
    causes = diagnose_waits(seth)
    row = causes.row()
    assert row is not None and (row.jobs, row.waited) == (3170, 3071)
    assert row.wait_hours == pytest.approx(15_502.9, abs=0.1)
    # For 4.0 % of the waiting the running jobs left no room; the same user ran something for 75 %.
    assert row.capacity_explained_wait_share == pytest.approx(0.0403, abs=5e-4)
    assert row.same_user_running_share == pytest.approx(0.7505, abs=5e-4)
    assert row.nothing_running_share == pytest.approx(0.0698, abs=5e-4)
    assert causes.concentration["user"] == (6, 17) and causes.wider_than_any_node == 2930
    words = "\n".join(cause_lines(causes.as_dict()))
    assert "capacity explains 4.0 % of it" in words and "not capacity waits" in words


@needs_hpc2n
def test_hpc2n_replays_every_job_on_its_real_nodes(seth: History) -> None:
    # One pod of 64 processors fits no 2-CPU node; as a gang of 32 node-sized pods it runs (the replay
    # before gangs left 92.5 % of the jobs never started).
    c = calibrate(seth, fit=False)
    rows = {(r.job_class, r.metric): r for r in c.rows}
    assert rows[("all", "never_started_share")].simulated == 0.0
    assert rows[("all", "cpu_hours_allocated")].error == pytest.approx(0.0, abs=1e-9)
    assert rows[("all", "gpu_hours_allocated")].within is None  # no GPU work: not compared
    assert c.validation is not None and c.validation.jobs == 1056
    # Capacity alone: the later part's waits are far shorter than measured.
    later = {(r.job_class, r.metric): r for r in c.validation.rows}
    assert later[("all", "wait_ks")].error == pytest.approx(0.516, abs=0.01)


@needs_hpc2n
@pytest.mark.skipif(os.environ.get("FLEETLAB_SLOW_TESTS") != "1", reason="set FLEETLAB_SLOW_TESTS=1 (~25 s)")
def test_hpc2n_fit_and_out_of_sample_validation(seth: History) -> None:
    c = calibrate(seth)
    # Candidates are scored on the fit part's later third (704 jobs) with limits read from its earlier two
    # thirds (rolling origin): the in-sample levels (0.9 CPU, 0.75 jobs: fit KS 0.198) let a backlog grow
    # on jobs they were not read from (p95 11.9 x the measured), so the hard ceilings win (quantile 1 of
    # CPUs and of running jobs), with a 401 s latency and strict FIFO.
    assert c.fit_scoring is not None and c.fit_scoring.method == "rolling-origin"
    assert (c.fit_scoring.read_until_s, c.fit_scoring.scored_jobs) == (2_569_660.0, 704)
    knobs = c.knobs
    assert (knobs.limit_quantile, knobs.job_limit_quantile, knobs.scheduling_latency_s) == (1.0, 1.0, 401.0)
    assert knobs.queueing == "fifo"
    assert c.policy is not None and c.policy.grouping == "user"
    earlier = {(r.job_class, r.metric): r for r in c.rows}
    assert earlier[("all", "wait_ks")].error == pytest.approx(0.309, abs=0.01)
    later = {(r.job_class, r.metric): r for r in c.validation.rows} if c.validation else {}
    # The later part: KS 0.290 (before: 0.259), p95 58,263 s against 92,738 measured (-37 %; before
    # +357 %), makespan within 2 % (before +92 %): no runaway backlog, but the waits are too short.
    assert later[("all", "wait_ks")].error == pytest.approx(0.290, abs=0.01)
    assert later[("all", "wait_p95_s")].simulated == pytest.approx(58_263, rel=0.02)
    assert not later[("all", "wait_p95_s")].within and later[("all", "makespan_s")].within


@needs_openb
def test_alibaba_waits_are_not_capacity_waits_and_the_record_lacks_the_rest() -> None:
    history = import_sources(
        [str(OPENB / "openb_pod_list_default.csv"), str(OPENB / "openb_node_list_gpu_node.csv")]
    )
    causes = diagnose_waits(history)
    row = causes.row()
    assert row is not None and row.capacity_explained_wait_share is not None
    assert row.capacity_explained_wait_share <= 0.10
    assert row.cancelled_pending_jobs == 897
    assert causes.peak_use_share == pytest.approx(65.6 / 6212, abs=1e-3)
    words = "\n".join(cause_lines(causes.as_dict(), {"source": "inferred"}))
    assert "the measured waits are not capacity waits" in words
    assert (
        "the record lacks its queueing policy" in words
        and "never held more than 1.1 % of the nodes' GPUs" in words
    )


@needs_openb
@pytest.mark.skipif(os.environ.get("FLEETLAB_SLOW_TESTS") != "1", reason="set FLEETLAB_SLOW_TESTS=1 (~60 s)")
def test_alibaba_held_out_check_keeps_its_verdict_and_does_not_get_worse() -> None:
    history = import_sources(
        [str(OPENB / "openb_pod_list_default.csv"), str(OPENB / "openb_node_list_gpu_node.csv")]
    )
    c = calibrate(history)
    assert c.wait_causes is not None
    row = c.wait_causes.row()
    assert row is not None and row.capacity_explained_wait_share is not None
    assert row.capacity_explained_wait_share <= 0.10
    # Per-team limits scored out of sample keep none; the later part's wait KS 0.553 (0.622 when scored in
    # sample); capacity still explains none of the waiting.
    assert (c.knobs.limit_quantile, c.knobs.job_limit_quantile) == (None, None)
    later = {(r.job_class, r.metric): r for r in c.validation.rows} if c.validation else {}
    assert later[("all", "wait_ks")].error == pytest.approx(0.553, abs=0.01)
