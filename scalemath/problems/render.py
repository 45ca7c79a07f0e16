"""Rendering problem sets through jinja2: Markdown, LaTeX, HTML (MathML) and JSON.

Each generator has one template, ``templates/problems/<name>.j2``, with a
``statement`` and a ``solution`` block. Templates write prose and call the
display helpers below (``m``, ``dm``, ``num``, ``qty``, ``steps``, ``answer``);
they never compute. All math is written once, as LaTeX; the Markdown output
keeps it for GitHub math, the LaTeX output for pdflatex, and the HTML output
converts it to MathML so the page needs no network and no JavaScript.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import html
import json
import re
from dataclasses import dataclass, replace
from typing import Iterator, Sequence

import jinja2
import sympy as sp
from latex2mathml.converter import convert as _convert
from markupsafe import Markup

from .. import __version__
from ..values import printing as formatting
from ..catalog.hardware import default_catalog
from . import captions, figures, mathsplit
from .model import ROUNDED_FROM, Answer, Problem
from .sheet import Sheet

__all__ = ["FORMATS", "Group", "render_document", "manifest", "render_problem", "shown_value", "tolerance_sentence"]

FORMATS = ("md", "tex", "html")

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


class _MathMLMemo:
    """LaTeX -> MathML conversions remembered in this process and between runs (in scalemath's cache
    folder, :mod:`scalemath.cache`): labels, relations, units and symbolic forms repeat across sets, and
    converting them is a large share of writing one. Read at the first conversion, written back once
    at exit when it grew; it keeps at most ``LIMIT`` entries (past that, those this run used)."""

    LIMIT = 50000

    def __init__(self) -> None:
        self.table: dict[tuple[str, str], str] | None = None
        self.used: set[tuple[str, str]] = set()
        self.grew = False
        self.added: dict[tuple[str, str], str] = {}  # converted here since :meth:`take_added` last asked

    def load(self) -> dict[tuple[str, str], str]:
        if self.table is None:
            from .. import cache

            stored = cache.load("mathml", "table")
            self.table = stored if isinstance(stored, dict) else {}
        return self.table

    def get(self, kind: str, tex: str, make) -> str:
        table = self.load()
        key = (kind, tex)
        self.used.add(key)
        out = table.get(key)
        if out is None:
            out = table[key] = self.added[key] = make()
            self._grown()
        return out

    def _grown(self) -> None:
        if not self.grew:
            self.grew = True
            atexit.register(self.save)

    def take_added(self) -> dict[tuple[str, str], str]:
        added, self.added = self.added, {}
        return added

    def merge(self, entries: dict[tuple[str, str], str]) -> None:
        """Conversions another process made (a worker), kept and saved as if made here."""
        if entries:
            self.load().update(entries)
            self.used.update(entries)
            self._grown()

    def save(self) -> None:
        from .. import cache

        table = self.table or {}
        if len(table) > self.LIMIT:
            table = {k: v for k, v in table.items() if k in self.used}
        cache.store("mathml", "table", table)


_MATHML = _MathMLMemo()


def latex_to_mathml(tex: str, display: str = "inline") -> str:
    """latex2mathml's conversion, remembered (labels, relations and units repeat across a set)."""
    return _MATHML.get(display, tex, lambda: _convert(_upright_units(tex), display=display))


_UNIT_PART = r"(?:[A-Za-z%µ]+|\\mu ?[A-Za-z]*)"
_RATE_UNIT = re.compile(r"\\mathrm\{(" + _UNIT_PART + r")\}((?:/\\mathrm\{" + _UNIT_PART + r"\})+)")
_ONE_LETTER = re.compile(r"\\mathrm\{([A-Za-z])\}")
_MICRO = re.compile(r"\\mathrm\{\\mu ?([A-Za-z]*)\}")


def _upright_units(tex: str) -> str:
    r"""LaTeX as latex2mathml should read it for a browser: a rate's unit (``\mathrm{TFLOP}/\mathrm{s}``) as one
    upright text (``\text{TFLOP/s}``: no operator space around the slash), a one-letter ``\mathrm{s}`` as
    ``\text{s}`` (latex2mathml writes it as an italic ``<mi>``, like a variable), and ``\mathrm{\mu s}`` as
    ``\text{µs}``."""
    def rate(m: re.Match) -> str:
        parts = [m.group(1)] + re.findall(r"\\mathrm\{(" + _UNIT_PART + r")\}", m.group(2))
        return r"\text{" + "/".join(p.replace(r"\mu ", "µ").replace(r"\mu", "µ") for p in parts) + "}"

    return _MICRO.sub(r"\\text{µ\1}", _ONE_LETTER.sub(r"\\text{\1}", _RATE_UNIT.sub(rate, tex)))


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
        for st in ev.steps[skip:]:
            used = _free_symbols(st.step.expr)
            given = tuple(sorted(((k, v) for k, v in ev.given.items() if k in used), key=lambda kv: kv[0].name))
            parts = _step_parts(st.step.expr, given, st.value if st.is_numeric else None, st.step.unit)
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
            body = re.sub(r"\n(?=\n)", "&#10;", html.escape(text))
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


