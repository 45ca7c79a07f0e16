"""Grading answer sheets against a generated set's manifest (its answer key).

An answers file is ``{"<problem id>": {"<answer name>": <number or text>}}`` for a plain set, or
``{"variant": "<id>", "student": ..., "answers": {...}}`` for one variant of a set with variants
(``generate --variants N`` / ``--students``); ``generate`` writes a blank one to fill in. The manifest
holds ``"problems"`` (a plain set) or ``"variants": [{"id", "student", "problems"}]``.

Answer kinds (the manifest's ``"kind"``): ``number`` (within ``rel_tol``), ``whole`` (exactly the
whole number the question asks for; within ``rel_tol`` of the unrounded value is wrong, with the
rounding named), ``choice`` (the choice's text or its letter). ``accept`` lists values also right
under another model the question allows; they are graded right with their ``why`` as a note.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import sympy as sp

from ..values.check import RING_NAMES, check_value, read_answer
from ..errors import BadValueError, ScalemathError
from ..values.parse import parse_number
from ..files import MAX_BYTES, file_label, load_json_file
from .model import ROUND_WORDS, ROUNDINGS

__all__ = ["Graded", "Key", "Sheet", "grade", "grade_files", "grade_path", "load_json", "load_key", "find_key",
           "blank_answers", "validate_manifest", "MAX_BYTES", "MAX_SHEETS"]

#: Parameters whose values are device counts: a factor of one of them is a per-device slip.
COUNT_PARAMS = ("n_dev", "chips", "devices", "links", "hosts")
#: Warnings listed one by one before the rest are counted.
MAX_WARNINGS = 20
#: Most answers files graded in one call (a class, not a file system).
MAX_SHEETS = 5000
#: Folders above an answers file searched for manifest.json when --key is left out.
KEY_SEARCH_DEPTH = 3
_FIX = "pass the manifest.json that 'scalemath problems generate' wrote, unchanged"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


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


def load_json(path: str | Path, what: str) -> Any:
    """A JSON file a user gave (see :func:`scalemath.files.load_json_file`); errors exit 2."""
    return load_json_file(path, what, MAX_BYTES, error=BadValueError)


# -- the manifest -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Accept:
    expected: sp.Expr
    why: str


@dataclass(frozen=True)
class _KeyAnswer:
    name: str
    unit: str
    expected: sp.Expr
    rel_tol: sp.Rational
    kind: str = "number"
    rounding: str | None = None
    unrounded: sp.Expr | None = None
    choices: tuple[str, ...] = ()
    accept: tuple[Accept, ...] = ()
    description: str = ""
    symbols: tuple[tuple[str, str], ...] = ()  # an expression's symbols: (name, meaning)


@dataclass(frozen=True)
class _KeyProblem:
    id: str
    counts: Mapping[str, int]
    answers: tuple[_KeyAnswer, ...]
    rings: Mapping[str, int] = field(default_factory=dict)
    number: int | None = None
    title: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    points: int | None = None  # the sheet's points for this problem, shared by its answers


@dataclass(frozen=True)
class Key:
    """A validated manifest: the problems of each variant (``None`` for a plain set)."""

    variants: Mapping[str | None, tuple[_KeyProblem, ...]]
    students: Mapping[str | None, str | None]
    raw: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def plain(self) -> bool:
        return None in self.variants


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


class _Manifest:
    """Field-by-field checks of a parsed manifest; every failure names the file and the field."""

    def __init__(self, label: str):
        self.label = label

    def fail(self, where: str, message: str) -> BadValueError:
        return BadValueError(f"{self.label}: {where} {message}; {_FIX}")

    def get(self, obj: dict, where: str, name: str, kind: str, required: bool = True) -> Any:
        field_ = f"{where}.{name}" if where else name
        if name not in obj:
            if required:
                raise self.fail(field_, "is missing")
            return None
        value = obj[name]
        ok = {"object": isinstance(value, dict), "list": isinstance(value, list),
              "text": isinstance(value, str),
              "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]
        if not ok:
            wanted = kind if kind == "text" else ("an " if kind[0] in "aeiou" else "a ") + kind
            raise self.fail(field_, f"must be {wanted}, not {_type_name(value)}")
        return value

    def exact(self, obj: dict, where: str, name: str) -> sp.Expr:
        text = self.get(obj, where, name, "text")
        try:
            value = parse_number(text)
            finite = math.isfinite(float(value))
        except (ScalemathError, ValueError, TypeError, ArithmeticError, RecursionError) as exc:
            why = str(exc) if isinstance(exc, ScalemathError) else "it is not a number"
            raise self.fail(f"{where}.{name}", f"must be an exact number such as '9850/41' ({why})") from None
        if not finite:
            raise self.fail(f"{where}.{name}", "must be a finite number")
        return value


def _answer(m: _Manifest, a: Any, at: str, pid: str) -> _KeyAnswer:
    if not isinstance(a, dict):
        raise m.fail(at, f"must be an object, not {_type_name(a)}")
    name = m.get(a, at, "name", "text")
    unit = m.get(a, at, "unit", "text")
    description = m.get(a, at, "description", "text", required=False) or ""
    m.get(a, at, "value", "number", required=False)
    kind = m.get(a, at, "kind", "text", required=False) or "number"
    if kind == "expression":
        return _expression_answer(m, a, at, name, unit, description)
    expected = m.exact(a, at, "exact")
    rel_tol = m.get(a, at, "rel_tol", "number")
    if not 0 <= rel_tol < 1:
        raise m.fail(f"{at}.rel_tol", f"= {rel_tol!r} must be at least 0 and below 1")
    if kind not in ("number", "whole", "choice"):
        raise m.fail(f"{at}.kind", f"= {kind!r} must be number, whole, choice or expression")
    rounding = unrounded = None
    choices: tuple[str, ...] = ()
    if kind == "whole":
        rounding = m.get(a, at, "rounding", "text")
        if rounding not in ROUNDINGS:
            raise m.fail(f"{at}.rounding", f"= {rounding!r} must be one of {', '.join(ROUNDINGS)}")
        unrounded = m.exact(a, at, "unrounded")
        if not expected.is_Integer:
            raise m.fail(f"{at}.exact", "of a whole answer must be a whole number")
    if kind == "choice":
        listed = m.get(a, at, "choices", "list")
        if not 2 <= len(listed) <= len(_LETTERS) or not all(isinstance(c, str) and c.strip() for c in listed):
            raise m.fail(f"{at}.choices", f"must be a list of 2 to {len(_LETTERS)} non-empty texts")
        choices = tuple(listed)
        if not (expected.is_Integer and 0 <= expected < len(choices)):
            raise m.fail(f"{at}.exact", "of a choice answer must be the index of one of its choices")
    accept = []
    for k, alt in enumerate(m.get(a, at, "accept", "list", required=False) or []):
        where = f"{at}.accept[{k}]"
        if not isinstance(alt, dict):
            raise m.fail(where, f"must be an object, not {_type_name(alt)}")
        accept.append(Accept(m.exact(alt, where, "exact"), m.get(alt, where, "why", "text")))
    return _KeyAnswer(name, unit, expected, sp.Rational(str(rel_tol)), kind, rounding, unrounded, choices,
                      tuple(accept), description)


def _expression_answer(m: _Manifest, a: dict, at: str, name: str, unit: str, description: str) -> _KeyAnswer:
    """A closed-form answer: ``exact`` is the form, ``symbols`` maps each name it may use to its meaning."""
    from .expressions import read_form, symbols_of

    named = m.get(a, at, "symbols", "object")
    if not named or not all(isinstance(k, str) and k.isidentifier() and k.isascii() and isinstance(v, str)
                            for k, v in named.items()):
        raise m.fail(f"{at}.symbols", "must map each symbol's name (an identifier) to its meaning")
    symbols = symbols_of(named)
    forms = [(read_form(m.get(a, at, "exact", "text"), symbols, f"{m.label}: {at}.exact"), "")]
    for k, alt in enumerate(m.get(a, at, "accept", "list", required=False) or []):
        where = f"{at}.accept[{k}]"
        if not isinstance(alt, dict):
            raise m.fail(where, f"must be an object, not {_type_name(alt)}")
        forms.append((read_form(m.get(alt, where, "exact", "text"), symbols, f"{m.label}: {where}.exact"),
                      m.get(alt, where, "why", "text")))
    return _KeyAnswer(name, unit, forms[0][0], sp.Integer(0), "expression",
                      accept=tuple(Accept(f, why) for f, why in forms[1:]), description=description,
                      symbols=tuple(named.items()))


def _problems(m: _Manifest, problems: Any, where_list: str) -> tuple[_KeyProblem, ...]:
    if not isinstance(problems, list):
        raise BadValueError(f"{m.label} is not a scalemath manifest: '{where_list}' must be a list, not "
                            f"{_type_name(problems)}; {_FIX}")
    if not problems:
        raise BadValueError(f"manifest {m.label} has no problems; generate a set with "
                            "'scalemath problems generate' and pass its manifest.json")
    out: list[_KeyProblem] = []
    seen: set[str] = set()
    for i, p in enumerate(problems):
        where = f"{where_list}[{i}]"
        if not isinstance(p, dict):
            raise m.fail(where, f"must be an object, not {_type_name(p)}")
        pid = m.get(p, where, "id", "text")
        if not pid.strip():
            raise m.fail(f"{where}.id", "must not be empty")
        if pid in seen:
            raise m.fail(f"{where}.id", f"{pid!r} is used twice")
        seen.add(pid)
        for name, kind in (("number", "integer"), ("seed", "integer"), ("generator", "text"), ("topic", "text"),
                           ("title", "text"), ("source", "text"), ("points", "integer")):
            m.get(p, where, name, kind, required=False)
        points = p.get("points")
        if points is not None and not 0 <= points <= 1000:
            raise m.fail(f"{where}.points", f"= {points} must be from 0 to 1000")
        params = m.get(p, where, "params", "object")
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise m.fail(f"{where}.params.{k}", f"must be a number or text, not {_type_name(v)}")
        answers = m.get(p, where, "answers", "list")
        if not answers:
            raise m.fail(f"{where}.answers", "is empty; each problem has at least one answer")
        keyed: list[_KeyAnswer] = []
        for j, a in enumerate(answers):
            answer = _answer(m, a, f"{where}.answers[{j}]", pid)
            if any(k.name == answer.name for k in keyed):
                raise m.fail(f"{where}.answers[{j}].name", f"{answer.name!r} is used twice in {pid!r}")
            keyed.append(answer)
        counts = {k: v for k, v in params.items() if k in COUNT_PARAMS and isinstance(v, int)}
        rings = {k: v for k, v in params.items() if k in RING_NAMES and isinstance(v, int)}
        out.append(_KeyProblem(pid, counts, tuple(keyed), rings, p.get("number"), p.get("title") or "", p, points))
    return tuple(out)


def load_key(key: Any, label: str = "manifest") -> Key:
    """A manifest (plain or with variants) with every field grading uses checked; a
    :class:`BadValueError` names the file and the field."""
    m = _Manifest(label)
    if not isinstance(key, dict):
        raise BadValueError(f"{label} is not a scalemath manifest: the top level must be an object with "
                            f"'problems' or 'variants', not {_type_name(key)}; {_FIX}")
    for name, kind in (("scalemath_version", "text"), ("seed", "integer"), ("n", "integer"),
                       ("topics", "list"), ("set_id", "text")):
        m.get(key, "", name, kind, required=False)
    if "problems" in key:
        return Key({None: _problems(m, key["problems"], "problems")}, {None: None}, key)
    if "variants" not in key:
        raise BadValueError(f"{label} is not a scalemath manifest (it has no 'problems' or 'variants' list); {_FIX}")
    variants = m.get(key, "", "variants", "list")
    if not variants:
        raise BadValueError(f"manifest {label} has no variants; generate a set with "
                            "'scalemath problems generate --variants N' and pass its manifest.json")
    out: dict[str | None, tuple[_KeyProblem, ...]] = {}
    students: dict[str | None, str | None] = {}
    for i, v in enumerate(variants):
        where = f"variants[{i}]"
        if not isinstance(v, dict):
            raise m.fail(where, f"must be an object, not {_type_name(v)}")
        vid = m.get(v, where, "id", "text")
        if not vid.strip() or vid in out:
            raise m.fail(f"{where}.id", f"{vid!r} is empty or used twice")
        student = v.get("student")
        if student is not None and not isinstance(student, str):
            raise m.fail(f"{where}.student", f"must be text or null, not {_type_name(student)}")
        out[vid] = _problems(m, m.get(v, where, "problems", "list"), f"{where}.problems")
        students[vid] = student
    return Key(out, students, key)


def validate_manifest(key: Any, label: str = "manifest") -> list[_KeyProblem]:
    """The problems of a plain manifest (the first variant's of one with variants); see :func:`load_key`."""
    return list(next(iter(load_key(key, label).variants.values())))


# -- one answer -------------------------------------------------------------------------------------

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
                      diagnosis=verdict.diagnosis, **base)
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
    if not value.is_Integer and not diagnosis:
        diagnosis = f"the question asks for a whole number of {word}"
    return Graded(verdict="wrong", rel_error=rel_error, diagnosis=diagnosis, **base)


