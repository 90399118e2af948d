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
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import refuse_overlap

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


#: The file at the top of each kind of folder fleetlab writes, and what it is: a marked folder is replaced
#: only by output of its own kind, so ``simulate --out HISTORY`` cannot replace an imported history (a
#: kubectl history cannot be taken again once the pods are gone).
KINDS = {
    "history.json": "a history folder written by `fleetlab import`",
    "manifest.json": "an experiment written by `fleetlab experiment run`",
    "baseline.json": "a measured baseline written by `fleetlab baseline`",
    "calibration.json": "a calibration written by `fleetlab calibrate`",
    "measurements.json": "a decision report written by `fleetlab report`",
    "table.md": "an FGD experiment written by `fleetlab fgd-experiment`",
    "summary.json": "simulation results written by `fleetlab simulate`, `compare` or `plan ledger`",
    "README.md": "configuration written by `fleetlab export`",
}
#: Longest final name of an ``--out`` folder: file systems allow 255 bytes and the staging sibling adds
#: ``.`` + ``.tmp-PID-XXXXXXXX`` to it.
MAX_OUT_NAME = 200
#: Longest ``--out`` path (Linux allows 4,096 bytes; files are written below it).
MAX_OUT_PATH = 3_800


def is_marked(folder: Path) -> bool:
    """Whether ``folder`` is fleetlab's own output (carries the marker file, itself not a link)."""
    try:
        return stat.S_ISREG(os.lstat(folder / MARKER).st_mode)
    except OSError:
        return False


def mark(folder: Path) -> None:
    """Write (or rewrite) the marker: written first when fleetlab creates a folder, and again when it has
    finished writing it, so everything newer than the marker was changed or added by someone else."""
    fd = os.open(folder / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(MARKER_TEXT)


def kind_of(folder: Path) -> str | None:
    """The KINDS key whose file sits at the top of ``folder`` (None when none does)."""
    return next((name for name in KINDS if (folder / name).is_file()), None)


def foreign_entries(folder: Path, limit: int = 5) -> list[str]:
    """Entries of a marked folder fleetlab did not write: links, special files, and anything whose inode
    changed after the marker was last written (a file added, replaced or edited since; st_ctime cannot be
    set by a user). At most ``limit`` relative paths."""
    try:
        sealed = os.lstat(folder / MARKER).st_ctime_ns
    except OSError:
        return []
    found: list[str] = []
    stack = [folder]
    while stack and len(found) < limit:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            found.append(str(Path(current).relative_to(folder)))
            continue
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            rel = str(Path(entry.path).relative_to(folder))
            if rel == MARKER:
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))
                if info.st_ctime_ns > sealed:
                    found.append(rel + "/")
            elif not stat.S_ISREG(info.st_mode) or info.st_ctime_ns > sealed:
                found.append(rel)
    return sorted(found)[:limit]


def written_by_fleetlab(folder: Path, path: str) -> bool:
    """Whether ``path`` (inside ``folder``) is a plain file fleetlab wrote there: the folder is marked and
    the file is no newer than the marker."""
    try:
        return is_marked(folder) and (
            stat.S_ISREG((info := os.lstat(path)).st_mode)
            and info.st_ctime_ns <= os.lstat(folder / MARKER).st_ctime_ns
        )
    except OSError:
        return False


def check_out_path(out: Path, option: str = "--out", in_place: bool = False) -> None:
    """Refuse an ``--out`` that cannot be a results folder: the root, a name too long to stage beside, a
    path longer than the file system allows, or (unless written ``in_place``) a link."""
    if out.parent == out:
        raise SpecError(f"{option} {out}", ["is the file-system root; give a folder for the results"])
    if len(out.name.encode("utf-8", "surrogateescape")) > MAX_OUT_NAME:
        raise SpecError(
            f"{option} {str(out)[:80]}...",
            [f"the folder name is {len(out.name)} characters; at most {MAX_OUT_NAME} (file systems allow "
             "255 and fleetlab stages results beside it under a longer name)"],
        )  # fmt: skip
    if len(str(out).encode("utf-8", "surrogateescape")) > MAX_OUT_PATH:
        raise SpecError(f"{option} {str(out)[:80]}...", [f"the path is longer than {MAX_OUT_PATH} bytes"])
    here = os.path.realpath(os.getcwd()) if os.path.exists(".") else ""
    if (
        not in_place
        and here
        and (here == os.path.realpath(out) or here.startswith(os.path.realpath(out) + os.sep))
    ):
        raise SpecError(
            f"{option} {out}",
            ["is the folder this command runs in (or holds it); fleetlab replaces --out as a whole, which "
             "would leave your shell in a deleted folder: give a sub-folder such as --out results"],
        )  # fmt: skip
    if out.is_symlink() and not in_place:
        raise SpecError(
            f"{option} {out}",
            [f"is a symbolic link (to {os.readlink(out)}); fleetlab replaces --out as a whole and does not "
             "follow links: give the folder itself"],
        )  # fmt: skip


