"""The one output writer: every ``--out`` folder is staged beside itself, marked, locked and swapped in.

fleetlab never deletes what it did not write: it replaces only folders that carry its marker file (or are
empty), refuses any other non-empty folder unless ``--force`` is given, and writes only inside ``--out`` plus
hidden siblings that it removes again (the staging folder, the previous results while they are swapped, a
lock file). Leftovers of a killed run are cleaned up (or, if the kill came between the two renames, put
back) by the next run on the same folder. See docs/output-folders.md.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from fleetlab.spec.errors import SpecError

#: The file that marks a folder as fleetlab's own output (safe to replace).
MARKER = ".fleetlab-output"
MARKER_TEXT = "This folder was written by fleetlab; fleetlab may replace it on the next run with --out.\n"
#: Longest file or folder name fleetlab derives from a label (most file systems allow 255 bytes).
MAX_NAME = 100

_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>[0-9]+)(?:-.*)?$")


def safe_name(label: str) -> str:
    """A single, harmless path component for a label (policy, variant, scenario name).

    Only letters, digits, ``-``, ``_`` and ``.`` survive; a name that would be ``.``, ``..`` or hidden gets a
    leading ``_``, so no label can point outside the folder it is written into.
    """
    name = "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in label)[:MAX_NAME]
    if not name:
        return "run"
    return "_" + name if name.startswith(".") else name


def unique_names(labels: list[str]) -> list[str]:
    """``safe_name`` of each label, with ``-2``, ``-3``... added where two labels would share a folder."""
    out: list[str] = []
    seen: set[str] = set()
    for label in labels:
        base = safe_name(label)
        name, n = base, 1
        while name.lower() in seen:  # case-insensitive file systems would merge A and a
            n += 1
            name = f"{base}-{n}"
        seen.add(name.lower())
        out.append(name)
    return out


def is_marked(folder: Path) -> bool:
    """Whether ``folder`` is fleetlab's own output (carries the marker file)."""
    return (folder / MARKER).is_file()


def mark(folder: Path) -> None:
    """Write the marker into a folder fleetlab is creating."""
    (folder / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


def check_replaceable(
    out: Path, option: str = "--out", force: bool = False, ignore: frozenset[str] = frozenset()
) -> None:
    """Refuse to replace anything but a missing, empty or fleetlab-marked folder (unless ``force``);
    entries named in ``ignore`` (a lock file fleetlab holds there) do not count."""
    if out.parent == out:
        raise SpecError(f"{option} {out}", ["is the file-system root; give a folder for the results"])
    if out.exists() and not out.is_dir():
        raise SpecError(f"{option} {out}", ["exists and is not a folder; give a folder path"])
    if not out.is_dir() or force or is_marked(out):
        return
    try:
        empty = next((p for p in out.iterdir() if p.name not in ignore), None) is None
    except OSError as exc:
        raise SpecError(f"{option} {out}", [f"cannot be read: {exc.strerror or exc}"]) from None
    if not empty:
        raise SpecError(
            f"{option} {out}",
            [
                f"is a non-empty folder that fleetlab did not write (it has no {MARKER} file); give a new "
                "or empty folder, or add --force to replace it and everything in it"
            ],
        )


def empty_folder(folder: Path, keep: frozenset[str] = frozenset()) -> None:
    """Remove everything in ``folder`` except the entries named in ``keep`` (for ``--force`` where the
    folder itself must stay: a lock is held inside it). Links are removed, never followed."""
    try:
        entries = list(folder.iterdir())
        for entry in entries:
            if entry.name in keep:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    except OSError as exc:
        raise SpecError(f"--out {folder}", [f"cannot be emptied: {exc.strerror or exc}"]) from None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers(out: Path) -> list[Path]:
    """Remove staging/aside folders of killed runs on ``out``; put the previous results back first if a
    run died between its two renames (``out`` missing, its ``.old-PID`` present). Returns what was removed."""
    parent = out.parent
    if not parent.is_dir():
        return []
    removed: list[Path] = []
    for entry in sorted(parent.iterdir()):
        match = _LEFTOVER.match(entry.name)
        if match is None or match["name"] != out.name or _alive(int(match["pid"])) or not entry.is_dir():
            continue
        if ".old-" in entry.name and not out.exists() and is_marked(entry):
            os.replace(entry, out)  # the kill came between the renames: the old results are still whole
            continue
        if is_marked(entry):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextlib.contextmanager
def folder_lock(lock_path: Path, what: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` while writing ``what``; a second writer gets a SpecError."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise SpecError(
                str(what),
                ["another fleetlab run is writing this folder now; wait for it to end or give another one"],
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file as we opened it: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        os.close(fd)


def swap_into_place(staging: Path, out: Path, aside_prefix: str = ".") -> None:
    """Replace the folder ``out`` with ``staging`` by renames, so readers see the old or the new one whole.

    The old one is moved aside as ``<aside_prefix><name>.old-<pid>`` first and then removed; a kill between
    the renames leaves it there whole, and ``clean_leftovers`` puts it back on the next run.
    """
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a directory")
    if out.exists():
        old = out.with_name(f"{aside_prefix}{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out)


@contextlib.contextmanager
def staged_output(out: Path, force: bool = False, option: str = "--out") -> Iterator[Path]:
    """A marked staging folder beside ``out`` to fill; swapped into place when the block ends normally.

    Refuses a non-empty folder fleetlab did not write (unless ``force``), locks ``out`` against a second
    writer and cleans up what killed runs left behind.
    """
    out = Path(os.path.abspath(out))
    check_replaceable(out, option, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(out.with_name(f".{out.name}.lock"), out):
        clean_leftovers(out)
        check_replaceable(out, option, force)  # a put-back folder is fleetlab's own; anything else re-checked
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
        try:
            umask = os.umask(0)
            os.umask(umask)
            staging.chmod(0o777 & ~umask)  # mkdtemp makes 0700; results should honour the user's umask
            mark(staging)
            yield staging
            swap_into_place(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
