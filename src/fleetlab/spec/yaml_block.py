"""Block-style YAML for long lists of small mappings (a replayed history's jobs), written without PyYAML's
Python representer, which costs more than the rest of writing a calibrated scenario.

The text is what ``yaml.dump(items, Dumper=<C>SafeDumper, sort_keys=False, allow_unicode=True,
width=120)`` writes. Only what that dump writes unquoted and on one line is written here: mappings with
short plain keys, sequences of mappings or scalars, ints, floats, booleans, nulls and strings that stay
plain (letters, digits, ``_ . / -``, read back as strings by YAML's resolver). An item holding anything
else (a string YAML would quote or fold, a sequence of sequences, ...) is dumped by PyYAML itself, so
the text is the same either way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import yaml

#: libyaml where installed, as every YAML writer here uses.
DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
WIDTH = 120
_STR_TAG = "tag:yaml.org,2002:str"
#: Characters of a string that may stay plain anywhere in block style (no indicator, space or quote).
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\Z")
#: A key longer than this is written as a complex key (``? key``) by the emitter (its limit is 128).
_KEY_MAX = 100
_RESOLVER: Any = yaml.resolver.Resolver()  # PyYAML is untyped


#: Keys found plain and short enough (a document repeats its few keys in every item), at most _KEYS_KEPT.
_PLAIN_KEYS: set[str] = set()
_KEYS_KEPT = 4096


class _NotPlain(Exception):
    """The item holds something only PyYAML lays out the way PyYAML does."""


def dump(data: Any) -> str:
    """PyYAML's own block-style dump, with the settings this module reproduces."""
    return str(yaml.dump(data, Dumper=DUMPER, sort_keys=False, allow_unicode=True, width=WIDTH))


@lru_cache(maxsize=65536)
def _plain(text: str) -> bool:
    """Whether YAML writes ``text`` as a plain scalar: safe characters, and not read back as a number,
    boolean, null, date or other implicit type (``"123"``, ``"yes"``, ``"null"`` are quoted)."""
    return (
        _PLAIN.match(text) is not None and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG
    )


def float_text(value: float) -> str:
    """A float as YAML's safe representer writes it: ``.nan``, ``.inf``, ``-.inf``, else Python's shortest
    repr in lower case with an exponent always after a decimal point (``1e+16`` -> ``1.0e+16``)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is float:
        return float_text(value)
    if kind is str and _plain(value):
        return str(value)
    raise _NotPlain


def _mapping(data: dict[Any, Any], indent: int, first: str, out: list[str]) -> None:
    """``data``'s entries at ``indent``, the first after ``first`` (``- `` where it opens a list item)."""
    pad = " " * indent
    lead = first
    for key, value in data.items():
        if type(key) is not str or key not in _PLAIN_KEYS:
            if type(key) is not str or len(key) > _KEY_MAX or not _plain(key):
                raise _NotPlain
            if len(_PLAIN_KEYS) < _KEYS_KEPT:
                _PLAIN_KEYS.add(key)
        kind = type(value)
        if kind is not dict and kind is not list:  # a scalar entry in one piece
            out.append(f"{lead}{key}: {_scalar(value)}\n")
        else:
            out.append(f"{lead}{key}:")
            _nested(value, kind, indent, out)
        lead = pad


def _nested(value: Any, kind: type, indent: int, out: list[str]) -> None:
    """A mapping entry's dict or list ``value`` (of type ``kind``), after its ``key:``."""
    if kind is dict:
        if value:
            out.append("\n")
            _mapping(value, indent + 2, " " * (indent + 2), out)
        else:
            out.append(" {}\n")
    elif value:
        out.append("\n")
        _sequence(value, indent, out)  # a list in a mapping is not indented further
    else:
        out.append(" []\n")


def _sequence(items: list[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        kind = type(item)
        if kind is dict:
            if item:
                _mapping(item, indent + 2, f"{pad}- ", out)
            else:
                out.append(f"{pad}- {{}}\n")
        elif kind is list:
            raise _NotPlain  # a list of lists: PyYAML's own layout
        else:
            out.append(f"{pad}- {_scalar(item)}\n")


def block_list(items: Iterable[Any], indent: int = 0) -> str:
    """``dump(list(items))`` for a non-empty list, every line indented by ``indent`` spaces: items of
    plain scalars and mappings written here, any other item dumped by PyYAML on its own (the same text as
    it has in the whole list's dump)."""
    pad = " " * indent
    out: list[str] = []
    for item in items:
        mark = len(out)
        try:
            _sequence([item], indent, out)
        except _NotPlain:
            del out[mark:]
            out.extend(pad + line for line in dump([item]).splitlines(keepends=True))
    return "".join(out)
