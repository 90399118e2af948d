"""Placement artefacts carry what placed the work: the pools' taints and labels, the jobs' tolerations,
selectors and required node affinity (export's placement-rules.md, the decision report's placement/ and
job-classes.csv).

Hand case (the B200 one): a B200 pool tainted ``fleetlab.io/big-gpu=true:NoSchedule`` keeps small jobs
off; only the ``big`` class tolerates it and selects ``fleetlab.io/tier=big``. Both sides must appear.
"""

from __future__ import annotations

from fleetlab.export.placement_rules import placement_rules
from fleetlab.export.write import render
from fleetlab.model.job import Job
from fleetlab.model.scenario import Scenario
from fleetlab.report.decision import job_classes

TAINT = {"key": "fleetlab.io/big-gpu", "value": "true", "effect": "NoSchedule"}


def _scenario() -> Scenario:
    return Scenario.model_validate(
        {
            "name": "b200",
            "cluster": {
                "pools": [
                    {"name": "h100", "count": 2, "gpu_model": "H100", "gpus_per_node": 8, "cpu": "96",
                     "memory": "1Ti"},
                    {"name": "b200", "count": 1, "gpu_model": "B200", "gpus_per_node": 8, "cpu": "96",
                     "memory": "2Ti", "labels": {"fleetlab.io/tier": "big"}, "taints": [TAINT]},
                ]
            },
            "workload": {
                "jobs": [
                    {"id": "small-1", "requests": {"nvidia.com/gpu": 1}, "runtime": "1h"},
                    {"id": "small-2", "requests": {"nvidia.com/gpu": 1}, "runtime": "1h"},
                    {
                        "id": "big-1",
                        "requests": {"nvidia.com/gpu": 8},
                        "runtime": "4h",
                        "tolerations": [{"key": "fleetlab.io/big-gpu", "operator": "Exists"}],
                        "nodeSelector": {"fleetlab.io/tier": "big"},
                    },
                ]
            },
        }
    )  # fmt: skip


def test_placement_rules_name_the_taint_and_the_toleration() -> None:
    text = placement_rules(_scenario())
    assert "| b200 | 1 | 8 x B200 | fleetlab.io/tier=big | fleetlab.io/big-gpu=true:NoSchedule |" in text
    assert "| h100 | 2 | 8 x H100 | — | — |" in text
    assert "kubectl taint node NODE fleetlab.io/big-gpu=true:NoSchedule" in text
    assert "| 1 job(s) | batch | default | fleetlab.io/big-gpu | fleetlab.io/tier=big | — |" in text
    assert "| 2 job(s) | batch | default | — | — | — |" in text
    assert render(_scenario())["placement-rules.md"] == text


def test_job_classes_carry_tolerations_and_selectors() -> None:
    jobs = [Job.model_validate(j.model_dump(by_alias=True)) for j in _scenario().workload.jobs or ()]
    rows = {r["jobs"]: r for r in job_classes(jobs)}
    assert (
        rows[1]["tolerations"] == "fleetlab.io/big-gpu" and rows[1]["node_selector"] == "fleetlab.io/tier=big"
    )
    assert rows[2]["tolerations"] == "" and rows[2]["node_selector"] == ""
