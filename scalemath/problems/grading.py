"""Grading an answers file against a set's manifest (its answer key).

The answers file is ``{"<problem id>": {"<answer name>": <number or text>}}`` with the ids
and names of the manifest; ``generate`` writes a blank one (``answers.json``) to fill in.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import sympy as sp

from ..checking import check_value
from ..parsing import parse_number
from ..errors import BadValueError, ScalemathError
from ..userfiles import MAX_BYTES, file_label, load_json_file

__all__ = ["Graded", "grade", "grade_files", "load_json", "blank_answers", "validate_manifest", "MAX_BYTES"]

#: Parameters whose values are device counts: a factor of one of them is a per-device slip.
COUNT_PARAMS = ("n_dev", "chips", "devices", "links", "hosts")
#: Warnings listed one by one before the rest are counted.
MAX_WARNINGS = 20
_FIX = "pass the manifest.json that 'scalemath problems generate' wrote, unchanged"


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

    def as_dict(self) -> dict:
        return {"problem": self.problem, "answer": self.answer, "verdict": self.verdict,
                "given": self.given, "expected": str(self.expected),
                "expected_value": float(sp.N(self.expected, 17)), "unit": self.unit,
                "rel_error": self.rel_error, "diagnosis": self.diagnosis}


def load_json(path: str | Path, what: str) -> Any:
    """A JSON file a user gave (see :func:`scalemath.userfiles.load_json_file`); errors exit 2."""
    return load_json_file(path, what, MAX_BYTES, error=BadValueError)


# -- the manifest -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _KeyAnswer:
    name: str
    unit: str
    expected: sp.Expr
    rel_tol: sp.Rational


@dataclass(frozen=True)
class _KeyProblem:
    id: str
    counts: Mapping[str, int]
    answers: tuple[_KeyAnswer, ...]


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
        field = f"{where}.{name}" if where else name
        if name not in obj:
            if required:
                raise self.fail(field, "is missing")
            return None
        value = obj[name]
        ok = {"object": isinstance(value, dict), "list": isinstance(value, list),
              "text": isinstance(value, str),
              "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]
        if not ok:
            wanted = kind if kind == "text" else ("an " if kind[0] in "aeiou" else "a ") + kind
            raise self.fail(field, f"must be {wanted}, not {_type_name(value)}")
        return value


def validate_manifest(key: Any, label: str = "manifest") -> list[_KeyProblem]:
    """The problems of a manifest (the schema :func:`scalemath.problems.render.manifest` writes),
    with every field grading uses checked; :class:`BadValueError` names the file and the field."""
    m = _Manifest(label)
    if not isinstance(key, dict):
        raise BadValueError(f"{label} is not a scalemath manifest: the top level must be an object with "
                            f"'problems', not {_type_name(key)}; {_FIX}")
    if "problems" not in key:
        raise BadValueError(f"{label} is not a scalemath manifest (it has no 'problems' list); {_FIX}")
    for name, kind in (("scalemath_version", "text"), ("seed", "integer"), ("n", "integer"),
                       ("topics", "list")):
        m.get(key, "", name, kind, required=False)
    problems = key["problems"]
    if not isinstance(problems, list):
        raise BadValueError(f"{label} is not a scalemath manifest: 'problems' must be a list, not "
                            f"{_type_name(problems)}; {_FIX}")
    if not problems:
        raise BadValueError(f"manifest {label} has no problems; generate a set with "
                            "'scalemath problems generate' and pass its manifest.json")
    out: list[_KeyProblem] = []
    seen: set[str] = set()
    for i, p in enumerate(problems):
        where = f"problems[{i}]"
        if not isinstance(p, dict):
            raise m.fail(where, f"must be an object, not {_type_name(p)}")
        pid = m.get(p, where, "id", "text")
        if not pid.strip():
            raise m.fail(f"{where}.id", "must not be empty")
        if pid in seen:
            raise m.fail(f"{where}.id", f"{pid!r} is used twice")
        seen.add(pid)
        for name, kind in (("number", "integer"), ("seed", "integer"), ("generator", "text"), ("topic", "text"),
                           ("title", "text"), ("source", "text")):
            m.get(p, where, name, kind, required=False)
        params = m.get(p, where, "params", "object")
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise m.fail(f"{where}.params.{k}", f"must be a number or text, not {_type_name(v)}")
        answers = m.get(p, where, "answers", "list")
        if not answers:
            raise m.fail(f"{where}.answers", "is empty; each problem has at least one answer")
        keyed: list[_KeyAnswer] = []
        for j, a in enumerate(answers):
            at = f"{where}.answers[{j}]"
            if not isinstance(a, dict):
                raise m.fail(at, f"must be an object, not {_type_name(a)}")
            name = m.get(a, at, "name", "text")
            if any(k.name == name for k in keyed):
                raise m.fail(f"{at}.name", f"{name!r} is used twice in {pid!r}")
            unit = m.get(a, at, "unit", "text")
            m.get(a, at, "description", "text", required=False)
            m.get(a, at, "value", "number", required=False)
            exact = m.get(a, at, "exact", "text")
            try:
                expected = parse_number(exact)
                finite = math.isfinite(float(expected))
            except (ScalemathError, ValueError, TypeError, ArithmeticError, RecursionError) as exc:
                why = str(exc) if isinstance(exc, ScalemathError) else "it is not a number"
                raise m.fail(f"{at}.exact", f"must be an exact number such as '9850/41' ({why})") from None
            if not finite:
                raise m.fail(f"{at}.exact", "must be a finite number")
            rel_tol = m.get(a, at, "rel_tol", "number")
            if not 0 <= rel_tol < 1:
                raise m.fail(f"{at}.rel_tol", f"= {rel_tol!r} must be at least 0 and below 1")
            keyed.append(_KeyAnswer(name, unit, expected, sp.Rational(str(rel_tol))))
        counts = {k: v for k, v in params.items() if k in COUNT_PARAMS and isinstance(v, int)}
        out.append(_KeyProblem(pid, counts, tuple(keyed)))
    return out


# -- grading ----------------------------------------------------------------------------------------

def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _read_one(expected: sp.Expr, a: _KeyAnswer, given: Any, counts: Mapping[str, int]):
    """The verdict on one answer, or the reason it cannot be read (never an exception)."""
    if isinstance(given, bool) or not isinstance(given, (str, int, float)):
        what = json.dumps(given) if isinstance(given, bool) else f"{_type_name(given)} {_shown(given, 40)}"
        return None, f"an answer must be a number or text such as '1.2 ms', not {what}"
    try:
        return check_value(expected, a.unit, given, a.rel_tol, counts), None
    except ScalemathError as exc:  # ExpressionError, BadValueError, a time limit
        return None, str(exc)
    except (ValueError, TypeError, ArithmeticError, RecursionError) as exc:
        return None, f"cannot read {_shown(given)} as a number ({type(exc).__name__})"


def grade(answers: Any, key: Any, key_path: str = "manifest",
          answers_path: str = "the answers file") -> tuple[Fraction, list[Graded], list[str]]:
    """Grade ``answers`` against ``key``: the score (right / asked), one line per answer, warnings.

    A manifest that does not have the shape generate writes is a :class:`BadValueError` naming
    the field; an answer that cannot be read is graded ``unreadable`` with the reason, and the
    others are still graded.
    """
    problems = validate_manifest(key, key_path)
    if not isinstance(answers, dict):
        raise BadValueError(f'{answers_path} must be a JSON object: {{"<problem id>": {{"<answer name>": value}}}}, '
                            f"not {_type_name(answers)}; start from the answers.json that generate wrote")
    known = {p.id for p in problems}
    warnings = [f"answers for unknown problem {_shown(pid)} were ignored" for pid in answers if pid not in known]
    out: list[Graded] = []
    for p in problems:
        mine = answers.get(p.id, {})
        if mine is None:
            mine = {}
        if not isinstance(mine, dict):
            warnings.append(f"answers for {p.id!r} must be an object of answer name -> value")
            mine = {}
        names = {a.name for a in p.answers}
        warnings += [f"{p.id}: unknown answer {_shown(n)} was ignored" for n in mine if n not in names]
        for a in p.answers:
            given = mine.get(a.name)
            if given is None:
                out.append(Graded(p.id, a.name, "missing", a.expected, a.unit, None))
                continue
            verdict, reason = _read_one(a.expected, a, given, p.counts)
            if verdict is None:
                out.append(Graded(p.id, a.name, "unreadable", a.expected, a.unit, given, None, reason))
                continue
            out.append(Graded(p.id, a.name, "right" if verdict.right else "wrong", a.expected, a.unit, given,
                              float(verdict.rel_error), verdict.diagnosis))
    if len(warnings) > MAX_WARNINGS:
        warnings = warnings[:MAX_WARNINGS] + [f"... and {len(warnings) - MAX_WARNINGS} more warnings"]
    right = sum(g.verdict == "right" for g in out)
    return (Fraction(right, len(out)) if out else Fraction(0)), out, warnings


def grade_files(answers_path: str | Path, key_path: str | Path):
    """Read both files (bounded, see :mod:`scalemath.userfiles`) and :func:`grade`."""
    key = load_json(key_path, "manifest")
    answers = load_json(answers_path, "answers file")
    return grade(answers, key, file_label(key_path), f"answers file {file_label(answers_path)}")


def blank_answers(problems) -> str:
    """The answers file to fill in: every problem id and answer name, each set to null."""
    return json.dumps({p.id: {a.name: None for a in p.answers} for p in problems}, indent=2) + "\n"
