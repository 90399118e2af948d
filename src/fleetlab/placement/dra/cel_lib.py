"""The values and functions a DRA selector can use: CEL's standard library with heterogeneous numeric
equality, cel-go's strings and sets extensions, and Kubernetes' quantity, semver, lists and regex libraries
(``k8s.io/apiserver/pkg/cel/library``), written for fleetlab from their documented behaviour.

Errors are values (:class:`CelError`) so the evaluator can absorb them in ``&&`` / ``||`` as CEL does.
Regular expressions use Python's ``re`` on patterns of at most 1,000 characters (CEL specifies RE2; the
two agree on the syntax selectors use; backreferences and lookaround, which RE2 refuses, are refused here).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

from fleetlab.model.quantity import QuantityError, parse_quantity
from fleetlab.spec.cel_parse import Uint

__all__ = ["FUNCTIONS", "METHODS", "CelError", "Quantity", "Semver", "cel_equal", "cel_type_name"]

INT64 = (-(2**63), 2**63 - 1)
MAX_PATTERN = 1000


class CelError(Exception):
    """A CEL runtime error, carried as a value until something absorbs or returns it."""


class Quantity:
    """A Kubernetes quantity (exact, as a Fraction) as CEL's ``kubernetes.Quantity`` type."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    @classmethod
    def parse(cls, text: Any) -> Quantity | CelError:
        if not isinstance(text, str):
            return CelError(f"no such overload: quantity({cel_type_name(text)})")
        try:
            return cls(parse_quantity(text))
        except QuantityError as exc:
            return CelError(f"quantities must match the regular expression: {exc}")

    def __repr__(self) -> str:
        return f"quantity({self.value})"


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class Semver:
    """A semantic version (semver.org 2.0.0, blang/semver's strict parse) as ``kubernetes.Semver``."""

    __slots__ = ("major", "minor", "patch", "pre")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[str, ...]) -> None:
        self.major, self.minor, self.patch, self.pre = major, minor, patch, pre

    @classmethod
    def parse(cls, text: str) -> Semver | None:
        m = _SEMVER.match(text)
        if m is None:
            return None
        pre = tuple(m.group(4).split(".")) if m.group(4) else ()
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by semver precedence (build metadata ignored)."""
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return (a > b) - (a < b)
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if x.isdigit() and y.isdigit():
                return (int(x) > int(y)) - (int(x) < int(y))
            if x.isdigit() != y.isdigit():
                return -1 if x.isdigit() else 1
            return (x > y) - (x < y)
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def cel_type_name(value: Any) -> str:
    """CEL's name for a value's type (as in its error messages)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Uint):
        return "uint"
    names = {
        int: "int",
        float: "double",
        str: "string",
        bytes: "bytes",
        list: "list",
        type(None): "null_type",
    }
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    return type(value).__name__


def check_int(value: int) -> int | CelError:
    """An int64 result, or the overflow error cel-go returns."""
    return value if INT64[0] <= value <= INT64[1] else CelError("return error for overflow")


def _is_num(value: Any) -> bool:
    return type(value) in (int, float, Uint)


