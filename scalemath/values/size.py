"""How large an exact evaluation can grow, bounded before anything is evaluated: the guard every command puts
before exact arithmetic on values a user typed (``derive``, ``solve``, ``check``).
"""

from __future__ import annotations

from typing import Mapping

import sympy as sp

__all__ = ["MAX_EVAL_BITS", "POINT_BITS", "digits_text", "evaluation_bits"]

MAX_EVAL_BITS = 1_000_000  # about 300 000 digits: exact arithmetic on numbers this size takes well under a second
POINT_BITS = 30  # bits of a random point's coordinate (numerator up to 10**6, denominator up to 1000)


def digits_text(bits: int) -> str:
    """About how many decimal digits ``bits`` bits are, as text: ``'722478'``, ``'7.225e30'``."""
    from .printing import decimal

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
