"""The scenario's scheduling profile(s) as a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

Field names are those of k8s.io/kube-scheduler/config/v1 (types.go, types_pluginargs.go). Weights go in
``plugins.score.enabled``, which overrides the weight a default plugin gets from ``multiPoint``; a weight
of 0 (fleetlab: plugin off) becomes ``plugins.score.disabled``, since v1 defaulting would turn an enabled
0 into 1. NodeResourcesFit's ``scoringStrategy`` and NodeResourcesBalancedAllocation's ``resources`` are
plugin args. ``scheduler.preemption: false`` disables DefaultPreemption (PostFilter). Each
``class_profiles`` entry becomes one more profile, named ``fleetlab-<class>``: pods of that class select
it with ``spec.schedulerName``. fleetlab filters and scores every node, so each profile sets
``percentageOfNodesToScore: 100`` (kube-scheduler otherwise stops at an adaptive share of feasible nodes
on clusters of 100 nodes or more). An FGD-paper policy's SharePolicy weight is written under the
out-of-tree plugin name of the authors' scheduler (``FGDScore``, ``BestFitScore``, ...): a stock
kube-scheduler refuses it; a scheduler built with those plugins runs it.
"""

from __future__ import annotations

from typing import Any

from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.profiles import SHARE_POLICY_PLUGINS, Profile, resolve_profile

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_SCHEDULER = "default-scheduler"


def class_scheduler_name(job_class: str) -> str:
    """The schedulerName pods of ``job_class`` set to get their class's profile."""
    return f"fleetlab-{job_class}"


def _args(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, **body}


def profile_object(profile: Profile, scheduler_name: str, preemption: bool) -> dict[str, Any]:
    """One KubeSchedulerProfile that scores as ``profile`` does."""
    plugin = SHARE_POLICY_PLUGINS.get(profile.share_policy, "")
    names = {"SharePolicy": plugin}
    enabled = [{"name": names.get(n, n), "weight": w} for n, w in profile.plugin_weights.items() if w > 0]
    disabled = [{"name": n} for n, w in profile.plugin_weights.items() if w == 0]
    score: dict[str, Any] = {"enabled": enabled}
    if disabled:
        score["disabled"] = disabled
    plugins: dict[str, Any] = {"score": score}
    if not preemption:
        plugins["postFilter"] = {"disabled": [{"name": "DefaultPreemption"}]}
    strategy: dict[str, Any] = {
        "type": profile.strategy,
        "resources": [{"name": n, "weight": w} for n, w in profile.resources],
    }
    if profile.strategy == "RequestedToCapacityRatio":
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": s} for u, s in profile.shape]
        }
    return {
        "schedulerName": scheduler_name,
        "percentageOfNodesToScore": 100,
        "plugins": plugins,
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": _args("NodeResourcesFitArgs", {"scoringStrategy": strategy}),
            },
            {
                "name": "NodeResourcesBalancedAllocation",
                "args": _args(
                    "NodeResourcesBalancedAllocationArgs",
                    {"resources": [{"name": n, "weight": 1} for n in profile.balanced_resources]},
                ),
            },
            *spread_plugin_config(profile),
        ],
    }


def spread_plugin_config(profile: Profile) -> list[dict[str, Any]]:
    """PodTopologySpreadArgs when the profile does not use the system defaults (``List`` defaulting)."""
    if profile.spread_system_defaulted:
        return []
    constraints = [
        c.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)
        | {"maxSkew": c.max_skew, "topologyKey": c.topology_key, "whenUnsatisfiable": c.when_unsatisfiable}
        for c in profile.spread_defaults
    ]
    body = {"defaultingType": "List", "defaultConstraints": constraints}
    return [{"name": "PodTopologySpread", "args": _args("PodTopologySpreadArgs", body)}]


def class_profiles(config: SchedulerConfig) -> dict[str, Profile]:
    """Per job class, the profile the simulator schedules that class with (the scenario's overrides kept)."""
    return {
        job_class: resolve_profile(config.model_copy(update={"policy": policy}))
        for job_class, policy in sorted(config.class_profiles.items())
    }


def kube_scheduler_configuration(config: SchedulerConfig) -> dict[str, Any]:
    """The whole KubeSchedulerConfiguration: the default profile, then one per job class."""
    profiles = [profile_object(resolve_profile(config), DEFAULT_SCHEDULER, config.preemption)]
    for job_class, profile in class_profiles(config).items():
        profiles.append(profile_object(profile, class_scheduler_name(job_class), config.preemption))
    return {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration", "profiles": profiles}
