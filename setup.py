"""Build fleetlab; compile Kueue admission with mypyc where a C compiler is on the machine.

Why: a saturated Kueue run spends most of its time in admission, which is ``mypy --strict`` code that mypyc
compiles unchanged (docs/scale.md, "A compiled core"). The compiled modules are an accelerator only: every
output is byte-identical to the Python sources', which stay installed beside them. Without mypyc, a C
compiler or Python's headers, or with ``FLEETLAB_PURE_PYTHON=1`` set, the install is pure Python and says
why. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
# The standard-library-only module that lists what is compiled and checks the record at run time.
_COMPILED = runpy.run_path(str(SRC / "fleetlab" / "compiled.py"))
MODULES: tuple[str, ...] = _COMPILED["COMPILED_MODULES"]
RECORD_NAME: str = _COMPILED["RECORD_NAME"]
PURE_ENV: str = _COMPILED["PURE_ENV"]


def _say(message: str) -> None:
    print(f"fleetlab build: {message}", file=sys.stderr)


def _remove_stale_record() -> None:
    """A pure build must not leave an earlier compiled build's record in the sources (it would be stale)."""
    record = SRC / "fleetlab" / RECORD_NAME
    if record.is_file() and not record.is_symlink():
        record.unlink()


def _compiled_extensions() -> list[Any]:
    """mypyc's extension modules for ``MODULES``, or none (with the reason said) where it cannot run."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        _say(f"{PURE_ENV} is set: installing pure Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as error:
        _say(f"mypyc is not available ({error}): installing pure Python")
        return []
    paths = [str(Path("src", *module.split(".")).with_suffix(".py")) for module in MODULES]
    try:
        return list(mypycify(paths, opt_level="3", group_name="fleetlab_admission"))
    except (Exception, SystemExit) as error:  # a type error or missing stub: mypyc cannot compile
        _say(f"mypyc could not compile admission ({error!r}): installing pure Python")
        return []


class BuildExt(build_ext):
    """Builds the compiled modules and writes their record; falls back to pure Python if the C build fails."""

    def run(self) -> None:
        if not self.extensions:
            _remove_stale_record()
            return
        try:
            super().run()
        except Exception as error:  # no compiler, no Python.h, or a compiler error
            _say(f"the C build of admission failed ({error}): installing pure Python")
            self._drop_built()
            _remove_stale_record()
            return
        self._write_record()

    def _record_folder(self) -> Path:
        return SRC if self.inplace or getattr(self, "editable_mode", False) else Path(self.build_lib)

    def _write_record(self) -> None:
        import mypy.version

        record = _COMPILED["make_record"](SRC, MODULES, f"mypyc {mypy.version.__version__}")
        targets = {
            self._record_folder() / "fleetlab" / RECORD_NAME,
            Path(self.build_lib) / "fleetlab" / RECORD_NAME,
        }
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".json.partial")
            partial.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(partial, target)
        _say(f"compiled {len(MODULES)} admission modules with mypyc")

    def _drop_built(self) -> None:
        """Remove extension files this build made, so none is imported in place of a source."""
        for ext in self.extensions:
            for folder in {Path(self.build_lib), self._record_folder()}:
                built = folder / self.get_ext_filename(ext.name)
                if built.is_file() and not built.is_symlink():
                    built.unlink()
        self.extensions = []

    def get_outputs(self) -> list[str]:
        outputs: list[str] = list(super().get_outputs())
        if self.extensions:
            outputs.append(str(Path(self.build_lib) / "fleetlab" / RECORD_NAME))
        return outputs


setup(ext_modules=_compiled_extensions(), cmdclass={"build_ext": BuildExt})
