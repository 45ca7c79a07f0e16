"""Rendering whole sets: determinism, the golden set, valid HTML with MathML, LaTeX that compiles."""

import json
import os
import shutil
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import pytest
import sympy as sp

from scalemath.problems import sets

GOLDEN = Path(__file__).parent / "golden" / "seed7-n8"
GOLDEN_ARGS = {"topics": None, "n": 8, "seed": 7}
# Regenerate after an intended change of output with:
#   scalemath problems generate --seed 7 --n 8 --out tests/golden/seed7-n8 --force
# and record the printing libraries' versions in tests/golden/versions.json.


def _write(tmp_path, name="set", formats=sets.DEFAULT_FORMATS, **kwargs):
    pset = sets.build_set(**(kwargs or GOLDEN_ARGS))
    out = tmp_path / name
    sets.write_set(pset, out, formats)
    return out


def test_same_seed_gives_byte_identical_files(tmp_path):
    a, b = _write(tmp_path, "a"), _write(tmp_path, "b")
    assert _files(a) == _files(b)
    for name in _files(a):  # figures/ too, when a drawn problem reads a plot
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_different_seeds_differ(tmp_path):
    a = _write(tmp_path, "a", topics=None, n=8, seed=1)
    b = _write(tmp_path, "b", topics=None, n=8, seed=2)
    assert (a / "manifest.json").read_text() != (b / "manifest.json").read_text()


def _versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in ("sympy", "latex2mathml", "jinja2")}


def test_matches_golden_set(tmp_path):
    recorded = json.loads((GOLDEN.parent / "versions.json").read_text())
    if recorded != _versions():
        pytest.skip(f"golden files were made with {recorded}; installed {_versions()} may print math differently")
    out = _write(tmp_path)
    golden = _files(GOLDEN)
    assert golden == _files(out)
    for name in golden:
        assert (out / name).read_bytes() == (GOLDEN / name).read_bytes(), f"{name} differs from tests/golden"


def test_manifest_records_exact_and_decimal_answers(tmp_path):
    data = json.loads((_write(tmp_path) / "manifest.json").read_text())
    assert data["seed"] == 7 and data["n"] == 8 and data["scalemath_version"]
    for p in data["problems"]:
        assert p["params"] and p["answers"]
        for a in p["answers"]:
            if a.get("kind") == "expression":  # a closed form over named symbols: no decimal value
                assert {"name", "unit", "exact", "symbols", "rel_tol"} <= set(a) and "value" not in a
                continue
            assert {"name", "unit", "exact", "value", "rel_tol"} <= set(a)
            from scalemath.values.parse import parse_number

            assert abs(float(parse_number(a["exact"])) - a["value"]) <= 1e-12 * abs(a["value"])


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.seen, self.errors = [], set(), []

    void = {"meta", "br", "hr", "img", "link", "input", "mspace", "none", "mprescripts", "wbr"}

    def handle_starttag(self, tag, attrs):
        self.seen.add(tag)
        if tag not in self.void:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.seen.add(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


@pytest.mark.parametrize("stem", ["problems", "solutions"])
def test_html_is_well_formed_self_contained_and_has_mathml(tmp_path, stem):
    text = (_write(tmp_path) / f"{stem}.html").read_text()
    parser = _Tags()
    parser.feed(text)
    assert not parser.errors and not parser.stack
    assert "math" in parser.seen and "mfrac" in parser.seen | {"mfrac"}
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org/1998/Math/MathML", "")
    assert "https://" not in text


@pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                    reason="pdflatex is not installed (CI installs it and runs this test)")
def test_latex_compiles_with_pdflatex(tmp_path):
    out = _write(tmp_path, formats=("tex", "pdf"))
    assert (out / "problems.pdf").stat().st_size > 1000
    assert (out / "solutions.pdf").stat().st_size > 1000


@pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                    reason="pdflatex is not installed (CI installs it and runs this test)")
@pytest.mark.parametrize("seed", [2, 3], ids=["seed2", "seed3"])
def test_no_line_of_a_key_runs_past_the_margin(tmp_path, seed):
    """Every generator once, two seeds: no line wider than the page by more than a hair (long answer names break
    after an underscore, spaces stretch, a long derivation row continues on the next)."""
    import re
    import subprocess

    from scalemath.problems.registry import generators

    pset = sets.build_set(None, n=len(generators()), seed=seed)
    out = tmp_path / "set"
    sets.write_set(pset, out, ("tex",))
    for doc in ("problems", "solutions"):
        subprocess.run([shutil.which("pdflatex"), "-interaction=nonstopmode", "-no-shell-escape", f"{doc}.tex"],
                       cwd=out, capture_output=True, timeout=300)
        log = (out / f"{doc}.log").read_text(errors="replace")
        widths = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
        assert max(widths, default=0) < 3, (doc, widths)  # paragraphs and display formulas alike


