"""The documentation stays true: the generated field reference matches the models, unknown-field errors
point at sections that exist, the README keeps its two set-up commands, and every relative link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleetlab.spec.errors import SpecError
from fleetlab.spec.field_reference import PAGE, anchor, docs_pointer, render
from fleetlab.spec.loader import load

ROOT = Path(__file__).resolve().parents[1]
#: Pages other parts of the project add; links to them may land before the pages do.
PENDING = {"docs/history-import.md", "docs/baseline.md", "docs/metrics.md"}


def test_field_reference_is_generated_from_the_models() -> None:
    committed = (ROOT / PAGE).read_text(encoding="utf-8")
    assert committed == render(), (
        f"{PAGE} is out of date: run `.venv/bin/python -m fleetlab.spec.field_reference > {PAGE}`"
    )


@pytest.mark.parametrize(
    ("snippet", "section"),
    [
        (
            "cluster:\n  pools:\n    - {name: a, count: 1, cpu: '1', memory: 1Gi, colour: red}\n",
            "cluster.pools[]",
        ),
        ("seeed: 3\n", ""),
        (
            "workload: {jobs: [{id: j, requests: {cpu: '1'}, runtime: 1, tolerations: [{key: a, opertor: Exists}]}]}\n",
            "workload.jobs[].tolerations[]",
        ),
        ("scheduler: {polcy: default}\n", "scheduler"),
    ],
)
def test_unknown_field_errors_point_at_the_right_section(tmp_path: Path, snippet: str, section: str) -> None:
    base = {
        "cluster": "cluster:\n  pools:\n    - {name: a, count: 1, cpu: '1', memory: 1Gi}\n",
        "workload": "workload: {jobs: [{id: j, requests: {cpu: '1'}, runtime: 1}]}\n",
    }
    key = snippet.split(":", 1)[0]
    parts = [snippet] + [text for name, text in base.items() if name != key]
    path = tmp_path / "s.yaml"
    path.write_text("".join(parts), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load(str(path))
    message = str(caught.value)
    assert f"unknown field (check the spelling; allowed fields: {PAGE}#{anchor(section)})" in message
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    assert f'<a id="{anchor(section)}"></a>' in page


def test_docs_pointer_falls_back_to_the_nearest_known_section() -> None:
    # A field under a free-form map (labels) has no section of its own: the pool's section lists `labels`.
    assert docs_pointer(("cluster", "pools", 0, "labels", "x", "y")) == f"{PAGE}#cluster-pools"
    assert docs_pointer(("nonsense",)) == f"{PAGE}#scenario"


def test_readme_keeps_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/fleetlab compare" in readme
    )
    assert "\n.venv/bin/python -m pytest -q\n" in readme
    assert len(readme.splitlines()) < 100  # a two-minute read; the reference lives in docs/


def _links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t]


@pytest.mark.parametrize("page", ["README.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))])
def test_relative_links_resolve(page: str) -> None:
    path = ROOT / page if page == "README.md" else ROOT / "docs" / page
    for target in _links(path):
        resolved = (path.parent / target).resolve()
        relative = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else target
        assert resolved.exists() or relative in PENDING, f"{page}: broken link {target}"
