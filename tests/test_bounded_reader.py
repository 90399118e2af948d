"""The bounded reader: each family of hostile YAML/JSON/CSV input ends in one SpecError, fast and small.

Every case is the minimal input of its family (alias bomb, deep nesting, long integers, duplicate keys,
devices, oversize fields); the scenario-level cases run through ``fleetlab.spec.loader.load`` as a user would.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fleetlab.spec import bounded
from fleetlab.spec.bounded import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    csv_rows,
    csv_table,
    json_cell,
    load_json,
    load_yaml,
    load_yaml_all,
    parse_timestamp,
    read_text_file,
    yaml_documents,
)
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

ALIAS_BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def problems(exc: pytest.ExceptionInfo[SpecError]) -> str:
    return "; ".join(exc.value.problems)


def test_alias_bomb_is_refused_quickly() -> None:
    # 9 levels of 9 aliases expand to 9**9 = 387,420,489 strings; the limit is MAX_ALIAS_NODES extra nodes.
    started = time.perf_counter()
    with pytest.raises(SpecError) as exc:
        load_yaml("bomb.yaml", ALIAS_BOMB)
    assert time.perf_counter() - started < 2.0
    assert "alias bomb" in problems(exc)
    assert f"{MAX_ALIAS_NODES:,}" in problems(exc)


def test_alias_bomb_scenario_file_exits_through_load(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        load(str(path))
    assert exc.value.source == str(path)
    assert "alias bomb" in problems(exc)


def test_small_anchors_and_merge_keys_still_work() -> None:
    text = "base: &base {cpu: '8', memory: 64Gi}\npool:\n  <<: *base\n  cpu: '16'\nagain: *base\n"
    data = load_yaml("ok.yaml", text)
    assert data["pool"] == {"cpu": "16", "memory": "64Gi"}
    assert data["again"] == {"cpu": "8", "memory": "64Gi"}


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        load_yaml("loop.yaml", "a: &a [1, *a]\n")
    assert "recursive" in problems(exc)


def test_yaml_nested_1000_deep_is_refused_not_recursion_error() -> None:
    text = "[" * 1000 + "]" * 1000
    with pytest.raises(SpecError) as exc:
        load_yaml("deep.yaml", text)
    assert f"deeper than {MAX_DEPTH}" in problems(exc)


def test_yaml_block_nesting_past_limit_is_refused() -> None:
    text = "".join(" " * i + "k:\n" for i in range(MAX_DEPTH + 2))
    with pytest.raises(SpecError) as exc:
        load_yaml("deep.yaml", text)
    assert "deeper than" in problems(exc)


def test_duplicate_yaml_key_names_both_lines() -> None:
    text = "name: a\nseed: 1\nseed: 2\n"
    with pytest.raises(SpecError) as exc:
        load_yaml("dup.yaml", text)
    assert "key 'seed' appears twice (lines 2 and 3)" in problems(exc)


def test_duplicate_key_in_nested_mapping_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        load_yaml("dup.yaml", "cluster:\n  pools: []\n  pools: []\n")
    assert "lines 2 and 3" in problems(exc)


def test_integer_with_5000_digits_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        load_yaml("big.yaml", "seed: " + "9" * 5000 + "\n")
    assert "5000 characters" in problems(exc)
    assert "line 1, column 7" in problems(exc)
    with pytest.raises(SpecError):
        load_json("big.json", '{"seed": ' + "9" * 5000 + "}")


def test_yaml_date_out_of_range_is_a_spec_error() -> None:
    with pytest.raises(SpecError) as exc:
        load_yaml("date.yaml", "at: 0000-01-01\n")
    assert "invalid YAML value" in problems(exc)


def test_multi_document_stream_keeps_empty_documents_only_with_nodes() -> None:
    assert load_yaml_all("m.yaml", "---\na: 1\n---\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
    assert [d for d, _ in yaml_documents("m.yaml", "a: 1\n---\n")] == [{"a": 1}, None]
    with pytest.raises(SpecError) as exc:
        load_yaml("m.yaml", "a: 1\n---\nb: 2\n")
    assert "2 YAML documents" in problems(exc)


def test_json_nested_100000_deep_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        load_json("deep.json", "[" * 100_000 + "]" * 100_000)
    assert "deeper than" in problems(exc)


def test_json_nested_past_limit_but_under_recursion_limit_is_refused() -> None:
    depth = MAX_DEPTH + 1
    with pytest.raises(SpecError) as exc:
        load_json("deep.json", "[" * depth + "]" * depth)
    assert f"deeper than {MAX_DEPTH}" in problems(exc)
    assert load_json("ok.json", "[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_json_infinity_and_nan_are_refused() -> None:
    for text in ('{"x": Infinity}', '{"x": NaN}', '{"x": -Infinity}'):
        with pytest.raises(SpecError) as exc:
            load_json("c.json", text)
        assert "invalid JSON" in problems(exc)


def test_json_duplicate_key_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        load_json("dup.json", '{"kind": "Pod", "kind": "Node"}')
    assert "'kind' appears twice" in problems(exc)


def test_json_syntax_error_names_line_and_column() -> None:
    with pytest.raises(SpecError) as exc:
        load_json("t.json", '{\n  "a": [1,\n')
    assert "line 3, column 1: invalid JSON" in problems(exc)


def test_json_cell_nested_100000_deep_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="deeper than 16"):
        json_cell("[" * 100_000 + "]" * 100_000)


def test_csv_field_over_128_kib_names_the_line() -> None:
    text = "time,rps\n0,1\n1," + "9" * (200 * 1024) + "\n"
    with pytest.raises(SpecError) as exc:
        list(csv_rows("rates.csv", text))
    assert "line 3: malformed CSV" in problems(exc)
    assert "131,072" in problems(exc)


def test_csv_table_pads_short_rows_and_drops_extras() -> None:
    header, rows = csv_table("t.csv", "a,b,c\n1\n\n1,2,3,4\n")
    assert header == ["a", "b", "c"]
    assert list(rows) == [{"a": "1", "b": "", "c": ""}, {"a": "1", "b": "2", "c": "3"}]


def test_dev_zero_is_refused_before_reading() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(SpecError) as exc:
        read_text_file(Path("/dev/zero"), "missing")
    assert "not a regular file" in problems(exc)


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError) as exc:
        load(str(fifo))
    assert "not a regular file" in problems(exc)


def test_file_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * 2048)
    with pytest.raises(SpecError) as exc:
        read_text_file(path, "missing", max_bytes=1024)
    assert "is 2,048 bytes; the most fleetlab reads is 1,024" in problems(exc)


def test_non_utf8_file_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(SpecError) as exc:
        read_text_file(path, "missing")
    assert "not UTF-8 text (byte 9" in problems(exc)


def test_limits_are_the_documented_ones() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "input-limits.md").read_text(encoding="utf-8")
    for name in ("MAX_FILE_BYTES", "MAX_DEPTH", "MAX_ALIAS_NODES", "MAX_INT_DIGITS", "MAX_CSV_FIELD"):
        assert f"`{name}` = {getattr(bounded, name):,}" in doc, name


def test_timestamps_in_year_9999_are_refused_not_overflowed() -> None:
    # 9999-12-31T23:00-05:00 is 10000-01-01T04:00Z: datetime overflows converting it to UTC.
    for text in ("9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00", "2300-01-01T00:00:00Z"):
        with pytest.raises(ValueError, match=r"outside 1970-01-01\.\.2262-04-11"):
            parse_timestamp(text)
    assert parse_timestamp("2026-11-02 00:00:00 UTC") == parse_timestamp("2026-11-02T00:00:00Z")
    assert parse_timestamp("2026-11-02T01:00:00+01:00").hour == 0


def test_control_character_is_one_line_naming_the_position() -> None:
    with pytest.raises(SpecError) as exc:
        load_yaml("c.yaml", "a: 1\x1f")
    assert "character 5: invalid YAML: control characters are not allowed (U+001F)" in str(exc.value)
    assert "\n" not in str(exc.value)
