"""Kubernetes quantity parsing (fleetlab.model.quantity) against apimachinery's own test values.

Table rows reproduce the *values* of upstream tests in k8s.io/apimachinery pkg/api/resource (each table names
the upstream file and test it comes from); hypothesis properties check the grammar, the nano rounding and the
binary cap against independent oracles built on ``fractions.Fraction``.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetlab.model.quantity import (
    BINARY_SI_CAP,
    QuantityError,
    format_quantity,
    parse_quantity,
    require_non_negative,
    to_int,
    to_milli,
    to_whole,
)

CAP = Fraction(BINARY_SI_CAP)
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def d(mantissa: int, exponent: int) -> Fraction:
    """``mantissa * 10**exponent``, the shape of upstream's ``decQuantity(mantissa, exponent, ...)``."""
    return Fraction(mantissa) * Fraction(10) ** exponent


def nano_away(value: Fraction) -> Fraction:
    """Oracle for apimachinery's parse rounding: away from zero to a whole number of nano-units."""
    nanos = math.ceil(abs(value) * 10**9)
    return Fraction(nanos if value >= 0 else -nanos, 10**9)


# --- upstream apimachinery quantity_test.go TestQuantityParse: the valid table ------------------------------

UPSTREAM_VALID: list[tuple[str, Fraction]] = [
    ("0", d(0, 0)),
    ("0n", d(0, 0)),
    ("0u", d(0, 0)),
    ("0m", d(0, 0)),
    ("0Ki", d(0, 0)),
    ("0k", d(0, 0)),
    ("0Mi", d(0, 0)),
    ("0M", d(0, 0)),
    ("0Gi", d(0, 0)),
    ("0G", d(0, 0)),
    ("0Ti", d(0, 0)),
    ("0T", d(0, 0)),
    ("1", d(1, 0)),
    ("1Ki", d(1024, 0)),
    ("8Ki", d(8 * 1024, 0)),
    ("7Mi", d(7 * 1024**2, 0)),
    ("6Gi", d(6 * 1024**3, 0)),
    ("5Ti", d(5 * 1024**4, 0)),
    ("4Pi", d(4 * 1024**5, 0)),
    ("3Ei", d(3 * 1024**6, 0)),
    ("10Ti", d(10 * 1024**4, 0)),
    ("100Ti", d(100 * 1024**4, 0)),
    ("5n", d(5, -9)),
    ("4u", d(4, -6)),
    ("3m", d(3, -3)),
    ("9", d(9, 0)),
    ("8k", d(8, 3)),
    ("50k", d(5, 4)),
    ("7M", d(7, 6)),
    ("6G", d(6, 9)),
    ("5T", d(5, 12)),
    ("40T", d(4, 13)),
    ("300T", d(3, 14)),
    ("2P", d(2, 15)),
    ("1E", d(1, 18)),
    ("1E-3", d(1, -3)),
    ("1e3", d(1, 3)),
    ("1E6", d(1, 6)),
    ("1e9", d(1, 9)),
    ("1E12", d(1, 12)),
    ("1e15", d(1, 15)),
    ("1E18", d(1, 18)),
    ("1e14", d(1, 14)),
    ("1e13", d(1, 13)),
    ("100.035k", d(100035, 0)),
    ("0.001", d(1, -3)),
    ("0.0005k", d(5, -1)),
    ("0.005", d(5, -3)),
    ("0.05", d(5, -2)),
    ("0.5", d(5, -1)),
    ("0.00050k", d(5, -1)),
    ("0.00500", d(5, -3)),
    ("0.05000", d(5, -2)),
    ("0.50000", d(5, -1)),
    ("0.5e0", d(5, -1)),
    ("0.5e-1", d(5, -2)),
    ("0.5e-2", d(5, -3)),
    ("10.035M", d(10035, 3)),
    ("1.2e3", d(12, 2)),
    ("1.3E+6", d(13, 5)),
    ("1.40e9", d(14, 8)),
    ("1.53E12", d(153, 10)),
    ("1.6e15", d(16, 14)),
    ("1.7E18", d(17, 17)),
    ("9.01", d(901, -2)),
    ("8.1k", d(81, 2)),
    ("7.123456M", d(7123456, 0)),
    ("6.987654321G", d(6987654321, 0)),
    ("5.444T", d(5444, 9)),
    ("40.1T", d(401, 11)),
    ("300.2T", d(3002, 11)),
    ("2.5P", d(25, 14)),
    ("1.01E", d(101, 16)),
    # things that saturate or round
    ("3.001n", d(4, -9)),
    ("1.1E-9", d(2, -9)),
    ("0.0000000001", d(1, -9)),
    ("0.0000000005", d(1, -9)),
    ("0.00000000050", d(1, -9)),
    ("0.5e-9", d(1, -9)),
    ("0.9n", d(1, -9)),
    ("0.00000012345", d(124, -9)),
    ("0.00000012354", d(124, -9)),
    ("9Ei", CAP),
    ("9223372036854775807Ki", CAP),
    ("12E", d(12, 18)),
    # fractional binary amounts
    ("100.035Ki", d(10243584, -2)),
    ("0.5Mi", d(512 * 1024, 0)),
    ("0.05Gi", d(536870912, -1)),
    ("0.025Ti", d(274877906944, -1)),
    # "things written by trolls"
    ("0.000000000001Ki", d(2, -9)),
    (".001", d(1, -3)),
    (".0001k", d(100, -3)),
    ("1.", d(1, 0)),
    ("1.G", d(1, 9)),
]


