"""What a user typed shows as typed in the Markdown sheets and keys; what a manifest holds shows as written in
the LMS exports. Neither ever becomes live markup.

GitHub, wikis and static site generators render the raw HTML, links and images of a Markdown file, so a title,
course, instructions paragraph or roster name goes through :func:`scalemath.values.printing.markdown_text`. Every case
here is rendered by markdown-it-py (CommonMark with raw HTML on, tables and strikethrough as on GitHub) and the HTML
is inspected: no element, event attribute or ``javascript:`` URL the text brought, no tag inside the user's own
block, and the block's text reads back exactly as typed. A manifest whose choices, descriptions, reasons and titles
were replaced by the same payloads is exported to Moodle XML, QTI 2.1, Canvas and PrairieLearn, and each format's
HTML fields are inspected the same way.
"""

from __future__ import annotations

import csv
import html
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scalemath.cli import main
from scalemath.values.printing import markdown_text

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (the test extra) renders the Markdown")

GENERATOR = "tpu_torus_hops"  # a number and a choice answer, no figure: quick to draw
#: elements that run code, load a document or change where links go: never in an export or a sheet
RUNNING = {"script", "iframe", "frame", "object", "embed", "style", "link", "meta", "base", "form", "svg", "math"}
BLOCKS = {"h1", "h2", "h3", "p", "li", "td", "th"}


def render(md: str) -> str:
    """``md`` as HTML, the way the most trusting renderer shows it: markdown-it-py refuses ``javascript:`` links
    by default, as GitHub does, but not every wiki or site generator does; here every URL is let through."""
    renderer = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    renderer.validateLink = lambda url: True
    return renderer.render(md)


class _Html(HTMLParser):
    """The elements of an HTML fragment and its blocks, ``[tag, text, tags inside]``, entities decoded."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.blocks: list[list] = []
        self._open: list | None = None
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag in BLOCKS:
            self._open = [tag, "", []]
            self.blocks.append(self._open)
        elif self._open is not None:
            self._open[2].append(tag)

    def handle_endtag(self, tag):
        if self._open is not None and tag == self._open[0]:
            self._open = None

    def handle_data(self, data):
        self._text.append(data)
        if self._open is not None:
            self._open[1] += data

    def text(self) -> str:
        """All the text, as a reader sees it."""
        return "".join(self._text)


def live(html_text: str, images: str = "") -> list[str]:
    """What in ``html_text`` could run or lead away: elements that run code, event attributes, ``javascript:`` (or
    ``data:``) URLs, and images other than the package's own (whose ``src`` starts with ``images``)."""
    found = []
    for tag, attrs in _Html(html_text).elements:
        if tag in RUNNING:
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on"):
                found.append(f"<{tag} {name}=>")
            if re.sub(r"[\s\x00-\x1f]", "", value or "").lower().startswith(("javascript:", "vbscript:", "data:")):
                found.append(f"<{tag} {name}={value}>")
        if tag == "img" and not (images and attrs.get("src", "").startswith(images)):
            found.append(f"<img src={attrs.get('src')}>")
    return found


def shown(text: str) -> str:
    """How ``text`` reads once escaped and rendered: on one line, without the spaces around it."""
    return "".join(c if c.isprintable() else " " for c in text).strip()


# -- markdown_text on its own: every payload in every place a user's text lands ------------------------------

