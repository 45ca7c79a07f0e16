"""How sheets and keys typeset: separated multi-letter names, no leading minus in a denominator, decimals for
ratios, one precision per line, plural units, captions as math, long formulas cut for HTML (issue 12)."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scalemath.values import printing as formatting
from scalemath.problems import captions, mathml, render, typeset
from scalemath.values import mathsplit
from scalemath.symbolic.symbols import sym

R = sp.Rational


@pytest.mark.parametrize("expr,expected", [
    (sym("C") * sym("MFU") * sym("n_dev"), r"C \, \mathrm{MFU} \, n_{\mathrm{dev}}"),
    (sym("hops") * sym("t_hop"), r"\mathrm{hops} \, t_{\mathrm{hop}}"),
    (sym("W_link") * sym("links"), r"W_{\mathrm{link}} \, \mathrm{links}"),
    (sym("B") * sym("S") * sym("kv_token"), r"B \, S \, \mathrm{KV}_{\mathrm{tok}}"),
    (2 * sym("D") * sym("F"), "2 D F"),
    (sym("C") * sym("D") * sym("F") / (2 * sym("D") * sym("F") * sym("W") - sym("C") * sym("D") * sym("b_x")),
     r"\frac{C D F}{2 D F W - C D b_x}"),
    (sym("B") - sym("D"), "B - D"),
    (sym("D") - sym("B"), "D - B"),
    (-sym("B") - sym("D"), "- B - D"),
], ids=["CMFUn", "hopst_hop", "Wlinks", "BSKV_tok", "single-letters", "denominator-minus", "positive-first",
        "already-positive", "all-negative"])
def test_latex_of_products_and_sums(expr, expected):
    assert formatting.latex(expr) == expected


@pytest.mark.parametrize("value,unit,expected", [
    (R(75, 52), "1", r"\approx 1.442"),
    (R(35, 24), "1", r"\approx 1.458"),
    (R(1, 10), "1", "0.1"),
    (R(147456, 10**8), "s", r"\approx 1.475\,\mathrm{ms}"),
    (R(221184, 10**10), "s", r"\approx 22.12\,\mathrm{\mu s}"),
    (R(324, 10**6), "s", r"324\,\mathrm{\mu s}"),
    (6, "hop", r"6\,\mathrm{hops}"),
    (1, "hop", r"1\,\mathrm{hop}"),
    (5100, "element", r"5100\,\mathrm{elements}"),
    (45, "token/s", r"45\,\mathrm{tokens}/\mathrm{s}"),
    (2 * 10**12, "FLOP", r"2 \times 10^{12}\,\mathrm{FLOPs}"),
    (3, "axis", r"3\,\mathrm{axes}"),
    (16 * 10**9, "byte", r"16\,\mathrm{GB}"),
], ids=["speed-up", "speed-up-rounded", "tenth", "four-digits-ms", "four-digits-us", "exact-short", "hops",
        "one-hop", "elements", "rate", "flops", "axes", "bytes-prefixed"])
def test_results_on_sheets(value, unit, expected):
    assert render.shown_value(sp.sympify(value), unit) == expected


@pytest.mark.parametrize("caption,pieces", [
    ("solve T_math = T_comms for B", [("text", "solve "), ("math", r"T_{\mathrm{math}} = T_{\mathrm{comms}}"),
                                      ("text", " for B")]),
    ("bytes of AllGather_X A", [("text", "bytes of "), ("math", r"\mathrm{AllGather}_{X} A")]),
    ("A[I_X, J] -> A[I, J]", [("math", r"A[I_{X}, J] \to A[I, J]")]),
    ("the same C·b_w/(2W) as decode", [("text", "the same "), ("math", r"C \cdot b_w/(2W)"), ("text", " as decode")]),
    ("1 + α + ... + α^γ = (1 − α^(γ+1))/(1 − α)",
     [("math", r"1 + \alpha + \ldots + \alpha^{\gamma} = (1 - \alpha^{\gamma+1})/(1 - \alpha)")]),
    ("sends a V/N^2 piece", [("text", "sends a "), ("math", "V/N^{2}"), ("text", " piece")]),
    ("peak FLOPs/s of a pod", [("text", "peak FLOPs/s of a pod")]),
    ("AllGather/ReduceScatter bandwidth", [("text", "AllGather/ReduceScatter bandwidth")]),
    ("the router's E·D is left out", [("text", "the router's "), ("math", r"E \cdot D"), ("text", " is left out")]),
    ("the step's collectives (inference.decode.t_comms)", [("text", "the step's collectives (inference.decode.t_comms)")]),
], ids=["T_comms", "AllGather_X", "arrow", "C-b_w", "geometric-sum", "V/N^2", "FLOPs/s-is-prose",
        "slash-between-words", "possessive", "dotted-name"])
def test_captions_typeset_their_formulas(caption, pieces):
    got = [(kind, captions.to_latex(text) if kind == "math" else text) for kind, text in captions.split(caption)]
    assert got == pieces


@pytest.mark.parametrize("fmt,fragment", [
    ("tex", r"solve \(T_{\mathrm{math}} = T_{\mathrm{comms}}\) for B"),
    ("md", r"solve $T_{\mathrm{math}} = T_{\mathrm{comms}}$ for B"),
    ("html", "<math"),
], ids=["tex", "md", "html"])
def test_caption_math_in_each_format(fmt, fragment):
    shown = typeset._MATHS[fmt].caption("solve T_math = T_comms for B")
    assert fragment in shown and r"\_" not in shown


@pytest.mark.parametrize("tex,wide,expected", [
    ("a + b = c", 12, ["a", "+ b", "= c"]),
    ("-a + b", 12, ["-a", "+ b"]),
    (r"f(x, y) = \frac{a}{b}", 12, ["f(x,", "y)", r"= \frac{a}{b}"]),
    (r"\max\left(a, b\right)", 12, [r"\max\left(a, b\right)"]),
    (r"\max\left(a + b, c\right)", 1, [r"\max(a", "+ b,", "c)"]),
    (r"\frac{a + b}{c d}", 1, ["(a", "+ b)/", "(c d)"]),
    (r"x_{\mathrm{long}}^{2} = 1", 12, [r"x_{\mathrm{long}}^{2}", "= 1"]),
    (r"4.59 \times 10^{14} + 1", 1, [r"4.59 \times 10^{14}", "+ 1"]),
    (r"a \times b", 1, ["a", r"\times b"]),
], ids=["relations", "leading-minus", "commas", "narrow-group-kept", "wide-group-opened", "wide-fraction-inline",
        "scripts-stay", "scientific-notation-whole", "times-otherwise-cut"])
def test_long_formulas_are_cut_where_a_line_may_break(tex, wide, expected):
    assert mathsplit.pieces(tex, wide=wide) == expected


_TERMS = st.sampled_from(["2", "8192", r"1.97 \times 10^{14}", r"T_{\mathrm{math}}", r"\frac{a + b}{c d}",
                          r"\max\left(x, y\right)", r"\left(B + 1\right)", r"x^{2}", r"\sqrt{N}"])
_FORMULAS = st.builds(lambda first, rest: " ".join([first] + [f"{op} {t}" for op, t in rest]), _TERMS,
                      st.lists(st.tuples(st.sampled_from(["+", "-", r"\cdot", "=", r"\approx", "/"]), _TERMS),
                               max_size=13))


@settings(max_examples=200, deadline=None)
@given(tex=_FORMULAS, em=st.sampled_from([1.0, 4.0, 8.0, 30.0]))
# exactly 30 em wide up to its last piece: with float widths the sum of the pieces was 30.0 (fits) and the joined
# line measured 30.000000000000004 (does not)
@example(tex=r"2 + 2 + 8192 + 8192 + 8192 + 8192 + \sqrt{N} \cdot \left(B + 1\right) \cdot \sqrt{N} \cdot \sqrt{N} / 2",
         em=30.0)
def test_lines_join_pieces_as_measuring_each_joined_line_would(tex, em):
    """mathsplit.lines sums its pieces' widths; measuring every joined line again gives the same lines."""
    expected: list[str] = []
    if mathsplit.width(tex) <= em:
        expected = [tex]
    else:
        for piece in mathsplit.pieces(tex):
            if expected and mathsplit.width(expected[-1] + " " + piece) <= em:
                expected[-1] += " " + piece
            else:
                expected.append(piece)
    assert mathsplit.lines(tex, em) == expected


