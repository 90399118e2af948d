"""A mark for tests that patch or subclass admission internals, which the compiled build calls directly.

Compiled modules call each other's functions and methods natively, so a patch on a module, class or
instance is not seen, and interpreted subclasses of compiled classes cannot be made. Where this install runs
compiled admission (``fleetlab.compiled``), such a test is skipped here and run on the sources by
``tests/test_compiled_core.py`` (its files are listed there as ``PATCHING_FILES``).
"""

from __future__ import annotations

import pytest

from fleetlab.compiled import is_compiled

patches_admission = pytest.mark.skipif(
    is_compiled(),
    reason="patches admission internals that compiled admission calls directly; "
    "tests/test_compiled_core.py runs it on the sources",
)