HOSTILE = {
    "script": "<script>alert(1)</script>",
    "img-onerror": "<img src=x onerror=alert(1)>",
    "svg-onload": "<svg onload=alert(1)>",
    "iframe": '<iframe src="javascript:alert(1)"></iframe>',
    "raw-anchor": '<a href="javascript:alert(1)">x</a>',
    "html-comment": "<!-- hidden -->",
    "link-javascript": "[x](javascript:alert(1))",
    "image-javascript": "![x](javascript:alert(1))",
    "autolink": "<javascript:alert(1)>",
    "reference-definition": "[x]: javascript:alert(1)",
    "reference-use": "[x][y] [z]",
    "emphasis": "*Week* __3__ _x_ ***y***",
    "code-span": "`rm -rf /`",
    "code-fence": "```python",
    "heading": "# Heading ##",
    "heading-closing": "Problem set #",
    "bullet-dash": "- item",
    "bullet-plus": "+ item",
    "bullet-star": "* item",
    "ordered-dot": "1. item",
    "ordered-paren": "12) item",
    "thematic-break": "---",
    "setext": "===",
    "blockquote": "> quoted",
    "table-row": "| a | b |",
    "table-delimiter": "|---|---|",
    "entities": "&lt;b&gt; &amp; &#60;script&#62; &copy;",
    "math-and-strike": "$x$ ~~gone~~ ~one~",
    "backslashes": "a\\*b\\ \\\\ \\",
    "indented-code": "    four spaces",
    "newline-heading": "Ann\n# Heading\n<script>alert(1)</script>",
    "newline-list": "Ann\n- item\n\n1. item",
    "newline-html-block": "Ann\n<div onclick=alert(1)>x</div>",
    "tab-and-cr": "a\tb\rc",
    "everything": "<img src=x onerror=alert(1)> *Week* [x](javascript:alert(1)) `c` | # ~~s~~ $m$ &amp;",
}

#: Where a user's text lands in the templates: the Markdown around it, and the blocks it must render as.
PLACES = {
    "heading": ("# {}\n", [("h1", "{}")]),
    "line-start": ("{}\n", [("p", "{}")]),
    "mid-line": ("Name: {} Date:\n", [("p", "Name: {} Date:")]),
    "after-a-line": ("Some text\n{}\n", [("p", "Some text\n{}")]),
    "table-cell": ("| a | b |\n|---|---|\n| {} | x |\n", [("th", "a"), ("th", "b"), ("td", "{}"), ("td", "x")]),
}


def _rendered_blocks(text: str, place: str) -> tuple[list, list]:
    """The blocks ``text`` renders as in ``place``, and the blocks it must render as."""
    around, blocks = PLACES[place]
    html_text = render(around.format(markdown_text(text)))
    assert live(html_text) == [], html_text
    return _Html(html_text).blocks, [[tag, reads.format(shown(text)), []] for tag, reads in blocks]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_text_renders_as_typed(text, place):
    rendered, expected = _rendered_blocks(text, place)
    assert rendered == expected


ORDINARY = {
    "apostrophe-diaeresis": "Zoë O'Brien",
    "hyphen-umlaut-parens": "Anna-Lena Müller (TA)",
    "accents": "José María Núñez",
    "cjk": "李小龍",
    "course-and-term": "CS 329S, Spring 2025 (Section 1)",
    "exclamation": "Show your work. Calculators allowed!",
    "colon": "Week 3: rooflines",
    "decimal-start": "1.5 GB of HBM",
    "year-start": "2025 edition",
    "inner-dash": "TPU v5e - a pod",
    "quotes": 'the "book\'s" numbers',
    "ampersands": "Week 3 & 4, AT&T, R&D;",
}


@pytest.mark.parametrize("text", ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_text_is_unchanged(text):
    assert markdown_text(text) == text
    assert _Html(render(text + "\n")).blocks == [["p", text, []]]


_MARKDOWN_ALPHABET = st.sampled_from(list("\\`*_{}[]()#+-.!|~$<>&=:/;'\" \t\naZ1ë0") + ["&lt;", "&#60;", "\u00a0"])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(_MARKDOWN_ALPHABET, max_size=30).map("".join), place=st.sampled_from(sorted(PLACES)))
def test_any_text_renders_as_typed(text, place):
    """Any string of Markdown's own characters reads back as typed, in its one block, without tags."""
    assume(shown(text))  # an empty paragraph is no paragraph
    rendered, expected = _rendered_blocks(text, place)
    assert rendered == expected


# -- the sheets and keys a teacher generates ---------------------------------------------------------------

SHEET_PAYLOADS = {k: HOSTILE[k] for k in (
    "script", "img-onerror", "iframe", "raw-anchor", "link-javascript", "image-javascript", "autolink",
    "reference-definition", "emphasis", "code-span", "heading", "bullet-dash", "ordered-dot", "thematic-break",
    "blockquote", "table-row", "entities", "math-and-strike", "backslashes", "everything")}