def test_aligned_rows_are_split_into_cells():
    assert mathsplit.rows("\\begin{aligned}\na &= b \\\\\n&= c\n\\end{aligned}") == [["a", "= b"], ["", "= c"]]


@pytest.mark.parametrize("expr,given,value,unit,expected", [
    (sp.Integer(21), (), sp.Integer(21), "sequence", [("=", r"21\,\mathrm{sequences}")]),
    (R(48228, 9765625), (), R(48228, 9765625), "s", [(r"\approx", r"4.939\,\mathrm{ms}")]),
    (sp.Integer(524288), (), sp.Integer(524288), "byte", [("=", "524288"), (r"\approx", r"524.3\,\mathrm{kB}")]),
    (sp.Integer(0), (), sp.Integer(0), "s", [("=", r"0\,\mathrm{s}")]),
    (2 * sym("B") * sym("D"), ((sym("B"), sp.Integer(16)), (sym("D"), sp.Integer(8))), sp.Integer(256), "FLOP",
     [("=", "2 B D"), ("=", r"2 \cdot 16 \cdot 8"), ("=", r"256\,\mathrm{FLOPs}")]),
], ids=["count-once", "fraction-of-seconds-dropped", "whole-bytes-kept-before-rounding", "zero", "symbolic-form"])
def test_a_step_shows_each_part_once(expr, given, value, unit, expected):
    assert list(typeset._step_parts(expr, given, value, unit)) == expected