# -- one sheet --------------------------------------------------------------------------------------

def _sheet_answers(answers: Any, key: Key, answers_path: str) -> tuple[str | None, str | None, dict]:
    """(variant id, student, {problem id: {name: value}}) of an answers document of either shape."""
    if not isinstance(answers, dict):
        raise BadValueError(f'{answers_path} must be a JSON object: {{"<problem id>": {{"<answer name>": value}}}}, '
                            f"not {_type_name(answers)}; start from the answers.json that generate wrote")
    variant = student = None
    if "answers" in answers and set(answers) <= {"set", "variant", "student", "answers"}:  # the sheet's shape
        variant, student, body = answers.get("variant"), answers.get("student"), answers["answers"]
        sheet_set, key_set = answers.get("set"), key.raw.get("set_id")
        if sheet_set is not None and key_set is not None and sheet_set != key_set:
            shown = sheet_set if isinstance(sheet_set, str) and sheet_set.isprintable() else repr(sheet_set)
            raise BadValueError(f"{answers_path} is a sheet of set {shown[:40]!r}, but the key is set {key_set!r}; "
                                "grade it with its own set's manifest.json")
        if variant is not None and not isinstance(variant, str):
            raise BadValueError(f"{answers_path}: 'variant' must be text, not {_type_name(variant)}")
        if student is not None and not isinstance(student, str):
            raise BadValueError(f"{answers_path}: 'student' must be text or null, not {_type_name(student)}")
        if not isinstance(body, dict):
            raise BadValueError(f"{answers_path}: 'answers' must be an object of problem id -> answers, "
                                f"not {_type_name(body)}")
    else:
        body = answers
    if key.plain:
        return None, student, body
    if variant is None:
        if len(key.variants) == 1:
            variant = next(iter(key.variants))
        else:
            raise BadValueError(f"{answers_path} does not say which variant it answers (no 'variant'); start "
                                "from the answers.json of the student's sheet")
    if variant not in key.variants:
        from ..errors import UnknownNameError

        raise UnknownNameError("variant", variant, sorted(key.variants),
                               hint=f"{answers_path} names a variant the manifest does not have")
    return variant, student if student is not None else key.students.get(variant), body


