"""The display helpers of one output format (Markdown, LaTeX, HTML): inline and display math, a derivation's
steps, captions, program text; how a result is shown (``shown_value``). All math is written once, as LaTeX:
Markdown keeps it for GitHub math, LaTeX for pdflatex, HTML converts it to MathML (:mod:`.mathml`)."""

from __future__ import annotations

import functools
import re

import sympy as sp
from markupsafe import Markup

from ..values import printing as formatting
from ..values import mathsplit
from . import captions
from .mathml import _MATHML, _upright_units, latex_to_mathml
from .model import Answer

__all__ = ["FORMATS", "shown_value"]

FORMATS = ("md", "tex", "html")

#: The letters of a choice's options: (a), (b), ...
_LETTERS = "abcdefghijklmnopqrstuvwxyz"

#: How results print on sheets and keys: 4 significant digits unless exact and short, ratios as decimals,
#: counted units in the plural (6 hops). Inputs keep up to 6 exact digits.
_RESULT = {"fractions": False, "exact_digits": formatting.SIG}


@functools.lru_cache(maxsize=8192, typed=True)
def shown_value(value, unit: str) -> str:
    """A result as LaTeX, the way sheets and keys print it: ``\\approx 1.475\\,\\mathrm{ms}``, ``6\\,\\mathrm{hops}``
    (remembered: a set shows each answer in every document it writes)."""
    shown = formatting.latex_with_unit(value, unit, plural=True, **_RESULT)
    return shown if formatting.shown_exactly(value, unit, **_RESULT) else r"\approx " + shown


def _input_value(value, unit: str) -> str:
    return formatting.latex_with_unit(sp.sympify(value), unit, plural=True)


@functools.lru_cache(maxsize=8192)
def _step_parts(expr, given: tuple, value, unit: str) -> tuple[tuple[str, str], ...]:
    """A step's ``= symbolic = substituted ≈ value`` parts as LaTeX (the same in every format: made once).
    A step whose form is a bare number (worked out before) shows only its value with the unit when the number
    adds nothing: ``= 21 sequences``, not ``= 21 = 21 sequences``; ``≈ 4.939 ms``, not first an exact fraction
    of seconds. A whole number shown rounded keeps its exact digits first (``= 524288 ≈ 524.3 kB``)."""
    if value is not None and expr.is_Number:
        exact = formatting.shown_exactly(value, unit, **_RESULT)
        if exact or not expr.is_Integer:
            return (("=" if exact else r"\approx", formatting.latex_with_unit(value, unit, plural=True, **_RESULT)),)
    symbolic = formatting.latex(expr)
    if any(isinstance(s, _Named) for s in expr.free_symbols):
        symbolic = _tidy_spaces(symbolic)
    parts = [("=", symbolic)]
    substituted = formatting.latex(expr, dict(given))
    if substituted != symbolic:
        parts.append(("=", substituted))
    if value is not None:
        shown = formatting.latex_with_unit(value, unit, plural=True, **_RESULT)
        if shown != parts[-1][1]:
            exact = formatting.shown_exactly(value, unit, **_RESULT)
            parts.append(("=" if exact else r"\approx", shown))
    return tuple(parts)


