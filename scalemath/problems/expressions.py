"""Answers that are closed forms ("derive a result"): the key's form read back from a manifest, and a
typed formula graded against it.

The manifest carries the expected form as text in the engine's notation (``I*J/(2*W)``) with the names
of its symbols and their meaning. Both the key and the student's formula are read by the safe parser
(:func:`scalemath.values.parse.parse_expression`, never ``eval``) over exactly those names, and compared by
:func:`scalemath.values.check.check_expression`: equivalent forms are right however they are written. A
wrong form that is the key times a constant is named by :func:`scalemath.values.check.diagnose` (a factor
2, 4, ...); one that is the key times N/(N-1) or (N-1)/N for a ring size N among its symbols is the
ring's (N-1)/N dropped or added.

>>> syms = symbols_of({"V": "bytes", "N": "devices", "W": "bandwidth"})
>>> key = read_form("V*(N - 1)/(N*W)", syms, "key")
>>> grade_form(key, syms, (), "(1 - 1/N) * V / W")[:2]
(True, None)
>>> grade_form(key, syms, (), "V/W")[1]
"your form is N/(N - 1) times the engine's: the ring's (N-1)/N factor is missing (a ring collective over N devices moves (N-1)/N of the array per device, not all of it)"
"""

from __future__ import annotations

from typing import Mapping, Sequence

import sympy as sp

from ..values.check import RING_NAMES, check_expression, ring_slip
from ..errors import BadValueError, ScalemathError
from ..limits import TimeLimitError, run_limited
from ..values.parse import parse_expression

__all__ = ["symbols_of", "read_form", "grade_form", "formula_hint", "SLIP_SECONDS"]

#: Time allowed to factor a wrong form's ratio to the key (the parser bounds the input's size).
SLIP_SECONDS = 2.0


def symbols_of(names: Mapping[str, str] | Sequence[str]) -> dict[str, sp.Symbol]:
    """The symbols a form may use, by name: positive, as every symbol of the engine is (so a key written by
    the engine and a form read back from text compare equal)."""
    return {n: sp.Symbol(n, positive=True) for n in names}


def read_form(text: str, symbols: Mapping[str, sp.Symbol], what: str) -> sp.Expr:
    """A form from a manifest, read by the safe parser; a :class:`BadValueError` says what is wrong."""
    try:
        return parse_expression(text, symbols)
    except ScalemathError as exc:
        raise BadValueError(f"{what} is not a formula over its symbols ({exc})") from None


def formula_hint(symbols: Mapping[str, object]) -> str:
    """How to type an answer: ``a formula in I, J, W such as I*J/W (use * / ** and parentheses)``."""
    names = list(symbols)
    return f"a formula in {', '.join(names)} (use + - * / ** and parentheses, e.g. {names[0]}/{names[-1]})"


def grade_form(expected: sp.Expr, symbols: Mapping[str, sp.Symbol], accept: Sequence[tuple[sp.Expr, str]],
               given: str) -> tuple[bool, str | None, str | None]:
    """(right, diagnosis, note) of the typed formula ``given`` against ``expected``: right when equivalent
    to it or to an accepted form (whose reason is the note). A formula that cannot be read raises the
    parser's :class:`~scalemath.errors.ExpressionError`, naming the symbols to use."""
    verdict = check_expression(given, expected, symbols)
    if verdict.equivalent:
        return True, None, None
    for form, why in accept:
        if check_expression(given, form, symbols).equivalent:
            return True, None, why
    if verdict.factor is not None:
        shown = verdict.diagnosis or f"your formula is {verdict.factor} times the expected one"
        return False, shown, None
    rings = [s for n, s in symbols.items() if n in RING_NAMES]
    try:
        slip = run_limited(ring_slip, verdict.read_as, expected, rings, seconds=SLIP_SECONDS, what="slip search")
    except (TimeLimitError, RecursionError):
        slip = None
    return False, slip or verdict.diagnosis, None