def grade(answers: Any, key: Any, key_path: str = "manifest",
          answers_path: str = "the answers file") -> tuple[Fraction, list[Graded], list[str]]:
    """Grade ``answers`` against ``key``: the score (right / asked), one line per answer, warnings.

    ``key`` is a parsed manifest or a :class:`Key`. A manifest that does not have the shape generate
    writes is a :class:`BadValueError` naming the field; an answer that cannot be read is graded
    ``unreadable`` with the reason, and the others are still graded.
    """
    sheet = grade_sheet(answers, key if isinstance(key, Key) else load_key(key, key_path), answers_path)
    return sheet.score, list(sheet.graded), list(sheet.warnings)


@dataclass(frozen=True)
class Sheet:
    """One student's graded sheet (or, with ``error``, a file that could not be graded)."""

    file: str
    student: str | None
    variant: str | None
    graded: tuple[Graded, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str | None = None
    points: Mapping[str, int] | None = None  # problem id -> the sheet's points, when the set was given points

    @property
    def right(self) -> int:
        return sum(g.verdict == "right" for g in self.graded)

    def earned(self, g: Graded) -> Fraction | None:
        """The points one answer earns: its problem's points shared equally by the problem's answers."""
        if self.points is None:
            return None
        share = Fraction(self.points[g.problem], sum(x.problem == g.problem for x in self.graded))
        return share if g.verdict == "right" else Fraction(0)

    @property
    def earned_points(self) -> Fraction | None:
        return None if self.points is None else sum((self.earned(g) for g in self.graded), Fraction(0))

    @property
    def possible_points(self) -> int | None:
        return None if self.points is None else sum(self.points.values())

    @property
    def score(self) -> Fraction:
        """Points earned over the points on the sheet when it has points, else right answers over answers."""
        if self.points is not None:
            return self.earned_points / self.possible_points if self.possible_points else Fraction(0)
        return Fraction(self.right, len(self.graded)) if self.graded else Fraction(0)

    def as_dict(self) -> dict:
        out = {"file": self.file, "student": self.student, "variant": self.variant, "score": float(self.score),
               "right": self.right, "total": len(self.graded), "error": self.error,
               "answers": [g.as_dict() for g in self.graded], "warnings": list(self.warnings)}
        if self.points is not None:
            out.update(points=float(self.earned_points), possible_points=self.possible_points)
        return out


def grade_sheet(answers: Any, key: Key, answers_path: str = "the answers file", file: str = "") -> Sheet:
    variant, student, body = _sheet_answers(answers, key, answers_path)
    problems = key.variants[variant]
    known = {p.id for p in problems}
    warnings = [f"answers for unknown problem {_shown(pid)} were ignored" for pid in body if pid not in known]
    out: list[Graded] = []
    for p in problems:
        mine = body.get(p.id, {})
        if mine is None:
            mine = {}
        if not isinstance(mine, dict):
            warnings.append(f"answers for {p.id!r} must be an object of answer name -> value")
            mine = {}
        names = {a.name for a in p.answers}
        warnings += [f"{p.id}: unknown answer {_shown(n)} was ignored" for n in mine if n not in names]
        out.extend(grade_answer(p, a, mine.get(a.name)) for a in p.answers)
    if len(warnings) > MAX_WARNINGS:
        warnings = warnings[:MAX_WARNINGS] + [f"... and {len(warnings) - MAX_WARNINGS} more warnings"]
    points = {p.id: p.points for p in problems} if all(p.points is not None for p in problems) else None
    return Sheet(file, student, variant, tuple(out), tuple(warnings), points=points)


def grade_files(answers_path: str | Path, key_path: str | Path):
    """Read both files (bounded, see :mod:`scalemath.files`) and :func:`grade`."""
    key = load_json(key_path, "manifest")
    answers = load_json(answers_path, "answers file")
    return grade(answers, key, file_label(key_path), f"answers file {file_label(answers_path)}")


# -- a class: a folder of answers files -----------------------------------------------------------------

def find_key(path: Path) -> Path:
    """The manifest.json next to ``path`` (a folder or an answers file) or in one of the
    :data:`KEY_SEARCH_DEPTH` folders above it."""
    start = path if path.is_dir() else path.parent
    for folder in [start, *list(start.absolute().parents)[:KEY_SEARCH_DEPTH]]:
        candidate = folder / "manifest.json"
        if candidate.is_file():
            return candidate
    raise BadValueError(f"no manifest.json in {file_label(start)} or the {KEY_SEARCH_DEPTH} folders above it; "
                        "pass the set's manifest with --key")


def answer_files(folder: Path) -> list[Path]:
    """Every ``answers.json`` under ``folder`` (the variants layout ``sheets/<id>/answers.json``), or, if
    there is none, every other ``*.json`` directly in it (a flat folder of one file per student).
    Symbolic links to folders are not followed; at most :data:`MAX_SHEETS` files."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if f == "answers.json"]
        if len(found) > MAX_SHEETS:
            raise BadValueError(f"{file_label(folder)} holds more than {MAX_SHEETS} answers files; grade a class "
                                "folder, not a whole disk")
    if not found:
        found = sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.name != "manifest.json"
                       and not p.name.startswith(".") and p.is_file())
    if len(found) > MAX_SHEETS:
        raise BadValueError(f"{file_label(folder)} holds more than {MAX_SHEETS} answers files")
    if not found:
        raise BadValueError(f"{file_label(folder)} holds no answers.json and no other .json file to grade")
    return found


def grade_path(path: str | Path, key_path: str | Path | None = None) -> tuple[Key, list[Sheet]]:
    """Grade one answers file or every answers file under a folder (see :func:`answer_files`).

    The key is ``key_path`` or the manifest found by :func:`find_key`. A broken key is an error;
    a broken answers file in a folder becomes a :class:`Sheet` with ``error`` and the others are
    still graded (a single file that is broken raises, as before).
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise BadValueError(f"cannot read answers file {file_label(path)}: No such file or folder (check the path)")
    key_file = Path(key_path) if key_path is not None else find_key(path)
    key = load_key(load_json(key_file, "manifest"), file_label(key_file))
    if not path.is_dir():
        answers = load_json(path, "answers file")
        return key, [grade_sheet(answers, key, f"answers file {file_label(path)}", file_label(path))]
    sheets = []
    for f in answer_files(path):
        label = file_label(f.relative_to(path)) if f.is_relative_to(path) else file_label(f)
        try:
            answers = load_json(f, "answers file")
            sheet = grade_sheet(answers, key, f"answers file {label}", label)
        except ScalemathError as exc:
            sheets.append(Sheet(label, None, None, error=str(exc)))
            continue
        if sheet.student is None:  # a flat folder: the file's stem; the variants layout: the sheet folder
            stem = f.parent.name if f.name == "answers.json" and f.parent != path else f.stem
            sheet = dataclasses.replace(sheet, student=stem)
        sheets.append(sheet)
    return key, sheets


def blank_answers(problems, set_id: str | None = None, variant: str | None = None, student: str | None = None) -> str:
    """The answers file to fill in: every problem id and answer name, each set to null, under the set's id
    (which the grader compares with the key's) and, on a variant's sheet, the variant and its student."""
    body = {p.id: {a.name: None for a in p.answers} for p in problems}
    if set_id is None and variant is None:
        doc = body
    else:
        doc = {"set": set_id, **({"variant": variant, "student": student} if variant is not None else {}),
               "answers": body}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
