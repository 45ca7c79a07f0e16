"""LaTeX to MathML for the HTML sheets and keys: latex2mathml's conversion, remembered between runs, of LaTeX
first made as a browser should read it (units upright and whole)."""

from __future__ import annotations

import atexit
import re

from latex2mathml.converter import convert as _convert

__all__ = ["latex_to_mathml"]


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
    """latex2mathml's conversion, remembered (labels, relations and units repeat across a set), made through the
    formula's shape (:func:`_through_shape`)."""
    return _MATHML.get(display, tex, lambda: _through_shape(_upright_units(tex), display))


def _direct(tex: str, display: str) -> str:
    return _whole_names(_convert(tex, display=display))


#: A number as latex2mathml reads it into one ``<mn>``: digits, and a decimal part.
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
#: The numbers of a shape: nine digits each, so that none is part of another.
_MARK = 800_000_000


def _through_shape(tex: str, display: str) -> str:
    """The conversion of ``tex``, made once per shape: the formula with its numbers replaced by marks (the key of a
    class set's variants differs in its numbers, not in its shapes: 3296 formulas of one set had 1091 shapes) is
    converted and remembered, and each mark's ``<mn>`` then gets its number back. Where a mark does not come out
    as exactly one ``<mn>`` of its own (a number inside ``\\text``, a width), the formula is converted as it is;
    the tests hold the two routes to the same bytes."""
    numbers = _NUMBER.findall(tex)
    if not numbers:
        return _direct(tex, display)
    marks = iter(range(_MARK, _MARK + len(numbers)))
    template = _NUMBER.sub(lambda m: str(next(marks)), tex)
    shape = _MATHML.get(display + " shape", template, lambda: _direct(template, display))
    out = shape
    for i, number in enumerate(numbers):
        tag = f"<mn>{_MARK + i}</mn>"
        if shape.count(str(_MARK + i)) != 1 or tag not in shape:
            return _direct(tex, display)
        out = out.replace(tag, f"<mn>{number}</mn>")
    return out


#: latex2mathml's ``\mathrm{Expert}``: a row of one-letter upright identifiers, which a browser spaces and reads
#: as a product of letters E·x·p·e·r·t
_LETTER_ROW = re.compile(r'<mrow>((?:<mi mathvariant="normal">[A-Za-z]</mi>){2,})</mrow>')


def _whole_names(mathml: str) -> str:
    """A multi-letter upright name as one identifier (``<mi mathvariant="normal">Expert</mi>``), as in LaTeX."""
    return _LETTER_ROW.sub(lambda m: '<mi mathvariant="normal">' + re.sub(r"<[^>]+>", "", m.group(1)) + "</mi>",
                           mathml)


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
