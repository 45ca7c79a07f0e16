"""The jinja2 environment the problem templates and documents are rendered in: the display helpers the
templates call (``m``, ``dm``, ``num``, ``qty``, ``steps``, ``answer``...), the escaping of every value they
print, and the compiled templates kept in scalemath's cache."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Iterator

import jinja2
import sympy as sp
from markupsafe import Markup

from ..values import printing as formatting
from ..catalog.hardware import default_catalog
from . import figures
from .model import Answer
from .typeset import _LETTERS, _MATHS, _Math, _input_value, shown_value

#: The format being rendered: one jinja2 environment serves all three, so each template is compiled once.
_FMT: contextvars.ContextVar[str] = contextvars.ContextVar("scalemath_render_format", default="md")


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
        tex_name=tex_name,
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


def tex_name(name: str) -> str:
    r"""A name in a formula (an array's, a quantity's): one letter as a variable, several as one upright name
    (``\mathrm{Expert}``, never the product E·x·p·e·r·t in LaTeX or MathML)."""
    return name if len(name) == 1 else r"\mathrm{" + name + "}"


def _given(answer: Answer, name: str):
    """The value substituted for the symbol ``name`` in the answer's derivation."""
    for symbol, value in answer.evaluated.given.items():
        if symbol.name == name:
            return value
    raise KeyError(f"answer {answer.name} was not given {name}")
