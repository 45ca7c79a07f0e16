"""Checking a hand calculation: a typed answer or a closed form against the engine.

A wrong answer is compared with the usual slips (a factor 2, 3, 8, 1.024^k, a
power of 1000, the device count ...) so that the message can say which one
probably explains it.

>>> v = check_value(sp.Rational(19800, 67), "FLOP/byte", "590")
>>> v.right, v.diagnosis
(False, 'your answer is 2x the expected value: a factor 2 (two FLOPs per multiply-add, one- vs two-directional links, or 2 bytes per bf16 element)')
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Mapping

import sympy as sp

from .errors import BadValueError
from .limits import TimeLimitError, run_limited
from .parsing import parse_answer, parse_expression
from .units import UnitError, convert

__all__ = ["Verdict", "ExpressionVerdict", "slips", "diagnose", "check_value", "check_expression",
           "DEFAULT_REL_TOL"]

DEFAULT_REL_TOL = sp.Rational(1, 100)
SYMBOLIC_SECONDS = 2.0
POINTS = 12


def slips(counts: Mapping[str, int] | None = None) -> list[tuple[sp.Rational, str]]:
    """The usual slips as (factor, explanation); ``counts`` adds device counts and the like."""
    out = [
        (sp.Integer(2), "a factor 2 (two FLOPs per multiply-add, one- vs two-directional links, "
                        "or 2 bytes per bf16 element)"),
        (sp.Integer(3), "a factor 3 (forward plus backward: the backward pass costs twice the forward)"),
        (sp.Integer(4), "a factor 4 (4-byte fp32 vs 1-byte int8/fp8 elements, or two factor-2 slips)"),
        (sp.Integer(8), "a factor 8 (bits vs bytes)"),
        (sp.Rational(1024, 1000), "a factor 1.024 (KiB vs kB)"),
        (sp.Rational(1024, 1000) ** 2, "a factor 1.024^2 (MiB vs MB)"),
        (sp.Rational(1024, 1000) ** 3, "a factor 1.024^3 (GiB vs GB)"),
        (sp.Rational(1024, 1000) ** 4, "a factor 1.024^4 (TiB vs TB)"),
        (sp.Integer(1000), "a factor 1000 (a unit prefix: ms vs s, GB vs MB, ...)"),
        (sp.Integer(10**6), "a factor 10^6 (a unit prefix: µs vs s, MB vs TB, ...)"),
        (sp.Integer(10**9), "a factor 10^9 (a unit prefix: ns vs s, GB vs B, ...)"),
    ]
    for name, n in sorted((counts or {}).items()):
        if n > 1:
            out.append((sp.Integer(n), f"a factor {n} = {name} (per device vs total)"))
    return out


def diagnose(ratio: sp.Expr, counts: Mapping[str, int] | None = None,
             rel_tol: sp.Expr = DEFAULT_REL_TOL) -> str | None:
    """Which usual slip, if any, explains ``given/expected == ratio``."""
    if ratio == 0 or not ratio.is_number:
        return None
    tol = max(sp.Rational(rel_tol), sp.Rational(1, 100))
    found = []
    for factor, why in slips(counts):
        if abs(ratio / factor - 1) <= tol:
            found.append(f"your answer is {_times(factor)} the expected value: {why}")
        elif abs(ratio * factor - 1) <= tol:
            found.append(f"your answer is 1/{_times(factor)[:-1]} of the expected value: {why}")
    if ratio < 0 and abs(ratio + 1) <= tol:
        found.append("your answer has the wrong sign")
    return "; or ".join(found) if found else None


def _times(factor: sp.Expr) -> str:
    text = str(factor) if factor.is_Integer else f"{float(factor):.6g}"
    return text + "x"


@dataclass(frozen=True)
class Verdict:
    right: bool
    expected: sp.Expr
    unit: str
    given: sp.Expr
    given_text: str
    rel_error: sp.Expr
    rel_tol: sp.Expr
    diagnosis: str | None = None


def check_value(expected: sp.Expr, unit: str, answer: str | int | float, rel_tol=DEFAULT_REL_TOL,
                counts: Mapping[str, int] | None = None) -> Verdict:
    """Compare a typed answer (a number, or text with a unit) with an exact expected value."""
    rel_tol = sp.Rational(rel_tol)
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise BadValueError(f"an answer must be a number or text such as '1.2 ms', not {answer!r}")
    if isinstance(answer, (int, float)):
        if isinstance(answer, float) and answer != answer or answer in (float("inf"), float("-inf")):
            raise BadValueError(f"{answer} is not a finite number")
        value, typed_unit, text = sp.Rational(repr(answer)), None, repr(answer)
    else:
        value, typed_unit = parse_answer(answer)
        text = answer.strip()
    if typed_unit is not None:
        try:
            value = convert(value, typed_unit, unit)
        except UnitError as exc:
            raise BadValueError(str(exc)) from None
    rel_error = abs(value - expected) / abs(expected) if expected != 0 else abs(value)
    right = bool(rel_error <= rel_tol)
    if right:
        diagnosis = None
    elif expected == 0:
        diagnosis = "the expected value is exactly 0 (nothing to move or compute for these values)"
    else:
        diagnosis = diagnose(value / expected, counts, rel_tol)
    return Verdict(right, expected, unit, value, text, rel_error, rel_tol, diagnosis)


@dataclass(frozen=True)
class ExpressionVerdict:
    equivalent: bool
    read_as: sp.Expr
    expected: sp.Expr
    method: str
    factor: sp.Expr | None = None
    diagnosis: str | None = None
    counterexample: Mapping[str, sp.Expr] = field(default_factory=dict)


def _is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


MAX_EVAL_BITS = 1_000_000  # about 300 000 digits: exact arithmetic on numbers this size takes well under a second
POINT_BITS = 30  # bits of a random point's coordinate (numerator up to 10**6, denominator up to 1000)


def digits_text(bits: int) -> str:
    """About how many decimal digits ``bits`` bits are, as text: ``'722478'``, ``'7.225e30'``."""
    from .formatting import decimal

    return decimal(sp.Integer(bits * 30103 // 100000))


def evaluation_bits(expr: sp.Expr, values: Mapping[sp.Symbol, sp.Expr], default: int = POINT_BITS) -> int:
    """An upper bound on the bits (numerator plus denominator) of ``expr`` evaluated exactly at ``values``,
    symbols without a value counting ``default`` bits; computed without evaluating anything.

    >>> from sympy.abc import x
    >>> evaluation_bits((x + 1)**4096, {x: sp.Integer(10)**2000}) > 20_000_000
    True
    """
    if expr.is_Symbol:
        value = values.get(expr)
        value = value if value is None or isinstance(value, sp.Basic) else sp.sympify(value)
        return default if value is None or not value.is_Rational else abs(value.p).bit_length() + value.q.bit_length()
    if expr.is_Rational:
        return abs(expr.p).bit_length() + expr.q.bit_length()
    if expr.is_Pow:
        exponent = expr.exp if expr.exp.is_Rational else expr.exp.xreplace(
            {k: v if isinstance(v, sp.Basic) else sp.sympify(v) for k, v in values.items()})
        times = abs(exponent.p) if exponent.is_Rational else 1
        return evaluation_bits(expr.base, values, default) * max(1, times)
    return sum(evaluation_bits(a, values, default) for a in expr.args) + len(expr.args)


def check_expression(text: str, expected: sp.Expr, symbols: Mapping[str, sp.Symbol],
                     values: Mapping[sp.Symbol, sp.Expr] | None = None,
                     counts: Mapping[str, int] | None = None) -> ExpressionVerdict:
    """Is the closed form ``text`` equal to ``expected``? Symbolically if that finishes in time,
    otherwise at random positive points; a constant ratio is reported as a factor."""
    values = dict(values or {})
    read = parse_expression(text, symbols)
    for what, expr in (("your expression", read), ("the engine's expression", expected)):
        bits = evaluation_bits(expr, values)
        if bits > MAX_EVAL_BITS:
            raise BadValueError(f"evaluated exactly with these values, {what} could have about {digits_text(bits)} "
                                f"digits, too many to compare; give smaller values or a simpler expression")
    mine, theirs = read.xreplace(values), expected.xreplace(values)
    extra = sorted(s.name for s in mine.free_symbols - theirs.free_symbols)
    try:
        if run_limited(_is_zero, mine - theirs, seconds=SYMBOLIC_SECONDS, what="simplify"):
            return ExpressionVerdict(True, read, expected, "symbolic")
    except (TimeLimitError, RecursionError):
        pass
    free = sorted(mine.free_symbols | theirs.free_symbols, key=lambda s: s.name)
    rng = random.Random(20251130)
    ratios, counterexample = [], {}
    for _ in range(POINTS):
        point = {s: sp.Rational(rng.randint(1, 10**6), rng.randint(1, 1000)) for s in free}
        a, b = mine.xreplace(point), theirs.xreplace(point)
        if not (a.is_number and b.is_number):
            break
        if a != b and not counterexample:
            counterexample = {s.name: v for s, v in point.items()} | {"yours": a, "expected": b}
        ratios.append(a / b if b != 0 else sp.zoo)
    if ratios and all(r == 1 for r in ratios) and not extra:
        return ExpressionVerdict(True, read, expected, f"equal at {POINTS} random points")
    if ratios and all(r == ratios[0] for r in ratios) and ratios[0].is_finite:
        factor = ratios[0]
        return ExpressionVerdict(False, read, expected, f"constant ratio at {POINTS} random points", factor,
                                 diagnose(factor, counts), counterexample)
    note = f"it uses {', '.join(extra)}, which the quantity does not depend on" if extra else None
    return ExpressionVerdict(False, read, expected, "differs at random points", None, note, counterexample)