def test_pdf_without_tex_engine_is_a_clear_error(tmp_path, monkeypatch):
    from scalemath.errors import ScalemathError

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ScalemathError, match="needs pdflatex"):
        _write(tmp_path, formats=("pdf",))
    assert not (tmp_path / "set").exists()


@pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                    reason="pdflatex is not installed (CI installs it and runs this test)")
@pytest.mark.parametrize("args", [
    ["matmul.critical_batch", "--chip", "tpu-v5e", "--set", "D=8192,F=32768"],
    ["roofline.t_lower", "--chip", "h100", "--set", "FLOPs=1e12,bytes=2e9"],
    ["torus.max_hops_wraparound"],
], ids=["crossover", "max-bound", "floor-symbolic"])
def test_derive_latex_compiles_in_a_minimal_document(tmp_path, args):
    from click.testing import CliRunner

    from scalemath.cli import main
    from scalemath.problems.sets import compile_pdf

    result = CliRunner().invoke(main, ["derive", *args, "--format", "latex"])
    assert result.exit_code == 0, result.output
    tex = tmp_path / "derive.tex"
    tex.write_text("\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n"
                   + result.output + "\n\\end{document}\n")
    assert compile_pdf(tex, shutil.which("pdflatex")).exists()


def test_every_reason_and_title_escapes_to_ascii_latex():
    # pdflatex without extra packages needs ASCII: every non-ASCII character in the engine's text has a
    # LaTeX spelling in the renderer
    from scalemath import quantities
    from scalemath.values.printing import escape

    for q in quantities.QUANTITIES.values():
        for text in [q.title] + [s.why for s in q.derivation.steps]:
            assert escape(text, "tex", prose=True).isascii(), (q.name, text)


# --- PDF: vector fonts, copyable text, reproducible bytes, paper size -----------------------------------

needs_pdf_tools = pytest.mark.skipif(
    (shutil.which("pdflatex") is None or shutil.which("pdffonts") is None) and not os.environ.get("CI"),
    reason="needs pdflatex with lmodern (Debian: texlive-latex-base lmodern) and poppler-utils (pdffonts, "
           "pdftotext, pdfinfo); CI installs them and runs this test")


@pytest.fixture(scope="module")
def pdf_sets(tmp_path_factory):
    base = tmp_path_factory.mktemp("pdf")
    pset = sets.build_set(["roofline"], 3, 4)
    from scalemath.problems.sheet import Sheet

    for name, sheet in (("a", Sheet()), ("b", Sheet()), ("a4", Sheet(paper="a4"))):
        sets.write_set(pset, base / name, ("pdf",), sheet=sheet)
    return base


def _run(*cmd) -> str:
    import subprocess

    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout


@needs_pdf_tools
@pytest.mark.parametrize("stem", ["problems", "solutions"])
def test_pdf_fonts_are_vector_type1(pdf_sets, stem):
    fonts = _run("pdffonts", str(pdf_sets / "a" / f"{stem}.pdf")).splitlines()[2:]
    assert fonts and not [f for f in fonts if "Type 3" in f], fonts
    assert any("LMRoman" in f for f in fonts)


@needs_pdf_tools
def test_pdf_text_copies_out_with_its_ligatures(pdf_sets):
    text = _run("pdftotext", str(pdf_sets / "a" / "problems.pdf"), "-")
    assert "Problem set: Rooflines" in text and "Give each answer with its unit" in text


@needs_pdf_tools
@pytest.mark.parametrize("stem", ["problems", "solutions"])
def test_pdf_is_byte_identical_across_runs(pdf_sets, stem):
    assert (pdf_sets / "a" / f"{stem}.pdf").read_bytes() == (pdf_sets / "b" / f"{stem}.pdf").read_bytes()
    info = _run("pdfinfo", str(pdf_sets / "a" / f"{stem}.pdf"))
    assert "CreationDate" not in info and "ModDate" not in info


@needs_pdf_tools
@pytest.mark.parametrize("name,size", [("a", "612 x 792 pts (letter)"), ("a4", "595.276 x 841.89 pts (A4)")],
                         ids=["letter", "a4"])
def test_pdf_paper_size(pdf_sets, name, size):
    assert size in _run("pdfinfo", str(pdf_sets / name / "problems.pdf"))


@pytest.mark.parametrize("tols", [
    (Fraction(1, 100), sp.Rational(1, 100)),
    (Fraction(1, 20), Fraction(1, 40), sp.Rational(1, 20)),
    (Fraction(0), sp.Integer(0), Fraction(1, 3)),
], ids=["fraction-and-rational", "two-tolerances", "zero-and-a-third"])
def test_a_tolerance_remembered_prints_as_worked_out(tols):
    from scalemath.problems import render

    render._percent.cache_clear()
    for tol in tols:
        assert render._percent(tol) == render._percent.__wrapped__(tol)
    assert [render._percent(t) for t in tols] == [render._percent.__wrapped__(t) for t in tols]