SHEET_PAYLOADS["ordinary"] = "Zoë O'Brien (TA)!"


def _generate(tmp_path: Path, text: str, name_line: bool, instructions: str | None = None) -> Path:
    """A set for a roster of two students named ``text``, with ``text`` as title, course and instructions."""
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["id", "name"], ["s1", text], ["s2", text]])
    config = tmp_path / "sheet.toml"
    config.write_text("".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in
                              {"title": text, "course": text, "instructions": instructions or text}.items()),
                      encoding="utf-8")
    out = tmp_path / "set"
    result = CliRunner().invoke(main, ["problems", "generate", "--generator", GENERATOR, "--seed", "1", "--jobs", "1",
                                       "--format", "md", "--students", str(roster), "--config", str(config),
                                       "--out", str(out), "--name-line" if name_line else "--no-name-line"])
    assert result.exit_code == 0, result.output
    return out


def _check_document(path: Path) -> list[list]:
    html_text = render(path.read_text(encoding="utf-8"))
    assert live(html_text, images="figures/") == [], (path, html_text)
    return _Html(html_text).blocks


@pytest.mark.parametrize("text", SHEET_PAYLOADS.values(), ids=SHEET_PAYLOADS.keys())
def test_sheets_and_key_show_user_text_as_typed(tmp_path, text):
    out = _generate(tmp_path, text, name_line=True)
    typed = shown(text)
    for student in ("s1", "s2"):
        blocks = _check_document(out / "sheets" / student / "problems.md")
        assert blocks[0] == ["h1", typed, []]  # the title
        assert blocks[1] == ["p", typed, []]  # the course
        assert ["p", f"Name: {typed} Date: ____________", []] in blocks
        assert blocks.index(["p", typed, []], 2) > blocks.index(["p", f"Name: {typed} Date: ____________", []])
    blocks = _check_document(out / "solutions.md")
    assert blocks[:2] == [["h1", f"{typed}: answer key", []], ["p", typed, []]]
    assert ["h1", f"Variant s1: {typed}", []] in blocks and ["h1", f"Variant s2: {typed}", []] in blocks


@pytest.mark.parametrize("text", [HOSTILE[k] for k in ("script", "link-javascript", "heading", "everything")],
                         ids=["script", "link-javascript", "heading", "everything"])
def test_sheet_without_name_line_names_the_student_as_typed(tmp_path, text):
    out = _generate(tmp_path, text, name_line=False)
    assert ["p", f"For {shown(text)}", []] in _check_document(out / "sheets" / "s1" / "problems.md")


INSTRUCTIONS = {
    "lines-of-blocks": ("Show work.\n# not a heading\n- not a list\n> not a quote\n<script>alert(1)</script>",
                        ["Show work. # not a heading - not a list > not a quote <script>alert(1)</script>"]),
    "two-paragraphs": ("First [x](javascript:alert(1)).\n\n  <img src=x onerror=alert(1)> second.",
                       ["First [x](javascript:alert(1)).", "<img src=x onerror=alert(1)> second."]),
    "table": ("| a | b |\n|---|---|\n| 1 | 2 |", ["| a | b | |---|---| | 1 | 2 |"]),
}


@pytest.mark.parametrize("instructions, paragraphs", INSTRUCTIONS.values(), ids=INSTRUCTIONS.keys())
def test_instructions_keep_their_paragraphs_and_nothing_else(tmp_path, instructions, paragraphs):
    """A blank line still separates paragraphs; a line break inside one is a space, so no line starts a block."""
    out = _generate(tmp_path, "Week 3", name_line=False, instructions=instructions)
    blocks = _check_document(out / "sheets" / "s1" / "problems.md")
    start = blocks.index(["p", "For Week 3", []]) + 1
    assert blocks[start:start + len(paragraphs)] == [["p", p, []] for p in paragraphs]


# -- a tampered manifest exported to an LMS -----------------------------------------------------------------

