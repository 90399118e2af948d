"""Kubernetes resource quantities (``500m``, ``16Gi``, ``1.5e3``) parsed the way the API server parses them.

The rules follow k8s.io/apimachinery ``resource.ParseQuantity`` (pkg/api/resource/quantity.go, suffix.go):

* Grammar: an optional ``+``/``-``, ASCII digits with at most one decimal point (``1``, ``1.5``, ``1.``,
  ``.5``), then an optional suffix: binary ``Ki Mi Gi Ti Pi Ei`` (powers of 1024), decimal
  ``n u m k M G T P E`` (powers of 1000; no suffix means units), or ``e``/``E`` followed by a signed
  integer exponent (``1e3``, ``2.5E-3``, ``1e+6``). Suffixes are case-sensitive. Nothing else is allowed:
  no whitespace, no ``B``, no second decimal point.
* Values are exact, except the two adjustments apimachinery makes while parsing: a value that is not a whole
  number of nano-units is rounded away from zero to the next one (``0.9n`` -> ``1n``, ``1e-100`` -> ``1n``),
  and a value written with a binary suffix is capped in magnitude at ``2**63 - 1`` (``8Ei`` -> ``2**63 - 1``).
  Decimal values are not capped (``12E`` is 1.2e19).
* Negative quantities parse; callers that need amounts use :func:`require_non_negative` or
  :func:`to_whole`, which reject them with the API server's message.

Where this module differs from apimachinery it only ever rejects: every quantity it accepts gets the value
apimachinery gives it. The inputs apimachinery accepts and this module refuses are degenerate spellings:

* a number with no digits at all (``.``, ``+``, ``-``, ``Gi``, ``e3``, ``-.m``): apimachinery's hand-written
  scanner reads these as 0 (upstream keeps that only for compatibility); the documented grammar, and a
  typo-catching simulator, want at least one digit;
* an exponent outside the 32-bit range (``1e4294967296``), which apimachinery silently truncates to 32 bits
  (that one reads as 1), and exponents of -2**31 or below once fraction digits are counted, where upstream's
  int32 scale arithmetic wraps;
* a non-zero value whose exponent, after fraction digits are counted, exceeds 1000 (upstream would build a
  number with up to 2**31 digits), and text longer than 1024 characters.

Python numbers are accepted too: an ``int`` is its exact value, a ``float`` is parsed from its ``repr`` (so
``0.1`` is exactly one tenth, as the JSON ``0.1`` would be); ``bool``, NaN and infinities are rejected.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

__all__ = [
    "BINARY_SI_CAP",
    "QuantityError",
    "format_quantity",
    "parse_quantity",
    "require_non_negative",
    "to_int",
    "to_milli",
    "to_whole",
]

#: Largest magnitude a binary-suffixed quantity parses to (apimachinery caps ``8Ei`` and up here).
BINARY_SI_CAP = (1 << 63) - 1

_DECIMAL_EXPONENTS: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_EXPONENTS: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_ALL_SUFFIXES: tuple[str, ...] = (*_BINARY_EXPONENTS, *(s for s in _DECIMAL_EXPONENTS if s))

_DIGITS = frozenset("0123456789")
# Characters apimachinery's scanner lets start a suffix; anything else after the number is a format error.
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_EXPONENT_TEXT = re.compile(r"[+-]?[0-9]+")

_NANO = 10**9
_MAX_TEXT_LENGTH = 1024
_MAX_EXPONENT = 1000
_MIN_SCALE = -(2**31) + 1

_ALLOWED = (
    "a quantity is an optional sign, digits with at most one decimal point, then an optional suffix: "
    'Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or e/E and an integer exponent (e.g. "500m", "1.5Gi", "2e3")'
)


class QuantityError(ValueError):
    """A value is not a Kubernetes quantity, or not one this resource allows; the message says why."""


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _display(value: object) -> str:
    """The text of ``value`` as a person wrote it, for error messages."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # more digits than int->str conversion allows
            return f"<{value.bit_length()}-bit integer>"
    return repr(value)


def _invalid(text: str, problem: str) -> QuantityError:
    return QuantityError(f"invalid quantity {_quote(text)}: {problem}; {_ALLOWED}")