@pytest.mark.parametrize(("text", "expected"), UPSTREAM_VALID, ids=[row[0] for row in UPSTREAM_VALID])
def test_upstream_valid_table(text: str, expected: Fraction) -> None:
    """upstream apimachinery quantity_test.go TestQuantityParse (plain, "-"-prefixed and "+"-prefixed)."""
    assert parse_quantity(text) == expected
    assert parse_quantity("-" + text) == -expected
    assert parse_quantity("+" + text) == expected


UPSTREAM_INVALID = [
    # upstream apimachinery quantity_test.go TestQuantityParse: the invalid list and the empty string
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
    # TestQuantityParseNonNumericPanic and TestQuantityValueSet
    "Non-Numeric",
    "invalid",
]


@pytest.mark.parametrize("text", UPSTREAM_INVALID)
def test_upstream_invalid_list(text: str) -> None:
    """upstream apimachinery quantity_test.go TestQuantityParse invalid inputs are rejected, text quoted."""
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    message = str(info.value)
    assert f'"{text}"' in message
    assert "Ki Mi Gi Ti Pi Ei" in message and "n u m k M G T P E" in message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1.5.5", 'unexpected character "." at position 3'),
        ("1Kib", 'unknown suffix "Kib"'),
        ("16GB", 'did you mean "G"?'),
        ("1gi", 'did you mean "Gi"?'),
        ("1K", 'did you mean "k"?'),
        ("1 Gi", "whitespace at position 1"),
        ("1\t", "whitespace at position 1"),
        ("1e", 'exponent marker "e" must be followed by an integer'),
        ("1e+", 'exponent marker "e+"'),
        ("1e3.5", 'unexpected character "."'),
        ("1Ei3", 'unknown suffix "Ei3"'),
        ("1k3", 'unknown suffix "k3"'),
        ("+-1", 'unexpected character "-" at position 1'),
        ("--1", 'unexpected character "-" at position 1'),
        ("1,5", 'unexpected character ","'),
        ("1_000", 'unexpected character "_"'),
        ("١٢", "does not start with a number"),  # non-ASCII digits are not digits here
        ("Gi", "no digits"),
        (".", "no digits"),
    ],
)
def test_rejections_explain_themselves(text: str, needle: str) -> None:
    """The brief's and our own malformed inputs fail with a message naming the text and the problem."""
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert json.dumps(text, ensure_ascii=False) in str(info.value)
    assert needle in str(info.value)