@pytest.mark.parametrize("generator,name", [
    ("inference_speculative", "best_draft"),
    ("gpu_sm_internals", "tensor_cores"),
    ("inference_choose_topology", "max_batch"),
], ids=["best-draft-length", "tensor-cores", "sequences-held"])
def test_an_exact_count_reads_as_a_whole_number_on_the_sheet(generator, name):
    from scalemath.problems.registry import get_generator, make_problem

    problem = make_problem(get_generator(generator), 3)
    answer = problem.by_name[name]
    assert answer.value.is_Integer and answer.rel_tol == 0
    row = next(r for r in render._answer_rows("md", problem, False, True) if r["name"] == name)
    assert row["what"].startswith("a whole number") and "within" not in row["what"]
    sentence = render.tolerance_sentence([problem])
    assert "0 %" not in sentence.replace("\u202f", " ") and "must be exact" in sentence


@pytest.mark.parametrize("tex,shown", [
    (r"310\,\mathrm{TFLOP}/\mathrm{s}", "<mtext>TFLOP/s</mtext>"),
    (r"2\,\mathrm{s}", "<mtext>s</mtext>"),
    (r"4.9\,\mathrm{\mu s}", "<mtext>µs</mtext>"),
    (r"1.996\,\mathrm{FLOPs}/\mathrm{byte}", "<mtext>FLOPs/byte</mtext>"),
    (r"T_{\mathrm{math}}", '<mi mathvariant="normal">math</mi>'),  # one upright name (issue 28), not m·a·t·h
], ids=["rate", "one-letter-unit", "micro", "ratio", "multi-letter-kept"])
def test_units_are_upright_in_html(tex, shown):
    """latex2mathml sets \\mathrm{s} as an italic <mi> and spaces a rate's slash as an operator."""
    assert shown in mathml.latex_to_mathml(tex)


def test_a_long_formula_keeps_its_unit_whole_in_html():
    html = typeset._MATHS["html"].inline(r"\approx 1.996\,\mathrm{FLOPs}/\mathrm{byte} = 2 \cdot 16 \cdot 512 \cdot 4096"
                                        r" / (16 \cdot 512 \cdot 4096 \cdot 1 + 16 \cdot 512 \cdot 1)")
    assert "<mtext>FLOPs/byte</mtext>" in html


@pytest.mark.parametrize("tex,rows", [
    (r"2 \cdot 8", 1),
    (" + ".join([r"16 \cdot 8192 \cdot 8192 \cdot 2"] * 6), 3),
], ids=["short-stays-one-row", "long-sum-continues"])
def test_a_long_printed_row_continues_on_the_next(tex, rows):
    from scalemath.values import mathsplit

    lines = typeset._page_lines("=", tex)
    assert len(lines) == rows and lines[0][0] == "="
    assert all(rel == r"\quad" for rel, _ in lines[1:])
    assert all(mathsplit.width(line) <= typeset._PAGE_EM for _, line in lines)
    assert " ".join(line.replace("{} ", "") for _, line in lines).split() == tex.split()


# -- named intermediate results and whole names (issue 28) ------------------------------------------------------

def _toy_steps(*steps):
    from scalemath.symbolic.derivation import Derivation, Step

    return Derivation("toy", tuple(Step(label, expr, "why", unit) for label, expr, unit in steps), "test")


