"""Problems with figures: the two plot-reading generators against numbers from outside the engine, and a
set with figures in every format (Markdown links, LaTeX that compiles, HTML that shows the image, LMS
exports), byte-identical across runs and processes, replaced by --force and refused once a figure is edited."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp

from scalemath.errors import OutputExistsError
from scalemath.problems import figures, sets
from scalemath.problems.lms import export
from scalemath.problems.registry import get_generator

PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(PDFLATEX is None and not os.environ.get("CI"),
                                    reason="pdflatex is not installed (CI installs it and runs this test)")
GENERATORS = ["figure_roofline_read", "figure_collective_read"]
SEED = 11


def _roofline_params(chip, b_a, d_a, f_a, b_b, d_b, f_b):
    return {"chip": chip, "dtype": "bf16", "model_a": "a", "B_a": b_a, "D_a": d_a, "F_a": f_a, "model_b": "b",
            "B_b": b_b, "D_b": d_b, "F_b": f_b, "x_lo": 3, "x_hi": 12, "I_a": 0, "I_b": 0}


# Hand counts: a bf16 matmul moves 2BD + 2DF + 2BF bytes for 2BDF FLOPs.
# H100 SXM datasheet: 989.5e12 bf16 FLOP/s (the catalog's 990e12), 3.35e12 B/s HBM: ridge 295.5 FLOP/B.
# B=64, D=4096, F=14336: 2*64*4096*14336 / (2*(64*4096 + 4096*14336 + 64*14336)) = 62.740 FLOP/B,
#   below the ridge: 3.35e12 * 62.740 = 2.1018e14 FLOP/s.
# B=2048, D=8192, F=28672: intensity 1549.8 FLOP/B, above the ridge: the peak 9.9e14.
# TPU v5e (tpus.md): 1.97e14 FLOP/s, 8.2e11 B/s: ridge 240.2 FLOP/B; B=16, D=4096, F=11008: 15.915 FLOP/B,
#   8.2e11 * 15.915 = 1.3050e13; B=64, D=8192, F=28672: 63.364 FLOP/B, 5.1958e13 FLOP/s.
ROOFLINE_ROWS = [
    ("h100-one-each-side", _roofline_params("h100", 64, 4096, 14336, 2048, 8192, 28672),
     {"ridge": 295.52, "compute_bound": 2, "attainable_a": 2.1018e14, "attainable_b": 9.9e14}),
    ("v5e-both-memory-bound", _roofline_params("tpu-v5e", 16, 4096, 11008, 64, 8192, 28672),
     {"ridge": 240.24, "compute_bound": 0, "attainable_a": 1.3050e13, "attainable_b": 5.1958e13}),
]


@pytest.mark.parametrize("params,expected", [r[1:] for r in ROOFLINE_ROWS], ids=[r[0] for r in ROOFLINE_ROWS])
def test_roofline_reading_keys(params, expected):
    answers = {a.name: a for a in get_generator("figure_roofline_read").solve(params)}
    assert int(answers["compute_bound"].value) == expected.pop("compute_bound")
    for name, value in expected.items():
        assert float(answers[name].value) == pytest.approx(value, rel=1e-4), name
        assert answers[name].rel_tol == Fraction(1, 10)  # the reading tolerance the statement states


# sharding.md, 'A note on latency': an AllGather on a ring of 16 v5e chips is latency-bound below about
# 720 kB (t_hop = 1 us, 4.5e10 B/s per link one way, both ways: 16 * 1e-6 * 4.5e10). Its floor is
# 16/2 hops of 1 us = 8 us; 4 MiB over 9e10 B/s takes 46.60 us. TPU v4p: the same link and hop, 4 chips:
# 4 * 1e-6 * 4.5e10 = 180 kB, floor 2 us; 2 MiB takes 23.30 us.
COLLECTIVE_ROWS = [
    ("v5e-16", {"chip": "tpu-v5e", "N": 16, "x_lo": 14, "x_hi": 23, "V_asked": 2**15, "V_big": 2**22},
     {"crossover": 720_000, "floor": 8e-6, "regime": 0, "time_big": 4.66034e-5}),
    ("v4p-4", {"chip": "tpu-v4p", "N": 4, "x_lo": 13, "x_hi": 22, "V_asked": 2**20, "V_big": 2**21},
     {"crossover": 180_000, "floor": 2e-6, "regime": 1, "time_big": 2.33017e-5}),
]


@pytest.mark.parametrize("params,expected", [r[1:] for r in COLLECTIVE_ROWS], ids=[r[0] for r in COLLECTIVE_ROWS])
def test_collective_reading_keys(params, expected):
    answers = {a.name: a for a in get_generator("figure_collective_read").solve(params)}
    assert int(answers["regime"].value) == expected.pop("regime")
    for name, value in expected.items():
        assert float(answers[name].value) == pytest.approx(value, rel=1e-5), name


@pytest.mark.parametrize("name", GENERATORS)
def test_figure_does_not_print_the_answer(name):
    """No ridge or crossover mark, no shaded regime: the student reads the kink off the line."""
    problem = sets.build_set(generator_names=[name], n=1, seed=SEED).problems[0]
    fig = figures.build(figures.spec_for(problem))
    (panel,) = fig.panels
    assert not panel.spans and all(m.kind == "op" for m in panel.marks)
    assert {m.label for m in panel.marks} <= {"op A", "op B"}
    # the line still passes through the key's exact kink: it is one of the plotted points
    kink = problem.answer("ridge" if name == "figure_roofline_read" else "crossover").value
    assert any(sp.nsimplify(x) == kink for x in panel.series[0].x)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("figs")
    formats = ["md", "tex", "html", "json"] + (["pdf"] if PDFLATEX else [])
    pset = sets.build_set(generator_names=GENERATORS, n=2, seed=SEED)
    sets.write_set(pset, root / "a", formats)
    return root, pset, formats


def _figure_files(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "figures").iterdir())


def test_figures_in_every_format(written):
    root, pset, _ = written
    out = root / "a"
    names = [figures.figure_name(p) for p in pset.problems]
    assert _figure_files(out) == sorted(f"{n}.{ext}" for n in names for ext in ("pdf", "svg"))
    for doc in ("problems", "solutions"):
        md = (out / f"{doc}.md").read_text()
        links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.svg)\)", md)
        assert sorted(links) == sorted(f"figures/{n}.svg" for n in names)
        tex = (out / f"{doc}.tex").read_text()
        assert "\\usepackage{graphicx}" in tex
        assert sorted(re.findall(r"\\includegraphics\[[^]]*\]\{(figures/[^}]+)\}", tex)) == \
            sorted(f"figures/{n}.pdf" for n in names)
        page = (out / f"{doc}.html").read_text()
        assert "figures/" not in page  # the page stays self-contained
        images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
        assert len(images) == 2
        for data in images:
            assert ET.fromstring(base64.b64decode(data)).tag.endswith("svg")
    for p in pset.problems:
        svg = (out / "figures" / f"{figures.figure_name(p)}.svg").read_bytes()
        assert ET.fromstring(svg).tag.endswith("svg")
        assert (out / "figures" / f"{figures.figure_name(p)}.pdf").read_bytes().startswith(b"%PDF-")
    listed = json.loads((out / sets.MARKER).read_text())["files"]
    assert {f"figures/{n}" for n in _figure_files(out)} <= set(listed)


def test_a_set_without_figures_is_unchanged(written):
    """No graphicx, no figures folder, for the sets that have no figure."""
    root, _, _ = written
    pset = sets.build_set(generator_names=["critical_intensity"], n=1, seed=SEED)
    sets.write_set(pset, root / "plain", ["md", "tex"])
    assert not (root / "plain" / "figures").exists()
    assert "graphicx" not in (root / "plain" / "problems.tex").read_text()


@needs_pdflatex
def test_latex_compiles_with_the_figures(written):
    root, _, _ = written
    for doc in ("problems", "solutions"):
        pdf = root / "a" / f"{doc}.pdf"
        assert pdf.read_bytes().startswith(b"%PDF-")
        if shutil.which("pdftoppm"):  # the first page shows the first figure: its line's blue (#1f77b4) is drawn
            assert _blue_pixels(pdf) > 30  # a page of text alone has none


def _blue_pixels(pdf: Path) -> int:
    """Pixels of page 1 (at 40 dpi) within a few levels of matplotlib's first colour, #1f77b4."""
    ppm = subprocess.run(["pdftoppm", "-r", "40", "-f", "1", "-l", "1", str(pdf)], capture_output=True,
                         check=True).stdout
    fields = ppm.split(maxsplit=4)  # P6, width, height, maxval, pixels
    assert fields[0] == b"P6"
    pixels = fields[4]
    return sum(1 for i in range(0, len(pixels) - 2, 3)
               if abs(pixels[i] - 0x1F) < 40 and abs(pixels[i + 1] - 0x77) < 40 and abs(pixels[i + 2] - 0xB4) < 40)


