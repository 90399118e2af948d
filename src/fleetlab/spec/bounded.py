"""The one bounded reader for every YAML, JSON and CSV input fleetlab accepts.

Every entry point (scenarios, experiment files, traces, catalogs, bills, kubectl dumps, Kueue objects) reads
through here so that a hostile or careless file costs bounded time and memory and ends in a ``SpecError``
(one paragraph, exit code 2), never a traceback, a hang or a multi-GB blow-up. The limits are documented in
docs/input-limits.md.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from fleetlab.spec.errors import SpecError
from fleetlab.spec.inputs_read import note_input

#: Largest input file read into memory (bytes). Real kubectl dumps of 10,000 pods are ~100 MiB.
MAX_FILE_BYTES = 512 * 1024 * 1024
#: Deepest nesting of mappings/sequences accepted in YAML or JSON (Kubernetes objects stay under ~20).
MAX_DEPTH = 64
#: Nodes that YAML aliases may add on expansion beyond the document's own nodes (stops alias bombs).
MAX_ALIAS_NODES = 100_000
#: Longest integer literal (characters) accepted in YAML or JSON; 2**64 has 20 digits.
MAX_INT_DIGITS = 32
#: Longest CSV field (characters), Python's csv default, stated so the error can name it.
MAX_CSV_FIELD = 128 * 1024
#: Largest input read as a stream, a piece at a time (kubectl dumps, billing exports, scheduler logs):
#: memory stays bounded by the piece, so this cap bounds only how long a read may take.
MAX_STREAM_BYTES = 64 * 1024**3


def read_text_file(path: Path, missing: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A UTF-8 regular file's text, at most ``max_bytes`` long, or a SpecError.

    ``missing`` says what to give when the file is absent. Devices, FIFOs and sockets are refused before
    they are opened (``/dev/zero`` would be read until memory runs out, a FIFO would block forever).
    """
    check_file(path, missing, max_bytes)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise SpecError(str(path), [f"cannot be read: {exc.strerror or exc}"]) from None
    if len(raw) > max_bytes:
        raise SpecError(str(path), [f"grew past {max_bytes:,} bytes while being read"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), [f"is not UTF-8 text (byte {exc.start}: {exc.reason})"]) from None


