"""The progress guard stops a run only for a real reason: a late submission or a long data download is
progress, not a stall (before, both were cut at 720 h and blamed on Kueue)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.spec.loader import load
from test_spec_errors import minimal, write

HOUR = 3600


def run(tmp_path: Path, data: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    result = run_one(load(str(write(tmp_path, data))), "default").result
    return summarize(result).as_dict(), tuple(result.warnings)


def test_a_job_submitted_800_h_after_the_last_completion_still_runs(tmp_path: Path) -> None:
    # j1 runs 0..1.5 h; j2 arrives at 800 h, 798.5 h after the last completion (> the 720 h minimum
    # window), and runs 1.5 h: both complete, nothing is stopped.
    data = minimal()
    late = copy.deepcopy(data["workload"]["jobs"][0])
    late.update(id="j2", submit_s=800 * HOUR)
    data["workload"]["jobs"].append(late)
    summary, warnings = run(tmp_path, data)
    assert summary["jobs_completed"] == 2, summary
    assert not any("stopped at" in w for w in warnings), warnings


def test_a_900_h_data_download_is_progress_not_a_stall(tmp_path: Path) -> None:
    # 1 MiB/s data bandwidth and 900 h x 3600 s x 1 MiB of data: the download alone takes 900 h.
    data = minimal()
    data["cluster"]["pools"][0]["data_bandwidth"] = "1Mi"
    data["workload"]["jobs"][0]["data_size"] = f"{900 * HOUR}Mi"
    summary, warnings = run(tmp_path, data)
    assert summary["jobs_completed"] == 1, summary
    assert not any("stopped at" in w for w in warnings), warnings