def test_byte_identical_across_runs_and_processes(written):
    root, pset, formats = written
    again = sets.build_set(generator_names=GENERATORS, n=2, seed=SEED)
    sets.write_set(again, root / "b", formats)
    first = sorted(p.relative_to(root / "a") for p in (root / "a").rglob("*") if p.is_file())
    second = sorted(p.relative_to(root / "b") for p in (root / "b").rglob("*") if p.is_file())
    assert first == second
    for rel in first:
        assert (root / "a" / rel).read_bytes() == (root / "b" / rel).read_bytes(), rel
    # the drawing itself, in a fresh process (the one above reuses this process's drawings)
    problem = pset.problems[1]
    code = ("import sys; from scalemath.problems import figures, sets\n"
            f"p = sets.build_set(generator_names={GENERATORS!r}, n=2, seed={SEED}).problems[1]\n"
            "sys.stdout.buffer.write(figures.file_bytes(figures.spec_for(p), 'svg'))")
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    assert fresh == (root / "a" / "figures" / f"{figures.figure_name(problem)}.svg").read_bytes()


@pytest.mark.parametrize("generator", GENERATORS)
def test_a_figure_drawn_alone_is_the_one_drawn_with_the_other_format(generator):
    """A set draws each figure once for all its formats (one layout); a run that needs only one format, or finds
    the other in the cache, must write the same bytes."""
    spec = figures.spec_for(sets.build_set(generator_names=[generator], n=1, seed=SEED).problems[0])
    together = figures._draw(spec, ["svg", "pdf"])
    assert figures._draw(spec, ["pdf"]) == {"pdf": together["pdf"]}
    assert figures._draw(spec, ["svg"]) == {"svg": together["svg"]}


