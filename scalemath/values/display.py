r"""Rows of an ``align*`` that fit a printed column: a chain ``label = a = b \approx c`` stays one row when it
fits, else each relation starts a row of its own (``&= b``), and a right-hand side still too wide continues on
further rows (``&\quad {} + ...``), cut by :func:`.texlines.lines` where a printed formula is broken (before a
top-level relation, +, -, \cdot, after a comma), never inside a number or a fraction. Widths are TeX's
(:mod:`.texmetrics`), so the rows fit the column when pdflatex sets them.

>>> rows_for(["T", "T"], [[("=", "a + b")], [("=", "c")]], 20)
['T &= a + b', 'T &= c']
>>> rows_for(["x"], [[("=", r"\frac{a}{b}"), ("=", "2 + 3 + 4 + 5")]], 6)
['x &= \\frac{a}{b}', '&= 2 + 3', '&\\quad {} + 4 + 5']
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from ..errors import BadValueError
from . import mathsplit, texlines, texmetrics
from .parse import shorten

__all__ = ["rows_for", "parse_width", "DEFAULT_WIDTH", "MARGIN", "TALL"]

#: The default column: ``\columnwidth`` of ``\documentclass[twocolumn]{article}`` on letter paper, 229.5 pt (with
#: ``a4paper`` 221 pt; both read from pdflatex's ``\the\columnwidth``). Another class: give its own.
DEFAULT_WIDTH = "229.5pt"

#: TeX's widths are estimated (within about 5% of pdflatex's for this package's formulas, most of them wide);
#: lines are cut to this share of the column. With it, every quantity of the catalog, derived for two chips and
#: models, sets with no overfull line in columns of 221, 229.5, 241 and 345 pt.
MARGIN = Fraction(93, 100)

#: More rows than this are about a column's height (an align* never breaks across columns unless allowed).
TALL = 20

#: Points per unit, for widths given in other units; ``em`` is the 10 pt font's, ``ch`` one digit (0.5 em).
_POINTS = {"pt": Fraction(1), "bp": Fraction(7227, 7200), "in": Fraction(7227, 100), "cm": Fraction(7227, 254),
           "mm": Fraction(7227, 2540), "em": Fraction(10), "ch": Fraction(5)}

_QUAD = Fraction(1)


def parse_width(text: str | None) -> Fraction | None:
    """A column width as given to ``--latex-width``, in em of a 10 pt font: ``241pt``, ``3.35in``, ``8.5cm``,
    ``24em``, ``48ch`` (digits), or a bare number of points; ``none`` for no breaking (None).

    >>> parse_width("241pt"), parse_width("48ch"), parse_width("none")
    (Fraction(241, 10), Fraction(24, 1), None)
    """
    if text is None:
        text = DEFAULT_WIDTH
    spoken = text.strip().lower()
    if spoken in ("none", "off"):
        return None
    match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(pt|bp|in|cm|mm|em|ch)?", spoken)
    try:
        number = Fraction(Decimal(match.group(1))) if match else None
    except InvalidOperation:
        number = None
    if number is None or not 1 <= number * _POINTS[match.group(2) or "pt"] <= 2000:
        raise BadValueError(f"--latex-width {shorten(text)} is not a column width: give a length from 1pt to 2000pt, e.g. "
                            f"241pt, 3.35in, 8.5cm, 24em, 48ch (digits of a 10 pt font), or none for one row per "
                            f"step")
    return number * _POINTS[match.group(2) or "pt"] / 10


def _width(tex: str) -> Fraction:
    return mathsplit.width(tex, tex_metrics=True) if tex else Fraction(0)


def rows_for(labels: list[str], chains: list[list[tuple[str, str]]], em: Fraction | float | None) -> list[str]:
    r"""The ``align*`` rows (without ``\\``) of one chain of relations per label: ``chains[i]`` is
    ``[(relation, right-hand side), ...]``; ``em`` the column's width in em at 10 pt (None: one row per label)."""
    if em is None:
        return [f"{label} &" + " ".join(f"{rel} {rhs}" for rel, rhs in chain).lstrip()
                for label, chain in zip(labels, chains)]
    room = Fraction(em) * MARGIN - max((_width(label) for label in labels), default=Fraction(0))
    out: list[str] = []
    for label, chain in zip(labels, chains):
        whole = " ".join(f"{rel} {rhs}" for rel, rhs in chain)
        if _width(whole) <= room:
            out.append(f"{label} &{whole}")
            continue
        rows: list[str] = []
        for rel, rhs in chain:  # as many relations on a row as fit, each row starting with one
            piece = f"{rel} {rhs}"
            if rows and _width(rows[-1] + " " + piece) <= room:
                rows[-1] += " " + piece
            else:
                rows.append(piece)
        for k, row in enumerate(rows):
            head = f"{label} &" if k == 0 else "&"
            rel, rhs = row.split(" ", 1)
            if _width(row) <= room:
                out.append(head + row)
                continue
            lines = texlines.lines(rhs, room - max(texmetrics.RELATION, _QUAD), wide=room - _QUAD)
            out.append(f"{head}{rel} {lines[0]}")
            out.extend(r"&\quad " + ("{} " if mathsplit.starts_with_operator(line) else "") + line
                       for line in lines[1:])
    return out
