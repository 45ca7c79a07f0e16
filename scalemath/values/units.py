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

import functools
from collections import Counter
from types import MappingProxyType
from typing import Mapping

import sympy as sp

from ..symbolic.symbols import SYMBOLS
from .unittable import _TYPED, COUNT_KINDS, MAGNITUDES

__all__ = ["DimensionError", "UnitError", "dims_of_unit", "dims_of_expr", "parse_unit", "convert", "read_in_unit",
           "same_kind_units", "COUNT_KINDS", "MAGNITUDES"]

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
    if isinstance(expr, sp.log):  # a count of halvings (a tree's depth): only of a plain number
        if dims_of_expr(expr.args[0]):
            raise DimensionError(f"{expr}: the logarithm of a dimensioned quantity")
        return {}
    raise DimensionError(f"cannot tell the dimensions of {expr}")


class UnitError(ValueError):
    """A unit that is unknown or does not fit the quantity."""


def parse_unit(text: str) -> tuple[sp.Rational, dict[str, int]]:
    """Factor to base units and dimensions of a typed unit such as ``GB/s``, ``FLOP/byte`` or ``tokens/s``.

    >>> parse_unit("KiB")
    (1024, {'byte': 1})
    >>> parse_unit("Gb/s")
    (125000000, {'byte': 1, 's': -1})
    >>> parse_unit("tokens/s")
    (1, {'s': -1, 'token': 1})
    """
    text = text.strip()
    if "/" in text and text in _TYPED:  # a unit whose name holds a slash: PFLOP/s-day
        f, d = _TYPED[text]
        return f, dict(d)
    factor, dims = sp.Integer(1), Counter()
    parts = text.split("/")
    if len(parts) > 3 or any(not p.strip() for p in parts[1:]):
        raise UnitError(f"cannot read the unit {text!r}")
    for i, part in enumerate(parts):
        part = part.strip()
        if part not in _TYPED:
            raise UnitError(f"unknown unit {part!r}; use e.g. s, ms, µs, B, KiB, GB, bit, FLOP, TFLOP/s, GB/s, "
                            "FLOP/byte, PF-day, GPU-hour, %, x, cents or a count such as tokens")
        f, d = _TYPED[part]
        sign = 1 if i == 0 else -1
        factor = factor * f if sign == 1 else factor / f
        for k, v in d:
            dims[k] += sign * v
    return factor, _clean(dims)


def _describe(dims: Mapping[str, int]) -> str:
    if not dims:
        return "a plain number"
    return " per ".join(k for k, v in sorted(dims.items(), key=lambda kv: -kv[1]) if v) or "a plain number"


def convert(value: sp.Expr, from_unit: str, to_unit: str) -> sp.Expr:
    """``value`` in ``from_unit`` expressed in ``to_unit`` (exact); raises on different dimensions.

    >>> convert(sp.Rational(12, 10), "ms", "s")
    3/2500
    """
    return read_in_unit(value, from_unit, to_unit)[0]


def _magnitude(text: str) -> tuple[int, str] | None:
    """``'B params'`` -> (10**9, 'params'); ``'M'`` -> (10**6, ''); None if ``text`` starts with no magnitude."""
    for word in sorted(MAGNITUDES, key=len, reverse=True):
        if text == word or text.startswith(word + " "):
            return MAGNITUDES[word], text[len(word):].strip()
    return None


def read_in_unit(value: sp.Expr, typed: str, to_unit: str) -> tuple[sp.Expr, str | None]:
    """A typed ``value typed`` in ``to_unit``, and a note saying how an ambiguous unit was read (or None).

    Reads the key's own unit as printed (``token/s``, ``1/s``, ``cent``), every unit of the same
    dimension, ``%`` and ``x`` for plain numbers, and a magnitude for counts: ``46.7B`` is 46.7
    billion when the key counts parameters, tokens or FLOPs, but 46.7 bytes when the key is in bytes.

    >>> read_in_unit(sp.Rational(467, 10), "B", "param")
    (46700000000, 'B read as billions (the answer counts param)')
    >>> read_in_unit(sp.Rational(467, 10), "B", "byte")
    (467/10, 'B read as bytes (the answer is in bytes; write GB for 10^9 bytes)')
    """
    typed = typed.strip()
    if typed == to_unit.strip():
        return value, None
    f_to, d_to = parse_unit(to_unit)
    try:
        f_from, d_from = parse_unit(typed)
    except UnitError:
        f_from, d_from = None, None
    if d_from is not None and d_from == d_to:
        note = None
        if typed == "B" and d_to == {"byte": 1}:
            note = "B read as bytes (the answer is in bytes; write GB for 10^9 bytes)"
        return value * f_from / f_to, note
    mag = _magnitude(typed)
    if mag is not None:
        times, rest = mag
        try:
            f_rest, d_rest = parse_unit(rest) if rest else (sp.Integer(1), None)
        except UnitError:
            f_rest, d_rest = None, None
        if f_rest is not None and (d_rest is None or d_rest == d_to):
            word = typed.split()[0] if rest else typed
            scale = {10**3: "thousands", 10**6: "millions", 10**9: "billions", 10**12: "trillions"}.get(
                times, f"2^{times.bit_length() - 1}")
            counts = _describe(d_to) if d_to else "a plain number"
            note = f"{word} read as {scale}" + (f" (the answer counts {counts})" if d_to and word == "B" else "")
            factor = f_rest / f_to if d_rest is not None else sp.Integer(1)
            return value * times * factor, note
    from .unitnames import spelled, unknown_unit_message, wrong_kind_message

    read = spelled(typed, d_to)  # another case (tflops), TFLOPs for a rate, "tokens per second"
    if read is not None:
        return value * read[1] / f_to, read[2]
    if d_from is None:
        raise UnitError(unknown_unit_message(typed, to_unit))
    if any(k in COUNT_KINDS for k in d_from) and any(k in COUNT_KINDS for k in d_to):
        raise UnitError(f"{typed} and {to_unit} count different things; give the answer in {to_unit} "
                        "(or as a plain number)")
    raise UnitError(wrong_kind_message(typed, d_from, to_unit, d_to))


@functools.lru_cache(maxsize=256)
def same_kind_units(unit: str) -> Mapping[str, sp.Rational]:
    """Every typed unit of the same dimension as ``unit``, with its factor to ``unit``: what an answer in
    ``unit`` may be typed in (used by the LMS exports, once per answer: remembered, read-only).

    >>> same_kind_units("s")["ms"]
    1/1000
    """
    f_to, d_to = parse_unit(unit)
    out = {}
    for name, (f, d) in _TYPED.items():
        if name and dict(d) == d_to and name != "1":
            out[name] = f / f_to
    if any(v < 0 for v in d_to.values()):  # a rate or a ratio: also "TFLOP/s", "GB/s", "FLOPs/byte", "tokens/s"
        for den in _DENOMINATORS:
            f_den, d_den = _TYPED[den]
            for name, (f, d) in _TYPED.items():
                dims = Counter(dict(d))
                dims.subtract(dict(d_den))
                if name and name != "1" and _clean(dims) == d_to:
                    out.setdefault(f"{name}/{den}", f / f_den / f_to)
    return MappingProxyType(out)


#: The spellings of a rate's or a ratio's denominator an answer may use ("per second" in s, ms, µs, us, ns).
_DENOMINATORS = ("s", "ms", "µs", "us", "ns", "B", "byte", "token", "tok")
