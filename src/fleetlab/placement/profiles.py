"""Scheduling profiles: named presets and their resolution from a scenario's scheduler section.

A profile is configuration, not code: the strategy, the resources it weighs, the plugin weights. The
``default`` preset is kube-scheduler's default profile (default_plugins.go @01db4ae9): LeastAllocated over
cpu and memory only, so GPUs do not influence scores. The other presets add ``nvidia.com/gpu`` the way a
GPU platform team configures NodeResourcesFitArgs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fleetlab.model.pod_constraints import SYSTEM_DEFAULT_CONSTRAINTS, TopologySpreadConstraint
from fleetlab.model.policy_names import PRESET_NAMES, SHARE_POLICY_NAMES
from fleetlab.model.scheduler import DEFAULT_PLUGIN_WEIGHTS, SchedulerConfig, ScoringStrategy


@dataclass(frozen=True)
class Profile:
    """A fully resolved scheduling profile."""

    name: str
    strategy: str
    resources: tuple[tuple[str, int], ...]
    shape: tuple[tuple[int, int], ...]
    balanced_resources: tuple[str, ...]
    plugin_weights: dict[str, int]
    tie_break: str
    kubernetes_version: str
    description: str = ""
    #: PodTopologySpread defaults for owned pods without constraints, and whether they are the system ones.
    spread_defaults: tuple[TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
    spread_system_defaulted: bool = True
    #: An FGD-paper policy scoring nodes through the SharePolicy plugin ("" for none).
    share_policy: str = ""


_GPU_WEIGHTED = (("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 3))

PRESETS: dict[str, tuple[str, tuple[tuple[str, int], ...], tuple[tuple[int, int], ...], str]] = {
    "default": (
        "LeastAllocated",
        (("cpu", 1), ("memory", 1)),
        (),
        "kube-scheduler default profile: LeastAllocated over cpu and memory (GPUs not scored)",
    ),
    "least-allocated": (
        "LeastAllocated",
        _GPU_WEIGHTED,
        (),
        "spread: LeastAllocated over cpu 1, memory 1, nvidia.com/gpu 3",
    ),
    "most-allocated": (
        "MostAllocated",
        _GPU_WEIGHTED,
        (),
        "pack: MostAllocated over cpu 1, memory 1, nvidia.com/gpu 3",
    ),
    "bin-packing": (
        "RequestedToCapacityRatio",
        _GPU_WEIGHTED,
        ((0, 0), (100, 10)),
        "pack: RequestedToCapacityRatio shape (0,0)->(100,10) over cpu 1, memory 1, nvidia.com/gpu 3",
    ),
}


assert tuple(PRESETS) == PRESET_NAMES, "model.policy_names.PRESET_NAMES must list the presets in order"

#: The SharePolicy plugin's weight: it decides, taint and affinity preferences (3, 2) still count a little.
SHARE_POLICY_WEIGHT = 10
SHARE_POLICY_DESCRIPTIONS: dict[str, str] = {
    "fgd": "FGD: least growth of expected GPU fragmentation against the workload's typical pods",
    "bestfit": "BestFit (FGD paper): least CPU and GPU left over on the node, tightest GPU",
    "dotprod": "DotProd (FGD paper): least alignment of free vector and request, tightest GPU",
    "packing": "GpuPacking (FGD paper): partly used GPUs, then used nodes, then empty nodes",
    "clustering": "GpuClustering (FGD paper, Gandiva-style): nodes holding the same pod kind",
    "random": "Random (FGD paper): a random feasible node and GPU",
}
assert tuple(SHARE_POLICY_DESCRIPTIONS) == SHARE_POLICY_NAMES
#: The score plugin each policy is in the FGD authors' scheduler build (hkust-adsl
#: kubernetes-scheduler-simulator, pkg/simulator/plugin); out of tree, not part of kube-scheduler.
SHARE_POLICY_PLUGINS: dict[str, str] = {
    "fgd": "FGDScore",
    "bestfit": "BestFitScore",
    "dotprod": "DotProductScore",
    "packing": "GpuPackingScore",
    "clustering": "GpuClusteringScore",
    "random": "RandomScore",
}


class UnknownPolicyError(ValueError):
    """A policy name that is neither a preset nor resolvable."""


def preset_names() -> list[str]:
    """Preset policy names, in the order ``compare`` shows them by default."""
    return list(PRESETS)


def resolve_profile(config: SchedulerConfig) -> Profile:
    """Turn a scheduler section (preset + overrides) into a Profile."""
    if config.policy in SHARE_POLICY_DESCRIPTIONS:
        return _share_profile(config)
    if config.policy not in PRESETS:
        raise UnknownPolicyError(f"unknown policy {config.policy!r}; presets: {', '.join(PRESETS)}")
    strategy, resources, shape, description = PRESETS[config.policy]
    override: ScoringStrategy | None = config.scoring_strategy
    if override is not None:
        strategy = override.type
        resources = tuple((r.name, r.weight) for r in override.resources)
        if override.requested_to_capacity_ratio is not None:
            shape = tuple((p.utilization, p.score) for p in override.requested_to_capacity_ratio.shape)
        description = f"{config.policy} with scoringStrategy {strategy} over " + ", ".join(
            f"{n} {w}" for n, w in resources
        )
    if strategy == "RequestedToCapacityRatio" and not shape:
        raise UnknownPolicyError("RequestedToCapacityRatio needs a shape")
    balanced = (
        tuple(r.name for r in config.balanced_allocation_resources)
        if config.balanced_allocation_resources
        else ("cpu", "memory")
    )
    weights = dict(DEFAULT_PLUGIN_WEIGHTS)
    weights.update(config.plugin_weights)
    spread = config.pod_topology_spread
    system = spread.defaulting_type == "System"
    return Profile(
        name=config.policy,
        strategy=strategy,
        resources=resources,
        shape=shape,
        balanced_resources=balanced,
        plugin_weights=weights,
        tie_break=config.tie_break,
        kubernetes_version=config.kubernetes_version,
        description=description,
        spread_defaults=SYSTEM_DEFAULT_CONSTRAINTS if system else spread.default_constraints,
        spread_system_defaulted=system,
    )


def _share_profile(config: SchedulerConfig) -> Profile:
    """An FGD-paper policy: the default profile's filters, its resource-fit and balance scores replaced by
    the SharePolicy plugin (as the paper's runs score with the policy alone); the GPU inside the node is
    the policy's too."""
    base = resolve_profile(config.model_copy(update={"policy": "default", "scoring_strategy": None}))
    weights = dict(base.plugin_weights)
    weights.update(
        {"NodeResourcesFit": 0, "NodeResourcesBalancedAllocation": 0, "SharePolicy": SHARE_POLICY_WEIGHT}
    )
    weights.update(config.plugin_weights)
    return replace(
        base,
        name=config.policy,
        plugin_weights=weights,
        description=SHARE_POLICY_DESCRIPTIONS[config.policy],
        share_policy=config.policy,
    )
