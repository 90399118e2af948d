"""Fill a node pool's price and shape from a price catalog when it names cloud, instance type and region.

Runs on the raw scenario mapping before validation, so a pool may omit ``price_per_hour``, ``cpu``,
``memory``, ``gpu_model`` and ``gpus_per_node``; whatever the pool states itself is kept. As SkyPilot's
``get_hourly_cost`` does, the price is the cheapest offer of the type in the region (spot pools: the spot
price, which differs by zone).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from fleetlab.spec.catalog import CLOUDS, GPU_NAMES, Catalog, Offer, builtin_catalog, read_catalog
from fleetlab.spec.errors import SpecError


def _close(word: str, choices: list[str]) -> str:
    """Up to five close matches, else the first few choices, for an error message."""
    near = difflib.get_close_matches(word, choices, n=5, cutoff=0.5)
    if near:
        return "close matches: " + ", ".join(near)
    return "known: " + ", ".join(choices[:12]) + (" ..." if len(choices) > 12 else "")


def _catalog_for(pool: dict[str, Any], base: Path | None) -> Catalog:
    path = pool.get("catalog")
    if path is None:
        return builtin_catalog(str(pool["cloud"]))
    file = Path(str(path))
    if not file.is_absolute() and base is not None:
        file = base / file
    return read_catalog(file)


def _offers(pool: dict[str, Any], where: str, catalog: Catalog) -> list[Offer]:
    """The offers of the pool's instance type in its region; clear errors with close matches otherwise."""
    instance_type = pool.get("instance_type")
    region = pool.get("region")
    if not instance_type or not region:
        raise ValueError(f"{where}: a pool that names a cloud needs instance_type and region")
    of_type = [o for o in catalog.offers if o.instance_type == instance_type]
    if not of_type:
        raise ValueError(
            f"{where}.instance_type: {instance_type!r} is not in {catalog.source} "
            f"({_close(str(instance_type), catalog.instance_types())})"
        )
    in_region = [o for o in of_type if o.region == region]
    if not in_region:
        regions = sorted({o.region for o in of_type})
        raise ValueError(
            f"{where}.region: {instance_type} is not offered in {region!r} in {catalog.source} "
            f"({_close(str(region), regions)})"
        )
    return in_region


def _gpu_model(offer: Offer, where: str) -> str:
    name = offer.accelerator or ""
    if name == "V100" and (offer.gpu_memory_mib or 0) >= 32 * 1024:
        name = "V100-32GB"
    model = GPU_NAMES.get(name)
    if model is None:
        raise ValueError(
            f"{where}: the catalog's GPU {offer.accelerator!r} for {offer.instance_type} has no fleetlab GPU "
            "model; set gpu_model (and gpus_per_node) on the pool"
        )
    return model


def resolve_pool(pool: dict[str, Any], where: str, base: Path | None) -> tuple[dict[str, Any], list[str]]:
    """The pool with price and shape filled in from its catalog; the catalog's warnings on the rows used."""
    cloud = pool.get("cloud")
    if cloud not in CLOUDS:
        raise ValueError(f"{where}.cloud: unknown cloud {cloud!r}; allowed: {', '.join(CLOUDS)}")
    catalog = _catalog_for(pool, base)
    offers = _offers(pool, where, catalog)
    capacity = str(pool.get("capacity_type", "on-demand"))
    priced = [o for o in offers if o.price_for(capacity) is not None]
    out = dict(pool)
    if not priced and "price_per_hour" not in pool:
        raise ValueError(
            f"{where}: {pool['instance_type']} has no {capacity} price in {pool['region']} "
            f"in {catalog.source}"
        )
    chosen = min(priced, key=lambda o: (o.price_for(capacity) or 0.0, o.line)) if priced else offers[0]
    if "price_per_hour" not in pool:
        out["price_per_hour"] = chosen.price_for(capacity)
    if chosen.gpus > 0 and "gpus_per_node" not in pool:
        out["gpus_per_node"] = chosen.gpus
    if chosen.gpus > 0 and "gpu_model" not in pool:
        out["gpu_model"] = _gpu_model(chosen, where)
    if "cpu" not in pool and chosen.vcpus is not None:
        out["cpu"] = f"{round(chosen.vcpus * 1000)}m"
    if "memory" not in pool and chosen.memory_gib is not None:
        out["memory"] = round(chosen.memory_gib * 1024**3)
    used = sorted({line for o in offers for line in o.lines})
    warnings = [w for line in used for w in catalog.warnings.get(line, [])]
    return out, warnings


def resolve_catalog_pools(data: dict[str, Any], label: str, base: Path | None) -> list[str]:
    """Resolve every catalog-priced pool of a raw scenario mapping in place; returns the warnings."""
    cluster = data.get("cluster")
    pools = cluster.get("pools") if isinstance(cluster, dict) else None
    if not isinstance(pools, list):
        return []
    problems: list[str] = []
    warnings: list[str] = []
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict) or "cloud" not in pool:
            continue
        try:
            pools[index], found = resolve_pool(pool, f"cluster.pools[{index}]", base)
            warnings.extend(found)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise SpecError(label, problems)
    return warnings


def catalog_warnings(pools: list[dict[str, Any]], base: Path | None) -> list[str]:
    """The catalog warnings about the rows that priced these (already validated) pools."""
    out: list[str] = []
    for index, pool in enumerate(pools):
        if pool.get("cloud") is not None:
            out.extend(resolve_pool(pool, f"cluster.pools[{index}]", base)[1])
    return out
