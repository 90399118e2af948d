"""MIG (Multi-Instance GPU) geometry: which GPU instances fit where on one GPU.

A MIG-capable GPU has 8 memory slices and 7 compute slices; a GPU instance of a profile occupies the memory
slices ``[start, start + width)`` and may start only at the positions ``nvidia-smi mig -lgipp`` lists.
Instances may not overlap, at most one ``+me`` (media extensions) instance exists per GPU and no more than
7 compute slices are in use. Free capacity is therefore a question of placement, not of counts: one
3g.40gb at slice 0 of an A100-80GB leaves room for one more 3g.40gb but only three 1g.10gb (NVIDIA MIG
User Guide; data in ``fleetlab/data/mig_profiles.json``, see its SOURCE.md).

In Kubernetes the layout is node configuration (the GPU Operator's MIG manager applies it), not a scheduling
decision, so a node pool declares a fixed layout and the NVIDIA device plugin advertises its instances:
``mixed`` strategy as ``nvidia.com/mig-<profile>`` per profile, ``single`` strategy as ``nvidia.com/gpu``
(every GPU of the node then carries the same, single profile).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fleetlab.model.limits import Int

MEMORY_SLICES = 8
COMPUTE_SLICES = 7
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

#: fleetlab GPU model name → the model's key in the MIG table (same silicon, same geometry and names).
_TABLE_KEY = {
    "A100-40GB": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100-80GB",
    "H100-PCIe": "H100-80GB",
    "H100-NVL": "H100-94GB",
    "H200": "H200-141GB",
    "B200": "B200-180GB",
}


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one GPU model."""

    profile_id: int
    name: str
    compute_slices: int
    memory_slices: int
    memory_gb: int
    starts: tuple[int, ...]
    max_instances: int
    media_extensions: bool

    @property
    def resource(self) -> str:
        """The device plugin's resource name under the ``mixed`` strategy."""
        return MIG_RESOURCE_PREFIX + self.name


@dataclass(frozen=True)
class Placed:
    """A GPU instance at a memory-slice start."""

    profile: MigProfile
    start: int

    @property
    def slices(self) -> range:
        return range(self.start, self.start + self.profile.memory_slices)


class MigLayoutError(ValueError):
    """A layout NVIDIA's driver would refuse; the message says which profile cannot go where."""


def mig_capable_models() -> list[str]:
    """fleetlab GPU model names that support MIG."""
    return sorted(_TABLE_KEY)


@cache
def profiles(gpu_model: str) -> dict[str, MigProfile]:
    """The MIG profiles of a GPU model by name; a clear error for a model without MIG."""
    key = _TABLE_KEY.get(gpu_model)
    if key is None:
        capable = ", ".join(mig_capable_models())
        raise MigLayoutError(f"GPU model {gpu_model!r} has no MIG support; MIG-capable models: {capable}")
    table = json.loads(resources.files("fleetlab.data").joinpath("mig_profiles.json").read_text())
    out: dict[str, MigProfile] = {}
    for row in table["models"][key]["profiles"]:
        out[row["name"]] = MigProfile(
            profile_id=int(row["profile_id"]),
            name=row["name"],
            compute_slices=int(row["compute_slices"]),
            memory_slices=int(row["placement_width"]),
            memory_gb=int(row["memory_gb_nominal"]),
            starts=tuple(int(s) for s in row["placement_starts"]),
            max_instances=int(row["max_instances"]),
            media_extensions=bool(row["media_extensions"]),
        )
    return out


def _profile(gpu_model: str, name: str) -> MigProfile:
    table = profiles(gpu_model)
    if name not in table:
        raise MigLayoutError(f"{gpu_model} has no MIG profile {name!r}; its profiles: {', '.join(table)}")
    return table[name]


def _conflict(gpu_model: str, placed: list[Placed], candidate: Placed) -> str:
    """Why ``candidate`` cannot join ``placed`` on one GPU, or ``""`` when it can."""
    profile, start = candidate.profile, candidate.start
    if start not in profile.starts:
        allowed = ",".join(str(s) for s in profile.starts)
        return (
            f"{profile.name} cannot start at memory slice {start} on {gpu_model}: allowed starts "
            f"{{{allowed}}}:{profile.memory_slices}"
        )
    for other in placed:
        overlap = set(other.slices) & set(candidate.slices)
        if overlap:
            return (
                f"{profile.name} at slice {start} overlaps {other.profile.name} at slice {other.start} "
                f"(memory slices {min(overlap)}-{max(overlap)})"
            )
    if profile.media_extensions and any(p.profile.media_extensions for p in placed):
        return f"{profile.name}: at most one +me instance per GPU"
    same = sum(1 for p in placed if p.profile.name == profile.name)
    if same + 1 > profile.max_instances:
        return f"{profile.name}: at most {profile.max_instances} instance(s) per GPU"
    compute = sum(p.profile.compute_slices for p in placed) + profile.compute_slices
    if compute > COMPUTE_SLICES:
        return f"{profile.name} at slice {start}: {compute} compute slices in use, at most {COMPUTE_SLICES}"
    return ""


