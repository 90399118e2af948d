"""Write a scenario's configuration files into a folder, all at once or not at all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fleetlab.export.dra_objects import DRA_FILE, dra_documents, dra_notes
from fleetlab.export.flavor_labels import PoolSelector, pool_selectors, real_node_labels
from fleetlab.export.kueue_objects import API_VERSION, kueue_objects
from fleetlab.export.namespace_policies import NAMESPACE_POLICIES_FILE, namespace_policy_documents
from fleetlab.export.nvidia import device_plugin_configmap, mig_parted_configmap, node_labels
from fleetlab.export.placement_rules import PLACEMENT_FILE, placement_rules
from fleetlab.export.scheduler_config import (
    class_profiles,
    class_scheduler_name,
    kube_scheduler_configuration,
)
from fleetlab.export.second_scheduler import SECOND_SCHEDULER, second_scheduler_objects
from fleetlab.export.workload_api import WORKLOAD_API_FILE, workload_api_documents, workload_api_notes
from fleetlab.model.scenario import Scenario
from fleetlab.placement.profiles import SHARE_POLICY_PLUGINS, resolve_profile
from fleetlab.spec.kube_snapshot import Snapshot
from fleetlab.spec.out_folder import staged_output

SCHEDULER_FILE = "kube-scheduler-config.yaml"
SECOND_SCHEDULER_FILE = "fleetlab-scheduler.yaml"
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


@dataclass(frozen=True)
class ExportOptions:
    """What the scenario alone does not say: the cluster's real node labels, the Kueue API version."""

    snapshot: Snapshot | None = None
    kueue_api: str = API_VERSION


def _flavor_labels(
    scenario: Scenario, selectors: dict[str, PoolSelector | None]
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Per flavor, its nodeLabels on the real cluster, and a note for each replacement or failure."""
    out: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    if scenario.kueue is None:
        return out, notes
    for flavor in scenario.kueue.resource_flavors:
        labels, unresolved = real_node_labels(flavor.spec.node_labels, selectors)
        out[flavor.name] = labels
        pool = flavor.spec.node_labels.get("fleetlab.io/pool")
        if unresolved is not None:
            notes.append(
                f"ResourceFlavor {flavor.name}: no label on the cluster tells pool {unresolved}'s nodes "
                f"apart, so it keeps fleetlab.io/pool={unresolved}; label those nodes with it "
                f"(`kubectl label node NODE fleetlab.io/pool={unresolved}`), or pass --snapshot"
            )
        elif pool is not None:
            found = selectors[pool]
            assert found is not None
            shown = ", ".join(f"{k}={v}" for k, v in found.labels.items())
            notes.append(f"ResourceFlavor {flavor.name} selects pool {pool} by {shown}: {found.source}.")
    return out, notes


def _notes(scenario: Scenario) -> list[str]:
    config, cluster = scenario.scheduler, scenario.cluster
    notes = [
        "PodTopologySpread and InterPodAffinity score with weight 2 each as in kube-scheduler; fleetlab "
        "models topology spread, pod affinity and pod anti-affinity with them.",
        f"{SECOND_SCHEDULER_FILE} runs the same profiles as a second scheduler (`kubectl apply -f` it); pods "
        f"opt in with spec.schedulerName: {SECOND_SCHEDULER}. On GKE, EKS and AKS the default scheduler runs "
        f"in the managed control plane and cannot be given {SCHEDULER_FILE}: use the second scheduler there. "
        f"{SCHEDULER_FILE} is for control planes you run yourself (kube-scheduler --config).",
    ]
    plugins = sorted(
        {
            SHARE_POLICY_PLUGINS[p.share_policy]
            for p in (resolve_profile(config), *class_profiles(config).values())
            if p.share_policy in SHARE_POLICY_PLUGINS
        }
    )
    if plugins:
        notes.append(
            f"The profiles use the out-of-tree score plugin(s) {', '.join(plugins)}: the stock "
            f"registry.k8s.io/kube-scheduler image in {SECOND_SCHEDULER_FILE} refuses them; build a "
            "scheduler with those plugins and set its image there."
        )
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
    resources = scenario.kueue_configuration.resources
    if wait is not None or fair is not None or (resources is not None and resources.device_class_mappings):
        notes.append(
            "Kueue's own Configuration (waitForPodsReady, fairSharing, resources.deviceClassMappings) is "
            "not written: set it in the Kueue manager's config to match the scenario's kueue_configuration "
            "section."
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


def render(scenario: Scenario, options: ExportOptions | None = None) -> dict[str, str]:
    """File name -> text for everything the scenario's policy configures."""
    return render_with_notes(scenario, options)[0]


def render_with_notes(
    scenario: Scenario, options: ExportOptions | None = None
) -> tuple[dict[str, str], list[str]]:
    """The files and the notes a reader must know to apply them (also in the README.md written)."""
    opts = options or ExportOptions()
    files = {
        SCHEDULER_FILE: _yaml([kube_scheduler_configuration(scenario.scheduler)]),
        SECOND_SCHEDULER_FILE: _yaml(second_scheduler_objects(scenario.scheduler)),
    }
    selectors = pool_selectors(scenario.cluster, opts.snapshot)
    flavor_labels, label_notes = _flavor_labels(scenario, selectors)
    if scenario.kueue is not None:
        objects = kueue_objects(scenario.kueue, scenario.cluster, flavor_labels, opts.kueue_api)
        files[KUEUE_FILE] = _yaml(objects)
    device_plugin = device_plugin_configmap(scenario.cluster)
    if device_plugin is not None:
        files[DEVICE_PLUGIN_FILE] = _yaml([device_plugin])
    mig = mig_parted_configmap(scenario.cluster)
    if mig is not None:
        files[MIG_PARTED_FILE] = _yaml([mig])
    dra = dra_documents(scenario)
    if dra:
        files[DRA_FILE] = _yaml(dra)
    policies = namespace_policy_documents(scenario)
    if policies:
        files[NAMESPACE_POLICIES_FILE] = _yaml(policies)
    gangs = workload_api_documents(scenario)
    if gangs:
        files[WORKLOAD_API_FILE] = _yaml(gangs)
    files[PLACEMENT_FILE] = placement_rules(scenario)
    notes = _notes(scenario) + label_notes + dra_notes(scenario) + workload_api_notes(scenario)
    lines = [f"# Configuration exported from fleetlab scenario {scenario.name}", ""]
    lines += [f"- `{name}`" for name in files]
    lines += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    files[NOTES_FILE] = "\n".join(lines) + "\n"
    return files, notes


def export_scenario(
    scenario: Scenario, out: Path, options: ExportOptions | None = None, force: bool = False
) -> ExportResult:
    """Write every file into ``out`` by building a sibling folder and swapping it into place."""
    files, notes = render_with_notes(scenario, options)
    with staged_output(out, force) as staging:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
    return ExportResult(files=tuple(files), notes=tuple(notes))
