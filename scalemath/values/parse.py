"""Safe parsing of what users type: numbers, ``--set`` assignments, expressions.

Text is parsed by Python's :mod:`ast` (which only parses, never runs) and then
walked against a whitelist: numbers, known symbol names, ``+ - * / **``,
parentheses and a few named functions. SymPy objects are built here, node by
node; ``sympify``/``parse_expr``/``eval`` are never called on user text. Length,
nesting depth and exponents are bounded so nothing can hang.

>>> parse_number("1.97e14")
197000000000000
>>> parse_number("16*2**30")
17179869184
>>> parse_assignments(["D=8192,F=4*D"])
Traceback (most recent call last):
...
scalemath.errors.ExpressionError: in 'F=4*D': unknown name 'D' at column 3; only numbers are allowed here
"""

from __future__ import annotations

import ast
import math
import re
from typing import Iterable, Mapping

import sympy as sp

from ..errors import ExpressionError

__all__ = ["parse_expression", "parse_number", "parse_assignments", "parse_answer", "shorten", "degree", "MAX_LENGTH", "MAX_DEPTH", "MAX_EXPONENT"]

MAX_LENGTH = 500
MAX_DEPTH = 40
MAX_EXPONENT = 4096
MAX_DIGITS = 2000
MAX_BITS = 6644  # about MAX_DIGITS decimal digits
MAX_ROOT = 64  # the largest root a fractional power may take (x**(1/64))
_DECIMAL = re.compile(r"^(?P<whole>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?:[eE](?P<exp>[+-]?[0-9]+))?$")

_FUNCTIONS = {"max": sp.Max, "min": sp.Min, "floor": sp.floor, "ceil": sp.ceiling, "sqrt": sp.sqrt, "exp": sp.exp,
              # as SymPy prints them (what derive --format json shows), so a printed form can be typed back
              "Max": sp.Max, "Min": sp.Min, "ceiling": sp.ceiling}
#: The functions of one argument (the others, min and max, take 1 to 8): SymPy's sqrt(x, 1) reads the 1 as
#: its evaluate flag, and floor(x, 3) raised TypeError
_ONE_ARGUMENT = frozenset({"floor", "ceil", "ceiling", "sqrt", "exp"})
#: exp's argument at most this in magnitude where it is a number (a float's range: e^700 is about 1e304)
MAX_EXP_ARGUMENT = 700
_BINOPS = {ast.Add: sp.Add, ast.Sub: lambda a, b: a - b, ast.Mult: sp.Mul, ast.Div: lambda a, b: a / b}


