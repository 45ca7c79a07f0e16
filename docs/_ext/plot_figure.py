"""``.. scalemath-plot:: KIND OPTIONS...`` draws ``scalemath plot KIND OPTIONS... --out FILE.svg`` at build time
and shows the figure in the page: the same command a guide shows in its console example, so the picture is
exactly what a reader gets. The SVG is drawn into a temporary folder, read, and embedded as a data URI;
nothing is kept on disk. Builders other than HTML get the alt text.
"""

from __future__ import annotations

import base64
import html
import shlex
import tempfile
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

import sm_cli
from quantity_reference import HTML_BUILDERS

__all__ = ["setup"]


class ScalemathPlot(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"alt": directives.unchanged_required, "width": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        alt = self.options.get("alt", "a figure drawn by scalemath plot")
        if self.env.app.builder.name not in HTML_BUILDERS:
            return [nodes.paragraph(text=alt)]
        args = shlex.split(self.arguments[0])
        with tempfile.TemporaryDirectory(prefix="scalemath-docs-") as folder:
            out = Path(folder) / "figure.svg"
            sm_cli.run_ok(["plot", *args, "--out", str(out)])
            svg = out.read_bytes()
        uri = "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
        width = self.options.get("width", "100%")
        return [nodes.raw("", f'<figure class="sm-plot"><img src="{uri}" alt="{html.escape(alt)}" '
                              f'style="width: {html.escape(width)}; height: auto"></figure>\n', format="html")]


def setup(app):
    app.add_directive("scalemath-plot", ScalemathPlot)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
