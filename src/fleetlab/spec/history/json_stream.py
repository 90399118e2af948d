"""Stream Kubernetes objects out of a large ``kubectl get ... -o json`` file without loading it whole.

kubectl writes a ``v1 List`` (``{"apiVersion": "v1", "items": [...], "kind": "List", ...}``); a month of a
busy cluster is gigabytes, so the top level is walked by hand and each item is decoded on its own by the
standard library's C decoder. Every object is bounded in size and nesting; a truncated file is reported
with the line where it ends. Only kinds and names ever appear in errors, never content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from fleetlab.spec.bounded import (
    FAST_STRICT_DECODER,
    MAX_DEPTH,
    STRICT_DECODER,
    long_digits,
    nested_deeper,
)
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import open_text
from fleetlab.spec.kube_objects import SECRET_KINDS, check_envelope, read_objects

CHUNK_CHARS = 8 * 1024 * 1024
#: One object (a pod, a Workload) larger than this is not from kubectl.
MAX_OBJECT_CHARS = 64 * 1024 * 1024
#: YAML has no streaming reader here; larger YAML dumps must be re-saved as JSON.
MAX_YAML_BYTES = 256 * 1024 * 1024
_WS = re.compile(r"[ \t\n\r]*")


class StreamReader:
    """A growing text window over a stream: ``pos`` is the next unread character. Errors name the line of
    a file (``source`` is its path) or, for other streams (``lines=False``: an HTTP answer), the
    character."""

    def __init__(
        self,
        fh: TextIO,
        source: str,
        progress: Callable[[int], None] | None,
        lines: bool = True,
        shallow: bool = True,
    ) -> None:
        self.lines = lines
        #: Refuse values nested deeper than MAX_DEPTH or holding integers of more than MAX_INT_DIGITS
        #: digits, for consumers that recurse or keep integers; a reader that turns each value into floats
        #: without recursion (Prometheus samples) may skip both (the C decoder still stops at its own limit).
        self.shallow = shallow
        self.fh = fh
        self.source = source
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.offset = 0  # characters of the file before buf[0]
        self.chars_read = 0
        self.progress = progress

    def fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.fh.read(CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.chars_read += len(chunk)
        self.offset += self.pos
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        if self.progress is not None:
            self.progress(self.chars_read)
        return True

    def peek(self) -> str:
        """The next non-blank character ('' at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, allowed: str, what: str) -> str:
        char = self.peek()
        if not char or char not in allowed:
            raise self.error(f"expected {what}, found {char!r}" if char else f"the file ends where {what} is")
        self.pos += 1
        return char

    def value(self) -> Any:
        """The next JSON value, reading more of the file while it is incomplete."""
        self.peek()
        while True:
            try:
                try:
                    value, end = FAST_STRICT_DECODER.raw_decode(self.buf, self.pos)
                    huge = self.shallow and long_digits(self.buf, self.pos, end)
                except ValueError:  # past Python's own digit limit, or a real error: the strict decoder says
                    huge = True
                if huge:  # maybe an integer longer than allowed: decode with its check
                    value, end = STRICT_DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # Input cut off by the window fails at its end (or inside a string running past it);
                # an error well before the end is in the file itself.
                cut = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")
                if cut and len(self.buf) - self.pos > MAX_OBJECT_CHARS:
                    raise self.error(f"one object is larger than {MAX_OBJECT_CHARS // 2**20} MiB") from None
                if cut and self.fill():
                    continue
                raise self.error(f"invalid JSON: {exc.msg}", exc.pos) from None
            except RecursionError:
                raise self.error(f"JSON nested deeper than {MAX_DEPTH} levels", truncated=False) from None
            except ValueError as exc:  # NaN/Infinity, a huge integer, a repeated key
                raise self.error(f"invalid JSON: {exc}", truncated=False) from None
            if end == len(self.buf) and self.fill():
                continue  # a number could go on in the next chunk
            if self.shallow and nested_deeper(self.buf, self.pos, end):
                raise self.error(f"JSON nested deeper than {MAX_DEPTH} levels", truncated=False)
            self.pos = end
            return value

    def error(self, problem: str, at: int | None = None, truncated: bool = True) -> SpecError:
        offset = self.offset + (self.pos if at is None else at)
        if not self.lines:
            return SpecError(self.source, [f"character {offset + 1}: {problem}"])
        line = _line_of(self.source, offset)
        hint = (
            " (is the file truncated? re-save it with `kubectl get ... -o json > FILE`)" if truncated else ""
        )
        return SpecError(self.source, [f"line {line}: {problem}{hint}"])


def _line_of(source: str, offset: int) -> int:
    """The line holding character ``offset`` of the file (counted again only when there is an error)."""
    line, seen = 1, 0
    with open_text(Path(source)) as fh:
        while seen < offset:
            chunk = fh.read(min(CHUNK_CHARS, offset - seen))
            if not chunk:
                break
            line += chunk.count("\n")
            seen += len(chunk)
    return line


