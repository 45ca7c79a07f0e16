r"""Lines of a formula for a printed display: :mod:`.mathsplit`'s pieces, measured as TeX sets them
(:mod:`.texmetrics`), joined into lines no wider than a column.

A line is cut where a printed formula is: before a relation, after a comma, before a + or -, before a
\cdot or \times or after an opened bracket, and last between two factors of a product (the next line then
starts with \times); on each line the loosest of these that leaves the line at least a third full is taken
(``a b + c d`` is cut before the +, not inside ``c d``). Never inside a number (``4.59 \times 10^{14}``) nor a fraction: a fraction wider than the
line stays one fraction, its numerator and denominator set on lines of their own (a ``gathered`` inside the
``\frac``), and a ``\left( ... \right)`` opened up round one becomes ``\biggl( ... \biggr)``, which may end on
another line.

>>> lines(r"4096 \cdot 14336 \cdot 3 + 2 \cdot 4096 \cdot 128 \cdot 40", 10)
['4096 \\cdot 14336 \\cdot 3', '+ 2 \\cdot 4096 \\cdot 128 \\cdot 40']
>>> lines(r"B D b_x F", 3)
['B D b_x', '\\times F']
"""

from __future__ import annotations

import functools
from fractions import Fraction

from . import mathsplit, texmetrics

__all__ = ["lines"]

#: How loose a cut before a piece is (lower is better): before a relation, after a comma, before + or -,
#: before \cdot, \times or / or after an opened bracket, between two factors.
_RELATION, _COMMA, _SUM, _PRODUCT, _FACTORS = range(5)


def _rank(pieces: list[tuple[str, Fraction, bool]], k: int) -> int:
    text, _, gap = pieces[k]
    if gap:
        return _FACTORS
    if pieces[k - 1][0].endswith(","):
        return _COMMA
    if pieces[k - 1][0].endswith(("(", "[")):
        return _PRODUCT
    first = mathsplit._solid(mathsplit._parsed(text))
    head = first[0].head if first else ""
    if head in texmetrics.RELATIONS:
        return _RELATION
    return _SUM if head in ("+", "-", r"\pm") else _PRODUCT


def _starting(piece: tuple[str, Fraction, bool], first: bool) -> tuple[str, Fraction]:
    """A piece as the start of a line: after a cut between two factors, with a times sign."""
    text, w, gap = piece
    if not gap or first:
        return text, w
    rest = text.removeprefix(r"\,").lstrip()
    w += texmetrics.BINARY[r"\times"] - (texmetrics.SPACES[r"\,"] if rest != text else 0)
    return r"\times " + rest, w


def lines(tex: str, em: float | Fraction, wide: float | Fraction | None = None) -> list[str]:
    """``tex`` as lines no wider than ``em`` (:func:`_lines`)."""
    return list(_lines(tex, Fraction(em), Fraction(em if wide is None else wide)))


@functools.lru_cache(maxsize=4096)
def _lines(tex: str, em: Fraction, wide: Fraction) -> tuple[str, ...]:
    """``tex`` as lines no wider than ``em`` (in em of a 10 pt font, TeX's widths): whole when it fits;
    brackets wider than ``wide`` (default ``em``) are opened up, fractions wider stacked, and narrower ones too
    while a piece is still wider than the line (``+ \\max\\left( ... \\right)``). A piece that cannot be cut
    further is a line of its own."""
    atoms = mathsplit._parsed(tex)
    if mathsplit._width(atoms, True) <= em:
        return (tex,)
    pieces = mathsplit._pieces(atoms, wide, tex=True, stack=_stacked)
    while any(w > em for _, w, _ in pieces) and wide > 2:  # a bracket narrower than the line, in a piece wider
        wide = wide * 3 / 4
        pieces = mathsplit._pieces(atoms, wide, tex=True, stack=_stacked)
    out: list[str] = []
    i = 0
    while i < len(pieces):
        text, room = _starting(pieces[i], not out)
        ends = [i + 1]  # where the line may end: after each further piece that fits
        widths = [room]
        while ends[-1] < len(pieces) and widths[-1] + pieces[ends[-1]][1] <= em:
            widths.append(widths[-1] + pieces[ends[-1]][1])
            ends.append(ends[-1] + 1)
        if ends[-1] < len(pieces):  # the line is cut: at its loosest place that leaves it half full
            fair = [n for n, w in enumerate(widths) if 3 * w >= em] or [len(ends) - 1]
            best = min(fair, key=lambda n: (_rank(pieces, ends[n]), -n))
        else:
            best = len(ends) - 1
        out.append(" ".join([text] + [p[0] for p in pieces[i + 1:ends[best]]]))
        i = ends[best]
    return tuple(out)


def _stacked(a, wide: float | Fraction):
    r"""A fraction too wide for a line, kept whole: its numerator and denominator each on as many lines as they
    need (a ``gathered`` inside the ``\frac``), measured as its widest line; remembered (a fraction is stacked
    again for each width its enclosing lines try)."""
    return _stacked_text(a.text, Fraction(wide))


@functools.lru_cache(maxsize=4096)
def _stacked_text(source: str, wide: Fraction):
    a = mathsplit._parsed(source)[0]
    texts, widths = [], []
    for part in a.parts:
        rows = lines("".join(mathsplit._source(part)).strip(), wide - texmetrics.FRACTION, wide)
        rows = rows[:1] + [("{} " if mathsplit.starts_with_operator(row) else "") + row for row in rows[1:]]
        texts.append(rows[0] if len(rows) == 1 else "\\begin{gathered}" + " \\\\ ".join(rows) + "\\end{gathered}")
        widths.append(max(mathsplit.width(row, tex_metrics=True) for row in rows))
    stacked = mathsplit._Atom("frac", f"{a.head}{{{texts[0]}}}{{{texts[1]}}}", [[], []], head=a.head)
    stacked.widths[True] = max(widths) + texmetrics.FRACTION
    return stacked