EXPORT_PAYLOADS = {
    "script": "<script>alert(1)</script>",
    "img-onerror": "<img src=x onerror=alert(1)>",
    "raw-anchor": '<a href="javascript:alert(1)">x</a>',
    "iframe": '<iframe src="javascript:alert(1)"></iframe>',
    "entities": "&lt;b&gt; &amp; caf&eacute;",
    "cloze-syntax": '}#~/"\\ {1:SHORTANSWER:=x} {2:NUMERICAL:=1}',
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Manifests of a plain set and of a set with two variants: a choice, numbers and a formula answer."""
    out = {}
    for name, extra in (("plain", []), ("variants", ["--variants", "2"])):
        folder = tmp_path_factory.mktemp(name) / "set"
        result = CliRunner().invoke(main, ["problems", "generate", "--generator", GENERATOR, "--generator",
                                           "derive_backward_comms", "--seed", "2", "--jobs", "1", "--format", "json",
                                           "--out", str(folder), *extra])
        assert result.exit_code == 0, result.output
        out[name] = json.loads((folder / "manifest.json").read_text())
    return out


def _tampered(doc: dict, text: str) -> dict:
    """``doc`` with ``text`` in every title, description, choice, student and reason a manifest holds; every number
    answer gets an accepted alternative (its own value) with ``text`` as its reason."""
    doc = json.loads(json.dumps(doc))
    variants = doc.get("variants") or [{"problems": doc["problems"]}]
    for v in variants:
        if "id" in v:
            v["student"] = text
        for p in v["problems"]:
            p["title"] = text
            for a in p["answers"]:
                a["description"] = text
                if a.get("choices"):
                    a["choices"] = [f"{text} ({i})" for i in range(len(a["choices"]))]
                for alt in a.get("accept", []):
                    alt["why"] = text
                if a.get("symbols"):
                    a["symbols"] = {name: text for name in a["symbols"]}
                if a.get("kind", "number") == "number":
                    a["accept"] = [{"exact": a["exact"], "why": text}]
    return doc


def _export(tmp_path: Path, doc: dict, fmt: str) -> Path:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / f"export-{fmt}"
    result = CliRunner().invoke(main, ["problems", "export", str(manifest), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


_CLOZE_ESCAPE = re.compile(r"\\(.)")
_CLOZE_FIELD = re.compile(r"\{1:(?:NUMERICAL|MULTICHOICE|SHORTANSWER):(?:\\.|[^\\}])*\}")


@pytest.mark.parametrize("text", EXPORT_PAYLOADS.values(), ids=EXPORT_PAYLOADS.keys())
def test_moodle_html_fields_show_manifest_text_as_written(tmp_path, generated, text):
    quiz = ET.fromstring(_export(tmp_path, _tampered(generated["plain"], text), "moodle").read_bytes())
    fields = [el.findtext("text") or "" for el in quiz.iter() if el.get("format") in ("html", "moodle_auto_format")]
    for field in fields:
        assert live(field, images="@@PLUGINFILE@@/") == [], field
    feedback, graders = [], []
    for q in quiz.iter("question"):
        kind = q.get("type")
        if kind in ("numerical", "multichoice", "essay"):
            prompts = [b[1] for b in _Html(q.findtext("questiontext/text")).blocks if b[2] == ["strong"]]
            assert prompts[0].startswith(text), prompts
        answers = [(_Html(a.findtext("text")).text(), _Html(a.findtext("feedback/text")).text())
                   for a in q.findall("answer")]
        if kind == "multichoice":
            assert [t for t, _ in answers] == [f"{text} ({i})" for i in range(len(answers))]
        feedback += [f for _, f in answers]
        graders.append(_Html(q.findtext("graderinfo/text") or "").text())
    assert f"Accepted: {text}" in feedback
    # the formula's four symbols and its accepted alternative's reason, in the grader's information
    assert any(f"Symbols: D ({text})" in g and g.count(f"({text})") == 5 for g in graders), graders


@pytest.mark.parametrize("text", EXPORT_PAYLOADS.values(), ids=EXPORT_PAYLOADS.keys())
def test_moodle_cloze_shows_manifest_text_as_written(tmp_path, generated, text):
    doc = generated["variants"]
    quiz = ET.fromstring(_export(tmp_path, _tampered(doc, text), "moodle").read_bytes())
    clozes = [q for q in quiz.iter("question") if q.get("type") == "cloze"]
    # problem by problem, variant by variant: the order of the questions in their categories
    answers = [len(v["problems"][i]["answers"]) for i in range(doc["n"]) for v in doc["variants"]]
    assert len(clozes) == len(answers)
    inside, outside = "", ""
    for q, count in zip(clozes, answers):
        body = q.findtext("questiontext/text")
        assert live(body, images="@@PLUGINFILE@@/") == [], body
        # one field per answer, however many braces the manifest's text holds (a field ends at its first
        # unescaped closing brace, as Moodle reads it)
        assert len(_CLOZE_FIELD.findall(body)) == count, body
        # Moodle reads a field's escapes, then shows its text as HTML
        inside += "".join(html.unescape(_CLOZE_ESCAPE.sub(r"\1", f)) for f in _CLOZE_FIELD.findall(body))
        outside += _Html(_CLOZE_FIELD.sub("", body)).text()
    assert f"{text} (0)" in inside and f"#Accepted: {text}" in inside and f"{text}:" in outside


def _qti_elements(data: bytes):
    for el in ET.fromstring(data).iter():
        yield el.tag.rpartition("}")[2], el


@pytest.mark.parametrize("text", EXPORT_PAYLOADS.values(), ids=EXPORT_PAYLOADS.keys())
def test_qti21_items_show_manifest_text_as_written(tmp_path, generated, text):
    with zipfile.ZipFile(_export(tmp_path, _tampered(generated["variants"], text), "qti")) as z:
        items = [z.read(n) for n in z.namelist() if n.startswith("items/")]
    seen = []
    for data in items:
        for tag, el in _qti_elements(data):
            assert tag not in RUNNING, tag
            assert not [name for name in el.attrib if name.rpartition("}")[2].startswith("on")], el.attrib
            if tag == "img":
                assert el.get("src", "").startswith("../images/"), el.attrib
            seen += [el.text or "", *el.attrib.values()]
    assert f"{text} (0)" in seen and f"{text}:" in [s.strip() for s in seen]


@pytest.mark.parametrize("text", EXPORT_PAYLOADS.values(), ids=EXPORT_PAYLOADS.keys())
def test_canvas_html_fields_show_manifest_text_as_written(tmp_path, generated, text):
    with zipfile.ZipFile(_export(tmp_path, _tampered(generated["variants"], text), "canvas")) as z:
        quizzes = [z.read(n) for n in z.namelist() if n.endswith(".xml") and "/" in n and "assessment_meta" not in n]
    assert quizzes
    plain, shown_html = [], []
    for data in quizzes:
        for tag, el in _qti_elements(data):
            if tag != "mattext":
                continue
            if el.get("texttype") == "text/html":
                assert live(el.text or "", images="%24IMS-CC-FILEBASE%24/images/") == [], el.text
                shown_html.append(_Html(el.text or "").text())
            else:
                assert el.get("texttype") == "text/plain"
                plain.append(el.text or "")
    assert any(f"{text}:" in s for s in shown_html) and f"{text} (0)" in plain


@pytest.mark.parametrize("text", EXPORT_PAYLOADS.values(), ids=EXPORT_PAYLOADS.keys())
def test_prairielearn_labels_show_manifest_text_as_written(tmp_path, generated, text):
    """A label goes into question.html unescaped by Mustache ({{{label}}}): it must be HTML already."""
    out = _export(tmp_path, _tampered(generated["variants"], text), "prairielearn")
    servers = sorted(out.glob("*/server.py"))
    assert servers
    for server in servers:
        variants = json.loads(re.search(r'VARIANTS = json.loads\(r"""(.*?)"""\)', server.read_text(), re.S).group(1))
        for a in (a for v in variants for a in v["answers"]):
            assert live(a["label"]) == [] and _Html(f"<p>{a['label']}</p>").text().startswith(text)