def _page_lines(rel: str, tex: str) -> list[tuple[str, str]]:
    """``(rel, tex)`` as one aligned row, or, when too wide for the page, several: the first with ``rel``, the
    rest indented (``\\quad``) under it."""
    lines = mathsplit.lines(tex, _PAGE_EM)
    # "{}" before a leading operator keeps it binary (spaced on both sides), as in the HTML pieces
    return [(rel, lines[0])] + [("\\quad", ("{} " if mathsplit.starts_with_operator(line) else "") + line)
                                for line in lines[1:]]


@functools.lru_cache(maxsize=8192)
def _caption(fmt: str, text: str) -> Markup:
    """:meth:`_Math.caption`, remembered: a derivation's reasons repeat in every format and every set."""
    math = _MATHS[fmt]
    out = []
    for kind, piece in captions.split(text):
        out.append(math.inline(captions.to_latex(piece)) if kind == "math"
                   else Markup(formatting.escape(piece, fmt, prose=True)))
    return Markup("").join(out)


@functools.lru_cache(maxsize=8192)
def _free_symbols(expr) -> frozenset:
    """A step's symbols (SymPy walks the whole tree for ``free_symbols``; each step is shown in three formats)."""
    return frozenset(expr.free_symbols)


#: Formulas estimated wider than this (em) are written in pieces in HTML so they wrap.
_WRAP_EM = 8.0


#: The format being rendered: one jinja2 environment serves all three, so each template is compiled once.
_FMT: contextvars.ContextVar[str] = contextvars.ContextVar("scalemath_render_format", default="md")
_MATHS = {fmt: _Math(fmt) for fmt in FORMATS}


@contextlib.contextmanager
def _rendering(fmt: str) -> Iterator[None]:
    token = _FMT.set(fmt)
    try:
        yield
    finally:
        _FMT.reset(token)


def _math() -> _Math:
    return _MATHS[_FMT.get()]


def _rounded(ans: Answer, things: str) -> Markup:
    """How a count answer was rounded, as its key shows it: ``Rounded up to a whole number of chips:`` and
    ``⌈40.98⌉ = 41 chips`` on a row of its own (the exact value to hundredths at least, enough to see which
    side of a whole number it lies: :func:`scalemath.values.printing.unrounded`), or ``This is already a whole number
    of chips: 41 chips.``"""
    fmt = _FMT.get()
    if ans.unrounded == ans.value:
        return (Markup("This is already a whole number of ") + formatting.escape(things, fmt, prose=True)
                + Markup(": ")
                + _math().inline(shown_value(ans.value, ans.unit)) + Markup("."))
    if ans.rounding == "pow2":
        return (Markup("Of the powers of two dividing the device count, the rule picks ")
                + _math().inline(shown_value(ans.value, ans.unit)) + Markup("."))
    x = formatting.unrounded(ans.unrounded)
    f, how = {"up": (rf"\left\lceil {x} \right\rceil", "up to a"), "down": (rf"\left\lfloor {x} \right\rfloor", "down to a")
              }.get(ans.rounding, (rf"\operatorname{{round}}({x})", "to the nearest"))
    return (Markup(f"Rounded {how} whole number of ") + formatting.escape(things, fmt, prose=True)
            + Markup(":\n\n")
            + _math().display(f"{f} = {_input_value(ans.value, ans.unit)}"))


def _tex_result(a: Answer) -> str:
    r"""An answer's value after its relation, as LaTeX: ``= 154\,\mathrm{\mu s}`` or ``\approx 154.1\,...``."""
    shown = shown_value(a.value, a.unit)
    return shown if shown.startswith(r"\approx") else "= " + shown


class _UserText(str):
    """Text a teacher typed or a roster holds (a title, course, instructions, a student's name): printed as
    typed in every format. LaTeX and HTML escape it as they escape everything; Markdown, whose escaping of the
    templates' own words is light, escapes it fully (:func:`scalemath.values.printing.markdown_text`), so that no tag,
    link or new block a user wrote comes alive on GitHub or a wiki."""


def _user(text: str | None) -> _UserText | None:
    return None if text is None else _UserText(text)