# upstream apimachinery quantity_exact_policy_test.go parseFrozenExamples, plus quantity_compat_test.go
# TestQuantityOutOfInt32ExponentCompatibility: apimachinery *accepts* these (digit-less mantissas read as 0,
# exponents truncated to 32 bits), and upstream keeps them only for compatibility. fleetlab refuses them.
UPSTREAM_LENIENT_REFUSED = [
    "-",
    "+",
    ".",
    "-.",
    "e3",
    "-e3",
    "Gi",
    "m",
    "1e4294967296",
    "1e4294967297",
    "1e8589934592",
]


@pytest.mark.parametrize("text", UPSTREAM_LENIENT_REFUSED)
def test_degenerate_spellings_upstream_accepts_are_refused(text: str) -> None:
    """Deliberate deviation: upstream reads these as 0 or truncates the exponent; fleetlab refuses them."""
    with pytest.raises(QuantityError, match=re.escape(f'"{text}"')):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # upstream apimachinery quantity_test.go TestParseQuantityString
        ("0.025Ti", Fraction(25, 1000) * 2**40),
        ("1.025Ti", Fraction(1025, 1000) * 2**40),
        ("-1.025Ti", -Fraction(1025, 1000) * 2**40),
        ("1E-3", d(1, -3)),
        # TestQuantityParseEmit: values behind the emitted strings
        ("1024Mi", d(2**30, 0)),
        ("1000M", d(1, 9)),
        (".001Ki", d(1024, -3)),
        (".000001Ki", d(1024, -6)),
        (".000000001Ki", d(1024, -9)),
        (".000000000001Ki", d(2, -9)),
        # TestStringQuantityAsApproximateFloat64
        ("2Ki", d(2048, 0)),
        ("1.1Ki", d(11264, -1)),
        ("2Gi", d(2147483648, 0)),
        # quantity_subnano_test.go TestParseQuantitySubNanoRoundsUp / ...MatchesRound
        ("1e-2147483647", d(1, -9)),
        ("-1e-2147483647", d(-1, -9)),
        ("1e-100", d(1, -9)),
        ("-1e-100", d(-1, -9)),
        ("1e-10", d(1, -9)),
        ("9e-10", d(1, -9)),
        ("-9e-10", d(-1, -9)),
        ("1e-9", d(1, -9)),
        ("-1e-9", d(-1, -9)),
        ("2e-9", d(2, -9)),
        ("15e-10", d(2, -9)),
        ("1000000000000000000000e-30", d(1, -9)),
        ("1000000000000000000001e-30", d(2, -9)),
        ("999999999999999999999e-30", d(1, -9)),
        ("0e-2147483647", d(0, 0)),
        ("0.0e-100", d(0, 0)),
        ("0.00000000000000000000001Ki", d(1, -9)),
        ("0.0000000000001", d(1, -9)),
        ("-0.0000000000001", d(-1, -9)),
        # quantity_regression_test.go TestMustParseMaxInt64; quantity_test.go TestNegAndSubAtMostNegative
        ("9223372036854775807", d(2**63 - 1, 0)),
        ("9223372036854775808", d(2**63, 0)),
        ("8Ei", CAP),  # quantity.go: "8Ei" parses as 2^63-1
        ("-8Ei", -CAP),
        ("18446744073709551616", d(2**64, 0)),  # quantity.go: a decimal quantity is not capped
    ],
)
def test_upstream_values_from_other_tests(text: str, expected: Fraction) -> None:
    """Values from the other upstream apimachinery pkg/api/resource tests named on each group of rows."""
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        # upstream apimachinery quantity_test.go TestNewSet / TestMilliNewSet / TestQuantityValueSet
        ("1", 1, 1000),
        ("1k", 1000, 1000000),
        ("1234k", 1234000, 1234000000),
        ("1Ki", 1024, 1024000),
        ("1e6", 1000000, 1000000000),
        ("1Mi", 1048576, 1048576000),
        ("1m", 1, 1),
        ("1234", 1234, 1234000),
        ("1e3", 1000, 1000000),
        # TestScaledValue: NewScaledQuantity(1, Nano|Micro|Milli) rounds up to 1 at coarser scales
        ("1n", 1, 1),
        ("1u", 1, 1),
        # TestQuantityRoundUp: 9.01 rounds up to 10, -9.01 away from zero to -10
        ("9.01", 10, 9010),
        ("-9.01", -10, -9010),
        # the brief's examples
        ("100m", 1, 100),
        ("0.5", 1, 500),
        ("2", 2, 2000),
        ("16Gi", 17179869184, 17179869184000),
        ("1.5G", 1500000000, 1500000000000),
        ("2k", 2000, 2000000),
        ("0.0001", 1, 1),
        ("-1.5", -2, -1500),
        ("-0.0001", -1, -1),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    """to_int / to_milli match Quantity.Value() / MilliValue(): up for positives, away from zero below."""
    assert to_int(text) == value
    assert to_milli(text) == milli


