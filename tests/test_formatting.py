"""Rounding and units happen only when printing: tables of what users see."""

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.symbolic.symbols import sym
from scalemath.values import printing as formatting

R = sp.Rational


@pytest.mark.parametrize("value,unit,expected", [
    (R(9850, 41), "FLOP/byte", "240.2 FLOP/byte"),
    (R(1, 1000), "s", "1 ms"),
    (R(12_500_000_000, 1_230_000_000_000), "s", "10.16 ms"),
    (R(1, 10**6), "s", "1 µs"),
    (16 * 10**9, "byte", "16 GB"),
    (2**34, "byte", "17.18 GB"),
    (82 * 10**10, "byte/s", "820 GB/s"),
    (4_112_640_000_000_000_000, "FLOP/s", "4.113 EFLOP/s"),
    (57500, "token", "57500 token"),
    (R(1, 2), "1", "0.5"),
], ids=["intensity", "ms", "tpus-q1", "us", "GB-decimal", "GiB-is-not-GB", "bandwidth", "pod-flops",
        "tokens", "dimensionless"])
def test_with_unit(value, unit, expected):
    assert formatting.with_unit(sp.sympify(value), unit) == expected


@pytest.mark.parametrize("value,expected", [
    (8192, "8192"),
    (197 * 10**12, r"1.97 \times 10^{14}"),
    (2**34, "2^{34}"),
    (R(1, 10**6), "10^{-6}"),
    (R(23, 10), "2.3"),
    (R(1, 3), r"\tfrac{1}{3}"),
    (R(9850, 41), "240.2"),
    (123456789012, r"1.235 \times 10^{11}"),
], ids=["small-int", "mantissa", "power-of-two", "power-of-ten", "exact-decimal", "small-fraction",
        "rounded", "long-int"])
def test_latex_number(value, expected):
    assert formatting.latex_number(sp.sympify(value)) == expected


@pytest.mark.parametrize("value,unit,exact", [
    (R(9850, 41), "FLOP/byte", False),
    (R(1, 1000), "s", True),
    (R(1, 3), "1", True),
    (2**34, "byte", False),
], ids=["rounded", "scaled-exact", "fraction", "binary-in-GB"])
def test_shown_exactly_says_when_rounding_happened(value, unit, exact):
    assert formatting.shown_exactly(sp.sympify(value), unit) is exact


@pytest.mark.parametrize("n,expected", [(134217728, "128 MiB"), (262144, "256 KiB"), (52428800, "50 MiB"),
                                        (512, "512 B")], ids=["vmem", "smem", "l2", "bytes"])
def test_binary_bytes(n, expected):
    assert formatting.binary_bytes(n) == expected


#: Values whose texts a remembered exact_text must never mix up: equal numbers of other types (a Float equal to an
#: Integer, a Fraction or int equal to a Rational), a symbol and the same name with assumptions, forms in which
#: those meet.
_X, _XP = sp.Symbol("x"), sp.Symbol("x", positive=True)
_TEXTS = [R(9850, 41), sp.Integer(2), sp.Float(2.0), 2, Fraction(1, 2), R(1, 2), _X, _XP, 2 * _X, sp.Float(2.0) * _X,
          sp.Float(0.5), sp.floor(sym("N") / 2), sp.Max(sym("B"), 3) / sym("C")]


@pytest.mark.parametrize("value", _TEXTS, ids=["rational", "integer", "float", "int", "fraction", "half", "symbol",
                                                "positive-symbol", "product", "float-product", "float-half", "floor",
                                                "max"])
def test_exact_text_remembered_is_str(value):
    formatting.exact_text.cache_clear()
    for v in _TEXTS:  # every other value first, in the cache when ``value`` is asked
        formatting.exact_text(v)
    assert formatting.exact_text(value) == formatting.exact_text.__wrapped__(value) == str(value)
