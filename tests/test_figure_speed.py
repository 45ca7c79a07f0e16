"""What makes a class set cheaper without changing what it shows (issue 28, sets in a second): one font subset for
every PDF figure, made once (each figure's text and pages compared with the subset matplotlib makes alone), and the
derivation rows Markdown and LaTeX share worked out once (compared byte for byte with the plain route)."""

from __future__ import annotations

import contextlib

import pytest

from scalemath.plots import fontsubset
from scalemath.problems import figures, typeset
from scalemath.problems.registry import made_problem

# (id, generator, seed): roofline figures on two chips, and a collective figure (other letters in its title)
FIGURE_ROWS = [("roofline-a", "figure_roofline_read", 1), ("roofline-b", "figure_roofline_read", 2),
               ("collective", "figure_collective_read", 1)]


@pytest.fixture(autouse=True)
def _no_persistent_cache(monkeypatch):
    monkeypatch.setenv("SCALEMATH_CACHE_DIR", "off")


def _spec(generator: str, seed: int):
    return figures.spec_for(made_problem(generator, seed, f"p{seed}"))


def _subsetter():
    from matplotlib.backends import _backend_pdf_ps

    return _backend_pdf_ps


needs_subset_results = pytest.mark.skipif(not hasattr(_subsetter(), "SubsetResults"),
                                          reason="this matplotlib subsets fonts another way (left alone)")


def _pdf_text_and_pages(pdf: bytes, tmp_path, name: str) -> tuple[str, list[bytes]]:
    """The PDF's text as poppler extracts it, and its pages as 72 dpi greyscale images (poppler-utils)."""
    import subprocess

    path = tmp_path / f"{name}.pdf"
    path.write_bytes(pdf)
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, check=True).stdout
    subprocess.run(["pdftoppm", "-r", "72", "-gray", str(path), str(tmp_path / name)], check=True)
    return text.decode(), [p.read_bytes() for p in sorted(tmp_path.glob(f"{name}-*.pgm"))]


@needs_subset_results
@pytest.mark.parametrize("generator,seed", [r[1:] for r in FIGURE_ROWS], ids=[r[0] for r in FIGURE_ROWS])
def test_a_figure_with_the_common_subset_reads_and_looks_as_with_its_own(generator, seed, monkeypatch, tmp_path):
    import shutil

    spec = _spec(generator, seed)
    monkeypatch.setattr(fontsubset, "subsets_remembered", contextlib.nullcontext)
    plain = figures._draw(spec, ["svg", "pdf"])  # matplotlib's own subset: the figure's glyphs alone
    monkeypatch.undo()
    fontsubset._SUBSETS.clear()
    first = figures._draw(spec, ["svg", "pdf"])  # the common subset made and kept
    again = figures._draw(spec, ["svg", "pdf"])  # and read back
    assert first == again and first["svg"] == plain["svg"]
    assert first["pdf"].startswith(b"%PDF") and b"FontFile2" in first["pdf"]
    if not (shutil.which("pdftotext") and shutil.which("pdftoppm")):
        pytest.skip("poppler-utils (pdftotext, pdftoppm) compare the two PDFs")
    assert _pdf_text_and_pages(first["pdf"], tmp_path, "common") == _pdf_text_and_pages(plain["pdf"], tmp_path, "own")


@pytest.fixture
def subsets_asked(monkeypatch):
    """The glyph sets matplotlib's PDF writer asks fontTools to subset from here on, the process's subsets cleared;
    the counting subsetter is ``subsets_asked.by``."""
    pdf_ps = _subsetter()
    made = pdf_ps.get_glyphs_subset

    class Asked(list):
        def by(self, fontfile, glyphs):
            self.append(frozenset(glyphs))
            return made(fontfile, glyphs)

    asked = Asked()
    monkeypatch.setattr(pdf_ps, "get_glyphs_subset", asked.by)
    fontsubset._SUBSETS.clear()
    return asked


@needs_subset_results
def test_figures_of_different_generators_share_one_subset_per_font(subsets_asked):
    for _id, generator, seed in FIGURE_ROWS:
        figures._draw(_spec(generator, seed), ["pdf"])
    assert len(subsets_asked) == 1, [len(g) for g in subsets_asked]  # one font (DejaVu Sans), one subset for all


@needs_subset_results
def test_the_same_glyphs_are_subset_once(subsets_asked):
    spec = _spec("figure_roofline_read", 3)
    figures._draw(spec, ["pdf"])
    figures._draw(spec, ["pdf"])
    assert len(subsets_asked) == len(set(subsets_asked)) >= 1  # the second drawing asked fontTools for nothing new
    assert _subsetter().get_glyphs_subset == subsets_asked.by  # put back after each save


