"""The compiled admission build: when it may run, that its sources run otherwise, and that both agree.

``fleetlab.compiled`` decides at import whether mypyc's modules (setup.py) may be used. The first tests
check that decision on package trees made here. Where this install is compiled, the rest run the pure path
beside it: the Kueue examples and a saturated cohort hash the same both ways, and the admission tests
(upstream Kueue's tables among them) pass on the sources too, so CI checks both paths in one run.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fleetlab import compiled
from fleetlab.compiled import (
    COMPILED_MODULES,
    PURE_ENV,
    RECORD_NAME,
    dependencies,
    make_record,
    pure_reason,
    source_digest,
    source_path,
)

ROOT = Path(__file__).resolve().parent.parent


def _tree(tmp_path: Path) -> Path:
    """A package tree with every compiled module's source (small, distinct bodies); ``tree`` imports a model
    module, which imports another."""
    for module in COMPILED_MODULES:
        path = source_path(module, tmp_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"NAME = {module!r}\n", encoding="utf-8")
    source_path("fleetlab.admission.tree", tmp_path).write_text(
        "from fleetlab.model.queues import QueueConfig\nimport numpy\n", encoding="utf-8"
    )
    (tmp_path / "fleetlab" / "model").mkdir()
    for name, body in (
        ("__init__", ""),
        ("queues", "from fleetlab.model import quantity\n"),
        ("quantity", ""),
    ):
        (tmp_path / "fleetlab" / "model" / f"{name}.py").write_text(body, encoding="utf-8")
    (tmp_path / "fleetlab" / "model" / "unused.py").write_text("", encoding="utf-8")
    return tmp_path


def _record(root: Path, **changes: object) -> Path:
    record = make_record(root, COMPILED_MODULES, "mypyc test") | changes
    path = root / "fleetlab" / RECORD_NAME
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def test_no_record_means_the_sources_run(tmp_path: Path) -> None:
    assert pure_reason(_tree(tmp_path), environ={}) == "not compiled at install"


def test_a_record_matching_every_source_lets_the_compiled_modules_run(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _record(root)
    assert pure_reason(root, environ={}) is None
    assert pure_reason(root, environ={PURE_ENV: "0"}) is None  # "0" and "" leave it on


def test_the_pure_switch_wins_over_a_good_record(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _record(root)
    assert pure_reason(root, environ={PURE_ENV: "1"}) == f"{PURE_ENV} is set"


def test_an_edited_source_turns_the_whole_build_off(tmp_path: Path) -> None:
    """One changed byte in any compiled module's source: all of them run from source (all or none)."""
    root = _tree(tmp_path)
    _record(root)
    edited = source_path("fleetlab.admission.preemption", root)
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert pure_reason(root, environ={}) == (
        "fleetlab/admission/preemption.py changed since the build (reinstall to recompile admission)"
    )


def test_the_record_covers_every_fleetlab_module_the_compiled_ones_import() -> None:
    """Their types are compiled in, so the record watches what they import, directly or not."""
    found = dependencies(ROOT / "src", ["fleetlab.admission.tree"])
    assert {"fleetlab", "fleetlab.admission", "fleetlab.model", "fleetlab.model.queues"} <= set(found)
    assert all(name.startswith("fleetlab") and name != "fleetlab.admission.tree" for name in found)


def test_a_changed_dependency_turns_the_build_off(tmp_path: Path) -> None:
    """``tree`` → ``model.queues`` → ``model.quantity`` (and the package that runs on the way) are watched;
    numpy and the model module nothing imports are not."""
    root = _tree(tmp_path)
    record = make_record(root, COMPILED_MODULES, "mypyc test")
    assert record["depends_on"] == {
        name: source_digest(root / "fleetlab" / "model" / file)
        for name, file in (
            ("fleetlab.model", "__init__.py"),
            ("fleetlab.model.quantity", "quantity.py"),
            ("fleetlab.model.queues", "queues.py"),
        )
    }
    _record(root)
    (root / "fleetlab" / "model" / "unused.py").write_text("X = 1\n", encoding="utf-8")
    assert pure_reason(root, environ={}) is None
    (root / "fleetlab" / "model" / "quantity.py").write_text("X = 1\n", encoding="utf-8")
    assert pure_reason(root, environ={}) == (
        "fleetlab/model/quantity.py changed since the build (reinstall to recompile admission)"
    )
    (root / "fleetlab" / "model" / "quantity.py").unlink()
    reason = pure_reason(root, environ={})
    assert reason is not None and "'fleetlab.model.quantity', which has no readable source here" in reason