def _suffix_hint(suffix: str) -> str:
    """A did-you-mean for the usual slips: wrong case (``1gi``) or a byte unit (``16GB``, ``1KiB``)."""
    stem = suffix[:-1] if suffix[-1:] in ("B", "b") and len(suffix) > 1 else ""
    for valid in _ALL_SUFFIXES:
        if stem and stem.lower() == valid.lower():
            return f' (quantities take no byte unit "{suffix[-1]}": did you mean "{valid}"?)'
        if suffix.lower() == valid.lower():
            return f' (suffixes are case-sensitive: did you mean "{valid}"?)'
    return ""


def _is_suffix(text: str) -> bool:
    if text in _DECIMAL_EXPONENTS or text in _BINARY_EXPONENTS:
        return True
    return len(text) > 1 and text[0] in "eE" and _EXPONENT_TEXT.fullmatch(text[1:]) is not None


def _nanos_ceil(numerator: int, denominator: int) -> int:
    """Whole nano-units in a non-negative ``numerator / denominator``, rounded up."""
    return -(-(numerator * _NANO) // denominator)


def _parse_text(text: str) -> Fraction:
    if text == "":
        raise _invalid(text, "it is empty")
    if len(text) > _MAX_TEXT_LENGTH:
        raise _invalid(text[:40] + "...", f"it is longer than {_MAX_TEXT_LENGTH} characters")

    # Scan the same shape apimachinery's parseQuantityString scans: sign, digits, ".", digits, then a
    # suffix made of suffix letters, an optional sign and digits.
    end = len(text)
    pos = 0
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    int_digits = text[start:pos]
    frac_digits = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        frac_digits = text[start:pos]
    has_digits = bool(int_digits or frac_digits)
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        bad, rest = text[pos], text[suffix_start:]
        if bad.isspace():
            raise _invalid(text, f"whitespace at position {pos} is not allowed")
        if not has_digits and suffix_start == (1 if text[0] in "+-" else 0):
            raise _invalid(text, "it does not start with a number")
        if rest[0] in "+-":
            raise _invalid(text, f"unexpected character {_quote(rest[0])} at position {suffix_start}")
        if bad.isalpha() or not _is_suffix(text[suffix_start:pos]):
            raise _invalid(text, f"unknown suffix {_quote(rest)}{_suffix_hint(rest)}")
        raise _invalid(text, f"unexpected character {_quote(bad)} at position {pos}")
    suffix = text[suffix_start:]
    if suffix[:1] in ("+", "-"):
        raise _invalid(text, f"unexpected character {_quote(suffix[0])} at position {suffix_start}")

    binary = suffix in _BINARY_EXPONENTS
    if binary:
        exponent = _BINARY_EXPONENTS[suffix]
    elif suffix in _DECIMAL_EXPONENTS:
        exponent = _DECIMAL_EXPONENTS[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT_TEXT.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if not -(2**31) < exponent < 2**31:
            raise _invalid(
                text,
                f"exponent {suffix[1:]} is outside -2**31 < e < 2**31 (apimachinery truncates it to 32 bits)",
            )
    elif suffix[0] in "eE" and (len(suffix) == 1 or re.fullmatch(r"[+-]?", suffix[1:])):
        raise _invalid(text, f'exponent marker {_quote(suffix)} must be followed by an integer, as in "1e3"')
    else:
        raise _invalid(text, f"unknown suffix {_quote(suffix)}{_suffix_hint(suffix)}")

    if not has_digits:
        raise _invalid(
            text,
            "the number has no digits (apimachinery's scanner reads this as 0, "
            "but the quantity grammar requires at least one digit)",
        )

    digits = (int_digits + frac_digits).lstrip("0")
    mantissa = int(digits) if digits else 0
    if binary:
        exact_num, exact_den = mantissa << exponent, 10 ** len(frac_digits)
        magnitude = Fraction(_nanos_ceil(exact_num, exact_den), _NANO)
        magnitude = min(magnitude, Fraction(BINARY_SI_CAP))
    else:
        scale = exponent - len(frac_digits)
        if scale < _MIN_SCALE:
            raise _invalid(text, "its exponent is below -2**31 once fraction digits are counted")
        if mantissa == 0:
            magnitude = Fraction(0)
        elif scale > _MAX_EXPONENT:
            raise _invalid(
                text,
                f"its exponent, net of fraction digits, exceeds {_MAX_EXPONENT} (far beyond any resource)",
            )
        elif scale >= 0:
            magnitude = Fraction(mantissa * 10**scale)
        elif scale >= -9:
            magnitude = Fraction(mantissa, 10**-scale)
        else:
            # Below nano precision: round up to whole nano-units without building 10**-scale when the
            # mantissa has fewer digits than are being dropped (then the answer is one nano-unit).
            dropped = -9 - scale
            nanos = 1 if dropped > len(digits) else -(-mantissa // 10**dropped)
            magnitude = Fraction(nanos, _NANO)
    return -magnitude if negative else magnitude


def parse_quantity(value: str | int | float) -> Fraction:
    """Exact value of a quantity, so fleetlab counts resources exactly as the API server stores them.

    Raises :class:`QuantityError` for whatever apimachinery rejects and for the degenerate spellings above."""
    if isinstance(value, bool):
        raise QuantityError(
            f"invalid quantity {_quote(repr(value))}: a boolean is not a quantity; "
            'use a number or a string such as "1" or "500m"'
        )
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(
                f"invalid quantity {_quote(repr(value))}: NaN and infinity are not quantities; "
                'use a finite number or a string such as "500m"'
            )
        return _parse_text(repr(value))
    if isinstance(value, str):
        return _parse_text(value)
    raise QuantityError(
        f"invalid quantity {_quote(_display(value))}: expected a string or a number, "
        f"not {type(value).__name__}; {_ALLOWED}"
    )


def _round_away(value: Fraction) -> int:
    return math.ceil(value) if value >= 0 else -math.ceil(-value)


def to_milli(value: str | int | float) -> int:
    """Milli-units rounded up like ``Quantity.MilliValue()``, the unit kube-scheduler counts CPU in.

    ``"100m"`` -> 100, ``"0.5"`` -> 500, ``"2"`` -> 2000; negatives round away from zero, as upstream does.
    """
    return _round_away(parse_quantity(value) * 1000)


def to_int(value: str | int | float) -> int:
    """Whole units rounded up like ``Quantity.Value()``, the unit kube-scheduler counts bytes in.

    ``"16Gi"`` -> 17179869184, ``"1.5G"`` -> 1500000000, ``"1e3"`` -> 1000; negatives round away from zero.
    """
    return _round_away(parse_quantity(value))


def require_non_negative(value: str | int | float, resource: str) -> Fraction:
    """Parsed value of a request or capacity, refusing negatives with the API server's own wording."""
    amount = parse_quantity(value)
    if amount < 0:
        raise QuantityError(
            f"{resource}: quantity {_quote(_display(value))} must be greater than or equal to 0"
        )
    return amount


def to_whole(value: str | int | float, resource: str) -> int:
    """Count of an integer resource (``nvidia.com/gpu``, ``pods``), refused unless the API server admits it.

    The test is core/v1 validation's ``MilliValue() % 1000 == 0``: ``"3000m"`` is 3, ``"1500m"`` fails."""
    amount = require_non_negative(value, resource)
    milli = math.ceil(amount * 1000)
    if milli % 1000:
        raise QuantityError(
            f"{resource}: quantity {_quote(_display(value))} must be an integer "
            f'(whole units such as "3" or "3000m"; {resource} cannot be split)'
        )
    return milli // 1000


_BINARY_STEPS: tuple[tuple[str, int], ...] = tuple(
    (s, 1 << e) for s, e in reversed(_BINARY_EXPONENTS.items())
)
_DECIMAL_STEPS: tuple[tuple[str, int], ...] = tuple(
    (s, 10**e) for s, e in reversed(_DECIMAL_EXPONENTS.items()) if e > 0
)


def format_quantity(value: int, binary: bool = True) -> str:
    """Short text for an integer amount in messages: the largest suffix that divides it exactly, else digits.

    ``binary`` picks Ki..Ei (used only up to ``BINARY_SI_CAP``, which parses back unchanged) over k..E.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"format_quantity needs an int, not {type(value).__name__}")
    magnitude = abs(value)
    sign = "-" if value < 0 else ""
    if magnitude and (not binary or magnitude <= BINARY_SI_CAP):
        for suffix, factor in _BINARY_STEPS if binary else _DECIMAL_STEPS:
            if magnitude % factor == 0:
                return f"{sign}{magnitude // factor}{suffix}"
    return str(value)
