"""Where the optional shared reference data (traces, catalogs, reference vectors) lives, if anywhere.

`FLEETLAB_SHARED` wins; otherwise the nearest `shared/` folder beside the checkout or one of its
ancestors, so tests find it from a clone, a worktree or a CI folder alike. Tests skip when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def find_shared() -> Path | None:
    """The shared data folder, or None when this machine has none."""
    override = os.environ.get("FLEETLAB_SHARED")
    if override:
        path = Path(override)
        return path if path.is_dir() else None
    for ancestor in [REPO_ROOT, *REPO_ROOT.parents]:
        candidate = ancestor / "shared"
        if (candidate / "reference").is_dir() or (candidate / "traces").is_dir():
            return candidate
    return None


SHARED = find_shared()


def shared_path(*parts: str) -> Path:
    """A path inside the shared folder; a path that does not exist when there is no shared folder."""
    base = SHARED if SHARED is not None else REPO_ROOT / ".no-shared-data"
    return base.joinpath(*parts)
