"""A bounded parser for the CEL subset Kubernetes DRA selectors are written in.

Grammar (the CEL language definition, cel-spec ``doc/langdef.md``, with the macros cel-go expands)::

    Expr           = Or ["?" Or ":" Expr]
    Or             = And {"||" And}
    And            = Relation {"&&" Relation}
    Relation       = Addition {("<" | "<=" | ">=" | ">" | "==" | "!=" | "in") Addition}
    Addition       = Multiplication {("+" | "-") Multiplication}
    Multiplication = Unary {("*" | "/" | "%") Unary}
    Unary          = {"!"} Member | {"-"} Member
    Member         = Primary {"." IDENT ["(" [Exprs] ")"] | "[" Expr "]"}
    Primary        = IDENT ["(" [Exprs] ")"] | "(" Expr ")" | "[" [Exprs [","]] "]"
                   | "{" [Expr ":" Expr {"," Expr ":" Expr} [","]] "}" | LITERAL

Literals: int (decimal or ``0x`` hex), uint (``u`` suffix), double, string ('', "", triple-quoted, ``r``
raw, escapes), bytes (``b`` prefix), ``true``/``false``, ``null``. Macros: ``has(e.f)``, ``e.all(x, p)``,
``e.exists(x, p)``, ``e.exists_one(x, p)``, ``e.map(x, t)``, ``e.map(x, p, t)``, ``e.filter(x, p)`` and
``cel.bind(x, init, e)``. Not parsed: message construction (``T{...}``), leading-dot names, ``.?``
optional selection. Bounds: 10,240 characters (the API's limit on a selector) and 100 levels of nesting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "CelSyntaxError", "Node", "parse_cel"]

MAX_LENGTH = 10 * 1024
MAX_DEPTH = 100
RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
#: Function namespaces: ``sets.contains(a, b)`` is the function ``sets.contains``, not a method of ``sets``.
_NAMESPACES = frozenset({"sets"})
_MACROS = {"all": 2, "exists": 2, "exists_one": 2, "existsOne": 2, "filter": 2}


class CelSyntaxError(ValueError):
    """An expression that does not parse, with the character offset of the problem."""


@dataclass(frozen=True)
class Node:
    """An AST node: ``kind`` is lit | ident | select | has | index | call | method | list | map | comp |
    bind | cond | and | or | not | neg, its operands in ``args`` (:func:`parse_cel` gives each shape)."""

    kind: str
    value: Any = None
    args: tuple[Node, ...] = ()


@dataclass(frozen=True)
class _Tok:
    kind: str  # num | str | bytes | ident | op | end
    text: str
    value: Any
    at: int


_OPS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ".", ",",
        "(", ")", "[", "]", "{", "}")  # fmt: skip
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
            "'": "'", '"': '"', "`": "`", "?": "?"}  # fmt: skip


class Uint(int):
    """A CEL ``uint`` value (kept apart from ``int`` for overloads)."""


def _string(text: str, i: int, raw: bool) -> tuple[str, int]:
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    j = i + len(quote)
    out: list[str] = []
    while True:
        if j >= len(text):
            raise CelSyntaxError(f"unterminated string starting at character {i}")
        if text.startswith(quote, j):
            return "".join(out), j + len(quote)
        c = text[j]
        if c == "\n" and len(quote) == 1:
            raise CelSyntaxError(f"newline in string at character {j}")
        if c == "\\" and not raw:
            j += 1
            e = text[j : j + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                j += 1
            elif e in ("x", "u", "U"):
                width = {"x": 2, "u": 4, "U": 8}[e]
                digits = text[j + 1 : j + 1 + width]
                if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise CelSyntaxError(f"bad \\{e} escape at character {j}")
                out.append(chr(int(digits, 16)))
                j += 1 + width
            elif e.isdigit():
                digits = text[j : j + 3]
                if len(digits) != 3 or any(d not in "01234567" for d in digits):
                    raise CelSyntaxError(f"bad octal escape at character {j}")
                out.append(chr(int(digits, 8)))
                j += 3
            else:
                raise CelSyntaxError(f"unknown escape \\{e} at character {j}")
            continue
        out.append(c)
        j += 1


def _number(text: str, i: int) -> tuple[_Tok, int]:
    j = i
    if text.startswith(("0x", "0X"), i):
        j = i + 2
        while j < len(text) and text[j] in "0123456789abcdefABCDEF":
            j += 1
        value: Any = int(text[i + 2 : j], 16)
    else:
        while j < len(text) and text[j].isdigit():
            j += 1
        is_float = False
        if j + 1 < len(text) and text[j] == "." and text[j + 1].isdigit():
            is_float = True
            j += 1
            while j < len(text) and text[j].isdigit():
                j += 1
        if j < len(text) and text[j] in "eE":
            k = j + 1 + (1 if text[j + 1 : j + 2] in ("+", "-") else 0)
            if k < len(text) and text[k].isdigit():
                is_float, j = True, k
                while j < len(text) and text[j].isdigit():
                    j += 1
        value = float(text[i:j]) if is_float else int(text[i:j])
    if j < len(text) and text[j] in "uU" and isinstance(value, int):
        return _Tok("num", text[i : j + 1], Uint(value), i), j + 1
    return _Tok("num", text[i:j], value, i), j


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif c.isdigit() or (c == "." and text[i + 1 : i + 2].isdigit()):
            tok, i = _number(text, i)
            out.append(tok)
        elif (
            c in "'\""
            or (c in "rRbB" and text[i + 1 : i + 2] in ("'", '"'))
            or (c in "rRbB" and text[i + 1 : i + 2] in "rRbB" and text[i + 2 : i + 3] in ("'", '"'))
        ):
            prefix = ""
            while text[i] not in "'\"":
                prefix += text[i].lower()
                i += 1
            value, end = _string(text, i, "r" in prefix)
            kind = "bytes" if "b" in prefix else "str"
            out.append(_Tok(kind, text[i:end], value.encode() if kind == "bytes" else value, i))
            i = end
        elif c.isalpha() or c == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(_Tok("ident", text[i:j], text[i:j], i))
            i = j
        else:
            op = next((o for o in _OPS if text.startswith(o, i)), None)
            if op is None:
                raise CelSyntaxError(f"unexpected character {c!r} at character {i}")
            out.append(_Tok("op", op, op, i))
            i += len(op)
    out.append(_Tok("end", "", None, len(text)))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.pos = 0
        self.depth = 0

    def peek(self, text: str | None = None) -> bool:
        tok = self.toks[self.pos]
        return tok.kind == "op" and tok.text == text if text is not None else False

    def take(self, text: str) -> None:
        tok = self.toks[self.pos]
        if tok.kind != "op" or tok.text != text:
            shown = tok.text or "end of expression"
            raise CelSyntaxError(f"expected {text!r} at character {tok.at}, found {shown!r}")
        self.pos += 1

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CelSyntaxError(f"expression nested deeper than {MAX_DEPTH} levels")

    def expr(self) -> Node:
        self.nest()
        cond = self.binary(0)
        if self.peek("?"):
            self.pos += 1
            yes = self.binary(0)
            self.take(":")
            no = self.expr()
            cond = Node("cond", None, (cond, yes, no))
        self.depth -= 1
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",),
        ("&&",),
        ("<", "<=", ">=", ">", "==", "!=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        ops = self._LEVELS[level]
        while True:
            tok = self.toks[self.pos]
            if not ((tok.kind == "op" or tok.text == "in") and tok.text in ops):
                return left
            self.pos += 1
            right = self.binary(level + 1)
            if tok.text == "&&":
                left = Node("and", None, (left, right))
            elif tok.text == "||":
                left = Node("or", None, (left, right))
            else:
                left = Node("call", tok.text, (left, right))

    def unary(self) -> Node:
        for op, kind in (("!", "not"), ("-", "neg")):
            if self.peek(op):
                self.pos += 1
                self.nest()
                inner = self.unary()
                self.depth -= 1
                if kind == "neg" and inner.kind == "lit" and type(inner.value) in (int, float):
                    return Node("lit", -inner.value)
                return Node(kind, None, (inner,))
        return self.member(self.primary())

    def args(self, close: str) -> tuple[Node, ...]:
        out: list[Node] = []
        while not self.peek(close):
            out.append(self.expr())
            if not self.peek(","):
                break
            self.pos += 1
        self.take(close)
        return tuple(out)

    def member(self, node: Node) -> Node:
        while True:
            if self.peek("."):
                self.pos += 1
                tok = self.toks[self.pos]
                if tok.kind != "ident":
                    raise CelSyntaxError(f"expected a field or method name at character {tok.at}")
                self.pos += 1
                if self.peek("("):
                    self.pos += 1
                    node = self.method(node, tok.text, self.args(")"), tok.at)
                else:
                    node = Node("select", tok.text, (node,))
            elif self.peek("["):
                self.pos += 1
                index = self.expr()
                self.take("]")
                node = Node("index", None, (node, index))
            else:
                return node

    def method(self, target: Node, name: str, args: tuple[Node, ...], at: int) -> Node:
        if target.kind == "ident" and target.value == "cel" and name == "bind":
            if len(args) != 3 or args[0].kind != "ident":
                raise CelSyntaxError(f"cel.bind needs (name, init, expr) at character {at}")
            return Node("bind", args[0].value, (args[1], args[2]))
        if target.kind == "ident" and target.value in _NAMESPACES:
            return Node("call", f"{target.value}.{name}", args)
        arity = _MACROS.get(name)
        if name == "map":
            arity = len(args) if len(args) in (2, 3) else 2
        if arity is not None:
            if len(args) != arity or args[0].kind != "ident":
                raise CelSyntaxError(f"{name}() needs a variable name and {arity - 1} expression(s) at {at}")
            kind = "exists_one" if name == "existsOne" else name
            return Node("comp", (kind, args[0].value), (target, *args[1:]))
        return Node("method", name, (target, *args))

    def primary(self) -> Node:
        tok = self.toks[self.pos]
        self.pos += 1
        if tok.kind == "num":
            value = tok.value
            if type(value) is int and value > 2**63:  # 2**63 only as the operand of a minus sign
                raise CelSyntaxError(f"integer literal {tok.text} out of the int64 range")
            if isinstance(value, Uint) and value > 2**64 - 1:
                raise CelSyntaxError(f"uint literal {tok.text} out of the uint64 range")
            return Node("lit", value)
        if tok.kind in ("str", "bytes"):
            return Node("lit", tok.value)
        if tok.kind == "ident":
            name = tok.text
            if name in ("true", "false"):
                return Node("lit", name == "true")
            if name == "null":
                return Node("lit", None)
            if name in RESERVED or name == "in":
                raise CelSyntaxError(f"reserved word {name!r} at character {tok.at}")
            if self.peek("("):
                self.pos += 1
                args = self.args(")")
                if name == "has":
                    if len(args) != 1 or args[0].kind != "select":
                        raise CelSyntaxError(f"has() needs a field selection e.f at character {tok.at}")
                    return Node("has", args[0].value, args[0].args)
                return Node("call", name, args)
            return Node("ident", name)
        if tok.kind == "op" and tok.text == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if tok.kind == "op" and tok.text == "[":
            return Node("list", None, self.args("]"))
        if tok.kind == "op" and tok.text == "{":
            items: list[Node] = []
            while not self.peek("}"):
                items.append(self.expr())
                self.take(":")
                items.append(self.expr())
                if not self.peek(","):
                    break
                self.pos += 1
            self.take("}")
            return Node("map", None, tuple(items))
        shown = tok.text or "end of expression"
        raise CelSyntaxError(f"unexpected {shown!r} at character {tok.at}")


def parse_cel(text: str) -> Node:
    """The AST of ``text``; raises CelSyntaxError with the offending position.

    Node shapes: ``lit`` (value), ``ident`` (value: name), ``select`` (value: field; args: operand),
    ``has`` (value: field; args: operand), ``index`` (args: operand, key), ``call`` (value: function or
    operator; args: arguments), ``method`` (value: name; args: receiver, arguments), ``list`` / ``map``
    (args: items / key, value, ...), ``comp`` (value: (macro, variable); args: range, predicate or
    transform...), ``bind`` (value: name; args: init, body), ``cond`` (args: test, then, else),
    ``and`` / ``or`` (args: left, right), ``not`` / ``neg`` (args: operand)."""
    if len(text) > MAX_LENGTH:
        raise CelSyntaxError(f"expression is {len(text)} characters; at most {MAX_LENGTH}")
    parser = _Parser(text)
    node = parser.expr()
    end = parser.toks[parser.pos]
    if end.kind != "end":
        raise CelSyntaxError(f"unexpected {end.text!r} at character {end.at}")
    _check_literals(node)
    return node


def _check_literals(node: Node) -> None:
    """Int literals must fit int64 once a leading minus is folded in (``-9223372036854775808`` is legal)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == "lit" and type(n.value) is int and n.value > 2**63 - 1:
            raise CelSyntaxError(f"integer literal {n.value} out of the int64 range")
        stack.extend(n.args)