def check_replaceable(
    out: Path,
    option: str = "--out",
    force: bool = False,
    ignore: frozenset[str] = frozenset(),
    in_place: bool = False,
) -> None:
    """Refuse to replace anything but a missing, empty or fleetlab-marked folder holding only what
    fleetlab wrote (unless ``force``); entries named in ``ignore`` (a lock file fleetlab holds there) do
    not count. An experiment folder is resumed ``in_place``, so its runs are not checked here and ``out``
    may be a link to it."""
    check_out_path(out, option, in_place)
    if out.exists() and not out.is_dir():
        raise SpecError(f"{option} {out}", ["exists and is not a folder; give a folder path"])
    if not out.is_dir() or force:
        return
    if is_marked(out):
        added = [] if kind_of(out) == "manifest.json" else foreign_entries(out)
        if added:
            raise SpecError(
                f"{option} {out}",
                [f"is fleetlab's output, but holds what fleetlab did not write there ({', '.join(added)}: "
                 "added, changed or linked after its last run); move those out, give another folder, or "
                 "add --force to replace it and everything in it"],
            )  # fmt: skip
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


def check_same_kind(staging: Path, out: Path, option: str = "--out", force: bool = False) -> None:
    """Refuse to replace a marked folder of another kind (KINDS) with ``staging``'s content."""
    if force or not out.is_dir():
        return
    old, new = kind_of(out), kind_of(staging)
    if old is not None and old != new:
        raise SpecError(
            f"{option} {out}",
            [f"holds {KINDS[old]} ({old}); this command writes other files, so it would replace that "
             "folder: give another --out, or add --force to replace it"],
        )  # fmt: skip


def refuse_links(folder: Path, option: str = "--out") -> None:
    """Refuse a folder written in place (an experiment's) that holds a symbolic link anywhere: fleetlab
    creates none, and following one (``runs/`` linked elsewhere) would write outside ``--out``."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted([*dirs, *files]):
            path = Path(root) / name
            if path.is_symlink():
                rel = path.relative_to(folder)
                raise SpecError(
                    f"{option} {folder}",
                    [f"{rel} is a symbolic link; fleetlab never follows a link inside --out it did not "
                     "create (it would write outside the folder): remove the link or give another folder"],
                )  # fmt: skip


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
    run died between its two renames (``out`` missing, its ``.old-PID`` present). Returns what was removed.
    Links and folders without the marker are never touched."""
    parent = out.parent
    if not parent.is_dir():
        return []
    removed: list[Path] = []
    for entry in sorted(parent.iterdir()):
        match = _LEFTOVER.match(entry.name)
        if match is None or match["name"] != out.name or _alive(int(match["pid"])):
            continue
        if entry.is_symlink() or not entry.is_dir() or not is_marked(entry):
            continue
        if ".old-" in entry.name and not os.path.lexists(out):
            os.replace(entry, out)  # the kill came between the renames: the old results are still whole
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _open_lock(lock_path: Path, what: Path) -> int:
    """The lock file opened without following a link, refusing anything but a plain file of one link (a
    link or hard link planted there would have fleetlab truncate and overwrite its target)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(lock_path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            problem = "is a symbolic link; fleetlab never follows a link it did not create: remove it"
        else:
            problem = f"cannot be created: {exc.strerror or exc}"
        raise SpecError(str(what), [f"the lock file {lock_path} {problem}"]) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise SpecError(
            str(what),
            [f"the lock file {lock_path} is not a plain file fleetlab created (a hard link, pipe or device); "
             "remove it"],
        )  # fmt: skip
    return fd


@contextlib.contextmanager
def folder_lock(lock_path: Path, what: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` while writing ``what``; a second writer gets a SpecError."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = _open_lock(lock_path, what)
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
            same = os.fstat(fd).st_ino == os.lstat(lock_path).st_ino
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
    if os.path.lexists(out) and (out.is_symlink() or not out.is_dir()):
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

    Refuses an ``out`` that overlaps an input of the command (``spec.inputs_read``), a non-empty folder
    fleetlab did not write or one holding what it did not write (unless ``force``), and output of another
    kind over a marked folder; locks ``out`` against a second writer and cleans up what killed runs left.
    """
    out = Path(os.path.abspath(out))
    check_replaceable(out, option, force)
    refuse_overlap(out, option)
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
            refuse_overlap(out, option)  # inputs read while the staging folder was filled
            check_same_kind(staging, out, option, force)
            mark(staging)  # sealed: everything in it is fleetlab's
            swap_into_place(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def replace_file(target: Path, text: str, option: str = "--out") -> None:
    """Write one output file (an HTML page) through a temporary file and a rename.

    Refuses a ``target`` that is, holds or sits inside an input of the command; the rename replaces a
    symlink at ``target`` rather than writing through it."""
    refuse_overlap(target, option)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