def check_file(path: Path, missing: str, max_bytes: int = MAX_FILE_BYTES, label: str | None = None) -> None:
    """Refuse, before opening, what is absent, a directory, not a regular file or over ``max_bytes``; note
    the file as an input of the command (no output may replace it, ``spec.inputs_read``)."""
    name = label or str(path)
    note_input(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SpecError(name, [missing]) from None
    except OSError as exc:
        raise SpecError(name, [f"cannot be read: {exc.strerror or exc}"]) from None
    if stat.S_ISDIR(info.st_mode):
        raise SpecError(name, ["is a directory, not a file"])
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(name, ["is not a regular file (a device, pipe or socket); give a saved file"])
    if info.st_size > max_bytes:
        raise SpecError(name, [f"is {info.st_size:,} bytes; the most fleetlab reads is {max_bytes:,}"])


def read_parquet(
    path: Path,
    missing: str,
    what: str = "Parquet",
    columns: list[str] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> Any:
    """A Parquet file as an Arrow table (only ``columns`` when given), or a SpecError: refused before it
    is opened when absent, not a regular file or over ``max_bytes``; ``what`` names what it should be."""
    import pyarrow.parquet as pq

    check_file(path, missing, max_bytes)
    try:
        return pq.read_table(path, columns=columns)
    except Exception as exc:  # pyarrow raises several types for unreadable or foreign files
        raise SpecError(str(path), [f"cannot be read as {what}: {exc}"]) from None


class _CappedRaw(io.RawIOBase):
    """A binary file that refuses to yield more than ``max_bytes`` (a file that grows while read, or one
    whose size the file system does not report, stays bounded)."""

    def __init__(self, handle: io.BufferedReader, label: str, max_bytes: int) -> None:
        super().__init__()
        self._handle = handle
        self._label = label
        self._max = max_bytes

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def readinto(self, buffer: Any) -> int:
        count = self._handle.readinto(buffer)
        if self._handle.tell() > self._max:
            raise SpecError(self._label, [f"grew past {self._max:,} bytes while being read"])
        return count

    def close(self) -> None:
        self._handle.close()
        super().close()


def open_binary_stream(
    path: Path, missing: str = "file not found", max_bytes: int = MAX_STREAM_BYTES
) -> io.BufferedReader:
    """A regular file opened to be read a piece at a time, at most ``max_bytes`` long, or a SpecError.
    For inputs too large to hold whole; checked as ``read_text_file``."""
    check_file(path, missing, max_bytes)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed with the wrapper the caller closes
    except OSError as exc:
        raise SpecError(str(path), [f"cannot be read: {exc.strerror or exc}"]) from None
    return io.BufferedReader(_CappedRaw(handle, str(path), max_bytes))


def open_stream(
    path: Path, missing: str = "file not found", encoding: str = "utf-8", max_bytes: int = MAX_STREAM_BYTES
) -> TextIO:
    """``open_binary_stream`` as text (newlines untranslated, for CSV)."""
    return io.TextIOWrapper(open_binary_stream(path, missing, max_bytes), encoding=encoding, newline="")


# --- YAML -----------------------------------------------------------------------------------------


class _Refused(yaml.YAMLError):
    """A limit crossed while composing or constructing; carries the place for the message."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class BoundedLoader(yaml.CSafeLoader):  # type: ignore[misc,unused-ignore]  # typed in newer types-PyYAML
    """libyaml's safe loader (no recursion limit issues, fast) plus duplicate-key and integer-size checks."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[tuple[str, str], yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            ident = (key_node.tag, key_node.value)
            first = seen.get(ident)
            if first is not None:
                raise _Refused(
                    f"key {key_node.value[:60]!r} appears twice (lines {_line(first)} and "
                    f"{_line(key_node)}); each key may appear once",
                    key_node.start_mark,
                )
            seen[ident] = key_node
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INT_DIGITS:
            raise _Refused(
                f"integer {node.value[:24]}... has {len(node.value)} characters; "
                f"at most {MAX_INT_DIGITS} allowed",
                node.start_mark,
            )
        value: int = super().construct_yaml_int(node)
        return value


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)


_RECURSIVE = "an alias refers to the node that contains it (a recursive structure)"


def _check_node(root: yaml.Node) -> None:
    """Refuse recursive aliases, nesting deeper than MAX_DEPTH and alias bombs, before construction."""
    expanded: dict[int, int] = {}  # id(node) -> nodes it stands for once aliases are expanded
    distinct = 0
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            total = 1
            for child in _children(node):
                total += expanded[id(child)]
            expanded[key] = total
            if total - distinct > MAX_ALIAS_NODES:
                raise _Refused(
                    f"aliases expand this document to over {MAX_ALIAS_NODES:,} extra nodes "
                    "(an alias bomb?); write the repeated parts out or use fewer aliases",
                    node.start_mark,
                )
            continue
        if key in on_path:
            raise _Refused(
                "an alias refers to the node that contains it (a recursive structure)", node.start_mark
            )
        if key in expanded:
            continue
        if depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels", node.start_mark)
        distinct += 1
        on_path.add(key)
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) in on_path:
                raise _Refused(_RECURSIVE, child.start_mark)
            if id(child) not in expanded:
                stack.append((child, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _yaml_error(label: str, exc: yaml.YAMLError) -> SpecError:
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow (control, NUL...)
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        where = f"character {exc.position + 1}"
        return SpecError(label, [f"{where}: invalid YAML: {exc.reason} (U+{char:04X})"])
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    prefix = "" if isinstance(exc, _Refused) else "invalid YAML: "
    return SpecError(label, [f"{where}{prefix}{problem}"])


def yaml_documents(label: str, text: str) -> list[tuple[Any, yaml.Node]]:
    """Every document of a YAML stream (None for an empty one) with its node tree (for lines), bounded.

    A SpecError names the line on any problem: syntax, a duplicate key, an alias bomb, too deep, too long.
    """
    loader = BoundedLoader(text)
    out: list[tuple[Any, yaml.Node]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            _check_node(node)
            out.append((loader.construct_document(node), node))
    except yaml.YAMLError as exc:
        raise _yaml_error(label, exc) from None
    except (ValueError, OverflowError) as exc:  # e.g. a timestamp in year 0 or a float past range
        raise SpecError(label, [f"invalid YAML value: {exc}"]) from None
    finally:
        loader.dispose()
    return out


def load_yaml_all(label: str, text: str) -> list[Any]:
    """Every non-empty document of a YAML stream, bounded."""
    return [doc for doc, _ in yaml_documents(label, text) if doc is not None]


def load_yaml(label: str, text: str) -> Any:
    """A single-document YAML text, bounded (None for an empty text)."""
    docs = load_yaml_all(label, text)
    if len(docs) > 1:
        raise SpecError(label, [f"holds {len(docs)} YAML documents; expected one"])
    return docs[0] if docs else None


# --- timestamps ---------------------------------------------------------------------------------

#: Timestamps outside these are refused: before the Unix epoch nothing fleetlab reads happened, and past
#: 2262-04-11 int64 nanoseconds (Arrow's and pandas' timestamps) overflow.
MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2262, 4, 11, tzinfo=UTC)


def parse_timestamp(text: str) -> datetime:
    """An ISO 8601 / RFC 3339 timestamp (``Z``, an offset or BigQuery's `` UTC``) in UTC; naive means UTC.

    A ValueError (for the caller's line and column) when it is malformed or outside MIN_TIME..MAX_TIME.
    """
    value = text.strip().removesuffix(" UTC").replace("Z", "+00:00")
    if len(value) > 64:
        raise ValueError("is too long for a timestamp")
    try:
        moment = datetime.fromisoformat(value)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"is outside {MIN_TIME:%Y-%m-%d}..{MAX_TIME:%Y-%m-%d}") from None
    if not MIN_TIME <= moment < MAX_TIME:
        raise ValueError(f"is outside {MIN_TIME:%Y-%m-%d}..{MAX_TIME:%Y-%m-%d}")
    return moment


# --- JSON -----------------------------------------------------------------------------------------


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON; write a finite number or null")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"integer with {len(text)} digits; at most {MAX_INT_DIGITS} allowed")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is past the range of a number (about ±1.8e308)")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {key[:60]!r} appears twice in one object; each key may appear once")
            seen.add(key)
    return out


