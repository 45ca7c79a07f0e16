"""Grading an answers file against a set's manifest (its answer key).

The answers file is ``{"<problem id>": {"<answer name>": <number or text>}}`` with the ids
and names of the manifest; ``generate`` writes a blank one (``answers.json``) to fill in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import sympy as sp

from ..checking import check_value
from ..parsing import parse_number
from ..errors import BadValueError, ExpressionError, ScalemathError

__all__ = ["Graded", "grade", "grade_files", "load_json", "blank_answers"]

MAX_BYTES = 10 * 2**20
#: Parameters whose values are device counts: a factor of one of them is a per-device slip.
COUNT_PARAMS = ("n_dev", "chips", "devices", "links", "hosts")


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
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise BadValueError(f"{path} is larger than {MAX_BYTES // 2**20} MiB; is it the right {what}?")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadValueError(f"{what} {path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadValueError(f"{what} {path} is not valid JSON: {exc}") from None


def _counts(params: Mapping[str, Any]) -> dict[str, int]:
    return {k: v for k, v in params.items() if k in COUNT_PARAMS and isinstance(v, int)}


def _key_problems(key: Any, path: str) -> list[dict]:
    problems = key.get("problems") if isinstance(key, dict) else None
    if not isinstance(problems, list) or not all(
            isinstance(p, dict) and isinstance(p.get("id"), str) and isinstance(p.get("answers"), list)
            for p in problems):
        raise BadValueError(f"{path} is not a scalemath manifest (expected 'problems' with ids and answers); "
                            "pass the manifest.json that generate wrote")
    return problems


def grade(answers: Any, key: Any, key_path: str = "manifest") -> tuple[Fraction, list[Graded], list[str]]:
    """Grade ``answers`` against ``key``: the score (right / asked), one line per answer, warnings."""
    problems = _key_problems(key, key_path)
    if not isinstance(answers, dict):
        raise BadValueError('the answers file must be a JSON object: {"<problem id>": {"<answer name>": value}}')
    known = {p["id"] for p in problems}
    warnings = [f"answers for unknown problem {pid!r} were ignored" for pid in answers if pid not in known]
    out: list[Graded] = []
    for p in problems:
        mine = answers.get(p["id"], {})
        if not isinstance(mine, dict):
            warnings.append(f"answers for {p['id']!r} must be an object of answer name -> value")
            mine = {}
        names = {a["name"] for a in p["answers"]}
        warnings += [f"{p['id']}: unknown answer {n!r} was ignored" for n in mine if n not in names]
        for a in p["answers"]:
            expected = parse_number(a["exact"])
            given = mine.get(a["name"])
            if given is None:
                out.append(Graded(p["id"], a["name"], "missing", expected, a["unit"], None))
                continue
            try:
                v = check_value(expected, a["unit"], given, sp.Rational(str(a["rel_tol"])),
                                _counts(p.get("params", {})))
            except (BadValueError, ExpressionError) as exc:
                out.append(Graded(p["id"], a["name"], "unreadable", expected, a["unit"], given, None, str(exc)))
                continue
            out.append(Graded(p["id"], a["name"], "right" if v.right else "wrong", expected, a["unit"], given,
                              float(v.rel_error), v.diagnosis))
    right = sum(g.verdict == "right" for g in out)
    return (Fraction(right, len(out)) if out else Fraction(0)), out, warnings


def grade_files(answers_path: str | Path, key_path: str | Path):
    key = load_json(key_path, "answer key")
    answers = load_json(answers_path, "answers file")
    try:
        return grade(answers, key, str(key_path))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ScalemathError):
            raise
        raise BadValueError(f"{key_path} is not a valid scalemath manifest ({exc})") from None


def blank_answers(problems) -> str:
    """The answers file to fill in: every problem id and answer name, each set to null."""
    return json.dumps({p.id: {a.name: None for a in p.answers} for p in problems}, indent=2) + "\n"