def cel_equal(a: Any, b: Any) -> bool | CelError:
    """Heterogeneous equality: numbers by value across int / uint / double, lists and maps element-wise,
    quantities and versions by value; values of different kinds are unequal (not an error)."""
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value == b.value
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b) == 0
    if type(a) is not type(b) and not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    if isinstance(a, list):
        if len(a) != len(b):
            return False
        return all(cel_equal(x, y) is True for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if len(a) != len(b):
            return False
        for key, value in a.items():
            other = next((v for k, v in b.items() if cel_equal(k, key) is True), _MISSING)
            if other is _MISSING or cel_equal(value, other) is not True:
                return False
        return True
    return bool(a == b)


_MISSING = object()


def _err(name: str, *args: Any) -> CelError:
    return CelError(f"no such overload: {name}({', '.join(cel_type_name(a) for a in args)})")


def _size(value: Any) -> Any:
    if isinstance(value, (str, bytes, list, dict)):
        return len(value)
    return _err("size", value)


def _to_int(value: Any) -> Any:
    if type(value) in (int, Uint):
        return check_int(int(value))
    if isinstance(value, float):
        if math.isnan(value) or not (-(2.0**63) <= value < 2.0**63):
            return CelError("double is out of range for int")
        return int(value)
    if isinstance(value, str):
        try:
            return check_int(int(value, 10))
        except ValueError:
            return CelError(f"cannot parse {value!r} as int")
    return _err("int", value)


def _to_uint(value: Any) -> Any:
    if type(value) in (int, Uint) or isinstance(value, float):
        number = int(value) if not isinstance(value, float) or math.isfinite(value) else -1
        return Uint(number) if 0 <= number < 2**64 else CelError("uint out of range")
    if isinstance(value, str) and value.isdigit():
        return Uint(int(value)) if int(value) < 2**64 else CelError("uint out of range")
    return _err("uint", value)


def _to_double(value: Any) -> Any:
    if type(value) in (int, Uint, float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return CelError(f"cannot parse {value!r} as double")
    return _err("double", value)


def _to_string(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) in (int, Uint):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(int(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return _err("string", value)


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str] | str:
    if len(pattern) > MAX_PATTERN:
        return f"regular expression longer than {MAX_PATTERN} characters"
    if re.search(r"\\[1-9]|\(\?[=!<]", pattern):
        return "backreferences and lookaround are not RE2 syntax"
    try:
        return re.compile(pattern)
    except re.error as exc:
        return f"invalid regular expression: {exc}"


def _matches(text: Any, pattern: Any) -> Any:
    if not isinstance(text, str) or not isinstance(pattern, str):
        return _err("matches", text, pattern)
    compiled = _regex(pattern)
    if isinstance(compiled, str):
        return CelError(compiled)
    return compiled.search(text) is not None


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> Any:
    compiled = _regex(pattern) if isinstance(pattern, str) else "regex must be a string"
    if not isinstance(text, str) or isinstance(compiled, str):
        return CelError(compiled if isinstance(compiled, str) else "no such overload: findAll")
    found = [m.group(0) for m in compiled.finditer(text)]
    return found if type(limit) is not int or limit < 0 else found[:limit]


def _find(text: Any, pattern: Any) -> Any:
    found = _find_all(text, pattern, 1)
    return found if isinstance(found, CelError) else (found[0] if found else "")


def _str_method(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(receiver: Any, *args: Any) -> Any:
        if not isinstance(receiver, str) or not all(isinstance(a, (str, int)) for a in args):
            return _err(name, receiver, *args)
        try:
            return fn(receiver, *args)
        except IndexError as exc:
            return CelError(str(exc))

    return call


def _substring(s: str, start: int, end: int | None = None) -> str:
    end = len(s) if end is None else end
    if not (0 <= start <= end <= len(s)):
        raise IndexError(f"index out of range: {start if start < 0 or start > len(s) else end}")
    return s[start:end]


def _char_at(s: str, i: int) -> str:
    if not 0 <= i <= len(s):
        raise IndexError(f"index out of range: {i}")
    return s[i : i + 1]


def _index_of(s: str, sub: str, start: int = 0) -> int:
    if not 0 <= start <= len(s):
        raise IndexError(f"index out of range: {start}")
    return s.find(sub, start)


def _last_index_of(s: str, sub: str, start: int | None = None) -> int:
    start = len(s) if start is None else start
    if not 0 <= start <= len(s):
        raise IndexError(f"index out of range: {start}")
    return s.rfind(sub, 0, start + len(sub))


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    return s.split(sep, n - 1) if n > 0 else s.split(sep)


def _replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n) if n >= 0 else s.replace(old, new)


def _ascii_case(s: str, upper: bool) -> str:
    return "".join((c.upper() if upper else c.lower()) if c.isascii() else c for c in s)


def _list_method(name: str) -> Callable[..., Any]:
    def call(receiver: Any, *args: Any) -> Any:
        if isinstance(receiver, str) and name in ("indexOf", "lastIndexOf"):
            return _STRING_METHODS[name](receiver, *args)
        if not isinstance(receiver, list):
            return _err(name, receiver, *args)
        if name in ("indexOf", "lastIndexOf"):
            hits = [i for i, item in enumerate(receiver) if cel_equal(item, args[0]) is True]
            return (hits[0] if name == "indexOf" else hits[-1]) if hits else -1
        if name == "join":
            if not all(isinstance(x, str) for x in receiver):
                return _err("join", receiver)
            return (args[0] if args else "").join(receiver)
        if name == "sum":
            if not all(_is_num(x) for x in receiver) or len({type(x) for x in receiver}) > 1:
                return _err("sum", receiver)
            return sum(receiver) if receiver else 0
        if name in ("min", "max"):
            if not receiver:
                return CelError(f"{name} called on empty list")
            best = receiver[0]
            for item in receiver[1:]:
                order = _order(item, best)
                if isinstance(order, CelError):
                    return order
                if (order < 0) == (name == "min") and order != 0:
                    best = item
            return best
        # isSorted
        for a, b in itertools.pairwise(receiver):
            order = _order(a, b)
            if isinstance(order, CelError):
                return order
            if order > 0:
                return False
        return True

    return call


def _order(a: Any, b: Any) -> int | CelError:
    if _is_num(a) and _is_num(b):
        return int((a > b) - (a < b))
    if type(a) is type(b) and isinstance(a, (str, bytes, bool)):
        return int((a > b) - (a < b))
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    return _err("_<_", a, b)


def _compare_to(a: Any, b: Any) -> Any:
    same_kind = type(a) is type(b) and isinstance(a, (Quantity, Semver))
    if same_kind:
        return _order(a, b)
    return _err("compareTo", a, b)


def _quantity_arith(sign: int) -> Callable[[Any, Any], Any]:
    def call(a: Any, b: Any) -> Any:
        if not isinstance(a, Quantity):
            return _err("add" if sign > 0 else "sub", a, b)
        if isinstance(b, Quantity):
            return Quantity(a.value + sign * b.value)
        if type(b) is int:
            return Quantity(a.value + sign * b)
        return _err("add" if sign > 0 else "sub", a, b)

    return call


def _as_integer(q: Any) -> Any:
    if not isinstance(q, Quantity):
        return _err("asInteger", q)
    if q.value.denominator != 1 or not INT64[0] <= q.value <= INT64[1]:
        return CelError("cannot convert value to integer")
    return int(q.value)


def _semver_part(part: str) -> Callable[[Any], Any]:
    def call(v: Any) -> Any:
        return getattr(v, part) if isinstance(v, Semver) else _err(part, v)

    return call


def _semver(text: Any, normalize: Any = False) -> Any:
    if not isinstance(text, str):
        return _err("semver", text)
    if normalize is True:
        text = _normalize_semver(text)
    parsed = Semver.parse(text)
    return parsed if parsed is not None else CelError(f"error converting string to semver: {text}")


def _normalize_semver(text: str) -> str:
    """Kubernetes' semver(s, true): drop a leading v, fill missing minor/patch, strip leading zeros."""
    text = text.removeprefix("v")
    core, sep, rest = text.partition("-") if "-" in text else text.partition("+")
    parts = core.split(".")
    if len(parts) > 3 or not all(p.isdigit() for p in parts):
        return text
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + (sep + rest if sep else "")


def _sets(name: str) -> Callable[[Any, Any], Any]:
    def call(a: Any, b: Any) -> Any:
        if not isinstance(a, list) or not isinstance(b, list):
            return _err(f"sets.{name}", a, b)

        def has(xs: list[Any], y: Any) -> bool:
            return any(cel_equal(x, y) is True for x in xs)

        if name == "contains":
            return all(has(a, y) for y in b)
        if name == "intersects":
            return any(has(a, y) for y in b)
        return all(has(a, y) for y in b) and all(has(b, x) for x in a)

    return call


def _bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in (
        "true",
        "True",
        "TRUE",
        "t",
        "1",
        "false",
        "False",
        "FALSE",
        "f",
        "0",
    ):
        return value in ("true", "True", "TRUE", "t", "1")
    return _err("bool", value)


_STRING_METHODS: dict[str, Callable[..., Any]] = {
    "contains": _str_method("contains", lambda s, sub: sub in s),
    "startsWith": _str_method("startsWith", lambda s, p: s.startswith(p)),
    "endsWith": _str_method("endsWith", lambda s, p: s.endswith(p)),
    "charAt": _str_method("charAt", _char_at),
    "indexOf": _str_method("indexOf", _index_of),
    "lastIndexOf": _str_method("lastIndexOf", _last_index_of),
    "lowerAscii": _str_method("lowerAscii", lambda s: _ascii_case(s, False)),
    "upperAscii": _str_method("upperAscii", lambda s: _ascii_case(s, True)),
    "replace": _str_method("replace", _replace),
    "split": _str_method("split", _split),
    "substring": _str_method("substring", _substring),
    "trim": _str_method("trim", lambda s: s.strip()),
}

#: Receiver-style functions (``x.f(args)``), receiver first.
METHODS: dict[str, Callable[..., Any]] = {
    **_STRING_METHODS,
    "size": _size,
    "matches": _matches,
    "find": _find,
    "findAll": _find_all,
    **{
        name: _list_method(name)
        for name in ("indexOf", "lastIndexOf", "join", "sum", "min", "max", "isSorted")
    },
    "compareTo": _compare_to,
    "isGreaterThan": lambda a, b: (lambda o: o if isinstance(o, CelError) else o > 0)(_compare_to(a, b)),
    "isLessThan": lambda a, b: (lambda o: o if isinstance(o, CelError) else o < 0)(_compare_to(a, b)),
    "add": _quantity_arith(1),
    "sub": _quantity_arith(-1),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: (
        float(q.value) if isinstance(q, Quantity) else _err("asApproximateFloat", q)
    ),
    "isInteger": lambda q: (
        q.value.denominator == 1 and INT64[0] <= q.value <= INT64[1]
        if isinstance(q, Quantity)
        else _err("isInteger", q)
    ),
    "sign": lambda q: (q.value > 0) - (q.value < 0) if isinstance(q, Quantity) else _err("sign", q),
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
}

#: Global functions (``f(args)``).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "size": _size,
    "int": _to_int,
    "uint": _to_uint,
    "double": _to_double,
    "string": _to_string,
    "bool": _bool,
    "dyn": lambda v: v,
    "matches": _matches,
    "quantity": Quantity.parse,
    "isQuantity": lambda s: isinstance(s, str) and not isinstance(Quantity.parse(s), CelError),
    "semver": _semver,
    "isSemver": lambda s, normalize=False: (
        isinstance(s, str) and not isinstance(_semver(s, normalize), CelError)
    ),
    "sets.contains": _sets("contains"),
    "sets.equivalent": _sets("equivalent"),
    "sets.intersects": _sets("intersects"),
}
