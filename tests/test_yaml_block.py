"""spec/yaml_block.py writes the very text PyYAML's block dump writes (the dump is the reference), and
the text loads back equal; hostile strings (ones YAML reads as other types, quoting, unicode, long text)
take PyYAML's own path."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from fleetlab.spec.yaml_block import _plain, block_list, dump, float_text

HOSTILE = [
    "", " ", "plain", "tiled/1", "group-1", "user_2", "a.b.c", "123", "0123", "1_000", "0x1F", "0o17",
    "1e3", "1.5", ".5", "-1", "+1", ".inf", "-.inf", ".nan", "NaN", "yes", "No", "on", "OFF", "y", "n",
    "true", "False", "null", "Null", "~", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "12:30", "1:20",
    "=", "<<", "-", "--", "---", "...", "- a", "a: b", "a:b", "a #b", "#c", "@x", "`x", "!tag", "&a", "*a",
    "?q", "|", ">", "%x", "'q'", '"q"', "it's", "tab\there", "line\nbreak", "trail ", " lead", "ünïcödé",
    "日本語", "emoji 🚀", "\u2028sep", "\x85nel", "a" * 130, "word " * 40, "1000m", "0", "00", "0.0",
    "1__2", "_", "_1", "a/b/c-1.2_3", "x" * 200,
]  # fmt: skip
FLOATS = [0.0, -0.0, 1.0, 1451.0, 0.1, 1 / 3, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, -2.5e-5,
          123456789012345.6, float("inf"), float("-inf"), float("nan"), 1e22, 12345678901234567890.0]  # fmt: skip


def _loads(text: str) -> Any:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_floats_as_pyyaml_writes_them() -> None:
    for value in FLOATS:
        assert float_text(value) == dump(value).split("\n")[0], value


@pytest.mark.parametrize("text", HOSTILE)
def test_each_hostile_string_as_value_key_and_list_item(text: str) -> None:
    items: list[Any] = [
        {"id": text, "n": 1},
        {text: "v"},
        {"labels": {"k": text, text: 2.5}},
        {"tags": [text, "b"], "nested": [{"x": text}]},
        text,
    ]
    for item in items:
        assert block_list([item]) == dump([item])
        assert block_list([item], indent=2) == "".join("  " + line for line in dump([item]).splitlines(True))
        assert _loads(block_list([item])) == [item]


def test_plain_only_where_pyyaml_keeps_it_plain() -> None:
    # Hand-checked: these read back as int, float, bool, null and date, so YAML quotes them.
    for text in ("123", "1_000", "1.5e+3", "yes", "on", "null", "~", "2001-12-14", ".inf", ""):
        assert not _plain(text)
    # YAML 1.1 floats need a decimal point and a signed exponent, so "1e3" stays a plain string.
    for text in ("tiled/1", "1000m", "group-1", "a.b", "1e3"):
        assert _plain(text)
        assert dump([text]) == f"- {text}\n"


def test_jobs_shaped_like_a_history_match_pyyaml() -> None:
    jobs: list[Any] = []
    for i, name in enumerate(HOSTILE):
        jobs.append(
            {
                "id": f"tiled/{i}",
                "submit_s": float(i) * 1.5,
                "team": name,
                "user": f"user-{i}",
                "pods": i + 1,
                "requests": {"cpu": "1000m", "memory": 0, "gpu": i % 3},
                "runtime": {"default": 1451.0 + i, "per_model": {}},
                "gang": i % 2 == 0,
                "priority": None,
                "tolerations": [],
                "node_selector": {"fleetlab.io/pool": "tiled-nodes"},
                "matrix": [[1, 2]] if i % 7 == 0 else [{"a": 1}, {}],
            }
        )
    text = block_list(jobs, indent=2)
    assert text == "".join("  " + line for line in dump(jobs).splitlines(keepends=True))
    assert _loads("jobs:\n" + text) == {"jobs": jobs}
