"""The generator that asks a student to read a profile (profile_read).

The book's own profile (profiling.md, 'Looking at a real(ish) example profile': the feed-forward block on 8
TPU v2 cores, 4-way data x 2-way model parallel, [32, 1024, 8192] activations and F = 32768) goes through the
generator's solve and check: the up-projection's 95.6 ms roofline against 96 ms measured, the ReduceScatter's
134,217,728 bytes and 1.118 ms at V/W_ici against 1.13 ms measured. Every draw passes both routes, and what
the statement shows (the HLO, the trace listing) says what the key used.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
import sympy as sp

from scalemath.problems.generators import profile_read as gen_module
from scalemath.problems.registry import get_generator, make_problem
from scalemath.problems.render import render_problem

GEN = get_generator("profile_read")


def _book(fusion_1_us: int) -> dict:
    # per core: X bf16[8,1024,8192], W_in bf16[8192,16384]; measured 96 ms and 1.13 ms (the book); the
    # down-projection's time is not in the book
    p = {"chip": "tpu-v2", "cores": 2, "X": 4, "Y": 2, "b": 8, "T": 1024, "D": 8192, "F": 32768,
         "measured_us": {"fusion.2": 96000, "fusion.1": fusion_1_us, "fusion": 1130}}
    p["hlo"], p["trace"] = gen_module.shown_hlo(p), gen_module.trace_listing(p)
    return p


BOOK = [
    # name, value, what the book says
    pytest.param("flops", 2 * 8 * 1024 * 8192 * 16384, id="up-flops"),
    # 2.2e12 FLOPs at 23e12 FLOP/s per core: 95.6 ms
    pytest.param("t_math", Fraction(2 * 8 * 1024 * 8192 * 16384, 23 * 10**12), id="up-95.6ms"),
    pytest.param("peak_share", Fraction(2 * 8 * 1024 * 8192 * 16384, 23 * 10**12) / Fraction(96, 1000), id="up-share"),
    pytest.param("bytes", 134217728, id="rs-bytes"),
    # 134,217,728 B / 1.2e11 B/s = 1.118 ms at full bandwidth, against 1.13 ms
    pytest.param("eta", Fraction(134217728, 12 * 10**10) / Fraction(113, 10**5), id="rs-eta"),
]


@pytest.mark.parametrize("name, value", BOOK)
def test_the_books_profile(name, value):
    p = _book(97000)
    answers = {a.name: a for a in GEN.solve(p)}
    assert answers[name].value == sp.Rational(value.numerator, value.denominator) if isinstance(value, Fraction) \
        else answers[name].value == value
    assert Fraction(GEN.check(p)[name]) == Fraction(value)


def test_the_books_numbers_as_printed():
    answers = {a.name: a for a in GEN.solve(_book(97000))}
    assert round(float(answers["t_math"].value) * 1e3, 1) == 95.6
    assert round(float(answers["peak_share"].value), 3) == 0.996  # "pretty close" to the roofline
    assert round(float(answers["eta"].value), 2) == 0.99  # 1.118 ms expected, 1.13 ms measured


# both matmuls have the same roofline time (95.6 ms): the up-projection loses 0.4 ms of its 96 ms
@pytest.mark.parametrize("fusion_1_us, worst", [(97000, "fusion.1"), (95700, "fusion.2")], ids=["down", "up"])
def test_the_op_that_loses_most(fusion_1_us, worst):
    p = _book(fusion_1_us)
    (choice,) = [a for a in GEN.solve(p) if a.name == "loses_most"]
    assert choice.choices[int(choice.value)].startswith(worst + ",")
    assert GEN.check(p)["loses_most"] == int(choice.value)


def _parse_trace(text: str) -> dict[str, int]:
    """Each op's duration in microseconds (the listing prints milliseconds with three decimals); each op
    starts where the one before it ended."""
    out, end = {}, 0
    for line in text.splitlines():
        op, start, duration = re.fullmatch(r"(\S+) +start +([\d.]+) ms +duration +([\d.]+) ms", line).groups()
        assert int(start.replace(".", "")) == end, line
        out[op] = int(duration.replace(".", ""))
        end += out[op]
    return out


@pytest.mark.parametrize("seed", range(30))
def test_every_draw_passes_both_routes_and_shows_what_the_key_used(seed):
    problem = make_problem(GEN, seed)
    p = problem.params
    assert _parse_trace(p["trace"]) == p["measured_us"]
    shapes = re.search(r"ENTRY %main \(x\.1: bf16\[(\d+),(\d+),(\d+)\], win: bf16\[(\d+),(\d+)\]", p["hlo"]).groups()
    assert tuple(map(int, shapes)) == (p["b"], p["T"], p["D"], p["D"], p["F"] // p["Y"])
    assert 0 < problem.answer("peak_share").value <= 1 and 0 < problem.answer("eta").value <= 1
    assert problem.answer("loses_most").value in (0, 1)  # the draw keeps the ReduceScatter below both losses
    statement = render_problem(problem, "md", "statement")
    assert p["trace"] in statement and "ENTRY %main" in statement
    assert problem == make_problem(GEN, seed)


def test_a_key_that_disagrees_with_the_hand_count_is_never_emitted(monkeypatch):
    # the down-projection's output, which the ReduceScatter fusion takes, made twice as wide in the text the
    # engine reads: the V it reads is then twice the hand count, and the problem is refused
    real = gen_module.hlo_text

    def doubled(p):
        b, t, d = p["b"], p["T"], p["D"]
        return real(p).replace(f"%fusion.1 = bf16[{b},{t},{d}]", f"%fusion.1 = bf16[{b},{t},{2 * d}]")

    monkeypatch.setattr(gen_module, "hlo_text", doubled)
    with pytest.raises(ValueError, match="the ReduceScatter.s derivation is not what scalemath profile computed"):
        make_problem(GEN, 0)


@pytest.mark.parametrize("fmt", ["md", "html", "tex"])
def test_the_prose_has_no_character_latex_would_drop(fmt):
    problem = make_problem(GEN, 3)
    text = render_problem(problem, fmt, "solution")
    assert "shapes of the parameters x.1 and win" in text and "output (fusion.1), summed" in text


def test_the_html_listing_is_one_block():
    # the HLO has blank lines between computations; the page's paragraph split must not cut the <pre> there
    problem = make_problem(GEN, 3)
    html = render_problem(problem, "html", "statement")
    listing = html[html.index('<div class="code">'):html.index("</pre></div>")]
    assert "<p>" not in listing and "</p>" not in listing
    assert listing.count("&#10;") == gen_module.shown_hlo(problem.params).count("\n\n")
