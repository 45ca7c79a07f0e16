"""MathML made once per formula shape (scalemath.problems.mathml._through_shape): the formula with its numbers
replaced by marks is converted once, and the numbers put back, byte for byte what latex2mathml gives for the
formula itself."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.problems import mathml

# (id, LaTeX as the converter receives it)
CASES = [
    ("product", r"2 \cdot 8192 \cdot 32768 = 536870912"),
    ("decimal-and-unit", r"1.5\,\text{ms} \approx 1500\,\text{µs}"),
    ("powers", r"2^{10} \times 10^{-3}"),
    ("fraction", r"\frac{8192}{4} = 2048"),
    ("grouped-digits", r"8{,}192"),
    ("trailing-point", r"5. + 3"),
    ("two-points", r"3.5.2"),
    ("digits-in-an-upright-name", r"\mathrm{H100} \cdot 989.5"),
    ("digits-in-text", r"\text{4 bytes} \cdot 2"),
    ("a-width", r"4 \hspace{2em} 5"),
    ("root", r"\sqrt[3]{27} = 3"),
    ("twelve-numbers", " + ".join(str(n) for n in range(1, 13))),
    ("subscripts", r"x_{2} + y_{10}"),
    ("no-number", r"\frac{B \cdot D}{W}"),
    ("max", r"\max\left(1.2\,\text{s}, 0.75\,\text{s}\right)"),
]


@pytest.mark.parametrize("display", ["inline", "block"])
@pytest.mark.parametrize("tex", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_through_the_shape_is_the_direct_conversion(tex, display):
    assert mathml._through_shape(tex, display) == mathml._direct(tex, display)


def test_formulas_that_differ_in_their_numbers_share_one_conversion(monkeypatch):
    made = []
    direct = mathml._direct
    monkeypatch.setattr(mathml, "_direct", lambda tex, display: made.append(tex) or direct(tex, display))
    monkeypatch.setattr(mathml, "_MATHML", mathml._MathMLMemo())
    monkeypatch.setattr(mathml._MATHML, "table", {})
    for numbers in ((2, 8192, 16384), (4, 4096, 16384), (8, 1024, 8192)):
        mathml.latex_to_mathml(r"%d \cdot %d = %d" % numbers)
    assert len(made) == 1 and "800000000" in made[0]


_ATOMS = st.sampled_from([r"\cdot", "+", "-", "=", r"\times", "x", r"\mathrm{s}", r"\text{ ms}", "(", ")", r"\,",
                          r"\approx", "B", r"\mathrm{FLOP}"])
_NUMBERS = st.one_of(st.integers(0, 10**12).map(str),
                     st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False).map(str))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_ATOMS, _NUMBERS, st.tuples(_NUMBERS, _NUMBERS).map(lambda p: r"\frac{%s}{%s}" % p),
                          _NUMBERS.map(lambda n: "10^{%s}" % n)), min_size=1, max_size=12))
def test_any_formula_of_numbers_and_operators(parts):
    tex = " ".join(parts)
    assert mathml._through_shape(tex, "inline") == mathml._direct(tex, "inline")
