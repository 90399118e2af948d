"""Where the openb trace lives and which of its pod lists the FGD experiment replays.

The paper's figures use the GPU-node list and 17 pod lists: ``default`` (Fig. 9), ``gpushare40..100``
(Fig. 11), ``multigpu20..50`` (Fig. 12), ``gpuspec10..33`` (Fig. 13) and ``cpu050..250`` (Fig. 14,
"non-GPU tasks"). The trace's terms allow study and research use only, so no rows ship with fleetlab: give
``--trace-dir`` or keep a copy in ``shared/traces/alibaba-gpu-v2023`` next to (or above) the working folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import note_input
from fleetlab.spec.openb_share import ShareNodes, SharePods

TRACE_SUBDIR = Path("shared") / "traces" / "alibaba-gpu-v2023"
TRACE_ENV = "FLEETLAB_OPENB_DIR"
NODE_FILE = "openb_node_list_gpu_node.csv"
TRACE_SOURCE = (
    "github.com/alibaba/clusterdata, folder cluster-trace-gpu-v2023/csv "
    "(openb_node_list_gpu_node.csv and openb_pod_list_*.csv)"
)
#: Pod-list families as the paper's figures use them.
FAMILIES: dict[str, tuple[str, ...]] = {
    "default": ("default",),
    "gpushare": ("gpushare40", "gpushare60", "gpushare80", "gpushare100"),
    "multigpu": ("multigpu20", "multigpu30", "multigpu40", "multigpu50"),
    "gpuspec": ("gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33"),
    "nongpu": ("cpu050", "cpu100", "cpu200", "cpu250"),
}
FAMILIES["paper"] = tuple(v for family in FAMILIES.values() for v in family)
#: Every pod list the trace has (the experiment accepts any of them by name).
ALL_VARIANTS = (
    "default",
    *(f"cpu{n}" for n in ("0", "037", "050", "072", "100", "200", "235", "250", "300")),
    *(f"gpushare{n}" for n in (20, 40, 60, 80, 100)),
    *(f"gpuspec{n}" for n in ("05", "10", "20", "25", "33")),
    *(f"multigpu{n}" for n in (20, 30, 40, 50)),
)


def resolve_variants(names: Sequence[str]) -> list[str]:
    """Expand family names (``gpushare``, ``paper``, ...) into pod-list names, keeping order, no repeats."""
    out: list[str] = []
    for name in names:
        key = name.strip().lower()
        expanded = FAMILIES.get(key, (key,))
        for variant in expanded:
            if variant not in ALL_VARIANTS:
                allowed = ", ".join([*FAMILIES, *ALL_VARIANTS])
                raise SpecError("--variant", [f"unknown pod list {name!r}; choose from {allowed}"])
            if variant not in out:
                out.append(variant)
    return out


def find_trace_dir(start: Path | None = None) -> Path | None:
    """``$FLEETLAB_OPENB_DIR``, else the first ``shared/traces/alibaba-gpu-v2023`` in the working folder or
    one of its parents that holds the node list."""
    env = os.environ.get(TRACE_ENV)
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / TRACE_SUBDIR
        if (candidate / NODE_FILE).is_file():
            return candidate
    return None


def trace_dir_or_error(given: Path | None) -> Path:
    """The trace folder to read, or a SpecError saying where to get the trace."""
    folder = given if given is not None else find_trace_dir()
    if folder is None:
        raise SpecError(
            "--trace-dir",
            [
                f"no openb trace found (looked for ${TRACE_ENV} and {TRACE_SUBDIR} in this folder and its "
                f"parents); download it from {TRACE_SOURCE} and pass its folder with --trace-dir"
            ],
        )
    if not (folder / NODE_FILE).is_file():
        raise SpecError(
            str(folder), [f"{NODE_FILE} is missing; the folder should hold the files of {TRACE_SOURCE}"]
        )
    note_input(folder)
    return folder


def pod_list_path(folder: Path, variant: str) -> Path:
    """The CSV of one pod list, or a SpecError naming it."""
    path = folder / f"openb_pod_list_{variant}.csv"
    if not path.is_file():
        raise SpecError(
            str(path), [f"pod list {variant!r} is missing from the trace folder ({TRACE_SOURCE})"]
        )
    return path


def subsample(
    nodes: ShareNodes, pods: SharePods, fraction: float, seed: int = 0
) -> tuple[ShareNodes, SharePods]:
    """A smaller cluster and workload of the same make-up, for quick runs: every k-th node (by name) and a
    seeded random ``fraction`` of the pods."""
    if not 0 < fraction <= 1:
        raise SpecError("--sample", [f"{fraction} is not a fraction in (0, 1]"])
    if fraction == 1:
        return nodes, pods
    step = max(1, round(1 / fraction))
    order = sorted(range(len(nodes.names)), key=lambda i: nodes.names[i])[::step]
    keep = np.asarray(order, dtype=np.int64)
    small = ShareNodes(
        [nodes.names[i] for i in order],
        nodes.cpu_milli[keep],
        nodes.memory_mib[keep],
        nodes.gpus[keep],
        nodes.model[keep],
        nodes.models,
    )
    rng = np.random.default_rng(seed)
    chosen = np.sort(
        rng.choice(len(pods), size=max(1, int(len(pods) * len(order) / len(nodes.names))), replace=False)
    )
    return small, pods.take(chosen)
