"""NVIDIA GPU Operator configuration for the scenario's GPU pools.

* The device plugin's config file (``version: v1``, ``flags.migStrategy``) per GPU pool, as one ConfigMap
  with a key per pool; a node selects its entry with the label ``nvidia.com/device-plugin.config``. A
  time-sliced pool's entry adds ``sharing.timeSlicing`` (k8s-device-plugin ``api/config/v1``
  ReplicatedResources: ``renameByDefault``, ``failRequestsGreaterThanOne``, ``resources[{name,
  replicas}]``) for ``nvidia.com/gpu``; renamed, the plugin advertises ``nvidia.com/gpu.shared``.
* For pools that declare MIG, a mig-parted config (``version: v1``, ``mig-configs``) with one named
  configuration per pool, as the ConfigMap the MIG manager reads (key ``config.yaml``); a node selects its
  configuration with the label ``nvidia.com/mig.config``. mig-parted takes counts per profile, not
  placements, so a layout entry's ``@start`` is not carried over (the driver places instances itself).
"""

from __future__ import annotations

from typing import Any

import yaml

from fleetlab.model.cluster import Cluster, NodePool
from fleetlab.model.resources import GPU

NAMESPACE = "gpu-operator"
DEVICE_PLUGIN_CONFIGMAP = "fleetlab-device-plugin-config"
MIG_PARTED_CONFIGMAP = "fleetlab-mig-parted-config"
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def gpu_pools(cluster: Cluster) -> list[NodePool]:
    """Pools whose nodes carry NVIDIA GPUs."""
    return [p for p in cluster.pools if p.gpu_model is not None and p.gpus_per_node > 0]


def device_plugin_config(pool: NodePool) -> dict[str, Any]:
    """The device plugin config file for one pool: its MIG strategy (``none`` without MIG) and its
    ``sharing.timeSlicing`` or ``sharing.mps``."""
    strategy = "none" if pool.mig is None else pool.mig.strategy
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy}}
    sliced = pool.time_slicing
    if sliced is not None:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": sliced.rename_by_default,
                "failRequestsGreaterThanOne": sliced.fail_requests_greater_than_one,
                "resources": [{"name": GPU, "replicas": sliced.replicas}],
            }
        }
    if pool.mps is not None:  # the plugin always refuses requests above one replica under MPS
        config["sharing"] = {
            "mps": {
                "renameByDefault": pool.mps.rename_by_default,
                "resources": [{"name": GPU, "replicas": pool.mps.replicas}],
            }
        }
    return config


def mig_config_name(pool: NodePool) -> str:
    """The mig-parted configuration name a pool's nodes select."""
    return f"fleetlab-{pool.name}"


def mig_parted_entries(pool: NodePool) -> list[dict[str, Any]]:
    """mig-parted device entries for one MIG pool: the layout on its MIG GPUs, MIG off on the rest."""
    assert pool.mig is not None and pool.gpu_model is not None
    counts: dict[str, int] = {}
    for entry in pool.mig.layout:
        name = entry.partition("@")[0].strip()
        counts[name] = counts.get(name, 0) + 1
    mig_gpus = pool.gpus_per_node if pool.mig.gpus is None else pool.mig.gpus
    if mig_gpus == pool.gpus_per_node:
        return [{"devices": "all", "mig-enabled": True, "mig-devices": counts}]
    return [
        {"devices": list(range(mig_gpus)), "mig-enabled": True, "mig-devices": counts},
        {"devices": list(range(mig_gpus, pool.gpus_per_node)), "mig-enabled": False},
    ]


def mig_parted_config(cluster: Cluster) -> dict[str, Any] | None:
    """The mig-parted config for every MIG pool, or None when no pool declares MIG."""
    pools = [p for p in gpu_pools(cluster) if p.mig is not None]
    if not pools:
        return None
    configs: dict[str, Any] = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
    for pool in pools:
        configs[mig_config_name(pool)] = mig_parted_entries(pool)
    return {"version": "v1", "mig-configs": configs}


def _configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": data,
    }


def device_plugin_configmap(cluster: Cluster) -> dict[str, Any] | None:
    """ConfigMap with one device plugin config per GPU pool, or None without GPU pools."""
    pools = gpu_pools(cluster)
    if not pools:
        return None
    return _configmap(DEVICE_PLUGIN_CONFIGMAP, {p.name: _dump(device_plugin_config(p)) for p in pools})


def mig_parted_configmap(cluster: Cluster) -> dict[str, Any] | None:
    """ConfigMap holding the mig-parted config, or None when no pool declares MIG."""
    config = mig_parted_config(cluster)
    return None if config is None else _configmap(MIG_PARTED_CONFIGMAP, {"config.yaml": _dump(config)})


def node_labels(cluster: Cluster) -> dict[str, dict[str, str]]:
    """Per GPU pool, the labels its nodes need so the operator picks the pool's configuration."""
    out: dict[str, dict[str, str]] = {}
    for pool in gpu_pools(cluster):
        labels = {DEVICE_PLUGIN_LABEL: pool.name}
        if pool.mig is not None:
            labels[MIG_CONFIG_LABEL] = mig_config_name(pool)
        out[pool.name] = labels
    return out
