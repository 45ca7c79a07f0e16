"""Grading one answer against its key entry (:mod:`.answer_key`): right, wrong (with what the slip seems to
be), missing or unreadable (with why); never an exception for what a student wrote.

Answer kinds: ``number`` (within ``rel_tol``), ``whole`` (exactly the whole number the question asks for;
within ``rel_tol`` of the unrounded value is wrong, with the rounding named), ``choice`` (the choice's text or
its letter), ``expression`` (any equivalent formula). ``accept`` lists values also right under another model
the question allows; they are graded right with their ``why`` as a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..values.check import check_value, read_answer, rounding_slip
from ..errors import ScalemathError
from .answer_key import _LETTERS, _KeyAnswer, _KeyProblem, _type_name
from .model import ROUND_WORDS

__all__ = ["Graded", "grade_answer"]


@dataclass(frozen=True)
class Graded:
    problem: str
    answer: str
    verdict: str  # right, wrong, missing, unreadable
    expected: sp.Expr
    unit: str
    given: Any
    rel_error: float | None = None
    diagnosis: str | None = None
    kind: str = "number"
    shown: str | None = None  # the expected answer as a student reads it (a choice's letter and text)
    note: str | None = None  # why an accepted alternative is right

    def as_dict(self) -> dict:
        return {"problem": self.problem, "answer": self.answer, "verdict": self.verdict,
                "given": self.given, "expected": str(self.expected),
                "expected_value": float(sp.N(self.expected, 17)) if self.expected.is_number else None,
                "unit": self.unit,
                "rel_error": self.rel_error, "diagnosis": self.diagnosis, "kind": self.kind,
                "expected_shown": self.shown, "note": self.note}


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _choice(a: _KeyAnswer, given: Any) -> tuple[int | None, str | None]:
    """The index of the choice ``given`` names (its text, case and spaces ignored, or its letter), or a reason."""
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        given = repr(given)
    if not isinstance(given, str):
        return None, f"give the letter or the text of a choice, not {_type_name(given)}"
    text = " ".join(given.split()).casefold()
    for i, c in enumerate(a.choices):
        if text == " ".join(c.split()).casefold():
            return i, None
    letter = text.strip("()").rstrip(")").strip()
    if len(letter) == 1 and letter in _LETTERS[: len(a.choices)]:
        return _LETTERS.index(letter), None
    letters = ", ".join(f"({x})" for x in _LETTERS[: len(a.choices)])
    return None, f"{_shown(given, 40)} is not one of the choices; give a letter {letters} or a choice's text"


def _letter(i: int, a: _KeyAnswer) -> str:
    return f"({_LETTERS[i]}) {a.choices[i]}"


def grade_answer(p: _KeyProblem, a: _KeyAnswer, given: Any) -> Graded:
    """One answer against its key entry; never raises for what a student wrote."""
    from ..values import printing as formatting

    shown = (_letter(int(a.expected), a) if a.kind == "choice" else str(a.expected) if a.kind == "expression"
             else formatting.plain_result(a.expected, a.unit))
    base = dict(problem=p.id, answer=a.name, expected=a.expected, unit=a.unit, given=given, kind=a.kind, shown=shown)
    if given is None:
        return Graded(verdict="missing", **base)
    if a.kind == "expression":
        return _grade_expression(a, given, base)
    if a.kind == "choice":
        index, reason = _choice(a, given)
        if index is None:
            return Graded(verdict="unreadable", diagnosis=reason, **base)
        if index == a.expected:
            return Graded(verdict="right", rel_error=0.0, **base)
        return Graded(verdict="wrong", rel_error=None, diagnosis=f"you chose {_letter(index, a)}", **base)
    if isinstance(given, bool) or not isinstance(given, (str, int, float)):
        what = json.dumps(given) if isinstance(given, bool) else f"{_type_name(given)} {_shown(given, 40)}"
        return Graded(verdict="unreadable", diagnosis=f"an answer must be a number or text such as '1.2 ms', "
                                                      f"not {what}", **base)
    try:
        if a.kind == "whole":
            return _grade_whole(p, a, given, base)
        verdict = check_value(a.expected, a.unit, given, a.rel_tol, p.counts, p.rings)
        if not verdict.right:
            for alt in a.accept:
                if alt.expected != 0 and abs(verdict.given / alt.expected - 1) <= a.rel_tol:
                    return Graded(verdict="right", rel_error=float(verdict.rel_error), note=alt.why, **base)
        return Graded(verdict="right" if verdict.right else "wrong", rel_error=float(verdict.rel_error),
                      diagnosis=verdict.diagnosis, note=verdict.note if verdict.right else None, **base)
    except ScalemathError as exc:  # ExpressionError, BadValueError, a time limit
        return Graded(verdict="unreadable", diagnosis=str(exc), **base)
    except (ValueError, TypeError, ArithmeticError, RecursionError) as exc:
        return Graded(verdict="unreadable", diagnosis=f"cannot read {_shown(given)} as a number "
                                                      f"({type(exc).__name__})", **base)


def _grade_expression(a: _KeyAnswer, given: Any, base: dict) -> Graded:
    from .expressions import formula_hint, grade_form, symbols_of

    symbols = symbols_of([n for n, _ in a.symbols])
    if isinstance(given, bool) or not isinstance(given, (str, int, float)):
        return Graded(verdict="unreadable", diagnosis=f"give {formula_hint(symbols)}, not {_type_name(given)}", **base)
    try:
        right, diagnosis, note = grade_form(a.expected, symbols, [(x.expected, x.why) for x in a.accept],
                                            given if isinstance(given, str) else repr(given))
    except ScalemathError as exc:  # the parser's message: where, and the names it knows
        return Graded(verdict="unreadable", diagnosis=f"{exc}; give {formula_hint(symbols)}", **base)
    return Graded(verdict="right" if right else "wrong", diagnosis=diagnosis, note=note, **base)


def _grade_whole(p: _KeyProblem, a: _KeyAnswer, given: Any, base: dict) -> Graded:
    from ..values import printing as formatting

    value, _, _, _ = read_answer(given, a.unit)
    rel_error = float(abs(value - a.expected) / abs(a.expected)) if a.expected != 0 else float(abs(value))
    if value == a.expected:
        return Graded(verdict="right", rel_error=0.0, **base)
    word = formatting.plural_unit(a.unit)
    # a rounding slip is the unrounded value itself typed in (a fraction near it), not another whole number
    if (a.unrounded is not None and a.unrounded != 0 and not value.is_Integer
            and abs(value / a.unrounded - 1) <= a.rel_tol):
        why = (f"{ROUND_WORDS[a.rounding]}: the question asks for whole {word} "
               f"({formatting.unrounded(a.unrounded)} -> {a.expected})")
        return Graded(verdict="wrong", rel_error=rel_error, diagnosis=why, **base)
    verdict = check_value(a.expected, a.unit, given, 0, p.counts, p.rings)
    diagnosis = verdict.diagnosis
    wrong_way = rounding_slip(value, a.expected, a.unrounded, a.rounding, word)  # 106 for a ceiling of 106.2
    if wrong_way:
        diagnosis = wrong_way + (f"; or {diagnosis}" if diagnosis else "")
    if not value.is_Integer and not diagnosis:
        diagnosis = f"the question asks for a whole number of {word}"
    return Graded(verdict="wrong", rel_error=rel_error, diagnosis=diagnosis, **base)