def test_upstream_cmp_order() -> None:
    """upstream apimachinery quantity_test.go TestQuantityCmp."""
    assert parse_quantity("0") == parse_quantity("0")
    assert parse_quantity("100m") > parse_quantity("50m")
    assert parse_quantity("50m") < parse_quantity("100m")
    assert parse_quantity("10000T") > parse_quantity("100Gi")


# --- Python numbers -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, Fraction(0)),
        (7, Fraction(7)),
        (-3, Fraction(-3)),
        (10**30, Fraction(10**30)),
        (0.1, Fraction(1, 10)),
        (1.5, Fraction(3, 2)),
        (-0.0, Fraction(0)),
        (1e20, Fraction(10**20)),
        (2.5e-7, Fraction(25, 10**8)),
        (1e-10, Fraction(1, 10**9)),
        (5e-324, Fraction(1, 10**9)),
    ],
)
def test_numbers(value: int | float, expected: Fraction) -> None:
    """Ints are exact and floats are read from their repr, the text a YAML or JSON number was written as."""
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (True, '"True"'),
        (False, '"False"'),
        (float("nan"), '"nan"'),
        (float("inf"), '"inf"'),
        (float("-inf"), '"-inf"'),
        (None, '"None"'),
        ([1], '"[1]"'),
        (b"1", "\"b'1'\""),
    ],
)
def test_non_quantities_are_refused(value: object, shown: str) -> None:
    """Booleans, NaN, infinities and other types raise QuantityError, which pydantic validators catch."""
    with pytest.raises(QuantityError, match=re.escape(shown)):
        parse_quantity(value)  # type: ignore[arg-type]


def test_bounds() -> None:
    """Refusals that keep parsing cheap: huge exponents and over-long text; zero mantissas are still fine."""
    assert parse_quantity("1e1000") == 10**1000
    assert parse_quantity(".1e1001") == 10**1000
    assert parse_quantity("0e2147483647") == 0
    for text in ("1e1001", "1e2147483647", "1e-2147483648", "1.5e-2147483647", "1e9223372036854775808"):
        with pytest.raises(QuantityError, match=re.escape(f'"{text}"')):
            parse_quantity(text)
    assert parse_quantity("1" * 1024) == int("1" * 1024)
    with pytest.raises(QuantityError, match="longer than 1024"):
        parse_quantity("1" * 1025)


# --- to_whole / require_non_negative ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3", 3), ("3000m", 3), ("3Ki", 3072), ("0", 0), ("1e3", 1000), (4, 4), (2.0, 2), ("2.9999", 3)],
)
def test_to_whole_accepts_what_the_api_server_admits(value: str | int | float, expected: int) -> None:
    """Integer resources pass core/v1's MilliValue() % 1000 == 0, which "2.9999" (milli 3000) also passes."""
    assert to_whole(value, "nvidia.com/gpu") == expected