def check_depth(label: str, data: Any, max_depth: int = MAX_DEPTH) -> None:
    """Refuse parsed data nested deeper than ``max_depth`` (iterative, so no recursion limit is hit)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise SpecError(label, [f"nested deeper than {max_depth} levels"])
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))


#: A decoder with ``load_json``'s rules (no NaN/Infinity, bounded integers, unique keys) for readers that
#: decode one value at a time out of a stream (``raw_decode``); they check depth with ``check_depth``.
STRICT_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_int=_bounded_int,
    parse_float=_finite_float,
    object_pairs_hook=_unique_keys,
)
#: ``STRICT_DECODER`` without the Python call per integer (a Prometheus answer holds millions of
#: timestamps): for a value whose text has no run of more than MAX_INT_DIGITS digits (``long_digits``),
#: which is the only case the integer check refuses.
FAST_STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
_LONG_DIGITS = re.compile(rf"[0-9]{{{MAX_INT_DIGITS + 1}}}")


_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def nested_deeper(text: str, start: int, end: int, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the JSON value in ``text[start:end]`` (already decoded, so balanced) nests deeper than
    ``max_depth``, as ``check_depth`` counts it, found with regular expressions in C: strings dropped, only
    brackets kept, then each pass removes the innermost pairs; what is left after ``max_depth`` passes is
    deeper. A list of a million samples costs a few passes over its brackets, not a million Python steps."""
    span = text[start:end]
    if span.count("[") + span.count("{") <= max_depth:  # too few brackets to nest that deep
        return False
    brackets = _NOT_BRACKET.sub("", _STRING_LITERAL.sub("", span))
    for _ in range(max_depth):
        brackets = _INNERMOST.sub("", brackets)
        if not brackets:
            return False
    return True


def long_digits(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a run of digits longer than any integer allowed (searched in C)."""
    return _LONG_DIGITS.search(text, start, end) is not None


def load_json(label: str, text: str, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON (no NaN/Infinity or numbers past float range, bounded integers and depth), or a
    SpecError naming line and column."""
    try:
        data = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_bounded_int,
            parse_float=_finite_float,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as exc:
        raise SpecError(label, [f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"]) from None
    except RecursionError:
        raise SpecError(label, [f"nested deeper than {max_depth} levels"]) from None
    except ValueError as exc:
        raise SpecError(label, [f"invalid JSON: {exc}"]) from None
    check_depth(label, data, max_depth)
    return data


# --- CSV ------------------------------------------------------------------------------------------


def csv_rows(label: str, text: str) -> Iterator[list[str]]:
    """CSV rows; a malformed row or a field over MAX_CSV_FIELD characters is a SpecError naming the line."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise SpecError(
                label,
                [f"line {reader.line_num}: malformed CSV ({exc}; limit {MAX_CSV_FIELD:,} chars a field)"],
            ) from None
        yield row


def csv_dict_reader(handle: TextIO) -> csv.DictReader[str]:
    """``csv.DictReader`` over a stream with the field cap restored to MAX_CSV_FIELD (the cap is global to
    the csv module, so a reader that raised it would otherwise raise it for every later reader)."""
    csv.field_size_limit(MAX_CSV_FIELD)
    return csv.DictReader(handle)


def csv_table(label: str, text: str) -> tuple[list[str], Iterator[dict[str, str]]]:
    """The header and the rows keyed by it, like ``csv.DictReader`` (blank rows skipped, short rows padded
    with '', extra cells dropped), bounded like ``csv_rows``."""
    rows = csv_rows(label, text)
    header = next(rows, None) or []

    def records() -> Iterator[dict[str, str]]:
        width = len(header)
        for row in rows:
            if not row:
                continue
            cells = row + [""] * (width - len(row))
            yield dict(zip(header, cells[:width], strict=True))

    return list(header), records()


def json_cell(text: str, max_depth: int = 16) -> Any:
    """A JSON value held in one table cell, bounded; a ValueError (for the caller's line and column)."""
    try:
        return load_json("cell", text, max_depth)
    except SpecError as exc:
        raise ValueError("; ".join(exc.problems)) from None