class _Math:
    """The display helpers for one output format."""

    def __init__(self, fmt: str):
        self.fmt = fmt

    def _mathml(self, tex: str) -> str:
        """Inline MathML; a long formula as several pieces the browser can wrap between."""
        return _MATHML.get("wrapped", tex, lambda: self._wrapped_mathml(tex))

    def _wrapped_mathml(self, tex: str) -> str:
        tex = _upright_units(tex)  # before cutting, so that a unit such as FLOPs/byte stays whole
        parts = mathsplit.pieces(tex, within=_WRAP_EM)
        if len(parts) == 1:
            return latex_to_mathml(tex, display="inline")
        # "{}" before a leading operator keeps it binary (spaced on both sides); <wbr> lets the line break there
        html_parts = [latex_to_mathml(("{}" if k and mathsplit.starts_with_operator(t) else "") + t,
                                      display="inline") for k, t in enumerate(parts)]
        return '<span class="mw">' + "<wbr>".join(html_parts) + "</span>"

    def inline(self, tex: str) -> Markup:
        if self.fmt == "html":
            return Markup(self._mathml(tex))
        if self.fmt == "tex":
            return Markup(r"\(" + tex + r"\)")
        return Markup("$" + tex + "$")

    def display(self, tex: str) -> Markup:
        if self.fmt == "html":
            rows = mathsplit.rows(tex)
            body = "".join('<div class="row">' + self._mathml(" ".join(cells)) + "</div>" for cells in rows)
            return Markup('<div class="eq">' + body + "</div>")
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
        for st, expr, named in _named_steps(ev)[skip:]:
            used = _free_symbols(expr)
            given = tuple(sorted(((k, v) for k, v in ev.given.items() if k in used), key=lambda kv: kv[0].name))
            given += tuple((k, v) for k, v in named if k in used)
            parts = _step_parts(expr, given, st.value if st.is_numeric else None, st.step.unit)
            lines.append(self._chain(st.step.label, list(parts)) + self.why(st.step.why))
        return Markup("\n\n").join(lines)

    def _chain(self, label: str, parts: list[tuple[str, str]]) -> Markup:
        """``label = a = b ≈ c``: one aligned row per part (in HTML a grid whose right cells wrap)."""
        if self.fmt == "html":
            cells = []
            for k, (rel, tex) in enumerate(parts):
                lhs = latex_to_mathml(label, display="inline") if k == 0 else ""
                cells.append(f'<div class="crow"><span class="lhs">{lhs}</span> <span class="rel">'
                             f'{latex_to_mathml(rel, display="inline")}</span> <span class="rhs">{self._mathml(tex)}</span>'
                             '</div>')
            return Markup('<div class="eq chain">' + "".join(cells) + "</div>")
        lines = [row for rel, tex in parts for row in _page_lines(rel, tex)]
        if len(lines) == 1:
            return self.display(f"{label} {lines[0][0]} {lines[0][1]}")
        rows = [f"{label} &{lines[0][0]} {lines[0][1]}"] + [f"&{rel} {tex}" for rel, tex in lines[1:]]
        return self.display("\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}")

    def code(self, text: str) -> Markup:
        """Program text (an HLO listing) as fixed-width lines that wrap at the page's edge."""
        if self.fmt == "html":
            # a blank line inside the listing written as a character reference: the page's paragraphs are split
            # at blank lines, which must not cut the <pre> in two
            body = re.sub(r"\n(?=\n)", "&#10;", formatting.escape(text, "html", prose=True))
            return Markup('<div class="code"><pre style="white-space: pre-wrap; overflow-wrap: anywhere; '
                          'font-size: 85%">' + body + "</pre></div>")
        if self.fmt == "tex":
            rows = [r"\noindent\hangindent=3em\hangafter=1 " + r"\hspace*{1em}" * ((len(ln) - len(ln.lstrip())) // 2)
                    + re.sub(r"([,(=])", r"\1\\allowbreak{}", formatting.escape(ln.strip(), "tex", prose=True))
                    for ln in text.splitlines()]
            return Markup("{\\raggedright\\ttfamily\\footnotesize\\parskip=0pt\n" + "\\par\n".join(rows) + "\\par}")
        return Markup("```text\n" + text + "\n```")

    def caption(self, text: str) -> Markup:
        """Plain text with the formulas in it typeset as math (a step's reason, a choice)."""
        return _caption(self.fmt, text)

    def why(self, why: str) -> Markup:
        text = self.caption(why)
        if self.fmt == "html":
            return Markup('<p class="why">') + text + Markup("</p>")
        if self.fmt == "tex":
            return Markup("\n\\noindent\\emph{") + text + Markup("}")
        return Markup("\n*") + text + Markup("*")


#: The widest right-hand side (in em, mathsplit's estimate) a printed derivation row holds; wider ones continue
#: on further rows, cut where a printed formula is broken (a display formula cannot wrap in LaTeX).
_PAGE_EM = 30.0


@functools.lru_cache(maxsize=8192)
def _page_lines(rel: str, tex: str) -> tuple[tuple[str, str], ...]:
    """``(rel, tex)`` as one aligned row, or, when too wide for the page, several: the first with ``rel``, the
    rest indented (``\\quad``) under it. Remembered: Markdown and LaTeX print the same rows."""
    lines = mathsplit.lines(tex, _PAGE_EM)
    # "{}" before a leading operator keeps it binary (spaced on both sides), as in the HTML pieces
    return tuple([(rel, lines[0])] + [("\\quad", ("{} " if mathsplit.starts_with_operator(line) else "") + line)
                                      for line in lines[1:]])


@functools.lru_cache(maxsize=8192)
def _caption(fmt: str, text: str) -> Markup:
    """:meth:`_Math.caption`, remembered: a derivation's reasons repeat in every format and every set."""
    math = _MATHS[fmt]
    out = []
    for kind, piece in captions.split(text):
        out.append(math.inline(captions.to_latex(piece)) if kind == "math"
                   else Markup(formatting.escape(piece, fmt, prose=True)))
    return Markup("").join(out)


class _Named(sp.Symbol):
    """An earlier step's label standing for its result in a later step's form (a class of its own, so that it is
    never the engine's symbol of the same name). A multi-letter upright name is set off by thin spaces, as the
    engine's own are in a product (upright "cables", a thin space, then n_spine; never "cablesn")."""

    def _latex(self, printer) -> str:
        shown = printer._settings["symbol_names"].get(self)  # its value, in a row with the numbers substituted
        if shown is not None:
            return shown
        return r"\," + self.name + r"\," if re.match(r"\\(?:mathrm|text)\{[A-Za-z]{2,}", self.name) else self.name


#: A label that reads as one name: a letter or an upright word with sub- and superscripts, no operator outside
#: its braces (``T_{\mathrm{cross}} / T_{\mathrm{node}}`` is a ratio, not a name).
_NAME = re.compile(r"^(?:[A-Za-z]|\\(?:mathrm|text|operatorname)\{[A-Za-z]+\}|\\[A-Za-z]+)(?:[_^](?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|[A-Za-z0-9]))*$")


#: A named result's thin space beside an operator, a bracket or the end, where it separates nothing.
_LOOSE_SPACE = (re.compile(r"\\,(?=\s*(?:[-+=,)}\]]|\\right|\\\\|$))"), re.compile(r"(?:(?<=[-+=,({\[])|^)(\s*)\\,"))


def _tidy_spaces(tex: str) -> str:
    """``tex`` without the thin spaces a named result put beside an operator or a bracket (kept in a product)."""
    return _LOOSE_SPACE[1].sub(r"\1", _LOOSE_SPACE[0].sub("", tex))


def _reuse(expr, names: dict):
    """``expr`` with every part an earlier step worked out written as that step's name: a whole subexpression,
    or some of the factors of a product (terms of a sum) when they are all of an earlier product (sum)."""
    if expr in names:
        return names[expr]
    if expr.is_Atom:
        return expr
    if expr.is_Mul or expr.is_Add:
        rest, found = list(expr.args), []
        parts = []  # the latest step first: the result just worked out is the one the next step builds on
        for d in reversed(names):
            if type(d) is type(expr) and len(d.args) < len(rest):
                parts.append((d.args, names[d]))
            if expr.is_Mul and d.is_Mul and len(d.args) < len(rest):  # in a denominator: M/(S kv) holds 1/S, 1/kv
                parts.append((tuple(1 / a for a in d.args), 1 / names[d]))
        for args, name in parts:
            left = list(rest)
            try:
                for a in args:
                    left.remove(a)
            except ValueError:
                continue
            rest, found = left, found + [name]
        if found:
            return expr.func(*found, *(_reuse(a, names) for a in rest))
    return expr.func(*(_reuse(a, names) for a in expr.args))


#: _named_steps' answers, by the evaluation's id (with the evaluation, so that a recycled id is never read).
_NAMED: dict[int, tuple] = {}


def _named_steps(ev) -> list[tuple]:
    """:func:`_steps_named`, remembered for the three formats a problem is shown in."""
    hit = _NAMED.get(id(ev))
    if hit is None or hit[0] is not ev:
        if len(_NAMED) > 4096:
            _NAMED.clear()
        hit = _NAMED[id(ev)] = (ev, _steps_named(ev))
    return hit[1]


def _steps_named(ev) -> list[tuple]:
    """Each step with the form to show and the named results it uses: a compound form an earlier step already
    worked out (the ceiling of n_dev/D_node inside a later ceiling) is written as that step's label, and
    the label's value is substituted in the numeric row, as a textbook reuses its intermediate results instead of
    nesting them (issue 28: ceilings four deep, Markdown lines of 1250 characters)."""
    shown, named = _shapes(tuple((st.step.expr, st.step.label, st.is_numeric) for st in ev.steps))
    values = tuple((symbol, ev.steps[k].value) for k, symbol in named)
    return [(st, form, values[:used]) for st, (form, used) in zip(ev.steps, shown)]


@functools.lru_cache(maxsize=2048)
def _shapes(steps: tuple) -> tuple[tuple, tuple]:
    """What :func:`_steps_named` shows of steps given as (form, label, numeric): each step's form with the earlier
    named results in it, and how many of those named results come before it; and the named results, as (the
    step's position, its name). None of it depends on the numbers, so the variants of a generator (the same
    derivation at other values) share it: rebuilding a form with names in it evaluates its Max and Min again."""
    names: dict = {}
    named: list = []
    labels: set = set()
    shown = []
    for k, (expr, label, numeric) in enumerate(steps):
        form = _reuse(expr, names) if names and not expr.is_Atom else expr
        shown.append((form, len(named)))
        if not expr.is_Atom and numeric and label not in labels and expr not in names and _NAME.match(label):
            symbol = _Named(label)
            names[expr] = symbol
            named.append((k, symbol))
        labels.add(label)
    return tuple(shown), tuple(named)


@functools.lru_cache(maxsize=8192)
def _free_symbols(expr) -> frozenset:
    """A step's symbols (SymPy walks the whole tree for ``free_symbols``; each step is shown in three formats)."""
    return frozenset(expr.free_symbols)


#: Formulas estimated wider than this (em) are written in pieces in HTML so they wrap.
_WRAP_EM = 8.0

#: The display helpers of each format.
_MATHS = {fmt: _Math(fmt) for fmt in FORMATS}
