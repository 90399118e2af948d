"""Imports flow one way: model ← spec ← placement / admission / services ← sim ← cost ← metrics / kube /
lint / export ← experiment ← report ← the CLI and the Python API.

A package may import its own modules and any package of a lower rank, never one of the same or a higher
rank (so no two packages depend on each other); ``TYPE_CHECKING``-only imports count too, since they are
still a dependency a reader has to follow. Read from the source with ``ast``, nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "fleetlab"

TOP = 8  # the cli package, api.py, __main__.py: nothing imports them but each other

#: Each package's rank; a module imports only from lower ranks (and its own package).
RANK: dict[str, int] = {
    "compiled": -1,  # which admission build runs: standard library only (setup.py runs it alone)
    "model": 0,
    "data": 0,
    "scenarios": 0,
    "__init__": 0,  # the root package: its version string and the choice of admission build
    "spec": 1,
    "placement": 2,
    "admission": 2,
    "services": 2,
    "sim": 3,
    "cost": 4,
    "metrics": 5,
    "kube": 5,
    "lint": 5,
    "export": 5,
    "experiment": 6,
    "report": 7,
    "cli": TOP,
    "api": TOP,
}


def _package(path: Path) -> str:
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _rank(package: str) -> int:
    return RANK.get(package, TOP)


def _imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, fleetlab package) of every ``fleetlab.<package>`` import in the module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "fleetlab":  # a submodule, or an attribute of the root package
                names = [
                    f"fleetlab.{alias.name}"
                    if (SRC / alias.name).is_dir() or (SRC / f"{alias.name}.py").is_file()
                    else "fleetlab.__init__"
                    for alias in node.names
                ]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "fleetlab" and len(parts) > 1:
                out.append((node.lineno, parts[1]))
    return out


MODULES = sorted(SRC.rglob("*.py"))


def test_every_package_has_a_rank() -> None:
    """A new package must say where it sits, or the rule below would silently treat it as top level."""
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert packages <= set(RANK), f"give these packages a rank in RANK: {sorted(packages - set(RANK))}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_flow_downwards(path: Path) -> None:
    own = _package(path)
    upward = [
        f"line {line}: fleetlab.{target} (rank {_rank(target)})"
        for line, target in _imported_packages(path)
        if target != own and _rank(target) >= _rank(own) and not (_rank(own) == TOP and _rank(target) == TOP)
    ]
    assert not upward, f"{path.relative_to(SRC)} (package {own}, rank {_rank(own)}) imports upwards: {upward}"


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a model module importing the simulator is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("from fleetlab.sim.simulator import Simulator\nimport fleetlab.model.job\n")
    found = _imported_packages(bad)
    assert found == [(1, "sim"), (2, "model")]
    assert _rank("sim") >= _rank("model")


def _imports_of_cli_package(path: Path) -> list[int]:
    """Lines importing the ``fleetlab.cli`` package itself (its ``__init__``), not one of its modules."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            lines += [node.lineno for alias in node.names if alias.name == "fleetlab.cli"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            whole = node.module == "fleetlab.cli"
            by_name = node.module == "fleetlab" and any(alias.name == "cli" for alias in node.names)
            if whole or by_name:
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_nothing_imports_the_cli_assembly(path: Path) -> None:
    """``fleetlab.cli`` only assembles the app: command modules share ``fleetlab.cli.common`` instead, so the
    CLI has no import circle; only the ``python -m`` entry points import it."""
    if path.name == "__main__.py":
        return
    lines = _imports_of_cli_package(path)
    assert not lines, f"{path.relative_to(SRC)} imports fleetlab.cli (its __init__) on line(s) {lines}"


def test_the_cli_rule_catches_an_import_of_the_assembly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from fleetlab.cli import app\nfrom fleetlab.cli.common import fail\nfrom fleetlab import cli\n"
    )
    assert _imports_of_cli_package(bad) == [1, 3]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> dict[str, set[str]]:
    """Module -> the fleetlab modules it imports (type-only imports included; importing a package counts as
    importing its ``__init__``, except a module's own enclosing packages)."""
    names = {_module_name(p): p for p in MODULES}

    def resolve(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        found = {resolve(t) for t in targets if t.startswith("fleetlab.")}
        graph[name] = {t for t in found if t and t != name and not name.startswith(t + ".")}
    return graph


def _circle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A shortest import path from ``start`` back to itself, if there is one (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(graph[module]):
                if target == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in came_from:
                    came_from[target] = module
                    following.append(target)
        frontier = following
    return None


def test_no_import_circle() -> None:
    """No module imports, directly or through others, a module that imports it back: shared definitions live
    in the lower module, and the simulator's features see the engine only through sim/handle.py
    (type-only imports count)."""
    graph = _module_graph()
    circles = [
        " -> ".join(circle)
        for module in sorted(graph)
        if (circle := _circle_through(graph, module)) is not None
    ]
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_circle_finder_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _circle_through(graph, "a") == ["a", "b", "c", "a"]
    assert _circle_through(graph, "d") is None