@pytest.mark.parametrize("steps,given,shown", [
    # a ceiling of an earlier step's form is the ceiling of its name, its value substituted in the numeric row
    ([("n^{\\mathrm{exact}}", sym("n_dev") / sym("D_node"), "node"),
      ("n", sp.ceiling(sym("n_dev") / sym("D_node")), "node")],
     {sym("n_dev"): 100, sym("D_node"): 8},
     [r"\left\lceil{n^{\mathrm{exact}}}\right\rceil", r"\left\lceil{12.5}\right\rceil"]),
    # some factors of a later product, and a product in a denominator (S kv in M/(S kv))
    ([("M", sym("H_chip") * sym("n_dev"), "byte"), ("\\mathrm{KV}_{\\mathrm{seq}}", sym("S") * sym("kv_token"), "byte"),
      ("B", sp.floor(sym("H_chip") * sym("n_dev") / (sym("S") * sym("kv_token"))), "sequence")],
     {sym("H_chip"): 10, sym("n_dev"): 4, sym("S"): 2, sym("kv_token"): 3},
     [r"\left\lfloor{\frac{M}{\mathrm{KV}_{\mathrm{seq}}}}\right\rfloor", r"\left\lfloor{\frac{40}{6}}\right\rfloor"]),
    # a label that is an expression (a ratio) never stands for its value
    ([("T_{a} / T_{b}", sym("V") / sym("W"), "1"), ("r", 2 * sym("V") / sym("W"), "1")],
     {sym("V"): 6, sym("W"): 3}, [r"\frac{2 V}{W}", r"\frac{2 \cdot 6}{3}"]),
], ids=["ceiling-of-a-name", "factors-and-denominator", "ratio-label-is-no-name"])
def test_a_key_reuses_named_intermediate_results(steps, given, shown):
    from scalemath.problems.model import Answer

    ev = _toy_steps(*steps).at(given)
    answer = Answer("x", "x", ev.value, steps[-1][2], ev)
    md = str(typeset._MATHS["md"].steps(answer, len(steps) - 1)).replace(r"\,", "")  # thin spaces around names
    assert all(part in md for part in shown), md


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_memory_and_step_totals_are_sums_of_named_parts(seed):
    """training_choose_mesh wrote the memory total and the step time out in full (Markdown lines of 1250
    characters before issue 28's first fix, then as bare numbers): they are sums and maxima of the parts' names."""
    from scalemath.problems import registry
    from scalemath.problems.render import render_problem

    key = render_problem(registry.make_problem(registry.get_generator("training_choose_mesh"), seed), "md", "solution")
    assert r"\mathrm{bytes}_{\mathrm{dev}} &= \mathrm{bytes}_{\mathrm{act}} + " in key
    assert r"\max\left(T_{\mathrm{DP}}" in key or r"T_{\mathrm{DP}}^{\mathrm{exposed}}" not in key
    assert max(len(line) for line in key.splitlines() if "&" in line) <= 320


#: Arrays with names of several letters (derive_all_to_all seed 3: Expert; derive_reduce_scatter seed 3: Kernel,
#: seed 2: Emb), set as one upright name in every format, never a product of letters E·x·p·e·r·t.
WHOLE_NAMES = [("derive_all_to_all", 3, "Expert"), ("derive_reduce_scatter", 3, "Kernel"),
               ("derive_reduce_scatter", 2, "Emb")]


@pytest.mark.parametrize("name,seed,array", WHOLE_NAMES, ids=[f"{n}-{a}" for n, _, a in WHOLE_NAMES])
def test_multi_letter_names_are_one_name_in_every_format(name, seed, array):
    import re

    from scalemath.problems import registry
    from scalemath.problems.render import render_problem

    problem = registry.make_problem(registry.get_generator(name), seed)
    assert problem.params["array"] == array
    for fmt in ("md", "tex"):
        text = render_problem(problem, fmt, "statement") + render_problem(problem, fmt, "solution")
        maths = re.findall(r"\$[^$]+\$|\\\(.*?\\\)|\\\[.*?\\\]", text, flags=re.S)
        assert any(rf"\mathrm{{{array}}}" in m for m in maths), fmt
        assert not any(re.search(rf"(?<!\{{){array}\[", m) for m in maths), fmt
    html = render_problem(problem, "html", "statement") + render_problem(problem, "html", "solution")
    assert f'<mi mathvariant="normal">{array}</mi>' in html
    assert "".join(f"<mi>{c}</mi>" for c in array[:2]) not in html
    assert "".join(f'<mi mathvariant="normal">{c}</mi>' for c in array[:2]) not in html


def test_mathml_sets_an_upright_word_as_one_identifier():
    out = mathml.latex_to_mathml(r"C \, \mathrm{MFU} \, n_{\mathrm{dev}}")
    assert '<mi mathvariant="normal">MFU</mi>' in out and '<mi mathvariant="normal">dev</mi>' in out
