"""Which build of Kueue admission runs: the one mypyc compiled at install time, or the Python sources.

Admission is where a saturated Kueue run spends its time, and it is plain ``mypy --strict`` code, so the
install compiles it with mypyc where a C compiler is on the machine (``setup.py``). The compiled modules
sit beside their sources and Python imports them first; this module decides, once, at ``import fleetlab``,
whether they may be used. They are not when ``FLEETLAB_PURE_PYTHON`` is set (the pure path every output
must match byte for byte), when no build record is there, or when a source changed since the build (an
edited checkout runs what it reads). Then a finder loads every compiled module's source instead: all or
none, because compiled modules call each other directly, not through ``sys.modules``.

This module reads only the standard library: ``setup.py`` runs it without fleetlab's dependencies.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

#: The modules the install compiles: Kueue admission (its cache, queues, flavor assignment, preemption).
COMPILED_MODULES: tuple[str, ...] = (
    "fleetlab.admission.admitted_index",
    "fleetlab.admission.classic_candidates",
    "fleetlab.admission.dra_quota",
    "fleetlab.admission.fair_sharing",
    "fleetlab.admission.flavor_rows",
    "fleetlab.admission.flavors",
    "fleetlab.admission.limit_range",
    "fleetlab.admission.manager",
    "fleetlab.admission.no_victims",
    "fleetlab.admission.nomination_cache",
    "fleetlab.admission.pod_manifest",
    "fleetlab.admission.preemption",
    "fleetlab.admission.provisioning",
    "fleetlab.admission.queue_heap",
    "fleetlab.admission.resource_quota",
    "fleetlab.admission.tree",
    "fleetlab.admission.workloads",
)
#: The build record ``setup.py`` writes beside this file after a compiled build.
RECORD_NAME = "_compiled.json"
#: Set to a non-empty value other than ``0`` to run the Python sources even where a compiled build is there.
PURE_ENV = "FLEETLAB_PURE_PYTHON"
_RECORD_MAX_BYTES = 65_536
_MAX_DEPENDENCIES = 1_000
_MODULE_NAME = re.compile(r"fleetlab(\.[A-Za-z_][A-Za-z0-9_]*)*")

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the folder holding the fleetlab package


def source_path(module: str, root: Path = _PACKAGE_ROOT) -> Path:
    """The ``.py`` file of ``module`` under ``root`` (the folder that holds the ``fleetlab`` package)."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def source_digest(path: Path) -> str:
    """SHA-256 of a source file's bytes: what the build record keeps, and what a changed source breaks."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_file(module: str, root: Path = _PACKAGE_ROOT) -> Path | None:
    """The source of a module or package under ``root`` (``None``: no such fleetlab module)."""
    for candidate in (source_path(module, root), root.joinpath(*module.split("."), "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def _fleetlab_imports(path: Path, root: Path) -> set[str]:
    """The fleetlab modules and packages a source imports (with their parent packages, which run too)."""
    import ast  # only the build reads imports; keep it off every ``import fleetlab``

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # a submodule, if one
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    found: set[str] = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != "fleetlab":
            continue
        prefixes = (".".join(parts[:end]) for end in range(1, len(parts) + 1))
        found.update(prefix for prefix in prefixes if module_file(prefix, root) is not None)
    return found


def dependencies(root: Path, modules: Sequence[str]) -> list[str]:
    """Every fleetlab module the compiled ones import, directly or through others: their types are compiled
    into the build, so a change to one of them makes the build stale too."""
    parents = {".".join(m.split(".")[:end]) for m in modules for end in range(1, m.count(".") + 1)}
    seen = {p for p in parents - set(modules) if module_file(p, root)}  # a module's packages run before it
    todo = [*modules, *sorted(seen)]
    while todo:
        path = module_file(todo.pop(), root)
        for imported in _fleetlab_imports(path, root) if path is not None else ():
            if imported not in seen and imported not in modules:
                seen.add(imported)
                todo.append(imported)
    return sorted(seen)


def make_record(root: Path, modules: Sequence[str], compiler: str) -> dict[str, object]:
    """The build record for ``modules`` compiled from the sources under ``root`` by ``compiler``: each
    compiled module's digest, and each fleetlab module they depend on."""
    depends_on = {}
    for module in dependencies(root, modules):
        path = module_file(module, root)
        assert path is not None  # dependencies() lists only modules that have a source
        depends_on[module] = source_digest(path)
    return {
        "compiler": compiler,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "modules": {module: source_digest(source_path(module, root)) for module in modules},
        "depends_on": depends_on,
    }


def pure_reason(root: Path = _PACKAGE_ROOT, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why the compiled modules may not be used here (``None``: they may)."""
    if environ.get(PURE_ENV, "") not in ("", "0"):
        return f"{PURE_ENV} is set"
    record_path = root / "fleetlab" / RECORD_NAME
    try:
        if record_path.stat().st_size > _RECORD_MAX_BYTES:
            return f"{record_path} is over {_RECORD_MAX_BYTES} bytes"
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "not compiled at install"
    except (OSError, ValueError) as error:
        return f"{record_path} cannot be read ({error})"
    modules = record.get("modules") if isinstance(record, dict) else None
    if not isinstance(modules, dict) or set(modules) != set(COMPILED_MODULES):
        return f"{record_path} does not list the modules this version compiles"
    if record.get("python") != f"{sys.version_info[0]}.{sys.version_info[1]}":
        return f"compiled for Python {str(record.get('python'))[:20]}"
    depends_on = record.get("depends_on")
    if not isinstance(depends_on, dict) or len(depends_on) > _MAX_DEPENDENCIES:
        return f"{record_path} does not list what the build depends on"
    for module, recorded in [*modules.items(), *depends_on.items()]:
        named = isinstance(module, str) and _MODULE_NAME.fullmatch(module) is not None
        path = module_file(module, root) if named else None
        try:
            digest = source_digest(path) if path is not None else None
        except OSError:
            digest = None
        if path is None or digest is None:
            return f"{record_path} names {module!r}, which has no readable source here"
        if digest != recorded:
            return f"{path.relative_to(root)} changed since the build (reinstall to recompile admission)"
    return None


class _SourceFinder:
    """Finds each compiled module's ``.py`` source, ahead of the extension module beside it."""

    def __init__(self, root: Path) -> None:
        self._sources = {module: str(source_path(module, root)) for module in COMPILED_MODULES}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        source = self._sources.get(fullname)
        if source is None:
            return None
        loader = importlib.machinery.SourceFileLoader(fullname, source)
        return importlib.util.spec_from_file_location(fullname, source, loader=loader)


_REASON: str | None = "not decided"


def choose() -> None:
    """Decide once per process whether the compiled modules run; where they may not, load their sources."""
    global _REASON
    if _REASON != "not decided":
        return
    _REASON = pure_reason()
    if _REASON is not None:
        sys.meta_path.insert(0, _SourceFinder(_PACKAGE_ROOT))


def describe() -> str:
    """Which build of Kueue admission runs, and why (``fleetlab --version``)."""
    choose()
    if _REASON is None:
        return "compiled by mypyc"
    return f"pure Python ({_REASON})"


def is_compiled() -> bool:
    """Whether the compiled admission modules run in this process."""
    choose()
    return _REASON is None
