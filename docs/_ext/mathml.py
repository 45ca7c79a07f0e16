"""Sphinx's math rendered as MathML at build time (with latex2mathml, one of scalemath's own dependencies).

The pages then show their formulas offline, in any current browser, with no JavaScript and no download:
MathJax, Sphinx's default, is fetched from a CDN when a page is opened. A display block holds one
equation per paragraph (a blank line between them, as in ``.. math::``); a long formula scrolls sideways
instead of widening the page.
"""

from __future__ import annotations

import functools

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.errors import ExtensionError

__all__ = ["setup"]


@functools.lru_cache(maxsize=4096)  # the same symbols recur in every parameter table
def _mathml(latex: str, display: str) -> str:
    try:
        return convert(latex.strip(), display=display)
    except Exception as error:  # latex2mathml raises its own exception types: name the formula that failed
        raise ExtensionError(f"latex2mathml cannot read {latex!r}: {error}") from error


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_mathml(node.astext(), "inline"))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    parts = [part for part in node.astext().split("\n\n") if part.strip()]
    for part in parts:
        self.body.append(f'<div class="math-row">{_mathml(part, "block")}</div>')
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
