"""A PodSet's topology request, as Kueue reads it from the pod template's annotations (v0.13 line).

* ``kueue.x-k8s.io/podset-required-topology: <level>`` — every pod in one domain of that level;
* ``kueue.x-k8s.io/podset-preferred-topology: <level>`` — one domain if possible, else the fewest
  domains one level up at a time;
* ``kueue.x-k8s.io/podset-unconstrained-topology: "true"`` — any nodes of the TAS flavor, packed;
* ``kueue.x-k8s.io/podset-slice-required-topology: <level>`` with ``podset-slice-size: <n>`` — the pods
  in slices of ``n``, each slice inside one domain of that level.

Kueue's webhook refuses more than one of the first three, a slice level without a size (and a size
without a level), and a size that is not a positive integer or does not divide the pod count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "PREFERRED",
    "REQUIRED",
    "SLICE_REQUIRED",
    "SLICE_SIZE",
    "UNCONSTRAINED",
    "TopologyRequest",
    "TopologyRequestError",
    "topology_request",
]

_PREFIX = "kueue.x-k8s.io/"
REQUIRED = _PREFIX + "podset-required-topology"
PREFERRED = _PREFIX + "podset-preferred-topology"
UNCONSTRAINED = _PREFIX + "podset-unconstrained-topology"
SLICE_REQUIRED = _PREFIX + "podset-slice-required-topology"
SLICE_SIZE = _PREFIX + "podset-slice-size"


class TopologyRequestError(ValueError):
    """The annotations break one of Kueue's webhook rules (the message names the annotation)."""


@dataclass(frozen=True)
class TopologyRequest:
    """``kueue.PodSetTopologyRequest``: at most one of required / preferred / unconstrained, and an
    optional slice level with its size."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_required: str | None = None
    slice_size: int | None = None

    def annotations(self) -> dict[str, str]:
        """The pod-template annotations that ask for this request."""
        out: dict[str, str] = {}
        if self.required is not None:
            out[REQUIRED] = self.required
        if self.preferred is not None:
            out[PREFERRED] = self.preferred
        if self.unconstrained:
            out[UNCONSTRAINED] = "true"
        if self.slice_required is not None:
            out[SLICE_REQUIRED] = self.slice_required
        if self.slice_size is not None:
            out[SLICE_SIZE] = str(self.slice_size)
        return out


def topology_request(annotations: Mapping[str, str], pods: int | None = None) -> TopologyRequest | None:
    """The request the annotations make (None when they make none); ``pods`` (the PodSet's count), when
    known, must be a multiple of the slice size."""
    required = annotations.get(REQUIRED) or None
    preferred = annotations.get(PREFERRED) or None
    unconstrained_text = annotations.get(UNCONSTRAINED)
    if unconstrained_text is not None and unconstrained_text not in ("true", "false"):
        raise TopologyRequestError(f'{UNCONSTRAINED}: "{unconstrained_text}" must be "true" or "false"')
    unconstrained = unconstrained_text == "true"
    chosen = [
        a for a, on in ((REQUIRED, required), (PREFERRED, preferred), (UNCONSTRAINED, unconstrained)) if on
    ]
    if len(chosen) > 1:
        raise TopologyRequestError(f"{' and '.join(chosen)}: give at most one of them")
    slice_level = annotations.get(SLICE_REQUIRED) or None
    size_text = annotations.get(SLICE_SIZE)
    size: int | None = None
    if size_text is not None:
        if not size_text.isdigit() or int(size_text) < 1 or len(size_text) > 9:
            raise TopologyRequestError(f'{SLICE_SIZE}: "{size_text}" must be a positive integer')
        size = int(size_text)
    if slice_level is not None and size is None:
        raise TopologyRequestError(f"{SLICE_REQUIRED} needs {SLICE_SIZE}")
    if size is not None and slice_level is None:
        raise TopologyRequestError(f"{SLICE_SIZE} needs {SLICE_REQUIRED}")
    if size is not None and pods is not None and pods % size:
        raise TopologyRequestError(f"{SLICE_SIZE}: {size} must divide the PodSet's {pods} pods")
    if not chosen and slice_level is None:
        return None
    return TopologyRequest(required, preferred, unconstrained, slice_level, size)