def _checked(obj: Any, source: str, where: str, default_kind: str | None) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        raise SpecError(
            source, [f"{where}: expected a Kubernetes object (a mapping), got {type(obj).__name__}"]
        )
    kind = obj.get("kind") or default_kind
    if isinstance(kind, str) and kind in SECRET_KINDS:
        raise SpecError(
            source,
            [f"{where}: this file holds a Secret; nothing of its content was read or printed. Give pods, "
             "jobs, Kueue workloads, events or nodes"],
        )  # fmt: skip
    if not isinstance(kind, str):
        return None
    if obj.get("kind") != kind:
        obj["kind"] = kind
    check_envelope(obj, source, where, kind)  # metadata, spec and status are mappings, labels text maps
    return obj


def _items_kind(list_kind: Any) -> str | None:
    if isinstance(list_kind, str) and list_kind.endswith("List") and list_kind != "List":
        return list_kind[: -len("List")]
    return None


def stream_list(
    path: Path, key: str, progress: Callable[[int], None] | None = None, many: bool = False
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Each element of the top-level array ``key`` of a JSON object (or of a top-level JSON array), with
    the top-level fields read before it; after the last element, ``(STREAM_END, top)`` with all of them.
    With ``many``, documents written one after another (``kubectl ... >> FILE``) follow in turn."""
    source = str(path)
    with open_text(path) as fh:
        reader = StreamReader(fh, source, progress)
        try:
            if reader.peek() == "":
                raise SpecError(source, ["the file is empty; expected JSON"])
            while True:
                yield from _document(reader, key)
                if not many or reader.peek() == "":
                    _end(reader)
                    return
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason}); expected JSON"]) from None


def _document(reader: StreamReader, key: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    if reader.peek() == "[":
        for item in array_items(reader):
            yield item, {}
        yield STREAM_END, {}
        return
    reader.expect("{", "'{' (a JSON object)")
    top: dict[str, Any] = {}
    while reader.peek() != "}":
        if top:
            reader.expect(",", "',' or '}'")
        name = reader.value()
        if not isinstance(name, str):
            raise reader.error("expected a field name")
        reader.expect(":", "':'")
        if name == key and reader.peek() == "[":
            for item in array_items(reader):
                yield item, top
            top[name] = STREAM_END
        else:
            top[name] = reader.value()
    reader.expect("}", "'}'")
    yield STREAM_END, top


#: Marks the end of :func:`stream_list` (and, as a top-level value, that the array was streamed).
STREAM_END: Any = object()


def _first_char(path: Path) -> str:
    with open_text(path) as fh:
        try:
            return StreamReader(fh, str(path), None).peek()
        except UnicodeDecodeError as exc:
            raise SpecError(str(path), [f"is not UTF-8 text ({exc.reason}); expected JSON"]) from None


def stream_objects(
    path: Path, progress: Callable[[int], None] | None = None, on_kindless: Callable[[], None] | None = None
) -> Iterator[dict[str, Any]]:
    """Every object in a kubectl JSON (or YAML) file, Lists expanded, in file order.

    ``progress`` gets the characters read so far; ``on_kindless`` is called for an item with no ``kind``
    (it is left out)."""
    source = str(path)
    first = _first_char(path)
    if first == "":
        raise SpecError(source, ["the file is empty; expected `kubectl get ... -o json` output"])
    if first not in "{[":
        yield from _yaml_objects(path)
        return
    index = 0

    def emit(obj: Any, default_kind: str | None) -> dict[str, Any] | None:
        nonlocal index
        out = _checked(obj, source, f"items[{index}]", default_kind)
        index += 1
        if out is None and on_kindless is not None:
            on_kindless()
        return out

    streamed = False  # whether this document's items came one by one
    for item, top in stream_list(path, "items", progress, many=True):
        if item is not STREAM_END:
            streamed = True
            if (out := emit(item, _items_kind(top.get("kind")))) is not None:
                yield out
            continue
        if top.get("items") is STREAM_END or streamed:
            streamed = False
        elif "items" in top and isinstance(top.get("kind"), str) and top["kind"].endswith("List"):
            for sub in top["items"] if isinstance(top["items"], list) else []:
                if (out := emit(sub, _items_kind(top.get("kind")))) is not None:
                    yield out
        elif top and (out := emit(top, None)) is not None:
            yield out


def array_items(reader: StreamReader) -> Iterator[Any]:
    reader.expect("[", "'['")
    first = True
    while reader.peek() != "]":
        if not first:
            reader.expect(",", "',' or ']'")
        first = False
        yield reader.value()
    reader.expect("]", "']'")


def _end(reader: StreamReader) -> None:
    if reader.peek() != "":
        raise reader.error("unexpected text after the end of the JSON document")


def _yaml_objects(path: Path) -> Iterator[dict[str, Any]]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SpecError(str(path), [f"cannot be read: {exc.strerror or exc}"]) from None
    if size > MAX_YAML_BYTES:
        raise SpecError(
            str(path),
            [f"is YAML of {size / 2**20:.0f} MiB; YAML is read whole up to {MAX_YAML_BYTES // 2**20} MiB. "
             "Save large histories as JSON (`kubectl get ... -o json`), which is streamed"],
        )  # fmt: skip
    yield from read_objects(path)