def test_the_subsetter_is_put_back_and_other_shapes_left_alone(monkeypatch):
    pdf_ps = _subsetter()
    before = pdf_ps.get_glyphs_subset
    with fontsubset.subsets_remembered():
        inside = pdf_ps.get_glyphs_subset
    assert pdf_ps.get_glyphs_subset is before
    if hasattr(pdf_ps, "SubsetResults"):
        assert inside is not before and inside.remembers
    monkeypatch.delattr(pdf_ps, "SubsetResults", raising=False)  # an older matplotlib: nothing replaced
    with fontsubset.subsets_remembered():
        assert pdf_ps.get_glyphs_subset is before


# (id, LaTeX of a derivation row): one that fits a printed row, and one cut over several rows
PAGE_ROWS = [("short", "=", r"2 \cdot 8192 \cdot 32768"),
             ("long", "=", r" \cdot ".join(str(2 ** k + 1) for k in range(10, 40)))]


@pytest.mark.parametrize("rel,tex", [r[1:] for r in PAGE_ROWS], ids=[r[0] for r in PAGE_ROWS])
def test_page_rows_remembered_are_the_rows_worked_out(rel, tex):
    fresh = typeset._page_lines.__wrapped__(rel, tex)
    assert typeset._page_lines(rel, tex) == fresh
    assert typeset._page_lines(rel, tex) is typeset._page_lines(rel, tex)
    assert isinstance(fresh, tuple)  # shared between callers, so never a list one of them could change


def test_named_steps_are_worked_out_once_per_evaluation():
    problem = made_problem("transformer_flops", 1, "p1")
    evaluated = [a.evaluated for a in problem.answers if a.evaluated is not None]
    assert evaluated
    for ev in evaluated:
        first = typeset._named_steps(ev)
        assert typeset._named_steps(ev) is first
        assert [(st, str(expr), named) for st, expr, named in first] == \
            [(st, str(expr), named) for st, expr, named in typeset._steps_named(ev)]


def _plain_steps_named(ev) -> list[tuple]:
    """:func:`typeset._steps_named` as it was before its shapes were shared between problems: worked out whole
    for each evaluation (the second route of the rows below)."""
    names, values, labels, out = {}, [], set(), []
    for st in ev.steps:
        expr = st.step.expr
        shown = typeset._reuse(expr, names) if names and not expr.is_Atom else expr
        out.append((st, shown, tuple(values)))
        label = st.step.label
        if (not expr.is_Atom and st.is_numeric and label not in labels and expr not in names
                and typeset._NAME.match(label)):
            symbol = typeset._Named(label)
            names[expr] = symbol
            values.append((symbol, st.value))
        labels.add(label)
    return out


# (id, generator): derivations with named results reused in later steps (ceilings, Max), drawn at two seeds each
SHAPE_ROWS = [("choose-mesh", "training_choose_mesh"), ("superpod", "gpu_superpod"),
              ("min-topology", "inference_min_topology"), ("flops", "transformer_flops")]


@pytest.mark.parametrize("generator", [r[1] for r in SHAPE_ROWS], ids=[r[0] for r in SHAPE_ROWS])
def test_named_steps_shared_between_variants_are_those_worked_out_alone(generator):
    typeset._shapes.cache_clear()
    for seed in (1, 2):
        problem = made_problem(generator, seed, f"p{seed}")
        for ev in (a.evaluated for a in problem.answers if a.evaluated is not None):
            shared = typeset._steps_named(ev)
            alone = _plain_steps_named(ev)
            assert [(st, expr, named) for st, expr, named in shared] == alone
            assert [(st, sp_srepr(expr), named) for st, expr, named in shared] == \
                [(st, sp_srepr(expr), named) for st, expr, named in alone]  # the very same trees, not just equal


def sp_srepr(expr) -> str:
    import sympy

    return sympy.srepr(expr)


@needs_subset_results
def test_a_font_subset_read_back_from_the_persistent_cache_gives_the_same_pdf(tmp_path, monkeypatch):
    from scalemath import cache

    spec = _spec("figure_collective_read", 1)
    fontsubset._SUBSETS.clear()
    plain = figures._draw(spec, ["pdf"])["pdf"]  # the cache off (the fixture): made by fontTools
    monkeypatch.setenv("SCALEMATH_CACHE_DIR", str(tmp_path))
    cache._FOLDERS.clear()
    try:
        fontsubset._SUBSETS.clear()
        stored = figures._draw(spec, ["pdf"])["pdf"]  # made, and kept on disk
        (keyed,) = [p for p in tmp_path.iterdir() if p.is_dir()]  # one code key's folder, beside the entries' key
        assert (keyed / "fontsubset").is_dir() and any((keyed / "fontsubset").iterdir())
        fontsubset._SUBSETS.clear()
        pdf_ps = _subsetter()

        def refused(*args):
            raise AssertionError("fontTools asked again for a subset the cache holds")

        monkeypatch.setattr(pdf_ps, "get_glyphs_subset", refused)
        read_back = figures._draw(spec, ["pdf"])["pdf"]
    finally:
        cache._FOLDERS.clear()
    assert plain == stored == read_back


