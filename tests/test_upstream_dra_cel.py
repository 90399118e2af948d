"""DRA CEL selectors against upstream's compile/evaluate table.

Source: kubernetes/kubernetes ``staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go``,
``TestCEL`` cases, at commit 052bb7dc3f0c41961235699a75e46e8476b8883c: every case that applies to Kubernetes
v1.35 (scalar attributes; list-valued attributes and ``includes`` are alpha in v1.36 and not ported, nor
the cost-estimate numbers, which are cel-go's units). Compile errors, runtime errors and results must match.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from fleetlab.model.quantity import parse_quantity
from fleetlab.placement.dra.cel import CelError, DeviceInput, compile_selector
from fleetlab.placement.dra.cel_lib import Quantity, Semver
from fleetlab.spec.cel_parse import CelSyntaxError

D = "dra.example.com"


def attrs(**values: Any) -> dict[str, Any]:
    return {
        k: (Semver.parse(v[1:]) if isinstance(v, str) and v.startswith("@") else v) for k, v in values.items()
    }


def qty(text: str) -> Quantity:
    return Quantity(Fraction(parse_quantity(text)))


ALL_EXPRESSION = " && ".join(
    [
        f'device.capacity["{D}"].quantity.isGreaterThan(quantity("1Ki"))',
        f'device.attributes["{D}"].bool',
        f'device.attributes["{D}"].int > 0',
        f'device.attributes["{D}"].string == "fish"',
        f'device.attributes["{D}"].version.isGreaterThan(semver("0.0.1"))',
        f'device.capacity["{D}"]["quantity"].isGreaterThan(quantity("1Ki"))',
        f'device.attributes["{D}"]["bool"]',
        f'device.attributes["{D}"]["int"] > 0',
        f'device.attributes["{D}"]["string"] == "fish"',
        f'device.attributes["{D}"]["version"].isGreaterThan(semver("0.0.1"))',
    ]
)
EXPENSIVE = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    ".all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8,"
    " 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)

# (name, expression, driver, attributes, capacity, allowMultipleAllocations, outcome)
# outcome: True / False, ("compile", text) or ("match", text)
CASES: list[tuple[str, str, str, dict[str, Any], dict[str, Quantity], bool, Any]] = [
    ("true", "true", "", {}, {}, False, True),
    ("false", "false", "", {}, {}, False, False),
    ("syntax-error", "?!", "", {}, {}, False, ("compile", "unexpected")),
    ("type-error", "1", "", {}, {}, False, ("compile", "must evaluate to bool")),
    ("runtime-error-lookup-identifier", 'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
     "", {}, {}, False, ("match", "no such key: noSuchAttr")),
    ("runtime-error-lookup-map", 'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
     "", {}, {}, False, ("match", "no such key: noSuchAttr")),
    ("domain-check-negative", '"no-such-domain" in device.attributes', "", {}, {}, False, False),
    ("domain-check-positive", f'"{D}" in device.attributes', "", {f"{D}/something": True}, {}, False, True),
    ("empty-driver-name", 'device.driver == ""', "", {}, {}, False, True),
    ("real-driver-name", f'device.driver == "{D}"', D, {}, {}, False, True),
    ("driver-name-qualifier", f'device.attributes["{D}"].name', D, {"name": True}, {}, False, True),
    ("driver-name-qualifier-map-lookup", f'device.attributes["{D}"]["name"]', D, {"name": True}, {}, False, True),
    ("bind", f'cel.bind(dra, device.attributes["{D}"], dra.name)', D, {"name": True}, {}, False, True),
    ("qualified-attribute-name", 'device.attributes["other.example.com"].name', D, {"other.example.com/name": True}, {}, False, True),
    ("bool", f'device.attributes["{D}"].name', D, {"name": True}, {}, False, True),
    ("int", f'device.attributes["{D}"].name > 0', D, {"name": 1}, {}, False, True),
    ("string", f'device.attributes["{D}"].name == "fish"', D, {"name": "fish"}, {}, False, True),
    ("macro-exists-on-int", f'device.attributes["{D}"].name.exists(x, x > 0)', D, {"name": 1}, {}, False,
     ("match", "expected iterable type")),
    ("macro-exists-on-bool", f'device.attributes["{D}"].name.exists(x, x == true)', D, {"name": True}, {}, False,
     ("match", "expected iterable type")),
    ("macro-exists-on-string", f'device.attributes["{D}"].name.exists(x, x == "fish")', D, {"name": "fish"}, {}, False,
     ("match", "expected iterable type")),
    ("version", f'device.attributes["{D}"].name.isGreaterThan(semver("0.0.1"))', D, attrs(name="@1.0.0"), {}, False, True),
    ("version_v", f'device.attributes["{D}"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
     D, attrs(name="@1.0.0"), {}, False, True),
    ("macro-exists-on-version", f'device.attributes["{D}"].name.exists(x, x.isGreaterThan(semver("0.0.1")))', D,
     attrs(name="@1.0.0"), {}, False, ("match", "expected iterable type")),
    ("quantity", f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))', D, {}, {"name": qty("1Mi")}, False, True),
    ("check-positive", f'"name" in device.capacity["{D}"] && device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
     D, {}, {"name": qty("1Mi")}, False, True),
    ("check-negative", f'!("name" in device.capacity["{D}"]) || device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
     "", {}, {}, False, True),
    ("all", ALL_EXPRESSION, D, attrs(bool=True, int=1, string="fish", version="@1.0.0"), {"quantity": qty("1Mi")}, False, True),
    ("many", f'device.attributes["{D}"].a && device.attributes["{D}"].b && device.attributes["{D}"].c', D,
     {"a": True, "b": True, "c": True}, {}, False, True),
    ("check_attribute_domains", f'device.attributes.exists_one(x, x == "{D}")', D, {"services": "some_example_value"}, {}, False, True),
    ("check_attribute_ids", f'device.attributes["{D}"].exists_one(x, x == "services")', D, {"services": "some_example_value"}, {},
     False, True),
    ("split_attribute", f'device.attributes["{D}"].services.split("example").size() >= 2', D, {"services": "some_example_value"},
     {}, False, True),
    ("regexp_attribute", f'device.attributes["{D}"].services.matches("[^a]?sym")', D, {"services": "asymetric"}, {}, False, True),
    ("check_capacity_domains", f'device.capacity.exists_one(x, x == "{D}")', D, {}, {"memory": qty("1Mi")}, False, True),
    ("check_capacity_ids", f'device.capacity["{D}"].exists_one(x, x == "memory")', D, {}, {"memory": qty("1Mi")}, False, True),
    ("expensive", EXPENSIVE, D, {}, {}, False, ("match", "actual cost limit exceeded")),
    ("allow_multiple_allocations", "device.allowMultipleAllocations == true", D, {}, {}, True, True),
    ("allow_multiple_allocations_default", "device.allowMultipleAllocations == false", D, {}, {}, False, True),
]  # fmt: skip


@pytest.mark.parametrize(("name", "expression", "driver", "attributes", "capacity", "multi", "outcome"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_cel(
    name: str, expression: str, driver: str, attributes: Any, capacity: Any, multi: bool, outcome: Any
) -> None:
    if isinstance(outcome, tuple) and outcome[0] == "compile":
        with pytest.raises(CelSyntaxError, match=outcome[1]):
            compile_selector(expression)
        return
    selector = compile_selector(expression)
    device = DeviceInput(driver, attributes, capacity, multi)
    if isinstance(outcome, tuple):
        with pytest.raises(CelError, match=outcome[1]):
            selector.matches(device)
        return
    assert selector.matches(device) is outcome


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        ("1 == 1.0", True),  # heterogeneous numeric equality (cel-go default)
        ("0 == 0u", True),
        ('1 == "1"', False),  # different kinds are unequal, not an error
        ("9223372036854775807 + 1 > 0", "return error for overflow"),
        ("-9223372036854775808 - 1 < 0", "return error for overflow"),
        ("7 / 0 == 1", "division by zero"),
        ("false && 7 / 0 == 1", False),  # && absorbs an error when the other side decides
        ("7 / 0 == 1 || true", True),
        ("[1, 2, 3].exists_one(x, x > 2)", True),
        ("[1, 2].map(x, x * 2) == [2, 4]", True),
        ("[1, 2, 3].filter(x, x % 2 == 1).size() == 2", True),
        ('"NVIDIA H100".lowerAscii().startsWith("nvidia")', True),
        ('sets.intersects(["a"], ["b", "a"])', True),
        ("[1, 3, 2].isSorted()", False),
        ('quantity("1Gi").add(quantity("1Gi")).compareTo(quantity("2Gi")) == 0', True),
        ('quantity("1500m").isInteger()', False),
        ('semver("1.2.3-alpha").isLessThan(semver("1.2.3"))', True),
        ('semver("1.10.0").isGreaterThan(semver("1.9.0"))', True),
        ('"abc"[0] == "a"', "no such overload"),
    ],
)
def test_cel_semantics(expression: str, want: Any) -> None:
    """CEL language rules the selectors rely on (cel-spec langdef): values, errors and the extensions."""
    selector = compile_selector(expression)
    device = DeviceInput("d", {}, {})
    if isinstance(want, str):
        with pytest.raises(CelError, match=want):
            selector.matches(device)
    else:
        assert selector.matches(device) is want


@pytest.mark.parametrize(
    "expression", ["noSuchVar", "device.nope(", "a.b.c == 1", "size(device) == unknownFn(1)"]
)
def test_compile_errors(expression: str) -> None:
    with pytest.raises(CelSyntaxError):
        compile_selector(expression)


def test_bounded_length_and_depth() -> None:
    with pytest.raises(CelSyntaxError, match="at most 10240"):
        compile_selector("true || " * 2000 + "true")
    with pytest.raises(CelSyntaxError, match="nested deeper"):
        compile_selector("(" * 150 + "true" + ")" * 150)