def test_a_record_naming_a_path_outside_the_package_is_not_followed(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    path = _record(root)
    record = json.loads(path.read_text(encoding="utf-8"))
    record["depends_on"]["fleetlab./etc/passwd"] = "0" * 64
    path.write_text(json.dumps(record), encoding="utf-8")
    reason = pure_reason(root, environ={})
    assert reason is not None and "'fleetlab./etc/passwd', which has no readable source here" in reason


@pytest.mark.parametrize(
    ("record_text", "expected"),
    [
        ("{not json", "cannot be read"),
        ("[1, 2]", "does not list the modules this version compiles"),
        (json.dumps({"modules": {"fleetlab.admission.tree": "0" * 64}}), "does not list the modules"),
    ],
)
def test_an_unreadable_or_foreign_record_turns_the_build_off(
    tmp_path: Path, record_text: str, expected: str
) -> None:
    root = _tree(tmp_path)
    (root / "fleetlab" / RECORD_NAME).write_text(record_text, encoding="utf-8")
    reason = pure_reason(root, environ={})
    assert reason is not None and expected in reason


def test_a_record_for_another_python_or_oversized_is_not_trusted(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    _record(root, python="2.7")
    assert pure_reason(root, environ={}) == "compiled for Python 2.7"
    path = _record(root)
    path.write_text(path.read_text(encoding="utf-8") + " " * 70_000, encoding="utf-8")
    reason = pure_reason(root, environ={})
    assert reason is not None and "is over 65536 bytes" in reason


def test_the_finder_loads_each_compiled_module_from_its_source_and_nothing_else(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    finder = compiled._SourceFinder(root)
    spec = finder.find_spec("fleetlab.admission.flavors")
    assert spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    assert spec.origin == str(source_path("fleetlab.admission.flavors", root))
    assert finder.find_spec("fleetlab.admission") is None
    assert finder.find_spec("fleetlab.sim.engine") is None


def _module_files(environ: dict[str, str]) -> list[str]:
    code = (
        "import importlib, fleetlab.compiled as c\n"
        "for m in c.COMPILED_MODULES: print(importlib.import_module(m).__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True
    )
    return out.stdout.splitlines()


def test_this_process_imports_the_build_it_says_it_runs() -> None:
    """Whichever build this install has, every compiled module comes from it, and the switch gives sources."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    files = _module_files(dict(os.environ))
    if compiled.is_compiled():
        assert all(f.endswith(suffixes) for f in files), files
    else:
        assert all(f.endswith(".py") for f in files), files
    pure = _module_files({**os.environ, PURE_ENV: "1"})
    assert pure == [str(source_path(m)) for m in COMPILED_MODULES]


needs_compiled = pytest.mark.skipif(
    not compiled.is_compiled(), reason=f"admission is not compiled here ({compiled.describe()})"
)


def _hashes(tmp_path: Path, name: str, environ: dict[str, str]) -> dict[str, str]:
    out = tmp_path / f"{name}.json"
    # Every example with Kueue (two-teams/, tas/), the built-in two-team comparison, a saturated cohort.
    cases = ["--only", "two-teams", "--only", "tas/", "--only", "kueue-16"]
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "example_hashes.py"),
            "--bench-workloads",
            *cases,
            "--write",
            str(out),
        ],
        env=environ,
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    hashes: dict[str, str] = json.loads(out.read_text(encoding="utf-8"))
    return hashes


@needs_compiled
def test_compiled_and_pure_admission_write_the_same_bytes(tmp_path: Path) -> None:
    """Every example with Kueue, the built-in two-team comparison and a saturated 4,000-job cohort: the same
    files, the same bytes."""
    compiled_hashes = _hashes(tmp_path, "compiled", dict(os.environ))
    pure_hashes = _hashes(tmp_path, "pure", {**os.environ, PURE_ENV: "1"})
    assert len(compiled_hashes) > 20
    assert not any(k.endswith("/exit") for k in compiled_hashes), compiled_hashes
    assert compiled_hashes == pure_hashes


#: Test files run again on the sources: upstream Kueue's tables, the admission tests, and every file with a
#: test marked ``patches_admission`` (skipped in a compiled process).
PATCHING_FILES = ("test_admission_index.py", "test_admission_shortcuts.py", "test_nomination_shortcuts.py")


def test_every_test_that_patches_admission_is_run_on_the_sources() -> None:
    """A test marked ``@patches_admission`` is skipped in a compiled process: its file must be run again."""
    marked = {
        p.name
        for p in (ROOT / "tests").glob("test_*.py")
        if re.search(r"^@patches_admission$", p.read_text("utf-8"), re.MULTILINE)
    }
    assert marked == set(PATCHING_FILES)


@needs_compiled
def test_the_admission_tests_pass_on_the_sources_too() -> None:
    """The upstream Kueue tables and admission tests, run again with the compiled build switched off."""
    tests = ROOT / "tests"
    files = sorted(
        {
            str(p.relative_to(ROOT))
            for pattern in ("test_upstream_kueue_*.py", "test_admission*.py")
            for p in tests.glob(pattern)
        }
        | {f"tests/{name}" for name in PATCHING_FILES}
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        env={**os.environ, PURE_ENV: "1"},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-500:]


def test_the_million_job_bench_runs_each_case_both_ways_in_turn() -> None:
    """``bench/bench_million.py --admission both``: per case one row per build, the order alternating per
    case, each row naming the build its child ran (compiled only where this install is)."""
    bench = str(ROOT / "bench" / "bench_million.py")
    sizes = ["--jobs", "300", "--gpus", "80", "--repeat", "1"]
    done = subprocess.run(
        [sys.executable, bench, "--workload", "mix", "kueue", *sizes, "--admission", "both", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    unset = pure_reason(environ={})  # "both" runs its first side without the switch, whatever is set here
    installed = "compiled" if unset is None else "pure"
    assert [(r["workload"], r["build"]) for r in rows] == [
        ("mix", installed),
        ("mix", "pure"),
        ("kueue", "pure"),
        ("kueue", installed),
    ]
    assert all(r["completed"] == 300 and r["simulate_cpu_s"] > 0 for r in rows)
    pure_says = f"pure Python ({PURE_ENV} is set)"
    installed_says = "compiled by mypyc" if unset is None else f"pure Python ({unset})"
    assert [r["admission"] for r in rows] == [installed_says, pure_says, pure_says, installed_says]


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI's install must compile admission (.ci/run)")
def test_ci_runs_the_compiled_build() -> None:
    """.ci/run installs a C compiler and Python's headers, so a pure build there means the compile failed
    (a type error under the pinned mypy, say) and the comparisons above skipped: fail instead."""
    assert compiled.is_compiled(), compiled.describe()