@jinja2.pass_context  # evaluated at render time (never folded at compile time): the format is known only then
def _finalize(context, value):
    if isinstance(value, Markup):
        return value
    fmt = _FMT.get()
    if fmt == "md" and isinstance(value, _UserText):
        return formatting.escape(value, "md")  # a user's text in full, the templates' words lightly
    return formatting.escape(str(value), fmt, prose=True)


#: Bump when the environment's options change: compiled templates are cached under this name.
_ENV_TAG = "env2"


class _BytecodeCache(jinja2.BytecodeCache):
    """Compiled templates kept as entries of :mod:`scalemath.cache` (kind ``kind``), so they are
    authenticated like every other entry before jinja2 unmarshals them: a planted or changed entry is
    compiled afresh, never run. A bad entry is a miss; a failed write keeps the template in memory only."""

    def __init__(self, kind: str):
        self.kind = kind

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        from .. import cache

        data = cache.load(self.kind, bucket.key)
        if isinstance(data, bytes):
            try:
                bucket.bytecode_from_string(data)
            except Exception:  # noqa: BLE001 - authentic but unreadable (another Python's marshal): a miss
                bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        from .. import cache

        cache.store(self.kind, bucket.key, bucket.bytecode_to_string())


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs in scalemath's cache folder (:mod:`scalemath.cache`):
    compiling the templates is most of a cold run's rendering time. None when the cache is off or
    unusable. The folder is keyed by the package's own files, templates included, so an edited
    template is never read from an older entry (jinja2 also checks each template's source)."""
    from .. import cache

    kind = f"jinja2-{_ENV_TAG}"
    return None if cache.folder(kind) is None else _BytecodeCache(kind)


@functools.cache
def _shared_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("scalemath", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        auto_reload=False,  # package data does not change while we run
        cache_size=-1,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
        bytecode_cache=_bytecode_cache(),
    )
    env.globals.update(
        m=lambda tex: _math().inline(tex),
        dm=lambda tex: _math().display(tex),
        steps=lambda a, skip=0: _math().steps(a, skip),
        num=lambda v: _math().inline(formatting.latex_number(sp.sympify(v))),
        qty=lambda v, unit: _math().inline(_input_value(v, unit)),
        tex_num=lambda v: formatting.latex_number(sp.sympify(v)),
        tex_qty=lambda v, unit: _input_value(v, unit),
        tex_result=_tex_result,
        answer=lambda a: (Markup(f"({_LETTERS[int(a.value) % 26]}) ") + _math().caption(a.choices[int(a.value)])
                          if a.kind == "choice" else _math().inline(shown_value(a.value, a.unit))),
        answer_value=lambda v, unit: _math().inline(shown_value(v, unit)),
        caption=lambda text: _math().caption(text),
        code=lambda text: _math().code(text),
        chip_name=lambda key: default_catalog()[key].name,
        given=_given,
        form=lambda a: _math().inline(formatting.latex(a.value)),
        figure=lambda problem: figures.markup(problem, _FMT.get()),
        rounded=_rounded,
        # a count's exact value before rounding, to hundredths at least ("34410.9 tokens", never a rounded-off
        # "34410 tokens" called exact)
        unrounded=lambda a: _math().inline(formatting.unrounded(a.unrounded)
                                           + formatting.latex_unit(formatting.plural_unit(a.unit))),
    )
    return env


def _given(answer: Answer, name: str):
    """The value substituted for the symbol ``name`` in the answer's derivation."""
    for symbol, value in answer.evaluated.given.items():
        if symbol.name == name:
            return value
    raise KeyError(f"answer {answer.name} was not given {name}")


_RENDERED: dict[tuple, str] = {}  # (generator, seed, id, format, part) -> text: a problem is drawn from those


def prepare_workers() -> None:
    """Load what rendering in worker processes needs (the templates' environment, the MathML table) once, in
    this process, before they are forked from it."""
    _shared_env()
    _MATHML.load()


def new_mathml() -> dict[tuple[str, str], str]:
    """The MathML conversions made in this process since the last call (a worker sends them to the parent)."""
    return _MATHML.take_added()


def remember(problem: Problem, blocks: dict[tuple[str, str], str], mathml: dict[tuple[str, str], str]) -> None:
    """Keep the blocks (``(format, part) -> text``) and the MathML conversions a worker made for ``problem``."""
    for (fmt, part), text in blocks.items():
        _RENDERED[problem.generator, problem.seed, problem.id, fmt, part] = text
    _MATHML.merge(mathml)


def render_problem(problem: Problem, fmt: str, part: str) -> str:
    """The ``statement`` or ``solution`` block of one problem in one format."""
    key = (problem.generator, problem.seed, problem.id, fmt, part)
    if key in _RENDERED:
        return _RENDERED[key]
    template = _shared_env().get_template(f"problems/{problem.generator}.j2")
    with _rendering(fmt):
        context = template.new_context({"p": problem.params, "a": problem.by_name, "problem": problem})
        text = "".join(template.blocks[part](context)).strip()
    if len(_RENDERED) > 20000:
        _RENDERED.clear()
    _RENDERED[key] = text
    return text


@dataclass(frozen=True)
class Group:
    """The problems of one variant (``id`` None for a plain set) and its student, if a roster named one."""

    problems: Sequence[Problem]
    id: str | None = None
    student: str | None = None


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _percent(tol) -> str:
    return formatting.decimal(sp.Rational(tol) * 100) + "\u202f%"


def _exact_count(a: Answer) -> bool:
    """A number answer that must be exactly a whole number (a count read off a catalog, the best of a few
    draft lengths): the sheet calls it a whole number, not a number "within 0 %"."""
    return a.kind == "number" and a.rel_tol == 0 and a.value.is_Integer


def _toleranced(a: Answer) -> bool:
    return a.kind == "number" and not _exact_count(a)


def tolerance_sentence(problems: Sequence[Problem]) -> str:
    """What the key accepts, as the sheet states it: ``Numbers within 1 % of the key's value are accepted.``"""
    tols = sorted({sp.Rational(a.rel_tol) for p in problems for a in p.answers if _toleranced(a)})
    kinds = {"whole" if _exact_count(a) else a.kind for p in problems for a in p.answers}
    out = []
    if len(tols) == 1:
        out.append(f"Numbers within {_percent(tols[0])} of the key's value are accepted.")
    elif tols:
        out.append(f"Numbers within the tolerance shown next to each answer ({_percent(tols[0])} to "
                   f"{_percent(tols[-1])}) are accepted.")
    if "whole" in kinds:
        out.append("A count (a whole number) must be exact, rounded as the question asks.")
    if "choice" in kinds:
        out.append("For a choice, give the letter of the right one.")
    if "expression" in kinds:
        out.append("A formula is typed as text over the symbols named with it (e.g. (N-1)/N * V/W); any "
                   "equivalent way of writing it is right.")
    return " ".join(out)


def _answer_rows(fmt: str, p: Problem, solutions: bool, mixed_tol: bool) -> list[dict]:
    math = _MATHS[fmt]
    rows = []
    for a in p.answers:
        if a.kind == "choice":
            what = "choose one"
        elif a.kind == "expression":
            what = (f"a formula{'' if a.unit in ('1', '') else ' in ' + formatting.plural_unit(a.unit)}, over "
                    + ", ".join(f"{n} ({meaning})" for n, meaning in a.symbols))
        elif a.kind == "whole" or _exact_count(a):
            what = "a whole number" + ("" if a.unit in ("1", "") else " of " + formatting.plural_unit(a.unit))
        elif a.unit in ("1", ""):
            what = "a number"
        else:
            what = "in " + formatting.plural_unit(a.unit)
        if mixed_tol and _toleranced(a):
            what += ", within " + _percent(a.rel_tol)
        note = []
        if solutions and a.kind == "whole" and a.unrounded != a.value:  # nothing to say of a count that was whole
            # to hundredths: "rounded up from 51111.47 elements", never a four-figure "51110" that seems to
            # round up to 51112
            unrounded = formatting.unrounded(a.unrounded) + formatting.latex_unit(formatting.plural_unit(a.unit))
            note.append(Markup(ROUNDED_FROM[a.rounding] + " ") + math.inline(unrounded))
        if solutions and a.accept:
            for acc in a.accept:
                shown_acc = formatting.latex(acc.value) if a.kind == "expression" else shown_value(acc.value, a.unit)
                note.append(Markup("also accepted: ") + math.inline(shown_acc)
                            + Markup(" (") + math.caption(acc.why) + Markup(")"))
        choices = [(_LETTERS[i % 26], math.caption(c)) for i, c in enumerate(a.choices)]
        if a.kind == "choice":
            index = int(a.value)
            shown = Markup(f"({_LETTERS[index % 26]}) ") + choices[index][1] if choices else Markup("")
        elif a.kind == "expression":
            shown = math.inline(formatting.latex(a.value)) + Markup(" ") + _code(fmt, str(a.value))
        else:
            shown = math.inline(shown_value(a.value, a.unit))
        rows.append({"name": a.name, "code": _code(fmt, a.name), "description": a.description, "what": what, "kind": a.kind,
                     "choices": choices, "shown": shown, "notes": note})
    return rows


def _code(fmt: str, name: str) -> Markup:
    """An answer name as typed in answers.json, in a fixed-width font."""
    if fmt == "html":
        return Markup("<code>" + html.escape(name) + "</code>")
    if fmt == "tex":  # a line may break after an underscore of a long name
        return Markup(r"\texttt{" + formatting.escape(name, "tex", prose=True).replace(r"\_", r"\_\allowbreak{}")
                      + "}")
    return Markup("`" + name.replace("`", "'") + "`")


def render_document(problems: Sequence[Problem], fmt: str, *, solutions: bool, title: str,
                    seed: int | None = None, set_id: str = "", sheet: Sheet | None = None,
                    groups: Sequence[Group] | None = None) -> str:
    """A whole sheet (``solutions=False``) or answer key (``solutions=True``) in ``fmt``.

    ``groups`` (variants) replace ``problems`` when given: one sheet is one group, the key covers all.
    The seed is never printed (it regenerates the key); ``set_id`` names the set instead.
    """
    sheet = sheet or Sheet()
    groups = [replace(g, student=_user(g.student)) for g in groups] if groups is not None else [Group(problems)]
    every = [p for g in groups for p in g.problems]
    mixed_tol = len({sp.Rational(a.rel_tol) for p in every for a in p.answers if _toleranced(a)}) > 1
    out_groups = []
    total = 0
    for g in groups:
        items = []
        for i, p in enumerate(g.problems):
            points = sheet.points_for(i)
            total += points or 0
            items.append({"problem": p, "number": i + 1, "points": points,
                          "statement": Markup(_paragraphs(fmt, render_problem(p, fmt, "statement"))),
                          "solution": Markup(_paragraphs(fmt, render_problem(p, fmt, "solution"))) if solutions else "",
                          "answers": _answer_rows(fmt, p, solutions, mixed_tol)})
        out_groups.append({"id": g.id, "student": g.student, "entries": items})
    if len(groups) > 1:
        total //= len(groups)
    instructions = [_UserText(b.strip()) for b in re.split(r"\n\s*\n", sheet.instructions or "") if b.strip()]
    with _rendering(fmt):
        return _shared_env().get_template(f"documents/set.{fmt}.j2").render(
            groups=out_groups, solutions=solutions, title=_user(sheet.title) or title, course=_user(sheet.course),
            set_id=set_id, version=__version__, instructions=instructions, name_line=sheet.name_line,
            total_points=total if sheet.points else None, tolerance=tolerance_sentence(every),
            paper=sheet.paper, with_figures=any(figures.spec_for(p) is not None for p in every),
            one_variant=groups[0] if len(groups) == 1 and groups[0].id else None)


def _paragraphs(fmt: str, text: str) -> str:
    if fmt != "html":
        return text
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "\n".join(b if b.startswith("<div") or b.startswith("<p") else f"<p>{b}</p>" for b in blocks)


def _problem_record(i: int, p: Problem, points: Sequence[int] | None) -> dict:
    return {
        "id": p.id,
        "number": i + 1,
        **({"points": points[i]} if points else {}),
        "generator": p.generator,
        "topic": p.topic,
        "title": p.title,
        "seed": p.seed,
        "source": p.source,
        "params": {k: (v if isinstance(v, (int, str)) else str(v)) for k, v in p.params.items()},
        "answers": [a.as_manifest() for a in p.answers],
    }


def manifest(problems: Sequence[Problem], *, seed: int, topics: Sequence[str], n: int, set_id: str | None = None,
             generators: Sequence[str] = (), variants: Sequence[Group] | None = None,
             points: Sequence[int] = ()) -> str:
    """The JSON answer key: the canonical record for grading.

    A plain set lists its ``problems``; a set of variants lists ``variants`` instead, each
    ``{"id", "student", "problems"}``. The seed stays here (the sheets never show it), next to ``set_id``.
    ``points`` (the sheet's, one per question) are recorded with each problem, and the grader scores in them.
    """
    doc: dict = {"scalemath_version": __version__, "seed": seed}
    if set_id is not None:
        doc["set_id"] = set_id
    doc.update(topics=list(topics), n=n)
    if generators:
        doc["generators"] = list(generators)
    if variants is None:
        doc["problems"] = [_problem_record(i, p, points) for i, p in enumerate(problems)]
    else:
        doc["variants"] = [{"id": g.id, "student": g.student,
                            "problems": [_problem_record(i, p, points) for i, p in enumerate(g.problems)]}
                           for g in variants]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
