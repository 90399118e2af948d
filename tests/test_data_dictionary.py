"""docs/data-dictionary.md lists every column fleetlab writes (checked on runs that produce the optional
sharing and interference columns too)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fleetlab.api as fl

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "data-dictionary.md"


def documented() -> set[str]:
    """Backticked names in the page; ``gpu_hours_compute``, ``_lost`` style suffix lists expand."""
    names: set[str] = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = re.findall(r"`([a-z0-9_]+)`", line)
        if not cells:
            continue
        first = cells[0]
        names.update(cells)
        stem = first.rsplit("_", 1)[0] if not first.endswith("_usd") else first.rsplit("_", 2)[0]
        for cell in cells[1:]:
            if cell.startswith("_"):
                if first.endswith("_usd"):
                    names.add(f"{stem}{cell}" if cell.endswith("_usd") else f"{stem}{cell}usd")
                else:
                    names.add(f"{stem}{cell}")
        for k in (1, 2, 4, 8):
            if "free_block_ge1_nodes" in cells:
                names.add(f"free_block_ge{k}_nodes")
    return names


@pytest.mark.parametrize(
    "scenario",
    ["default", "examples/sharing/fgd-sharing.yaml", "examples/interference/pack-vs-spread.yaml"],
)
def test_every_written_column_is_documented(scenario: str) -> None:
    path = scenario if scenario == "default" else str(ROOT / scenario)
    result = fl.run(path)
    names = documented()
    for table in ("jobs", "pods", "nodes", "timeline", "ledger"):
        missing = [c for c in getattr(result, table).column_names if c not in names]
        assert not missing, f"{table}: {missing} not in {DOC.name}"
