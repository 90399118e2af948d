"""Tables of measured figures are written by the script that measures them: every marked table in docs/
names a script that exists and writes it through bench/doc_tables.py, and the writer replaces only the
text between its markers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from doc_tables import markers, render, replace_table, write_table  # noqa: E402

PAGES = sorted((ROOT / "docs").glob("*.md"))


def test_every_marked_table_names_the_script_that_writes_it() -> None:
    found = {}
    for page in PAGES:
        for name, command in markers(page.read_text(encoding="utf-8")).items():
            script = ROOT / command.split()[0]
            assert script.is_file(), f"{page.name}: {command}"
            source = script.read_text(encoding="utf-8")
            assert "write_table(" in source and f'"{name}"' in source, f"{script.name} does not write {name}"
            assert f"--write-docs docs/{page.name}" in command
            found[name] = page.name
    assert found.get("bench_scale") == "scale.md"  # the first figures table of docs/scale.md


def test_the_writer_replaces_only_the_marked_table(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "intro\n<!-- measured-table t begin: written by `bench/x.py --write-docs docs/page.md` -->\n"
        "| old |\n|---|\n| 1 |\n<!-- measured-table t end -->\nafter\n",
        encoding="utf-8",
    )
    write_table(page, "t", render(("a", "b"), [(1, "x")], (True, False)))
    assert page.read_text(encoding="utf-8") == (
        "intro\n<!-- measured-table t begin: written by `bench/x.py --write-docs docs/page.md` -->\n"
        "| a | b |\n|---:|---|\n| 1 | x |\n<!-- measured-table t end -->\nafter\n"
    )
    with pytest.raises(ValueError, match="no 'other' measured-table markers"):
        replace_table(page.read_text(encoding="utf-8"), "other", "")


def test_bench_scale_renders_its_rows_as_the_docs_table(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench_scale

    monkeypatch.setattr(sys, "argv", ["bench_scale.py", "--jobs", "10000", "--write-docs", "docs/scale.md"])
    row = {"workload": "mix", "shapes": 16, "jobs": 10_000, "gpus": 1_000, "policy": "default",
           "generate_s": 0.2, "simulate_s": 1.55, "wall_s": 2.0, "us_per_job": 155, "jobs_per_s": 6432,
           "bare_jobs_per_s": 691_000, "ratio_pct": 0.93, "peak_rss_mib": 128, "completed": 10_000}  # fmt: skip
    lines = bench_scale.markdown_table([row]).splitlines()
    assert lines[0] == "`bench/bench_scale.py --jobs 10000 --write-docs docs/scale.md`:"
    assert (
        lines[4]
        == "| mix | 16 | 10,000 | 1,000 | default | 0.2 | 1.55 | 2.0 | 155 | 6,432 | 691,000 | 0.93 | 128 | 10,000 |"
    )
