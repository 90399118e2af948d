"""Cluster snapshots on the command line: ``fleetlab snapshot --out FILE`` (read-only capture from the
current kubeconfig) and the ``simulate --from-snapshot`` options that replay a snapshot as a scenario."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fleetlab.cli.common import fail, out_console, out_path

if TYPE_CHECKING:
    from fleetlab.model.scenario import ResolvedScenario

FromSnapshotOpt = Annotated[
    Path | None,
    typer.Option(
        "--from-snapshot",
        help="Simulate a cluster snapshot (kubectl nodes+pods JSON/YAML) instead of a scenario file: "
        "running pods stay on their nodes, pending pods arrive at t=0.",
    ),
]
AddNodesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--add-nodes", help="With --from-snapshot: POOL=N more empty nodes in that pool; repeatable."
    ),
]
SnapshotRuntimeOpt = Annotated[
    str,
    typer.Option(
        "--snapshot-runtime",
        help="With --from-snapshot: assumed remaining time of running pods and runtime of pending ones.",
    ),
]


def load_or_snapshot(
    scenario: str | None,
    seed: int | None,
    from_snapshot: Path | None,
    add_nodes: list[str] | None,
    runtime: str = "1h",
) -> ResolvedScenario:
    """The scenario to simulate: a scenario file as usual, or the snapshot turned into one."""
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.loader import load

    if from_snapshot is None:
        if add_nodes:
            raise SpecError("--add-nodes", ["applies only with --from-snapshot"])
        return load(scenario, seed)
    if scenario is not None:
        raise SpecError(scenario, ["give a scenario file or --from-snapshot, not both"])
    from fleetlab.kube.to_scenario import snapshot_scenario
    from fleetlab.model.units import parse_duration
    from fleetlab.spec.kube_snapshot import load_snapshot

    try:
        seconds = parse_duration(runtime)
    except ValueError as exc:
        raise SpecError("--snapshot-runtime", [str(exc)]) from None
    snapshot = load_snapshot([from_snapshot])
    return snapshot_scenario(snapshot, add_nodes or (), seconds, seconds, seed or 0)


def snapshot_cmd(
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Write the v1 List here (atomically).")],
    context: Annotated[
        str | None, typer.Option("--context", help="kubeconfig context (default: the current one).")
    ] = None,
) -> None:
    """Capture nodes, pods, PersistentVolumes, PersistentVolumeClaims, StorageClasses and Kueue objects (when
    its CRDs exist) from the cluster, read-only."""
    from fleetlab.kube.capture import CaptureError, capture, write_list

    try:
        items = capture(context)
        write_list(items, out)
    except CaptureError as exc:
        raise fail(str(exc)) from None
    kinds: dict[str, int] = {}
    for item in items:
        kinds[str(item.get("kind"))] = kinds.get(str(item.get("kind")), 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    out_console.print(f"wrote {out}: {summary}", highlight=False, markup=False)