@pytest.mark.parametrize("value", ["0.5", "1500m", "1.001", "1n", 2.5, "3.0001"])
def test_to_whole_refuses_fractions(value: str | float) -> None:
    """Fractional extended-resource amounts fail like the API server, naming the resource and the text."""
    with pytest.raises(QuantityError) as info:
        to_whole(value, "nvidia.com/gpu")
    message = str(info.value)
    assert message.startswith("nvidia.com/gpu: ")
    assert "must be an integer" in message
    assert f'"{value}"' in message


@pytest.mark.parametrize("value", ["-1", "-1000m", -2, "-0.5"])
def test_negatives_refused_where_amounts_are_needed(value: str | int) -> None:
    """Negatives parse, but to_whole and require_non_negative refuse them in the API server's wording."""
    assert parse_quantity(value) < 0
    for call in (lambda: to_whole(value, "pods"), lambda: require_non_negative(value, "pods")):
        with pytest.raises(QuantityError) as info:
            call()
        assert str(info.value) == f'pods: quantity "{value}" must be greater than or equal to 0'


def test_require_non_negative_returns_the_value() -> None:
    """Non-negative amounts, zero included, come back exact."""
    assert require_non_negative("1.5Gi", "memory") == Fraction(3, 2) * 2**30
    assert require_non_negative("-0", "memory") == 0


def test_quantity_error_is_a_value_error() -> None:
    """Callers and pydantic catch ValueError; callers also raise QuantityError with their own message."""
    assert issubclass(QuantityError, ValueError)
    assert str(QuantityError("cpu: bad")) == "cpu: bad"


# --- format_quantity ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "binary", "expected"),
    [
        (17179869184, True, "16Gi"),
        (1500, True, "1500"),
        (0, True, "0"),
        (1, True, "1"),
        (1024, True, "1Ki"),
        (1536 * 2**20, True, "1536Mi"),  # upstream: 1.5Gi is written 1536Mi
        (300 * 2**20, True, "300Mi"),  # TestQuantityString
        (1001 * 2**30, True, "1001Gi"),  # TestQuantityString
        (1025, True, "1025"),  # TestQuantityString
        (-2048, True, "-2Ki"),
        (7 * 2**60, True, "7Ei"),
        (BINARY_SI_CAP, True, str(BINARY_SI_CAP)),
        (2**63, True, "9223372036854775808"),  # "8Ei" would read back capped
        (2**70, True, str(2**70)),
        (2000, False, "2k"),
        (1500, False, "1500"),
        (10**9, False, "1G"),  # TestQuantityString "1G"
        (300 * 10**6, False, "300M"),
        (1234567 * 10**6, False, "1234567M"),
        (10**18, False, "1E"),
        (10**21, False, "1000E"),
        (-3000, False, "-3k"),
        (0, False, "0"),
    ],
)
def test_format_quantity(value: int, binary: bool, expected: str) -> None:
    """The largest exact suffix, else plain digits; binary suffixes only where they read back unchanged."""
    assert format_quantity(value, binary) == expected


def test_format_quantity_wants_an_int() -> None:
    """A bool or float is a caller bug, not a quantity."""
    with pytest.raises(TypeError):
        format_quantity(True)
    with pytest.raises(TypeError):
        format_quantity(1.0)  # type: ignore[arg-type]


# --- properties ---------------------------------------------------------------------------------------------

SUFFIX_MULTIPLIERS: dict[str, Fraction] = {
    **{s: Fraction(m) for s, m in BINARY.items()},
    **{s: Fraction(10) ** e for s, e in DECIMAL.items()},
}


@settings(deadline=None)
@given(n=st.integers(-(10**15), 10**15), suffix=st.sampled_from(sorted(SUFFIX_MULTIPLIERS)))
def test_integer_times_suffix(n: int, suffix: str) -> None:
    """parse(f"{n}{suffix}") == n * multiplier, capped at 2**63-1 in magnitude for binary suffixes."""
    expected = n * SUFFIX_MULTIPLIERS[suffix]
    if suffix in BINARY and abs(expected) > CAP:
        expected = CAP if n > 0 else -CAP
    assert parse_quantity(f"{n}{suffix}") == expected