@pytest.mark.parametrize("generator", GENERATORS)
def test_a_figures_pdf_embeds_its_font_once_as_truetype(generator):
    """Type 42 (TrueType), not Type 3; one copy of DejaVu Sans (a ligature or a character past Latin-1 made
    matplotlib embed and subset a second one)."""
    spec = figures.spec_for(sets.build_set(generator_names=[generator], n=1, seed=SEED).problems[0])
    pdf = figures._draw(spec, ["pdf"])["pdf"]
    assert pdf.count(b"/FontFile2") == 1 and b"/Type3" not in pdf
    assert len(re.findall(rb"/BaseFont /[A-Z]{6}\+DejaVuSans\b", pdf)) >= 1


def test_force_replaces_a_set_with_figures_and_refuses_an_edited_figure(written):
    root, pset, _ = written
    out = root / "forced"
    sets.write_set(pset, out, ["md", "json"])
    assert sets.write_set(pset, out, ["md", "json"]).unchanged  # the same set again: nothing to write
    with pytest.raises(OutputExistsError, match="already holds a different set"):
        sets.write_set(pset, out, ["md", "json", "html"])
    sets.write_set(pset, out, ["md", "json"], force=True)  # a set with figures replaced whole
    assert _figure_files(out) == sorted(f"{figures.figure_name(p)}.svg" for p in pset.problems)
    edited = out / "figures" / f"{figures.figure_name(pset.problems[0])}.svg"
    edited.write_bytes(edited.read_bytes().replace(b"</svg>", b"<!-- mine --></svg>"))
    with pytest.raises(OutputExistsError, match=r"figures/.*\.svg changed"):
        sets.write_set(pset, out, ["md", "json"], force=True)
    assert b"<!-- mine -->" in edited.read_bytes()  # left alone


@needs_pdflatex
def test_pdf_alone_keeps_no_figure_files(written):
    """--format pdf: the PDFs carry their figures; the files pdflatex read are not left behind."""
    root, _, _ = written
    pset = sets.build_set(generator_names=["figure_roofline_read"], n=1, seed=SEED)
    sets.write_set(pset, root / "pdfonly", ["pdf"])
    assert sorted(p.name for p in (root / "pdfonly").iterdir()) == [sets.MARKER, "problems.pdf", "solutions.pdf"]


