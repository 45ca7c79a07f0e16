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
    num, *dens = unit.split("/")
    out: Counter = Counter()
    for part, sign in [(num, 1)] + [(d, -1) for d in dens]:
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
            if dims_of_expr(base) or dims_of_expr(exp):
                raise DimensionError(f"{expr}: a symbolic exponent needs a dimensionless base and exponent")
            return {}
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


# -- units that people type -------------------------------------------------------------------
#
# A typed unit is converted exactly to SI base units: seconds, bytes, FLOPs and plain counts.
# Here FLOP is a dimension of its own, so an answer in GB/s is refused for a FLOP/s quantity.

_DECIMAL = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_COUNTS = ("token", "tokens", "element", "elements", "chip", "chips", "hop", "hops", "link", "links",
           "host", "hosts", "core", "cores", "param", "params", "sequence", "sequences", "device",
           "devices", "GPU", "GPUs", "TPU", "TPUs", "unit", "units")


def _typed_units() -> dict[str, tuple[sp.Rational, tuple[tuple[str, int], ...]]]:
    table: dict[str, tuple[sp.Rational, tuple[tuple[str, int], ...]]] = {}

    def add(names, factor, dims):
        for name in names:
            table[name] = (sp.Rational(factor), tuple(sorted(dims.items())))

    add(["s", "sec", "second", "seconds"], 1, {"s": 1})
    add(["ms"], sp.Rational(1, 10**3), {"s": 1})
    add(["us", "µs", "μs"], sp.Rational(1, 10**6), {"s": 1})
    add(["ns"], sp.Rational(1, 10**9), {"s": 1})
    add(["min"], 60, {"s": 1})
    add(["h", "hour", "hours"], 3600, {"s": 1})
    for prefix, factor in _DECIMAL.items():
        if prefix == "K":
            continue
        add([f"{prefix}Hz"], factor, {"s": -1})
    for prefix, factor in list(_DECIMAL.items()) + list(_BINARY.items()):
        add([f"{prefix}B"] + (["byte", "bytes"] if not prefix else []), factor, {"byte": 1})
        add([f"{prefix}bit", f"{prefix}bits"] + ([f"{prefix}b"] if prefix else []),
            sp.Rational(factor, 8), {"byte": 1})
        add([f"{prefix}FLOP", f"{prefix}FLOPs", f"{prefix}OP", f"{prefix}OPs"], factor, {"FLOP": 1})
        add([f"{prefix}FLOPS", f"{prefix}OPS"], factor, {"FLOP": 1, "s": -1})
        add([f"{prefix}bps"], sp.Rational(factor, 8), {"byte": 1, "s": -1})
    add(_COUNTS, 1, {})
    add(["1", ""], 1, {})
    return table


_TYPED = _typed_units()


class UnitError(ValueError):
    """A unit that is unknown or does not fit the quantity."""


def parse_unit(text: str) -> tuple[sp.Rational, dict[str, int]]:
    """Factor to SI base units and dimensions of a typed unit such as ``GB/s`` or ``FLOP/byte``.

    >>> parse_unit("KiB")
    (1024, {'byte': 1})
    >>> parse_unit("Gb/s")
    (125000000, {'byte': 1, 's': -1})
    """
    text = text.strip()
    factor, dims = sp.Integer(1), Counter()
    parts = text.split("/")
    if len(parts) > 3 or any(not p.strip() for p in parts[1:]):
        raise UnitError(f"cannot read the unit {text!r}")
    for i, part in enumerate(parts):
        part = part.strip()
        if part not in _TYPED:
            raise UnitError(f"unknown unit {part!r}; use e.g. s, ms, µs, B, KiB, GB, bit, FLOP, TFLOP/s, GB/s, "
                            "FLOP/byte or a count such as tokens")
        f, d = _TYPED[part]
        sign = 1 if i == 0 else -1
        factor = factor * f if sign == 1 else factor / f
        for k, v in d:
            dims[k] += sign * v
    return factor, _clean(dims)


def convert(value: sp.Expr, from_unit: str, to_unit: str) -> sp.Expr:
    """``value`` in ``from_unit`` expressed in ``to_unit`` (exact); raises on different dimensions.

    >>> convert(sp.Rational(12, 10), "ms", "s")
    3/2500
    """
    f_from, d_from = parse_unit(from_unit)
    f_to, d_to = parse_unit(to_unit)
    if d_from != d_to:
        raise UnitError(f"{from_unit} does not measure the same thing as {to_unit}; "
                        f"give the answer in {to_unit} or a unit of the same kind")
    return value * f_from / f_to
