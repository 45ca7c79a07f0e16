"""Rendering problem sets through jinja2: Markdown, LaTeX, HTML (MathML) and JSON.

Each generator has one template, ``templates/problems/<name>.j2``, with a
``statement`` and a ``solution`` block. Templates write prose and call the
display helpers below (``m``, ``dm``, ``num``, ``qty``, ``steps``, ``answer``);
they never compute. All math is written once, as LaTeX; the Markdown output
keeps it for GitHub math, the LaTeX output for pdflatex, and the HTML output
converts it to MathML so the page needs no network and no JavaScript.
"""

from __future__ import annotations

import functools
import html
import json
import re
from typing import Sequence

import jinja2
import sympy as sp
from latex2mathml.converter import convert as latex_to_mathml
from markupsafe import Markup

from .. import __version__, formatting
from ..hardware import default_catalog
from .model import Answer, Problem

__all__ = ["FORMATS", "render_document", "manifest", "render_problem"]

FORMATS = ("md", "tex", "html")

_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                "·": r"\(\cdot\)", "≪": r"\(\ll\)", "×": r"\(\times\)", "→": r"\(\to\)",
                "≈": r"\(\approx\)", "µ": r"\(\mu\)", "−": "-", "≤": r"\(\le\)", "≥": r"\(\ge\)",
                "α": r"\(\alpha\)", "β": r"\(\beta\)", "γ": r"\(\gamma\)", "τ": r"\(\tau\)",
                "²": r"\(^2\)", "³": r"\(^3\)", "≠": r"\(\ne\)", "∞": r"\(\infty\)"}
_TEX_RE = re.compile("|".join(re.escape(k) for k in _TEX_ESCAPES))


def _escape(fmt: str, text: str) -> str:
    if fmt == "tex":
        return _TEX_RE.sub(lambda m: _TEX_ESCAPES[m.group()], text)
    if fmt == "html":
        return html.escape(text, quote=True)
    return text.replace("*", r"\*").replace("_", r"\_")


class _Math:
    """The display helpers for one output format."""

    def __init__(self, fmt: str):
        self.fmt = fmt

    def inline(self, tex: str) -> Markup:
        if self.fmt == "html":
            return Markup(latex_to_mathml(tex, display="inline"))
        if self.fmt == "tex":
            return Markup(r"\(" + tex + r"\)")
        return Markup("$" + tex + "$")

    def display(self, tex: str) -> Markup:
        if self.fmt == "html":
            return Markup('<div class="eq">' + latex_to_mathml(tex, display="block") + "</div>")
        if self.fmt == "tex":
            return Markup("\\[\n" + tex + "\n\\]")
        return Markup("$$\n" + tex + "\n$$")

    def steps(self, answer: Answer, skip: int = 0) -> Markup:
        """The steps of the answer's derivation (after the first ``skip``, already shown):
        symbolic form = numbers substituted = value."""
        ev = answer.evaluated
        if ev is None:
            return Markup("")
        lines = []
        for st in ev.steps[skip:]:
            symbolic = formatting.latex(st.step.expr)
            parts = [("=", symbolic)]
            substituted = formatting.latex(st.step.expr, ev.given)
            if substituted != symbolic:
                parts.append(("=", substituted))
            if st.is_numeric:
                shown = formatting.latex_with_unit(st.value, st.step.unit)
                if shown != parts[-1][1]:
                    exact = formatting.shown_exactly(st.value, st.step.unit)
                    parts.append(("=" if exact else r"\approx", shown))
            lines.append(self.display(self._chain(st.step.label, parts))
                         + self.why(_escape(self.fmt, st.step.why)))
        return Markup("\n\n").join(lines)

    def _chain(self, label: str, parts: list[tuple[str, str]]) -> str:
        """``label = a = b ≈ c``: one line in HTML, one aligned line per part elsewhere."""
        if self.fmt == "html" or len(parts) == 1:
            return label + "".join(f" {rel} {tex}" for rel, tex in parts)
        rows = [f"{label} &{parts[0][0]} {parts[0][1]}"] + [f"&{rel} {tex}" for rel, tex in parts[1:]]
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"

    def why(self, why: str) -> Markup:
        if self.fmt == "html":
            return Markup('<p class="why">') + Markup(why) + Markup("</p>")
        if self.fmt == "tex":
            return Markup("\n\\noindent\\emph{" + why + "}")
        return Markup("\n*" + why + "*")


