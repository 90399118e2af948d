"""Write a folder atomically: fill a temporary sibling, then rename it into place.

A writer killed half-way leaves the previous folder (or nothing) at the destination, never a half-written
file, so rerunning is always safe. Every command that writes ``--out`` goes through here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def swap_into_place(staging: Path, out: Path, aside_prefix: str = ".") -> None:
    """Replace the folder ``out`` with ``staging`` by renames, so readers see the old or the new one whole;
    the old one is moved aside under ``aside_prefix`` first and then removed."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a directory")
    if out.exists():
        old = out.with_name(f"{aside_prefix}{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out)


@contextmanager
def atomic_dir(out: Path) -> Iterator[Path]:
    """A staging folder next to ``out`` (honouring the umask) that replaces ``out`` when the block ends
    without an exception, and is removed when it raises."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp makes 0700; results should honour the user's umask
    try:
        yield staging
        swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