def place_layout(gpu_model: str, entries: list[str]) -> list[Placed]:
    """Place ``entries`` (``"3g.40gb"`` or ``"3g.40gb@4"``) on one GPU. An entry without a start may take
    any start the geometry allows: the placement is searched (depth first, lowest starts first), so a
    valid set of instances is accepted whatever the order it is listed in, as nvidia-smi would create it
    in a suitable order. Raises MigLayoutError naming the entry that does not fit when none exists."""
    wanted: list[tuple[int, str, MigProfile, int | None]] = []
    for index, entry in enumerate(entries):
        name, _, at = entry.partition("@")
        profile = _profile(gpu_model, name.strip())
        start: int | None = None
        if at:
            try:
                start = int(at)
            except ValueError:
                raise MigLayoutError(
                    f"layout entry {index} {entry!r}: the start after '@' must be a number"
                ) from None
        wanted.append((index, entry, profile, start))
    fixed: list[Placed] = []
    for index, entry, profile, start in wanted:
        if start is not None:
            why = _conflict(gpu_model, fixed, Placed(profile, start))
            if why:
                raise MigLayoutError(f"layout entry {index} {entry!r}: {why}")
            fixed.append(Placed(profile, start))
    free = [w for w in wanted if w[3] is None]
    found = _search(gpu_model, fixed, [(w[2], w[0]) for w in free])
    if found is None:
        (index, entry, profile, _), before = _first_misfit(gpu_model, fixed, free)
        reasons = [_conflict(gpu_model, before, Placed(profile, s)) for s in profile.starts]
        raise MigLayoutError(
            f"layout entry {index} {entry!r}: no room left on the GPU in any placement of the entries "
            f"before it ({reasons[-1]})"
        )
    by_index = {w[0]: Placed(w[2], w[3]) for w in wanted if w[3] is not None}
    by_index.update(found)
    return [by_index[i] for i in range(len(entries))]


def _search(
    gpu_model: str, placed: list[Placed], todo: list[tuple[MigProfile, int]]
) -> dict[int, Placed] | None:
    """Starts for every (profile, entry index) of ``todo`` next to ``placed``, or None (depth first)."""
    if not todo:
        return {}
    (profile, index), rest = todo[0], todo[1:]
    for start in profile.starts:
        candidate = Placed(profile, start)
        if _conflict(gpu_model, placed, candidate):
            continue
        found = _search(gpu_model, [*placed, candidate], rest)
        if found is not None:
            return {index: candidate, **found}
    return None


def _first_misfit(
    gpu_model: str, fixed: list[Placed], free: list[tuple[int, str, MigProfile, int | None]]
) -> tuple[tuple[int, str, MigProfile, int | None], list[Placed]]:
    """The first entry that no placement of the entries before it leaves room for, and one such placement
    of those entries (for the message)."""
    before: list[Placed] = list(fixed)
    for k in range(1, len(free) + 1):
        found = _search(gpu_model, fixed, [(w[2], w[0]) for w in free[:k]])
        if found is None:
            return free[k - 1], before
        before = [*fixed, *found.values()]
    return free[-1], before


def available(gpu_model: str, placed: list[Placed]) -> dict[str, int]:
    """How many more instances of each profile alone could still be created next to ``placed`` (what
    ``nvidia-smi mig -lgip`` reports as free: the counts interact and are not additive)."""
    out: dict[str, int] = {}
    for name, profile in profiles(gpu_model).items():
        current = list(placed)
        count = 0
        while True:
            start = next(
                (s for s in profile.starts if not _conflict(gpu_model, current, Placed(profile, s))), None
            )
            if start is None:
                break
            current.append(Placed(profile, start))
            count += 1
        out[name] = count
    return out


class MigConfig(BaseModel):
    """A node pool's fixed MIG layout, applied to ``gpus`` of its GPUs (all by default), and the device
    plugin's strategy for advertising the instances."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    strategy: Literal["mixed", "single"] = "mixed"
    layout: tuple[str, ...] = Field(min_length=1)
    gpus: Int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _single_needs_one_profile(self) -> MigConfig:
        names = {entry.partition("@")[0].strip() for entry in self.layout}
        if self.strategy == "single" and len(names) > 1:
            raise ValueError(
                "the single strategy needs every MIG device of a node to have the same profile; "
                f"got {', '.join(sorted(names))} (use strategy: mixed)"
            )
        if self.strategy == "single" and self.gpus is not None:
            raise ValueError("the single strategy applies MIG to every GPU of the node; drop 'gpus'")
        return self

    def advertised(self, gpu_model: str, gpus_per_node: int) -> dict[str, int]:
        """Extended resources per node as the device plugin advertises them (whole GPUs included)."""
        placed = place_layout(gpu_model, list(self.layout))
        mig_gpus = gpus_per_node if self.gpus is None else self.gpus
        if mig_gpus > gpus_per_node:
            raise MigLayoutError(f"mig.gpus is {mig_gpus} but the node has only {gpus_per_node} GPU(s)")
        if self.strategy == "single":
            return {"nvidia.com/gpu": len(placed) * mig_gpus}
        out: dict[str, int] = {"nvidia.com/gpu": gpus_per_node - mig_gpus}
        for p in placed:
            out[p.profile.resource] = out.get(p.profile.resource, 0) + mig_gpus
        return out
