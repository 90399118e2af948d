"""Write a scenario's configuration files into a folder, all at once or not at all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fleetlab.export.kueue_objects import kueue_objects
from fleetlab.export.nvidia import device_plugin_configmap, mig_parted_configmap, node_labels
from fleetlab.export.scheduler_config import class_scheduler_name, kube_scheduler_configuration
from fleetlab.model.scenario import Scenario
from fleetlab.spec.out_folder import staged_output

SCHEDULER_FILE = "kube-scheduler-config.yaml"
KUEUE_FILE = "kueue.yaml"
DEVICE_PLUGIN_FILE = "nvidia-device-plugin-config.yaml"
MIG_PARTED_FILE = "nvidia-mig-parted-config.yaml"
NOTES_FILE = "README.md"


@dataclass(frozen=True)
class ExportResult:
    """The files written (names inside the folder) and what a reader must know to apply them."""

    files: tuple[str, ...]
    notes: tuple[str, ...]


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (config files inside ConfigMaps) as literal ``|`` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _yaml(documents: list[dict[str, Any]]) -> str:
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, explicit_start=True)


def _notes(scenario: Scenario) -> list[str]:
    config, cluster = scenario.scheduler, scenario.cluster
    notes = [
        "PodTopologySpread and InterPodAffinity score with weight 2 each as in kube-scheduler; fleetlab "
        "models topology spread, pod affinity and pod anti-affinity with them.",
    ]
    if config.tie_break == "first":
        notes.append(
            "tie_break: first has no kube-scheduler setting: the real scheduler picks at random among the "
            "nodes with the top score."
        )
    if config.gang_scheduling:
        notes.append(
            "gang_scheduling (all-or-nothing placement) is not a kube-scheduler setting: it needs Kueue "
            "with waitForPodsReady, or a gang plugin such as scheduler-plugins' Coscheduling."
        )
    for job_class in sorted(config.class_profiles):
        notes.append(
            f"Pods of class {job_class} must set spec.schedulerName: {class_scheduler_name(job_class)}."
        )
    if scenario.kueue is None:
        notes.append("The scenario has no kueue section, so no Kueue objects were written.")
    wait, fair = scenario.kueue_configuration.wait_for_pods_ready, scenario.kueue_configuration.fair_sharing
    if wait is not None or fair is not None:
        notes.append(
            "Kueue's own Configuration (waitForPodsReady, fairSharing) is not written: set it in the Kueue "
            "manager's config to match the scenario's kueue_configuration section."
        )
    for pool_name, labels in node_labels(cluster).items():
        shown = ", ".join(f"{k}={v}" for k, v in labels.items())
        notes.append(f"Label the nodes of pool {pool_name}: {shown}.")
    for pool in cluster.pools:
        if pool.mig is not None and any("@" in entry for entry in pool.mig.layout):
            notes.append(
                f"Pool {pool.name}: mig-parted takes profile counts, so the layout's @start positions are "
                "not carried over."
            )
    return notes


def render(scenario: Scenario) -> dict[str, str]:
    """File name -> text for everything the scenario's policy configures."""
    files = {SCHEDULER_FILE: _yaml([kube_scheduler_configuration(scenario.scheduler)])}
    if scenario.kueue is not None:
        files[KUEUE_FILE] = _yaml(kueue_objects(scenario.kueue, scenario.cluster))
    device_plugin = device_plugin_configmap(scenario.cluster)
    if device_plugin is not None:
        files[DEVICE_PLUGIN_FILE] = _yaml([device_plugin])
    mig = mig_parted_configmap(scenario.cluster)
    if mig is not None:
        files[MIG_PARTED_FILE] = _yaml([mig])
    lines = [f"# Configuration exported from fleetlab scenario {scenario.name}", ""]
    lines += [f"- `{name}`" for name in files]
    lines += ["", "## Notes", ""] + [f"- {note}" for note in _notes(scenario)]
    files[NOTES_FILE] = "\n".join(lines) + "\n"
    return files


def export_scenario(scenario: Scenario, out: Path, force: bool = False) -> ExportResult:
    """Write every file into ``out`` by building a sibling folder and swapping it into place."""
    files = render(scenario)
    with staged_output(out, force) as staging:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
    return ExportResult(files=tuple(files), notes=tuple(_notes(scenario)))