@pytest.mark.parametrize("value", [None, b"bytes alone", (b"font", {1: "2"}), ("font", {1: 2}), (b"font", [1, 2])],
                         ids=["missing", "not-a-pair", "map-of-text", "font-as-text", "map-as-list"])
def test_a_stored_subset_of_another_shape_is_a_miss(value, monkeypatch):
    from scalemath import cache

    monkeypatch.setattr(cache, "load", lambda kind, key: value)
    assert fontsubset._stored_subset(("font.ttf", 0, 1, 1, frozenset({3}))) is None


# (id, LaTeX, its width in em as the line breaker measured it before its sums skipped zeros (commit 3bbec50), the
# pieces at 8 em); the first by hand: digits 0.55 em but a narrow 1 (0.3), \cdot 1.4: 0.55 + 1.4 + 1.95 + 1.4 + 2.75
WIDTH_ROWS = [
    ("product", r"2 \cdot 8192 \cdot 32768", "161/20", [r"2", r"\cdot 8192", r"\cdot 32768"]),
    ("fraction", r"x = \frac{2 \cdot 8192 \cdot 32768 \cdot 2 \cdot 2 \cdot 4096}{1.97 \times 10^{14} \cdot 16}",
     "3229/200", ["x", "= 2", r"\cdot 8192", r"\cdot 32768", r"\cdot 2", r"\cdot 2", r"\cdot 4096/",
                  r"(1.97 \times 10^{14}", r"\cdot 16)"]),
    ("scripts", r"T_{\mathrm{step}} = \max\left(T_{\mathrm{math}}, T_{\mathrm{comms}}\right) + n_{\mathrm{dev}}^{2}",
     "376/25", [r"T_{\mathrm{step}}", r"= \max\left(T_{\mathrm{math}}, T_{\mathrm{comms}}\right)",
                r"+ n_{\mathrm{dev}}^{2}"]),
    ("tfrac-units", r"M = \mathrm{bytes}_{\mathrm{act}} + \mathrm{bytes}_{\mathrm{opt}} + \tfrac{1}{2} \cdot 1.01\,\mathrm{ms}",
     "4179/250", ["M", r"= \mathrm{bytes}_{\mathrm{act}}", r"+ \mathrm{bytes}_{\mathrm{opt}}", r"+ \tfrac{1}{2}",
                  r"\cdot 1.01\,\mathrm{ms}"]),
    ("narrow", r"il;:!|'()[]1 \approx 4.59 \times 10^{14}\,\mathrm{FLOP}/\mathrm{s}", "351/25",
     ["il;:!|'()[]1", r"\approx 4.59 \times 10^{14}\,\mathrm{FLOP}/", r"\mathrm{s}"]),
]


@pytest.mark.parametrize("tex,em,cut", [r[1:] for r in WIDTH_ROWS], ids=[r[0] for r in WIDTH_ROWS])
def test_the_line_breaker_measures_as_before(tex, em, cut):
    from fractions import Fraction

    from scalemath.values import mathsplit

    mathsplit._parsed.cache_clear()  # measured afresh, then read back from the atoms
    assert mathsplit.width(tex) == Fraction(em) == mathsplit.width(tex)
    assert mathsplit.pieces(tex, wide=8) == cut


@pytest.mark.parametrize("other", ["matplotlib=0.0 fonttools=4.0", "matplotlib=3.10.0 fonttools=0.0"],
                         ids=["other-matplotlib", "other-fonttools"])
def test_a_figure_drawn_by_other_drawing_libraries_is_drawn_again(tmp_path, monkeypatch, other):
    """The persistent figure cache names the matplotlib and fontTools versions: a drawing stored under others is
    a miss, and the figure is drawn afresh."""
    from scalemath import cache

    spec = _spec("figure_collective_read", 1)
    monkeypatch.setenv("SCALEMATH_CACHE_DIR", str(tmp_path))
    cache._FOLDERS.clear()
    drawn = []
    real = figures._draw
    monkeypatch.setattr(figures, "_draw", lambda s, fmts: drawn.append(tuple(fmts)) or real(s, fmts))
    try:
        figures._FILES.clear()
        first = figures.files(spec, ["svg"])  # drawn and stored under the installed versions
        figures._FILES.clear()
        assert figures.files(spec, ["svg"]) == first and drawn == [("svg",)]  # read back, not drawn
        monkeypatch.setattr(figures, "_drawing_libraries", lambda: other)
        figures._FILES.clear()
        assert figures.files(spec, ["svg"]) == first and drawn == [("svg",), ("svg",)]  # drawn again
    finally:
        cache._FOLDERS.clear()
        figures._FILES.clear()