@settings(deadline=None)
@given(
    sign=st.sampled_from(["", "+", "-"]),
    whole=st.text("0123456789", max_size=12),
    point=st.booleans(),
    frac=st.text("0123456789", max_size=14),
    suffix=st.one_of(
        st.sampled_from(sorted(SUFFIX_MULTIPLIERS)),
        st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.integers(0, 40)).map(
            lambda t: f"{t[0]}{t[1]}{t[2]}"
        ),
    ),
)
def test_decimal_spellings_match_oracle(sign: str, whole: str, point: bool, frac: str, suffix: str) -> None:
    """Any grammatical spelling parses to its exact value, nano-rounded away from zero (binary: capped)."""
    number = whole + ("." + frac if point else "")
    if not (whole or (point and frac)):
        number = "0" + number
    text = sign + number + suffix
    if suffix[:1] in ("e", "E") and suffix not in SUFFIX_MULTIPLIERS:
        multiplier = Fraction(10) ** int(suffix[1:])
    else:
        multiplier = SUFFIX_MULTIPLIERS[suffix]
    exact = Fraction(number) * multiplier * (-1 if sign == "-" else 1)
    expected = nano_away(exact)
    if suffix in BINARY and abs(expected) > CAP:
        expected = CAP if expected > 0 else -CAP
    got = parse_quantity(text)
    assert got == expected
    if got >= 0:
        assert to_int(text) == math.ceil(got)
        assert to_milli(text) == math.ceil(got * 1000)


GRAMMAR = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE]([+-]?[0-9]+))?")


@settings(deadline=None, max_examples=300)
@given(st.text("0123456789.+-eEinumkKMGTPB x", max_size=8))
def test_accepts_exactly_the_grammar(text: str) -> None:
    """Random text is accepted iff it matches the documented grammar (huge exponents aside)."""
    match = GRAMMAR.fullmatch(text)
    expect_ok = match is not None
    if match is not None and match.group(1) is not None:
        mantissa = text[: match.start(1) - 1].lstrip("+-")
        frac_len = len(mantissa.partition(".")[2])
        if Fraction(mantissa) != 0 and int(match.group(1)) - frac_len > 1000:
            expect_ok = False
    try:
        parse_quantity(text)
    except QuantityError as error:
        assert not expect_ok, f"{text!r} should parse: {error}"
        assert f'"{text}"' in str(error) or text == ""
    else:
        assert expect_ok, f"{text!r} should be rejected"


@given(st.integers(-(10**18), 10**18))
def test_milli_suffix_round_trips(k: int) -> None:
    """to_milli(f"{k}m") == k: milli-units are exact."""
    assert to_milli(f"{k}m") == k


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_read_as_their_repr(x: float) -> None:
    """A float is the quantity its repr spells, nano-rounded like any other text."""
    assert parse_quantity(x) == nano_away(Fraction(repr(x)))


@given(k=st.integers(1, 1023), power=st.integers(0, 6), negative=st.booleans())
def test_format_binary_multiples(k: int, power: int, negative: bool) -> None:
    """k * 1024**p renders as "k" plus the p-th binary suffix (while within the cap) and parses back."""
    value = k * 1024**power * (-1 if negative else 1)
    text = format_quantity(value)
    if abs(value) <= BINARY_SI_CAP:
        suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power]
        assert text == f"{'-' if negative else ''}{k}{suffix}"
    assert parse_quantity(text) == value


@given(value=st.integers(-(2**200), 2**200), binary=st.booleans())
def test_format_round_trips(value: int, binary: bool) -> None:
    """Whatever format_quantity writes parses back to the same integer."""
    assert parse_quantity(format_quantity(value, binary)) == value