def shorten(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut in the middle when it is long (so that an error line stays readable).

    >>> shorten("1" * 100, 20)
    "'111111...111111' (100 characters)"
    """
    shown = repr(text)
    if len(shown) <= limit:
        return shown
    half = max(1, (limit - 5) // 2)
    return f"{shown[:half]}...{shown[-half:]} ({len(text)} characters)"


def _fail(text: str, message: str, col: int | None = None) -> ExpressionError:
    where = f" at column {col + 1}" if col is not None else ""
    return ExpressionError(f"in {text!r}: {message.replace('@', where)}")


def parse_expression(text: str, symbols: Mapping[str, sp.Symbol] | None = None) -> sp.Expr:
    """Parse ``text`` into a SymPy expression over the named ``symbols`` only.

    >>> from sympy import Symbol
    >>> parse_expression("2*B*D + 1/2", {"B": Symbol("B"), "D": Symbol("D")})
    2*B*D + 1/2
    """
    symbols = symbols or {}
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression is {len(text)} characters long; the limit is {MAX_LENGTH}")
    if "\x00" in text:
        raise ExpressionError("expression contains a NUL byte")
    if not text.isascii():
        bad = next(c for c in text if not c.isascii())
        raise ExpressionError(f"in {text!r}: character {bad!r} is not allowed; use plain ASCII (* for ×, - for −)")
    source = text.strip().replace("^", "**")
    if not source:
        raise ExpressionError("empty expression; give a number such as 8192 or 1.5e12")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExpressionError(f"cannot read {text!r} as an arithmetic expression "
                              "(numbers, names, + - * / ** and parentheses)") from None
    return _build(tree.body, source, symbols, 0)


def _build(node: ast.AST, text: str, symbols: Mapping[str, sp.Symbol], depth: int) -> sp.Expr:
    """The SymPy form of ``node``, refused where it is not a real number (``sqrt(-1)``, ``sqrt(-B)``: the
    names stand for positive numbers); an expression that is real for some values, ``sqrt(B - D)``, passes."""
    expr = _node(node, text, symbols, depth)
    if expr.is_extended_real is False:
        segment = ast.get_source_segment(text, node) or str(expr)
        shown = _short_number(expr)
        what = "" if shown.replace(" ", "") == segment.replace(" ", "") else f" (it is {shown})"
        raise _fail(text, f"{shorten(segment, 40)}@ is not a real number{what}", getattr(node, "col_offset", None))
    return expr


def _node(node: ast.AST, text: str, symbols: Mapping[str, sp.Symbol], depth: int) -> sp.Expr:
    if depth > MAX_DEPTH:
        raise _fail(text, f"nested more than {MAX_DEPTH} levels deep")
    col = getattr(node, "col_offset", None)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise _fail(text, f"{node.value!r}@ is not a number", col)
        literal = ast.get_source_segment(text, node) or repr(node.value)
        return _literal(literal, text, col)
    if isinstance(node, ast.Name):
        if node.id in symbols:
            return symbols[node.id]
        known = ", ".join(sorted(symbols)) if symbols else None
        hint = f"known names: {known}" if known else "only numbers are allowed here"
        raise _fail(text, f"unknown name {node.id!r}@; {hint}", col)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _build(node.operand, text, symbols, depth + 1)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        left = _build(node.left, text, symbols, depth + 1)
        right = _build(node.right, text, symbols, depth + 1)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(left, right, text, col), text, col)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _fail(text, f"operator {type(node.op).__name__}@ is not allowed (use + - * / **)", col)
        if isinstance(node.op, ast.Div) and right == 0:
            raise _fail(text, "division by zero@", col)
        return _bounded(op(left, right), text, col)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.func.id in _ONE_ARGUMENT and (node.keywords or len(node.args) != 1):
            raise _fail(text, f"{node.func.id}()@ takes one plain argument", col)
        if node.keywords or not node.args or len(node.args) > 8:
            raise _fail(text, f"{node.func.id}()@ takes 1 to 8 plain arguments", col)
        args = [_build(a, text, symbols, depth + 1) for a in node.args]
        if node.func.id == "exp" and args[0].is_number and abs(args[0]) > MAX_EXP_ARGUMENT:
            raise _fail(text, f"exp({_short_number(args[0])})@ is out of range (|x| <= {MAX_EXP_ARGUMENT})", col)
        try:
            value = _FUNCTIONS[node.func.id](*args)
        except ValueError:  # Max/Min of values with no order; the real check above leaves none
            shown = ", ".join(_short_number(a) for a in args)
            raise _fail(text, f"{node.func.id}({shown})@ compares values that have no order", col) from None
        return _bounded(value, text, col)
    kind = type(node).__name__
    what = {"Attribute": "attribute access", "Call": "calling a function", "Lambda": "lambda",
            "Subscript": "indexing", "Compare": "comparison", "BoolOp": "boolean logic"}.get(kind, kind)
    allowed = ", ".join(sorted(_FUNCTIONS))
    raise _fail(text, f"{what}@ is not allowed (only numbers, names, + - * / ** and {allowed})", col)


def _literal(literal: str, text: str, col: int | None) -> sp.Rational:
    """A decimal literal as an exact rational, its digits and exponent bounded before anything is built."""
    match = _DECIMAL.match(literal.replace("_", ""))
    if not match:
        raise _fail(text, f"{literal}@ is not a decimal number (write 16, not 0x10)", col)
    whole, frac, exp = match.group("whole") or "", match.group("frac") or "", match.group("exp")
    if len(whole) + len(frac) > MAX_DIGITS:
        raise _fail(text, f"number@ has too many digits (limit {MAX_DIGITS})", col)
    shift = int(exp) if exp and len(exp.lstrip("+-")) <= 6 else (MAX_DIGITS + 1 if exp else 0)
    if abs(shift) > MAX_DIGITS:
        raise _fail(text, f"exponent of {literal}@ is out of range (|e| <= {MAX_DIGITS})", col)
    mantissa = int(whole + frac or "0")
    shift -= len(frac)
    return sp.Rational(mantissa * 10**shift) if shift >= 0 else sp.Rational(mantissa, 10**-shift)


def degree(expr: sp.Expr) -> sp.Rational:
    """The total degree of ``expr`` in its symbols, powers of powers multiplied (numbers have degree 0).

    A polynomial of degree n at a point with d-digit coordinates has about n·d digits, whatever
    its exponents look like one by one: ``((B+1)**4096+1)**4096`` has degree 16777216.

    >>> from sympy.abc import x, y
    >>> degree(((x + 1)**4096 + 1)**4096), degree(x**2 * y / (x + 3)), degree(sp.sqrt(x) + 2**4096)
    (16777216, 4, 1/2)
    """
    if expr.is_Symbol:
        return sp.Integer(1)
    if expr.is_number:
        return sp.Integer(0)
    if expr.is_Pow and expr.exp.is_Rational:
        return degree(expr.base) * abs(expr.exp)
    if expr.is_Mul:
        return sum((degree(a) for a in expr.args), sp.Integer(0))
    return max((degree(a) for a in expr.args), default=sp.Integer(0))


def _bounded(expr: sp.Expr, text: str, col: int | None) -> sp.Expr:
    """Refuse what an expression has become if it is too big to compute with in reasonable time."""
    for atom in sp.preorder_traversal(expr):
        if atom.is_Rational and max(abs(atom.p).bit_length(), atom.q.bit_length()) > MAX_BITS:
            raise _fail(text, f"a number@ would have too many digits (limit {MAX_DIGITS})", col)
        if atom.is_Pow:
            _check_exponent(atom.exp, text, col)
    if not expr.is_number and degree(expr) > MAX_EXPONENT:
        raise _fail(text, f"the expression@ has degree {_short_number(degree(expr))} in its names (powers of powers "
                          f"multiply); the limit is {MAX_EXPONENT}", col)
    return expr


def _short_number(value: sp.Expr) -> str:
    """A number as written when it is short, else rounded to 5 digits (10**400 has 401 digits)."""
    if value.is_Rational and max(abs(value.p), value.q) >= 10**30:
        return str(sp.Float(value, 5))
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_exponent(exponent: sp.Expr, text: str, col: int | None) -> None:
    if not exponent.is_Rational:
        raise _fail(text, f"exponent {_short_number(exponent)}@ must be a rational number", col)
    if abs(exponent) > MAX_EXPONENT:
        raise _fail(text, f"exponent {_short_number(exponent)}@ is too large (limit {MAX_EXPONENT})", col)
    if exponent.q > MAX_ROOT:
        raise _fail(text, f"exponent {_short_number(exponent)}@ takes too deep a root (limit the {MAX_ROOT}th root)", col)


def _power(base: sp.Expr, exponent: sp.Expr, text: str, col: int | None) -> sp.Expr:
    if not exponent.is_number:
        raise _fail(text, "exponent@ must be a number", col)
    _check_exponent(exponent, text, col)
    if base == 0 and exponent.is_negative:
        raise _fail(text, "division by zero@", col)
    if base.is_Rational and base != 0:
        bits = max(math.log2(abs(base.p)), math.log2(base.q)) * abs(exponent)
        if bits > MAX_BITS:
            shown = base if max(abs(base.p), base.q) < 10**30 else f"({_short_number(base)})"
            raise _fail(text, f"power {shown}**{exponent}@ would have too many digits (limit {MAX_DIGITS})", col)
    return base**exponent


def parse_number(text: str) -> sp.Expr:
    """An exact number from ``text`` (arithmetic allowed, no names)."""
    value = parse_expression(text)
    if not value.is_number or not value.is_real:
        raise ExpressionError(f"{text!r} is not a real number")
    return sp.nsimplify(value) if value.is_Float else value


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, so that ``C=max(1, 2),W=3`` is two assignments.

    >>> _top_level_parts("C=max(1, 2),W=3")
    ['C=max(1, 2)', 'W=3']
    """
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "," and depth <= 0:
            parts.append(text[start:i])
            start, depth = i + 1, 0
    return parts + [text[start:]]


def parse_assignments(items: Iterable[str]) -> dict[str, sp.Expr]:
    """``["D=8192,F=32768", "B=256"]`` -> ``{"D": 8192, "F": 32768, "B": 256}``.

    >>> parse_assignments(["D=8192, F=2**15"])
    {'D': 8192, 'F': 32768}
    """
    out: dict[str, sp.Expr] = {}
    for item in items:
        for part in _top_level_parts(item):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not name.isidentifier() or not value.strip():
                raise ExpressionError(f"cannot read {shorten(part)}; write NAME=VALUE, e.g. --set D=8192,F=32768")
            if name in out:
                raise ExpressionError(f"{name} is set twice ({shorten(str(out[name]))} and {shorten(value.strip())})")
            try:
                out[name] = parse_number(value)
            except ExpressionError as exc:
                message = str(exc)
                for shown in (value, value.strip(), value.strip().replace("^", "**")):
                    if message.startswith(f"in {shown!r}: "):
                        message = message[len(f"in {shown!r}: "):]
                        break
                raise ExpressionError(f"in {shorten(part)}: {message}") from None
    return out


_ANSWER = re.compile(r"^(?P<num>.*?[0-9).])\s*(?P<unit>[A-Za-zµμ][A-Za-zµμ/ -]*)?$", re.S)  # PF-day, GPU-hour


def parse_answer(text: str) -> tuple[sp.Expr, str | None]:
    """A typed answer: an exact number and the unit written after it, if any.

    >>> parse_answer("320 KiB")
    (320, 'KiB')
    >>> parse_answer("1.2e-3ms")
    (3/2500, 'ms')
    >>> parse_answer("9850/41")
    (9850/41, None)
    >>> parse_answer("3.64e3 PF-days"), parse_answer("2.788M GPU-hours")
    ((3640, 'PF-days'), (697/250, 'M GPU-hours'))
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"answer is {len(text)} characters long; the limit is {MAX_LENGTH}")
    match = _ANSWER.match(text.strip())
    if not match:
        raise ExpressionError(f"cannot read {text!r} as a number with an optional unit, e.g. 1.2 ms or 320 KiB")
    unit = match.group("unit")
    return parse_number(match.group("num")), unit.strip() if unit else None
