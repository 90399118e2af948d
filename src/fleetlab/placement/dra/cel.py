"""Evaluate a DRA CEL selector against one device, as ``k8s.io/dynamic-resource-allocation/cel`` does.

The environment is the one kube-scheduler compiles selectors in (``cel/compile.go``, Kubernetes v1.35): a
``device`` variable with ``driver``, ``attributes`` and ``capacity`` (maps keyed by domain, then by
attribute name; an attribute without a domain belongs to the driver's; looking up a domain the device does
not have gives an empty map, so ``'x' in device.attributes['d']`` is false where ``device.attributes['d'].x``
is an error), ``allowMultipleAllocations``; CEL's standard functions with heterogeneous numeric equality
and int64 / uint64 overflow errors; errors as values, absorbed by ``&&`` / ``||`` / ``all`` / ``exists``
when the other side decides; the Kubernetes libraries selectors use (quantity, semver, lists, regex
``find``/``findAll``) and cel-go's strings and sets extensions and ``cel.bind``.

Semantics are fleetlab's own implementation of that contract (see ``placement/dra/cel_lib.py`` for the
functions), bounded by a cost limit: each evaluation step costs 1 and a selector may take at most
``COST_LIMIT`` steps (the API's CELSelectorExpressionMaxCost is 1,000,000 of cel-go's cost units; the
unit differs, the bound is the same order). Why not a PyPI CEL package: ``cel-python`` 0.5 refuses
``1 == 1.0`` and ``0 == 0u`` (cel-go: true); ``common-expression-language`` 0.10 has no strings extension
(``split``, ``lowerAscii``), no way to give the attribute maps their empty-domain default, and no cost bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.placement.dra.cel_lib import (
    FUNCTIONS,
    METHODS,
    CelError,
    Quantity,
    Semver,
    cel_equal,
    cel_type_name,
    check_int,
)
from fleetlab.spec.cel_parse import CelSyntaxError, Node, Uint, parse_cel

__all__ = ["COST_LIMIT", "CelError", "CompiledSelector", "DeviceInput", "compile_selector"]

COST_LIMIT = 1_000_000
_GLOBALS = frozenset({"device"})


@dataclass(frozen=True)
class DeviceInput:
    """What a selector sees of a device: driver, attributes and capacity by qualified name (values as
    int / bool / str / Semver and Quantity), and whether it may be allocated more than once."""

    driver: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Quantity]
    allow_multiple_allocations: bool = False


class _DomainMap(dict[str, Any]):
    """``device.attributes`` / ``device.capacity``: a missing domain is an empty map (compile.go's
    ``newStringInterfaceMapWithDefault``)."""

    def __missing__(self, key: str) -> dict[str, Any]:
        return {}


def _by_domain(values: Mapping[str, Any], driver: str) -> _DomainMap:
    out = _DomainMap()
    for name, value in values.items():
        domain, sep, ident = name.partition("/")
        if not sep:
            domain, ident = driver, name
        out.setdefault(domain, {})[ident] = value
    return out


class _Budget:
    def __init__(self) -> None:
        self.left = COST_LIMIT

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise CelError("operation cancelled: actual cost limit exceeded")


def _check_names(node: Node, bound: frozenset[str]) -> None:
    """Compile-time checks cel-go's type checker would make: every identifier declared, every function
    known (with its receiver form), and no literal of a non-bool type as the whole expression."""
    if node.kind == "ident" and node.value not in bound:
        raise CelSyntaxError(f"undeclared reference to '{node.value}'")
    if node.kind == "call" and node.value not in FUNCTIONS and node.value not in _OPERATORS:
        raise CelSyntaxError(f"undeclared reference to '{node.value}'")
    if node.kind == "method" and node.value not in METHODS:
        raise CelSyntaxError(f"undeclared reference to '{node.value}'")
    if node.kind == "comp":
        _check_names(node.args[0], bound)
        inner = bound | {node.value[1]}
        for arg in node.args[1:]:
            _check_names(arg, inner)
        return
    if node.kind == "bind":
        _check_names(node.args[0], bound)
        _check_names(node.args[1], bound | {node.value})
        return
    for arg in node.args:
        _check_names(arg, bound)


_OPERATORS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"})


@dataclass(frozen=True)
class CompiledSelector:
    """A parsed, checked selector; :meth:`matches` evaluates it on one device."""

    expression: str
    ast: Node

    def matches(self, device: DeviceInput) -> bool:
        """True / False, or CelError (a runtime error: missing attribute, overflow, wrong type...)."""
        env = {
            "device": {
                "driver": device.driver,
                "attributes": _by_domain(device.attributes, device.driver),
                "capacity": _by_domain(device.capacity, device.driver),
                "allowMultipleAllocations": device.allow_multiple_allocations,
            }
        }
        result = _Evaluator(_Budget()).eval(self.ast, env)
        if isinstance(result, CelError):
            raise result
        if not isinstance(result, bool):
            raise CelError(f"CEL result of type {cel_type_name(result)} could not be converted to bool")
        return result


def compile_selector(expression: str) -> CompiledSelector:
    """Parse and check a selector (raises CelSyntaxError, as the API server's validation would)."""
    ast = parse_cel(expression)
    _check_names(ast, _GLOBALS)
    if ast.kind == "lit" and not isinstance(ast.value, bool):
        raise CelSyntaxError(f"must evaluate to bool, not {cel_type_name(ast.value)}")
    return CompiledSelector(expression, ast)


class _Evaluator:
    def __init__(self, budget: _Budget) -> None:
        self.budget = budget

    def eval(self, node: Node, env: Mapping[str, Any]) -> Any:
        self.budget.spend()
        kind = node.kind
        if kind == "lit":
            return node.value
        if kind == "ident":
            return env[node.value]
        if kind == "and" or kind == "or":
            return self._logic(node, env)
        if kind == "not":
            value = self.eval(node.args[0], env)
            if isinstance(value, CelError) or not isinstance(value, bool):
                return value if isinstance(value, CelError) else _no_overload("!", value)
            return not value
        if kind == "neg":
            value = self.eval(node.args[0], env)
            if isinstance(value, CelError):
                return value
            if type(value) is int:
                return check_int(-value)
            if isinstance(value, float):
                return -value
            return _no_overload("-", value)
        if kind == "cond":
            test = self.eval(node.args[0], env)
            if isinstance(test, CelError):
                return test
            if not isinstance(test, bool):
                return _no_overload("_?_:_", test)
            return self.eval(node.args[1] if test else node.args[2], env)
        if kind in ("select", "has"):
            return self._select(node, env)
        if kind == "index":
            operand, key = self.eval(node.args[0], env), self.eval(node.args[1], env)
            return _index(operand, key)
        if kind == "list":
            items = [self.eval(a, env) for a in node.args]
            return next((i for i in items if isinstance(i, CelError)), items)
        if kind == "map":
            return self._map(node, env)
        if kind == "comp":
            return self._comprehension(node, env)
        if kind == "bind":
            value = self.eval(node.args[0], env)
            return self.eval(node.args[1], {**env, node.value: value})
        return self._call(node, env)

    def _logic(self, node: Node, env: Mapping[str, Any]) -> Any:
        decisive = node.kind == "or"  # the value that decides: true for ||, false for &&
        left = self.eval(node.args[0], env)
        if left is decisive:
            return decisive
        right = self.eval(node.args[1], env)
        if right is decisive:
            return decisive
        for side in (left, right):
            if isinstance(side, CelError):
                return side
            if not isinstance(side, bool):
                return _no_overload("_||_" if decisive else "_&&_", side)
        return not decisive

    def _select(self, node: Node, env: Mapping[str, Any]) -> Any:
        operand = self.eval(node.args[0], env)
        if isinstance(operand, CelError):
            return operand
        if not isinstance(operand, dict):
            return CelError(f"type '{cel_type_name(operand)}' does not support field selection")
        if node.kind == "has":
            return node.value in operand
        if node.value in operand:
            return operand[node.value]
        return CelError(f"no such key: {node.value}")

    def _map(self, node: Node, env: Mapping[str, Any]) -> Any:
        out: dict[Any, Any] = {}
        for k_node, v_node in zip(node.args[::2], node.args[1::2], strict=True):
            key, value = self.eval(k_node, env), self.eval(v_node, env)
            for part in (key, value):
                if isinstance(part, CelError):
                    return part
            if not isinstance(key, (str, int, bool)) or isinstance(key, float):
                return CelError(f"unsupported key type: {cel_type_name(key)}")
            if any(cel_equal(key, k) is True for k in out):
                return CelError(f"Failed with repeated key: {key}")
            out[key] = value
        return out

    def _comprehension(self, node: Node, env: Mapping[str, Any]) -> Any:
        macro, var = node.value
        rng = self.eval(node.args[0], env)
        if isinstance(rng, CelError):
            return rng
        if isinstance(rng, dict):
            items = list(rng)
        elif isinstance(rng, list):
            items = rng
        else:
            return CelError(f"got '{cel_type_name(rng)}', expected iterable type")
        if macro in ("all", "exists"):
            decisive = macro == "exists"
            error: CelError | None = None
            for item in items:
                got = self.eval(node.args[1], {**env, var: item})
                if got is decisive:
                    return decisive
                if isinstance(got, CelError):
                    error = error or got
                elif not isinstance(got, bool):
                    error = error or _no_overload(macro, got)
            return error if error is not None else not decisive
        if macro == "exists_one":
            count = 0
            for item in items:
                got = self.eval(node.args[1], {**env, var: item})
                if isinstance(got, CelError):
                    return got
                if got is True:
                    count += 1
            return count == 1
        out: list[Any] = []
        for item in items:
            scope = {**env, var: item}
            if macro == "filter" or len(node.args) == 3:
                keep = self.eval(node.args[1], scope)
                if isinstance(keep, CelError):
                    return keep
                if keep is not True:
                    continue
                if macro == "filter":
                    out.append(item)
                    continue
            value = self.eval(node.args[-1], scope)
            if isinstance(value, CelError):
                return value
            out.append(value)
        return out

    def _call(self, node: Node, env: Mapping[str, Any]) -> Any:
        name = node.value
        args = [self.eval(a, env) for a in node.args]
        for arg in args:
            if isinstance(arg, CelError):
                return arg
        if node.kind == "call" and name in _OPERATORS:
            return _operator(name, args[0], args[1])
        fn: Callable[..., Any] | None = (METHODS if node.kind == "method" else FUNCTIONS).get(name)
        if fn is None:
            return CelError(f"no such overload: {name}")
        return fn(*args)


def _no_overload(op: str, *values: Any) -> CelError:
    kinds = ", ".join(cel_type_name(v) for v in values)
    return CelError(f"no such overload: {op}({kinds})")


def _index(operand: Any, key: Any) -> Any:
    for part in (operand, key):
        if isinstance(part, CelError):
            return part
    if isinstance(operand, list):
        if type(key) in (int, Uint) or (isinstance(key, float) and key.is_integer()):
            i = int(key)
            if 0 <= i < len(operand):
                return operand[i]
            return CelError(f"index out of bounds: {i}")
        return _no_overload("_[_]", operand, key)
    if isinstance(operand, dict):
        if isinstance(operand, _DomainMap) and isinstance(key, str):
            return operand[key]
        for k, v in operand.items():
            if cel_equal(k, key) is True:
                return v
        return CelError(f"no such key: {key}")
    return _no_overload("_[_]", operand, key)


def _numeric(value: Any) -> bool:
    return type(value) in (int, float, Uint)


def _compare(a: Any, b: Any) -> int | CelError:
    if _numeric(a) and _numeric(b):
        return int((a > b) - (a < b))
    same = (type(a) is type(b)) or (isinstance(a, Quantity) and isinstance(b, Quantity))
    if same and isinstance(a, (str, bytes, bool)):
        return int((a > b) - (a < b))
    return _no_overload("_<_", a, b)


def _arith(op: str, a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is not tb or ta not in (int, float, Uint, str, bytes, list):
        return _no_overload(f"_{op}_", a, b)
    if ta in (str, bytes, list):
        return a + b if op == "+" else _no_overload(f"_{op}_", a, b)
    if ta is float:
        if op == "%":
            return _no_overload("_%_", a, b)
        if op == "/":
            return a / b if b != 0 else (float("inf") if a > 0 else float("-inf") if a < 0 else float("nan"))
        return a + b if op == "+" else a - b if op == "-" else a * b
    if op in ("/", "%") and b == 0:
        return CelError("division by zero" if op == "/" else "modulus by zero")
    if op == "/":
        result = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    elif op == "%":
        result = abs(a) % abs(b) * (1 if a >= 0 else -1)
    else:
        result = a + b if op == "+" else a - b if op == "-" else a * b
    if ta is Uint:
        return Uint(result) if 0 <= result <= 2**64 - 1 else CelError("unsigned integer overflow")
    return check_int(result)


def _operator(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return cel_equal(a, b)
    if op == "!=":
        same = cel_equal(a, b)
        return same if isinstance(same, CelError) else not same
    if op == "in":
        if isinstance(b, list):
            return any(cel_equal(a, item) is True for item in b)
        if isinstance(b, dict):
            if isinstance(b, _DomainMap):
                return a in b
            return any(cel_equal(a, k) is True for k in b)
        return _no_overload("@in", a, b)
    if op in ("<", "<=", ">", ">="):
        order = _compare(a, b)
        if isinstance(order, CelError):
            return order
        return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[op]
    return _arith(op, a, b)


def attribute_value(value: int | bool | str, is_version: bool) -> Any:
    """A device attribute as CEL sees it: a version attribute is a Semver value (``semver.Parse``)."""
    if is_version:
        parsed = Semver.parse(str(value))
        if parsed is None:
            raise CelError(f"parse semantic version: {value!r} is not a semantic version")
        return parsed
    return value
