"""A statement's block of list items ('1. ...' or '- ...' on every line) becomes the format's list: in HTML an
<ol>/<ul>, in LaTeX an enumerate/itemize; Markdown keeps its lines. Other blocks stay paragraphs, TeX's byte for byte."""

import pytest

from scalemath.problems.render import _paragraphs

NUMBERED = "Runs as follows:\n\n1. gather\n2. multiply\n\nThen:"
BULLETS = "Blocks:\n\n- block 1\n- block 2"


@pytest.mark.parametrize("fmt, text, expected", [
    pytest.param("html", NUMBERED, "<p>Runs as follows:</p>\n<ol><li>gather</li><li>multiply</li></ol>\n<p>Then:</p>",
                 id="html-numbered"),
    pytest.param("html", BULLETS, "<p>Blocks:</p>\n<ul><li>block 1</li><li>block 2</li></ul>", id="html-bullets"),
    pytest.param("tex", NUMBERED, "Runs as follows:\n\n\\begin{enumerate}\n\\item gather\n\\item multiply\n"
                 "\\end{enumerate}\n\nThen:", id="tex-numbered"),
    pytest.param("tex", BULLETS, "Blocks:\n\n\\begin{itemize}\n\\item block 1\n\\item block 2\n\\end{itemize}",
                 id="tex-bullets"),
    pytest.param("md", NUMBERED, NUMBERED, id="markdown-keeps-its-lines"),
    # not a list: one item alone, items mixed with prose, numbers mixed with bullets
    pytest.param("html", "1. only one", "<p>1. only one</p>", id="one-item-is-a-paragraph"),
    pytest.param("html", "1. first\nand prose", "<p>1. first\nand prose</p>", id="prose-line"),
    pytest.param("tex", "1. first\n- second", "1. first\n- second", id="mixed-kinds"),
    # TeX paragraphs are left exactly as the template wrote them, separators included
    pytest.param("tex", "a\n\n\n  b\n\n", "a\n\n\n  b\n\n", id="tex-untouched"),
])
def test_lists(fmt, text, expected):
    assert _paragraphs(fmt, text) == expected
