r"""``derive --format latex`` fits a printed column: pdflatex sets long derivations in a two-column ``article``
with no line running into the margin, a short derivation stays one row per step, and the cuts never fall
inside a number or a fraction."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.values import display, mathsplit, texlines

needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                                    reason="pdflatex is not installed (CI installs it and runs this test)")

#: Long derivations: numbers substituted into sums of maxima, products of model sizes, fractions of many factors.
LONG = [
    pytest.param(["parallel.fsdp_tp.t_step", "--chip", "tpu-v5p", "--model", "llama3-70b", "--set", "X=16,Y=8,B=2048"],
                 id="fsdp-tp-step-numbers"),
    pytest.param(["parallel.fsdp_tp.t_step", "--chip", "tpu-v5p", "--model", "llama3-70b"], id="fsdp-tp-step-symbols"),
    pytest.param(["transformer.moe_params", "--model", "qwen3-235b-a22b"], id="qwen3-235b-a22b-params"),
    pytest.param(["inference.decode.t_comms_ep_gpu", "--chip", "h100", "--model", "qwen3-235b-a22b"],
                 id="decode-ep-comms"),
    pytest.param(["inference.decode.throughput_per_chip", "--chip", "h100", "--model", "qwen3-235b-a22b"],
                 id="decode-throughput"),
    pytest.param(["matmul.critical_batch", "--chip", "tpu-v5p"], id="critical-batch-exact"),
    pytest.param(["parallel.config.memory_per_device", "--chip", "h100", "--model", "qwen3-235b-a22b"],
                 id="config-memory"),
    pytest.param(["parallel.config.step_time", "--chip", "h100", "--model", "qwen3-235b-a22b"],
                 id="config-step-time-nested-fractions"),
]

#: Columns: (document class options and preamble that set \columnwidth, --latex-width).
COLUMNS = [
    pytest.param("", None, id="article-twocolumn-default-229.5pt"),
    pytest.param(r"\setlength{\textwidth}{492pt}", "241pt", id="wider-241pt"),
    pytest.param(r"\usepackage[a4paper]{geometry}\setlength{\textwidth}{452pt}", "221pt", id="narrower-221pt-as-a4paper"),
]


def _latex(args: list[str], width: str | None = None) -> str:
    extra = [] if width is None else ["--latex-width", width]
    result = CliRunner().invoke(main, ["derive", *args, "--format", "latex", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def _rows(tex: str) -> list[str]:
    r"""The rows of the ``align*``: split at ``\\`` outside braces (a stacked fraction's own ``\\`` are inside)."""
    body = tex.split("\\begin{align*}\n", 1)[1].rsplit("\n\\end{align*}", 1)[0]
    rows, depth, start, i = [], 0, 0, 0
    while i < len(body):
        if body[i] == "\\" and body.startswith("\\\\", i):
            if depth == 0:
                rows.append(body[start:i].strip())
                start = i + 2
            i += 2
            continue
        if body[i] == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(body[i], 0)
        i += 1
    rows.append(body[start:].strip())
    return rows


@needs_pdflatex
@pytest.mark.parametrize("preamble, width", COLUMNS)
def test_long_derivations_fit_a_two_column_article(tmp_path, preamble, width):
    """pdflatex's log has no Overfull \\hbox wider than 1 pt (nor any error) for every long derivation, in the
    column the output was cut for; the log's own \\columnwidth is the width asked for."""
    docs = [_latex(p.values[0], width) for p in LONG]
    tex = tmp_path / "paper.tex"
    tex.write_text("\\documentclass[twocolumn]{article}\n\\usepackage{amsmath}\n" + preamble + "\n"
                   "\\begin{document}\n\\typeout{COLUMN=\\the\\columnwidth}\n" + "\n\n".join(docs)
                   + "\n\\end{document}\n")
    run = subprocess.run([shutil.which("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
                          tex.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert run.returncode == 0, [line for line in log.splitlines() if line.startswith("!")]
    column = Fraction(re.search(r"COLUMN=([\d.]+)pt", log).group(1))
    assert column == display.parse_width(width) * 10
    widths = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert max(widths, default=0) <= 1, widths


SHORT = [
    pytest.param(["roofline.intensity", "--set", "FLOPs=1e12,bytes=2e9"], id="numbers"),
    pytest.param(["roofline.t_math", "--chip", "tpu-v5e", "--set", "FLOPs=1e12"], id="chip-and-numbers"),
    pytest.param(["matmul.critical_batch"], id="symbolic-five-steps"),
    pytest.param(["torus.max_hops_wraparound"], id="symbolic-floor"),
]


@pytest.mark.parametrize("args", SHORT)
def test_a_short_derivation_stays_one_row_per_step(args):
    """Each step is one row, exactly as with --latex-width none (no breaking)."""
    tex = _latex(args)
    assert tex == _latex(args, "none")
    assert not any(row.startswith("&") for row in _rows(tex)), tex


@pytest.mark.parametrize("args", LONG)
def test_the_cuts_never_split_a_number_or_a_fraction(args):
    r"""Every number of the unbroken output (``4.59 \times 10^{14}``, ``28672``) is whole in some row of the
    broken one, as often; every row's braces balance (a ``\frac`` is never left open); the output is broken."""
    whole, cut = _latex(args, "none"), _latex(args)
    rows = _rows(cut)
    assert len(rows) > len(_rows(whole))
    number = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?: \\times 10\^\{-?\d+\})?")
    assert sorted(number.findall(whole)) == sorted(n for row in rows for n in number.findall(row))
    for row in rows:
        depth = 0
        for ch in re.sub(r"\\.", "", row):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, row
        assert depth == 0, row
        assert row.count(r"\begin{gathered}") == row.count(r"\end{gathered}"), row
        assert row.count(r"\left") == row.count(r"\right"), row


@pytest.mark.parametrize("text, points", [
    ("241pt", Fraction(241)), ("229.5", Fraction(459, 2)), ("3.35in", Fraction(335, 100) * Fraction(7227, 100)),
    ("8.5cm", Fraction(85, 10) * Fraction(7227, 254)), ("24em", Fraction(240)), ("48ch", Fraction(240)),
], ids=["pt", "bare-points", "inches", "centimetres", "em", "digits"])
def test_widths_in_units(text, points):
    """A TeX point is 1/72.27 in (the TeXbook, ch. 10); an em and two digits are 10 pt in a 10 pt font."""
    assert display.parse_width(text) * 10 == points


@pytest.mark.parametrize("width", ["3furlongs", "-5pt", "0", "0.5pt", "3000pt", "1e9pt", "wide", "nan", "9" * 600],
                         ids=["unknown-unit", "negative", "zero", "too-narrow", "too-wide", "exponent", "a-word",
                              "nan", "600-digits"])
def test_a_bad_width_is_told_and_exits_2(width):
    result = CliRunner().invoke(main, ["derive", "roofline.t_lower", "--format", "latex", "--latex-width", width])
    assert result.exit_code == 2
    assert "--latex-width" in result.output and "241pt" in result.output
    assert "Traceback" not in result.output and len(result.output) < 300


def test_the_width_asked_for_is_kept():
    """Each cut line's TeX width (estimated, erring wide) is within the column asked for, less its margin."""
    for width in ("241pt", "180pt", "30em"):
        em = display.parse_width(width)
        for p in LONG:
            tex = _latex(p.values[0], width)
            rows = _rows(tex)
            labels = [row.split("&", 1)[0] for row in rows]
            label = max(mathsplit.width(x, tex_metrics=True) for x in labels)
            for row in rows:
                rhs = row.split("&", 1)[1]
                if r"\begin{gathered}" in rhs:
                    continue  # a stacked fraction's width is its widest line, which this sum cannot see
                assert label + mathsplit.width(rhs, tex_metrics=True) <= em * display.MARGIN + 1, (width, row)


def _read_back(tex: str) -> str:
    r"""The derivation's formulas with the layout taken out: rows, alignment, indents, the grown brackets
    (``\biggl(`` and ``\left(`` alike), a times sign that starts a line cut between two factors, and braces."""
    body = tex.split("\\begin{align*}\n", 1)[1].rsplit("\n\\end{align*}", 1)[0]
    for layout in ("\\\\", "&", r"\quad", "{}", r"\left", r"\right", r"\biggl", r"\biggr", r"\begin{gathered}",
                   r"\end{gathered}"):
        body = body.replace(layout, " ")
    body = re.sub(r"\\times(?! 10\^)", " ", body)  # not the times of 4.59 \times 10^{14}
    return re.sub(r"[\s{}]+", "", re.sub(r"\\,", "", body))  # an opened \left\lceil{...} loses its group's braces


@pytest.mark.parametrize("args", LONG)
def test_the_rows_read_as_the_unbroken_derivation(args):
    """Second route: with the layout taken out (a stacked fraction's gathered too), the cut rows are the
    formulas of --latex-width none, in order."""
    assert _read_back(_latex(args)) == _read_back(_latex(args, "none"))


@pytest.mark.parametrize("command", [
    ["derive", "parallel.fsdp_tp.t_step", "--chip", "tpu-v5p", "--model", "llama3-70b"],
    ["solve", "matmul.t_math", "--for", "B", "--equals", "1e-3", "--chip", "tpu-v5p", "--set", "D=8192,F=28672"],
], ids=["derive", "solve"])
def test_the_default_width_is_a_two_column_article(command):
    """No --latex-width is the same as 229.5pt, \\documentclass[twocolumn]{article}'s \\columnwidth."""
    run = CliRunner().invoke(main, [*command, "--format", "latex"])
    assert run.exit_code == 0, run.output
    assert run.output == CliRunner().invoke(main, [*command, "--format", "latex", "--latex-width", "229.5pt"]).output
    assert run.output != CliRunner().invoke(main, [*command, "--format", "latex", "--latex-width", "none"]).output


@pytest.mark.parametrize("tex, em, expected", [
    (r"4096 \cdot 14336 \cdot 3 + 2 \cdot 4096 \cdot 128 \cdot 40", 10,
     [r"4096 \cdot 14336 \cdot 3", r"+ 2 \cdot 4096 \cdot 128 \cdot 40"]),
    (r"2 B D + 4.59 \times 10^{14}\,\mathrm{param}", 1, ["2 B", r"\times D", r"+ 4.59 \times 10^{14}\,\mathrm{param}"]),
    (r"500\,\mathrm{FLOP}/\mathrm{byte} + 1.01\,\mathrm{ms}", 1,
     [r"500\,\mathrm{FLOP}/\mathrm{byte}", r"+ 1.01\,\mathrm{ms}"]),
    (r"\max\left(\frac{a + b}{c}, \frac{d}{e}\right)", 6,
     [r"\max\biggl( \frac{a + b}{c},", r"\frac{d}{e}\biggr)"]),
], ids=["sum-before-product", "never-after-a-number", "unit-stays-whole", "bracket-round-fractions-grows"])
def test_where_a_line_is_cut(tex, em, expected):
    """A + before a \\cdot; never between a number and what it multiplies or its unit, nor inside a unit;
    a bracket opened round fractions keeps their height."""
    assert texlines.lines(tex, em) == expected


@pytest.mark.parametrize("args, tall", [
    (["parallel.fsdp_tp.t_step", "--chip", "tpu-v5p", "--model", "llama3-70b", "--set", "X=16,Y=8,B=2048"], True),
    (["matmul.critical_batch"], False),
], ids=["tall", "short"])
def test_a_tall_derivation_says_to_allow_display_breaks(args, tall):
    """An align* never breaks across a column or page unless allowed; more rows than a column holds say so."""
    tex = _latex(args)
    assert (r"\allowdisplaybreaks" in tex) == tall
    assert (len(_rows(tex)) > display.TALL) == tall


@needs_pdflatex
@pytest.mark.parametrize("allow", [False, True], ids=["as-is-runs-off-the-column", "allowed-breaks-fits"])
def test_allowing_display_breaks_fits_a_tall_derivation(tmp_path, allow):
    """The 26 rows of FSDP + TP's step time run below a two-column article's column as they are, and fit once
    \\allowdisplaybreaks is in the preamble, as their comment says."""
    tex = tmp_path / "tall.tex"
    tex.write_text("\\documentclass[twocolumn]{article}\n\\usepackage{amsmath}" + ("\\allowdisplaybreaks" * allow)
                   + "\n\\begin{document}\n" + _latex(LONG[0].values[0]) + "\n\\end{document}\n")
    subprocess.run([shutil.which("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
                    tex.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = (tmp_path / "tall.log").read_text(errors="replace")
    assert ("Overfull \\vbox" in log) != allow
