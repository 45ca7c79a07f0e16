"""Dimensions of units and expressions, for checking that a formula's units add up.

Two dimensions matter for the book's arithmetic: time (s) and information
(byte). Counts (tokens, elements, chips, hops, FLOPs) are dimensionless here,
so ``FLOP/byte`` is byte⁻¹ and ``FLOP/s`` is s⁻¹.

>>> dims_of_unit("byte/s")
{'byte': 1, 's': -1}
>>> from scalemath.symbolic.roofline import matmul_t_comms
>>> dims_of_expr(matmul_t_comms().expr)
{'s': 1}
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

import sympy as sp

from .symbolic.symbols import SYMBOLS

__all__ = ["DimensionError", "dims_of_unit", "dims_of_expr"]

_BASE = {"s": {"s": 1}, "byte": {"byte": 1}, "Hz": {"s": -1}}


class DimensionError(ValueError):
    """An expression whose terms have different dimensions."""


def _clean(d: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in sorted(d.items()) if v != 0}


def dims_of_unit(unit: str) -> dict[str, int]:
    """Dimensions of a unit string such as ``byte/s`` or ``FLOP/byte``."""
    num, _, den = unit.partition("/")
    out: Counter = Counter()
    for part, sign in ((num, 1), (den, -1)):
        for factor in filter(None, part.split("*")):
            for k, v in _BASE.get(factor.strip(), {}).items():
                out[k] += sign * v
    return _clean(out)


def dims_of_expr(expr: sp.Expr) -> dict[str, int]:
    """Dimensions of an expression over the engine's symbols; raises on a mismatch."""
    if expr.is_Symbol:
        return dims_of_unit(SYMBOLS[expr.name].unit)
    if expr.is_number:
        return {}
    if expr.is_Mul:
        out: Counter = Counter()
        for arg in expr.args:
            out.update(dims_of_expr(arg))
        return _clean(out)
    if expr.is_Pow:
        base, exp = expr.args
        if not exp.is_number:
            raise DimensionError(f"exponent {exp} is not a number")
        inner = dims_of_expr(base)
        if inner and not exp.is_Integer:
            raise DimensionError(f"{expr}: a non-integer power of a dimensioned quantity")
        return _clean({k: v * int(exp) for k, v in inner.items()})
    if expr.is_Add or isinstance(expr, (sp.Max, sp.Min)):
        dims = [dims_of_expr(a) for a in expr.args]
        if any(d != dims[0] for d in dims):
            raise DimensionError(f"{expr}: terms have different dimensions {dims}")
        return dims[0]
    if isinstance(expr, (sp.floor, sp.ceiling)):
        return dims_of_expr(expr.args[0])
    raise DimensionError(f"cannot tell the dimensions of {expr}")
