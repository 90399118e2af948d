"""Write a folder atomically: fill a temporary sibling, then rename it into place.

Kept for the writers that import it; the one output writer is ``fleetlab.spec.out_folder`` (marker file,
refusal of folders fleetlab did not write, leftovers cleaned up, a lock against a second writer).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fleetlab.spec.out_folder import staged_output, swap_into_place

__all__ = ["atomic_dir", "swap_into_place"]


@contextmanager
def atomic_dir(out: Path, force: bool = False) -> Iterator[Path]:
    """A marked staging folder next to ``out`` that replaces ``out`` when the block ends without an
    exception, and is removed when it raises (``spec.out_folder.staged_output``)."""
    with staged_output(out, force) as staging:
        yield staging