def test_variants_each_sheet_links_its_own_figures(written):
    root, _, _ = written
    pset = sets.build_set(generator_names=["figure_roofline_read"], n=1, seed=SEED, variants=2)
    sets.write_set(pset, root / "v", ["md", "json"])
    names = set()
    for v in pset.variants:
        sheet = root / "v" / "sheets" / v.id
        (link,) = re.findall(r"\]\((figures/[^)]+)\)", (sheet / "problems.md").read_text())
        assert (sheet / link).is_file()  # the sheet folder can be handed out on its own
        names.add(link)
    assert len(names) == 2  # the variants' figures differ though their problem ids repeat
    for link in re.findall(r"\]\((figures/[^)]+)\)", (root / "v" / "solutions.md").read_text()):
        assert (root / "v" / link).is_file()


def test_lms_exports_embed_the_figure(written, tmp_path):
    root, _, _ = written
    manifest = root / "a" / "manifest.json"
    export(manifest, "moodle", tmp_path / "quiz.xml")  # Moodle's way: a <file> linked by @@PLUGINFILE@@
    quiz = ET.parse(tmp_path / "quiz.xml").getroot()
    # the figure is in each stem, written once: a problem's own question, or the description its parts follow
    texts = [q.find("questiontext") for q in quiz.iter("question") if q.get("type") != "category"
             and "<img" in q.findtext("questiontext/text")]
    assert texts and all(len(t.findall("file")) == 1 for t in texts)
    for t in texts:
        (attached,) = t.findall("file")
        assert f'src="@@PLUGINFILE@@/{attached.get("name")}"' in t.findtext("text")
        assert ET.fromstring(base64.b64decode(attached.text)).tag.endswith("svg")
    # QTI 2.1 and Canvas: the SVG a file of the package (Canvas drops data: URIs), linked and listed in the manifest
    export(manifest, "qti", tmp_path / "quiz.zip")
    with zipfile.ZipFile(tmp_path / "quiz.zip") as z:
        items = {n: z.read(n).decode() for n in z.namelist() if n.startswith("items/")}
        listed = {r.get("href"): [f.get("href") for f in r] for r in ET.fromstring(z.read("imsmanifest.xml")).iter()
                  if r.tag.endswith("}resource")}
        assert items and all("data:image" not in text for text in items.values())
        for name, text in items.items():
            (src,) = re.findall(r'<[^>]*img [^>]*src="\.\./(images/figure-[0-9a-f]{12}\.svg)"', text)
            assert ET.fromstring(z.read(src)).tag.endswith("svg")
            assert listed[name] == [name, src]
    export(manifest, "canvas", tmp_path / "canvas.zip")
    with zipfile.ZipFile(tmp_path / "canvas.zip") as z:
        quiz = next(z.read(n).decode() for n in z.namelist() if n.endswith(".xml") and "/" in n
                    and not n.endswith("assessment_meta.xml"))
        srcs = set(re.findall(r'src="%24IMS-CC-FILEBASE%24/(images/figure-[0-9a-f]{12}\.svg)"', html.unescape(quiz)))
        assert srcs and "data:image" not in quiz
        resources = [r for r in ET.fromstring(z.read("imsmanifest.xml")).iter() if r.tag.endswith("resource")]
        assert {r.get("href") for r in resources if r.get("type") == "webcontent"} == srcs
        assert all(ET.fromstring(z.read(src)).tag.endswith("svg") for src in srcs)
    export(manifest, "prairielearn", tmp_path / "pl")
    servers = list((tmp_path / "pl").rglob("server.py"))
    assert servers and all("data:image/svg+xml;base64," in s.read_text() for s in servers)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
except ImportError:  # pragma: no cover - the test extra installs it
    selenium = None


@pytest.mark.skipif((CHROMIUM is None or DRIVER is None or selenium is None) and not os.environ.get("CI"),
                    reason="needs chromium, chromedriver (Debian: apt-get install chromium chromium-driver) and "
                           "selenium (the test extra); CI installs them and runs this test")
def test_html_shows_the_figures(written):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    root, _, _ = written
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        driver.set_window_size(900, 1200)
        driver.get((root / "a" / "problems.html").as_uri())
        sizes = driver.execute_script(
            "return [...document.images].map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width,"
            " i.getBoundingClientRect().height]);")
    finally:
        driver.quit()
    assert len(sizes) == 2
    for complete, natural, width, height in sizes:
        assert complete and natural > 0 and width > 300 and height > 200  # drawn at a readable size