@functools.cache
def _env(fmt: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("scalemath", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        auto_reload=False,  # package data does not change while we run
        cache_size=-1,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda v: v if isinstance(v, Markup) else _escape(fmt, str(v)),
    )
    math = _Math(fmt)
    env.globals.update(
        fmt=fmt,
        m=math.inline,
        dm=math.display,
        steps=math.steps,
        num=lambda v: math.inline(formatting.latex_number(sp.sympify(v))),
        qty=lambda v, unit: math.inline(formatting.latex_with_unit(sp.sympify(v), unit)),
        tex_num=lambda v: formatting.latex_number(sp.sympify(v)),
        tex_qty=lambda v, unit: formatting.latex_with_unit(sp.sympify(v), unit),
        answer=lambda a: math.inline(("" if formatting.shown_exactly(a.value, a.unit) else r"\approx ")
                                     + formatting.latex_with_unit(a.value, a.unit)),
        chip_name=lambda key: default_catalog()[key].name,
        given=_given,
    )
    return env


def _given(answer: Answer, name: str):
    """The value substituted for the symbol ``name`` in the answer's derivation."""
    for symbol, value in answer.evaluated.given.items():
        if symbol.name == name:
            return value
    raise KeyError(f"answer {answer.name} was not given {name}")


def render_problem(problem: Problem, fmt: str, part: str) -> str:
    """The ``statement`` or ``solution`` block of one problem in one format."""
    template = _env(fmt).get_template(f"problems/{problem.generator}.j2")
    context = template.new_context({"p": problem.params, "a": problem.by_name, "problem": problem})
    return "".join(template.blocks[part](context)).strip()


def render_document(problems: Sequence[Problem], fmt: str, *, solutions: bool, title: str,
                    seed: int) -> str:
    """A whole sheet (``solutions=False``) or answer key (``solutions=True``) in ``fmt``."""
    items = [{"problem": p, "number": i + 1,
              "statement": Markup(_paragraphs(fmt, render_problem(p, fmt, "statement"))),
              "solution": Markup(_paragraphs(fmt, render_problem(p, fmt, "solution"))) if solutions else "",
              "answers": [(a, Markup(_env(fmt).globals["answer"](a))) for a in p.answers]}
             for i, p in enumerate(problems)]
    return _env(fmt).get_template(f"documents/set.{fmt}.j2").render(
        items=items, solutions=solutions, title=title, seed=seed, version=__version__)


def _paragraphs(fmt: str, text: str) -> str:
    if fmt != "html":
        return text
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "\n".join(b if b.startswith("<div") or b.startswith("<p") else f"<p>{b}</p>" for b in blocks)


def manifest(problems: Sequence[Problem], *, seed: int, topics: Sequence[str], n: int) -> str:
    """The JSON answer key: the canonical record for grading."""
    doc = {
        "scalemath_version": __version__,
        "seed": seed,
        "topics": list(topics),
        "n": n,
        "problems": [{
            "id": p.id,
            "number": i + 1,
            "generator": p.generator,
            "topic": p.topic,
            "title": p.title,
            "seed": p.seed,
            "source": p.source,
            "params": {k: (v if isinstance(v, (int, str)) else str(v)) for k, v in p.params.items()},
            "answers": [a.as_manifest() for a in p.answers],
        } for i, p in enumerate(problems)],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
