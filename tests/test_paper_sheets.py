"""Sheets printed and answered by hand (issue 28): ``generate --on-paper`` (or ``on_paper = true`` in the sheet's
TOML) puts lines to work on under each question and a box under each answer part, never mentions answers.json,
and keeps the points beside a long title; the digital sheet (the default) keeps its answers.json instructions."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from scalemath.cli import main

#: Generators with long titles, several answer parts, a choice and a formula answer.
GENERATORS = ("figure_roofline_read", "inference_kv_cache", "critical_intensity", "derive_all_to_all")


def _generate(out, *extra):
    args = ["problems", "generate", "--seed", "5", "--out", str(out), "--points", "10", "--name-line"]
    for g in GENERATORS:
        args += ["--generator", g]
    result = CliRunner().invoke(main, [*args, *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "manifest.json").read_text())


def _counts(manifest):
    answers = [a for p in manifest["problems"] for a in p["answers"]]
    return len(manifest["problems"]), sum(a.get("kind") != "choice" for a in answers), \
        sum(a.get("kind") == "choice" for a in answers)


@pytest.fixture(scope="module")
def sheets(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    paper = _generate(root / "paper", "--on-paper", "--format", "md,tex,html,json")
    digital = _generate(root / "digital", "--format", "md,tex,html,json")
    return root, paper, digital


def test_the_generators_give_what_the_tests_need(sheets):
    _, manifest, _ = sheets
    n, boxed, choices = _counts(manifest)
    kinds = {a.get("kind", "number") for p in manifest["problems"] for a in p["answers"]}
    assert n == len(GENERATORS) and choices >= 1 and "expression" in kinds and boxed >= 5
    assert max(len(p["title"]) for p in manifest["problems"]) > 55, "a title long enough to wrap"


# what each format marks: an answer box, the lines to work on, a title with its points beside it
MARKS = {
    "problems.tex": (r"\answerbox{", r"\worklines{", r"\subsection*{\parbox[t]"),
    "problems.html": ('<div class="box', '<div class="work">', '<h2 class="pointed">'),
    "problems.md": ("  Answer: \\_", "Working:", "## Problem"),
}


@pytest.mark.parametrize("name", sorted(MARKS), ids=["html", "md", "tex"])
def test_paper_sheet_has_a_box_per_answer_part_and_lines_per_question(sheets, name):
    root, manifest, _ = sheets
    text = (root / "paper" / name).read_text()
    box, work, heading = MARKS[name]
    n, boxed, _ = _counts(manifest)
    assert text.count(box) == boxed and text.count(work) == n and text.count(heading) == n
    assert "answers.json" not in text
    assert "circle" in text, "a choice is circled"


@pytest.mark.parametrize("name", sorted(MARKS), ids=["html", "md", "tex"])
def test_digital_sheet_keeps_its_answers_json_instructions(sheets, name):
    root, *_ = sheets
    text = (root / "digital" / name).read_text()
    box, work, _ = MARKS[name]
    assert "Write your answers in answers.json" in text and box not in text and work not in text


@pytest.mark.parametrize("mode", ["paper", "digital"])
def test_the_key_is_the_same_on_paper_and_digital(sheets, mode):
    root, paper, digital = sheets
    assert paper["problems"] == digital["problems"]
    for name in ("solutions.md", "solutions.tex", "solutions.html"):
        text = (root / mode / name).read_text()
        assert r"\answerbox{" not in text and '<div class="box' not in text


@pytest.mark.parametrize("toml,code,fragment", [
    ("on_paper = true\n", 0, ""),
    ("on_paper = 1\n", 2, "on_paper must be true or false"),
], ids=["config-on-paper", "config-not-bool"])
def test_on_paper_from_the_sheet_config(tmp_path, monkeypatch, toml, code, fragment):
    (tmp_path / "sheet.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["problems", "generate", "--generator", "critical_intensity", "--n", "1",
                                       "--format", "md", "--out", "s", "--config", "sheet.toml"])
    assert result.exit_code == code and fragment in result.output and "Traceback" not in result.output
    if code == 0:
        text = (tmp_path / "s" / "problems.md").read_text()
        assert "Answer: \\_" in text and "answers.json" not in text


# -- the PDF, as a teacher prints it -------------------------------------------------------------------------

#: (paper, page width in PostScript points): letter is 8.5 in, A4 210 mm; the sheets' margins are 2.2 cm.
PAGES = [("letter", 612), ("a4", 595.2756)]
MARGIN_PT = 2.2 / 2.54 * 72


def _pdftotext(pdf, *crop):
    return subprocess.run(["pdftotext", "-layout", *crop, str(pdf), "-"], capture_output=True, text=True,
                          timeout=60, check=True).stdout


@pytest.mark.skipif(not (shutil.which("pdflatex") and shutil.which("pdftotext")), reason="needs pdflatex and pdftotext")
@pytest.mark.parametrize("paper,width", PAGES, ids=[p for p, _ in PAGES])
def test_paper_pdf_keeps_inside_the_page_and_has_answer_space(tmp_path, paper, width):
    manifest = _generate(tmp_path / "s", "--on-paper", "--format", "pdf,json", "--paper", paper)
    pdf = tmp_path / "s" / "problems.pdf"
    full = _pdftotext(pdf)
    # only the text block, between the side margins (a point of slack): nothing may be cut off by the crop
    left, right = int(MARGIN_PT) - 1, int(width - MARGIN_PT) + 2
    inside = _pdftotext(pdf, "-x", str(left), "-y", "0", "-W", str(right - left), "-H", "2000")
    assert "".join(full.split()) == "".join(inside.split()), "text runs past a side margin"
    n, boxed, _ = _counts(manifest)
    assert "answers.json" not in full
    assert len(re.findall(r"^\s*Answer\s*$", full, re.M)) == boxed, "one labelled box per answer part"
    assert full.count("Working:") == n
    # every problem's points on its title's first line, however long the title
    for p in manifest["problems"]:
        line = next(x for x in full.splitlines() if f"Problem {p['number']}:" in x)
        assert re.search(r"\s10 points\s*$", line), line


@pytest.mark.skipif(not (shutil.which("pdflatex") and shutil.which("pdftotext")), reason="needs pdflatex and pdftotext")
@pytest.mark.parametrize("generators,paper", [
    (("critical_intensity", "derive_all_to_all"), "a4"),  # its Working: label once fell alone at a page's foot
    (GENERATORS, "letter"),
], ids=["a4-working-at-page-foot", "letter-four-problems"])
def test_working_lines_stay_with_their_label(tmp_path, generators, paper):
    args = ["problems", "generate", "--seed", "5", "--out", str(tmp_path / "s"), "--points", "10", "--name-line",
            "--on-paper", "--format", "pdf", "--paper", paper]
    for g in generators:
        args += ["--generator", g]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    pdf = tmp_path / "s" / "problems.pdf"
    bbox = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    found = 0
    for number, page in enumerate(re.findall(r"<page .*?</page>", bbox, re.S), start=1):
        words = [(float(y0), float(y1), w) for y0, y1, w in
                 re.findall(r'<word xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>', page)]
        for y0, y1, w in words:
            if w != "Working:":
                continue
            found += 1
            below = min((b0 for b0, _, _ in words if b0 > y1), default=10_000)
            rules = _rules(pdf, number, y1, below)
            assert rules == 5, f"page {number}: {rules} of the 5 working lines under their label"
    assert found == len(generators)


def _rules(pdf, page: int, top: float, bottom: float) -> int:
    """Long horizontal lines (a row of dark pixels over 80 % of the text width) on ``page`` between ``top``
    and ``bottom`` (PDF points from the top): the page drawn at 72 dpi in grey, one pixel a point."""
    raw = subprocess.run(["pdftoppm", "-gray", "-r", "72", "-f", str(page), "-l", str(page), str(pdf)],
                         capture_output=True, timeout=60, check=True).stdout
    magic, width, height, _maxval, pixels = raw.split(maxsplit=4)
    assert magic == b"P5"
    width, height = int(width), int(height)
    long_rows = [y for y in range(max(int(top), 0), min(int(bottom), height))
                 if sum(v < 128 for v in pixels[y * width:(y + 1) * width]) > 0.8 * (width - 2 * MARGIN_PT)]
    return sum(1 for k, y in enumerate(long_rows) if k == 0 or y != long_rows[k - 1] + 1)
